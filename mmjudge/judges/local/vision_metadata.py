"""A vision tower's per-batch metadata computed on the CPU while the batch is prepared, passed in precomputed.

Why: at the start of every forward pass with images, Qwen2-VL and Qwen2.5-VL derive from ``image_grid_thw``
each patch's rotary position, where each image starts and ends (Qwen2.5-VL: each 112-pixel window too) and
the longest of them: per-image Python loops of small tensor operations and device-to-host reads
(``.tolist()``, ``.item()``, ``unique_consecutive``) on the launching thread, while the GPU waits for the
batch to begin. transformers >= 5.24 takes these tensors precomputed (``image_position_ids``,
``image_cu_seqlens``, ``image_max_seqlen``, ``image_window_index``, ``image_cu_window_seqlens``,
``image_max_window_seqlen``; ``transformers.vision_utils``). :func:`vision_metadata` runs the very functions
the modelling module calls, on the CPU grid, in the preparing thread: the same values, off the launching
thread. Older transformers versions (without those functions) compute them as before.

The same models cast ``pixel_values`` to the vision tower's dtype before anything else reads them
(``pixel_values.type(self.visual.dtype)``). :func:`pixel_dtypes` names that dtype, so the preparing thread can
make the cast while it copies the pixels into pinned memory: half the bytes to pin and to send for a bf16
model (a batch of 120 448-pixel images is 578 MB in float32), and the same rounding (to nearest even) on
either side.

>>> from types import SimpleNamespace
>>> vision_metadata(SimpleNamespace(config=SimpleNamespace(model_type="llava")), {})
{}
"""

from __future__ import annotations

import sys
from typing import Any

# Model types whose vision tower is known (read in their modelling code, checked by the equality tests on their
# tiny models) to take every one of these keys precomputed.
PRECOMPUTED_MODELS = frozenset({"qwen2_vl", "qwen2_5_vl"})


def vision_metadata(model: Any, inputs: dict) -> dict:
    """Model keywords holding ``inputs``' vision metadata (CPU tensors and ints), or ``{}`` when this model
    or transformers version computes them itself. ``inputs``: the batch's CPU inputs (``image_grid_thw``)."""
    grid = inputs.get("image_grid_thw")
    if grid is None or getattr(model.config, "model_type", None) not in PRECOMPUTED_MODELS:
        return {}
    core = getattr(model, "model", model)
    visual = getattr(core, "visual", None)
    module = sys.modules.get(type(visual).__module__) if visual is not None else None
    functions = ["get_vision_position_ids", "get_vision_attention_seqlens", "get_max_seqlen"]
    windowed = hasattr(visual, "window_size") and hasattr(visual, "fullatt_block_indexes")
    if windowed:
        functions.append("get_vision_window_index")
    if module is None or not all(hasattr(module, name) for name in functions):
        return {}
    out = {"image_position_ids": module.get_vision_position_ids(grid, visual.spatial_merge_size)}
    cu_seqlens, longest = module.get_vision_attention_seqlens(grid, visual.config)
    out["image_cu_seqlens"] = cu_seqlens
    if longest is not None:  # only read by flash-style attention (this package's packed attention included)
        out["image_max_seqlen"] = longest
    if windowed:
        index, cu_windows = module.get_vision_window_index(
            grid,
            spatial_merge_size=visual.spatial_merge_size,
            window_size=visual.window_size,
            patch_size=visual.patch_size,
        )
        out["image_window_index"], out["image_cu_window_seqlens"] = index, cu_windows
        longest_window = module.get_max_seqlen(cu_windows, visual.config, kwarg_name="max_window_seqlen")
        if longest_window is not None:
            out["image_max_window_seqlen"] = longest_window
    return out


def pixel_dtypes(model: Any) -> dict:
    """``{"pixel_values": dtype}`` when ``model`` casts its pixel values to that dtype before reading them (the
    preparing thread may cast them first), else ``{}``."""
    if getattr(model.config, "model_type", None) not in PRECOMPUTED_MODELS:
        return {}
    visual = getattr(getattr(model, "model", model), "visual", None)
    dtype = getattr(visual, "dtype", None)
    return {"pixel_values": dtype} if dtype is not None else {}
