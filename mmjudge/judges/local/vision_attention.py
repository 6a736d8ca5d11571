"""One attention call per layer for vision towers that pack every image of a batch into one sequence.

Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4V run their vision tower over all the images of a batch as one long
sequence, with ``cu_seqlens`` marking where each image (Qwen2.5-VL: each window of an image) starts. Under
``sdpa`` transformers splits that sequence and calls attention once per image or window, after reading the
boundaries back to the CPU — in every layer. A HarmonicEval batch of 240 images through the 32 layers of
Qwen2-VL-7B's tower is 7,680 attention calls (Qwen2.5-VL's 64-patch windows: sixteen times as many), each
too small to keep an H100 busy, launched one after the other by Python: the GPU waits.

:func:`packed_attention` answers the whole sequence with ONE ``scaled_dot_product_attention`` call: when
every segment is as long as the longest (images of one size, windows that tile them), the sequence is
reshaped to ``(segments, heads, length, dim)`` — no copy, no mask, no synchronisation; otherwise each
segment is placed in a padded row and the padding is masked out. The arithmetic is attention within each
segment, as before: scores equal the per-segment path's up to float rounding (tested on the tiny models
of all four families).

Why its registered name contains "flash": transformers passes ``cu_seqlens`` to the attention function
(instead of splitting the sequence itself) only when the implementation's name says flash attention
(``transformers.utils.generic.is_flash_attention_requested``). No flash-attention package is used.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

NAME = "mmjudge_flash_packed_sdpa"

# Model types whose vision attention takes ``cu_seqlens`` on the flash path (checked in their modelling code
# and by the equality tests on their tiny models).
PACKED_VISION_MODELS = frozenset({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "glm4v"})


def packed_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any = None,
    scaling: float | None = None,
    dropout: float = 0.0,
    cu_seq_lens_q: Any = None,
    max_length_q: int | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Attention within each segment of a packed sequence, in one call.

    ``query``/``key``/``value``: ``(1, heads, tokens, dim)``; ``cu_seq_lens_q``: the segments' cumulative
    lengths ``(segments + 1,)``; returns ``((1, tokens, heads, dim), None)`` as transformers' attention
    functions do.

    >>> import torch
    >>> q = torch.randn(1, 2, 7, 4); cu = torch.tensor([0, 3, 7], dtype=torch.int32)
    >>> out, _ = packed_attention(None, q, q, q, cu_seq_lens_q=cu, max_length_q=4)
    >>> alone = [torch.nn.functional.scaled_dot_product_attention(q[:, :, a:b], q[:, :, a:b], q[:, :, a:b])
    ...          for a, b in ((0, 3), (3, 7))]
    >>> bool(torch.allclose(out, torch.cat(alone, dim=2).transpose(1, 2), atol=1e-6))
    True
    """
    import torch
    import torch.nn.functional as F

    if cu_seq_lens_q is None:  # not a packed call: plain attention over the whole sequence
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling)
        return out.transpose(1, 2), None
    _, heads, tokens, dim = query.shape
    cu = cu_seq_lens_q
    segments = cu.numel() - 1
    longest = int(max_length_q) if max_length_q is not None else int((cu[1:] - cu[:-1]).max())
    if segments * longest == tokens:
        # Every segment is as long as the longest (their lengths sum to `tokens`): a view, no mask.
        q, k, v = (t.reshape(heads, segments, longest, dim).transpose(0, 1) for t in (query, key, value))
        out = F.scaled_dot_product_attention(q, k, v, scale=scaling)  # (segments, heads, longest, dim)
        return out.transpose(1, 2).reshape(1, tokens, heads, dim), None
    positions = torch.arange(tokens, device=query.device)
    segment = torch.searchsorted(cu[1:].contiguous(), positions, right=True)
    offset = positions - cu[segment].long()

    def padded(t: Any) -> Any:  # (1, heads, tokens, dim) -> (segments, heads, longest, dim)
        rows = t.new_zeros(segments, longest, heads, dim)
        rows[segment, offset] = t[0].transpose(0, 1)
        return rows.transpose(1, 2)

    lengths = (cu[1:] - cu[:-1]).long()
    keys_kept = torch.arange(longest, device=query.device)[None, :] < lengths[:, None]
    out = F.scaled_dot_product_attention(
        padded(query), padded(key), padded(value), attn_mask=keys_kept[:, None, None, :], scale=scaling
    )
    return out.transpose(1, 2)[segment, offset].unsqueeze(0), None


def use_packed_vision_attention(model: Any) -> bool:
    """Route ``model``'s vision tower through :func:`packed_attention` where that is known to be the same
    computation (the families of :data:`PACKED_VISION_MODELS` under ``sdpa``); returns whether it did."""
    config = getattr(model, "config", None)
    vision = getattr(config, "vision_config", None)
    if getattr(config, "model_type", None) not in PACKED_VISION_MODELS or vision is None:
        return False
    if getattr(vision, "_attn_implementation", None) != "sdpa":
        return False  # eager (exact reference) or real flash attention: leave it as the user chose
    from transformers import AttentionInterface

    AttentionInterface.register(NAME, packed_attention)
    vision._attn_implementation = NAME
    logger.debug("%s: vision attention packed into one call per layer", config.model_type)
    return True
