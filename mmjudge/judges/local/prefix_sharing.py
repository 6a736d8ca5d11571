"""Running a token prefix shared by several requests of a batch once, and branching from its KV cache.

Why common-prefix analysis of the token ids, and not a hint from the metric: the judge interface stays
"requests in, results out", every metric benefits, and sharing is only done where it is provably the same
computation: rows whose ids agree up to a point have identical keys/values up to that point, so that
prefix is computed once and each request continues from a copy of its cache. Results equal the plain path
up to float rounding. Candidates for one prefix are the requests about one image (same digest: system
prompt + image, e.g. HarmonicEval's Correctness and Completeness) or, without an image, the requests of
one group (e.g. one criterion: its whole rubric comes before the text under evaluation); the shared length
is then measured on the token ids.

Images: the processor is called once per batch on the DISTINCT images (with a bare image placeholder as
text), which gives their pixel tensors and how many placeholder tokens each expands to; each prompt is then
expanded and tokenised the way the processor does (placeholder repeated). Processors whose expansion is not
a plain repetition (e.g. Idefics3's tile markup), prompts with other than one image placeholder, and
prefixes that would not cover the whole image fall back to the plain path (:func:`build` returns ``None``).
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from mmjudge.batching import pad_rows
from mmjudge.judges.base import RatingRequest

logger = logging.getLogger(__name__)

# Text-only requests take the shared-prefix path only when it saves at least this share of their tokens.
MIN_SHARED_FRACTION = 0.2


@dataclass
class SharedPrefixBatch:
    """A batch prepared for the shared-prefix path (CPU tensors).

    Attributes:
        prefix: model inputs of the distinct prefixes (``input_ids``, ``attention_mask``, pixel values …).
        mrope: ``(position_ids, rope_deltas)`` of the prefixes, computed on the CPU (Qwen2-VL-style models),
            or ``None``.
        images: whether the prefixes hold images.
        suffix_ids, suffix_mask: each request's tokens after its prefix (left-padded).
        row_of: for each request, the row of its prefix.
        tokens: real tokens run (prefixes once + suffixes); unshared_tokens: what the requests cost unshared.
    """

    prefix: dict
    mrope: Optional[tuple]
    images: bool
    suffix_ids: Any
    suffix_mask: Any
    row_of: Any
    tokens: int
    unshared_tokens: int


class PlaceholderIds:
    """Token ids of ``count`` image placeholders in a row, per (token, count): images of one size give one
    count, so the tokenizer runs once per size."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self._cache: dict[tuple, list[int]] = {}

    def __call__(self, image_token: str, count: int) -> list[int]:
        key = (image_token, count)
        if key not in self._cache:
            self._cache[key] = self.tokenizer(image_token * count)["input_ids"]
        return self._cache[key]


def build(requests: Sequence[RatingRequest], texts: Sequence[str], keep: int, processor: Any, tokenizer: Any,
          placeholders: PlaceholderIds, mrope: Callable[[dict], Optional[tuple]]) -> Optional[SharedPrefixBatch]:  # fmt: skip
    """Inputs for the shared-prefix path, or ``None`` when this processor or batch does not allow it (or it
    would save little). ``keep``: positions read at the end of every request; ``mrope(prefix inputs)``: the
    model's multimodal RoPE positions for the prefixes (or ``None``)."""
    import torch

    with_images = requests[0].image is not None
    if any((r.image is not None) != with_images for r in requests):
        return None
    vision: dict = {}
    image_token_id = None
    if with_images:
        image_token = getattr(processor, "image_token", None)
        image_token_id = tokenizer.convert_tokens_to_ids(image_token) if image_token else None
        if image_token_id is None or any(t.count(image_token) != 1 for t in texts):
            return None
        keys = [r.image_digest for r in requests]
        digests = list(dict.fromkeys(keys))
        first = {d: next(r.image for r in requests if r.image_digest == d) for d in digests}
        vision = processor(text=[image_token] * len(digests), images=[[first[d]] for d in digests],
                           return_tensors="pt", padding=True)  # fmt: skip
        counts = {}
        for d, row, mask in zip(digests, vision["input_ids"], vision["attention_mask"]):
            n = int((row == image_token_id).sum())
            if row[mask.bool()].tolist() != placeholders(image_token, n):
                return None  # the placeholder does not expand to a plain repetition
            counts[d] = n
        expanded = [t.replace(image_token, image_token * counts[k]) for t, k in zip(texts, keys)]
        ids = tokenizer(expanded)["input_ids"]
    else:
        keys = [r.group for r in requests]
        digests = list(dict.fromkeys(keys))
        # The plain path's tokenisation: the processor's (special tokens as it adds them) or, for a
        # text-only model, the bare tokenizer without special tokens (the chat template has them).
        ids = tokenizer(list(texts), add_special_tokens=processor is not None)["input_ids"]
    # One prefix per key: the longest common prefix of its requests' ids, leaving `keep` positions to
    # read in every request and, with images, covering the image placeholder entirely.
    prefix_len = {}
    for d in digests:
        rows = [ids[i] for i, k in enumerate(keys) if k == d]
        common = min(len(x) for x in rows) - keep
        for pos in range(common):
            if any(x[pos] != rows[0][pos] for x in rows[1:]):
                common = pos
                break
        if with_images:
            last_image = max(p for p, t in enumerate(rows[0]) if t == image_token_id)
            if common <= last_image:
                return None
        prefix_len[d] = max(common, 0)
    saved = sum((keys.count(d) - 1) * prefix_len[d] for d in digests)
    total = sum(len(x) for x in ids)
    if not with_images and saved < MIN_SHARED_FRACTION * total:
        return None  # two passes for little: the plain path is as fast
    pad = tokenizer.pad_token_id
    row_of = [digests.index(k) for k in keys]
    prefixes = [ids[keys.index(d)][: prefix_len[d]] for d in digests]
    if any(not p for p in prefixes):
        return None
    suffixes = [x[prefix_len[k]:] for x, k in zip(ids, keys)]
    prefix_ids, prefix_mask = pad_rows(prefixes, pad, "left")
    suffix_ids, suffix_mask = pad_rows(suffixes, pad, "left")
    prefix_inputs = {"input_ids": prefix_ids, "attention_mask": prefix_mask}
    for key, value in vision.items():
        if key in ("input_ids", "attention_mask"):
            continue
        if key == "mm_token_type_ids":  # per token: 1 on image placeholders (Qwen2-VL's M-RoPE needs it)
            prefix_inputs[key] = (prefix_ids == image_token_id).to(value.dtype)
        elif hasattr(value, "shape") and value.dim() >= 2 and value.shape[:2] == vision["input_ids"].shape:
            return None  # another per-token input this code does not know how to rebuild
        else:
            prefix_inputs[key] = value
    return SharedPrefixBatch(
        prefix=prefix_inputs,
        mrope=mrope(prefix_inputs) if with_images else None,
        images=with_images,
        suffix_ids=suffix_ids,
        suffix_mask=suffix_mask,
        row_of=torch.tensor(row_of, dtype=torch.long),
        tokens=int(prefix_mask.sum() + suffix_mask.sum()),
        unshared_tokens=total,
    )


def mrope_positions(model: Any, inputs: dict) -> Optional[tuple]:
    """``(position_ids (3, batch, length), rope_deltas (batch, 1))`` for a batch with images, computed on
    the CPU by the model's own ``get_rope_index`` (Qwen2-VL and its successors); ``None`` for models
    without multimodal RoPE, or when it cannot be computed here (the model then does it itself).

    Why on the CPU, in the preparing thread: on the GPU that function walks the batch row by row with
    device-to-host reads in every step, hundreds of synchronisations per batch of images, each leaving
    the GPU idle while Python catches up. Here it costs milliseconds and overlaps the previous batch.
    Same function, same inputs: the same positions.
    """
    core = getattr(model, "model", None)
    rope_index = getattr(core, "get_rope_index", None)
    if rope_index is None or not hasattr(core, "rope_deltas") or "image_grid_thw" not in inputs:
        return None
    accepted = inspect.signature(rope_index).parameters
    kwargs = {k: inputs[k] for k in ("image_grid_thw", "attention_mask", "mm_token_type_ids") if k in inputs and k in accepted}
    try:
        positions, deltas = rope_index(inputs["input_ids"], **kwargs)
    except (TypeError, ValueError, RuntimeError, IndexError, StopIteration) as err:
        logger.debug("M-RoPE positions left to the model: %s", err)
        return None
    return positions, deltas


def shared_logits(model: Any, shared: SharedPrefixBatch, keep: int) -> Any:
    """Run each distinct prefix once, copy its KV cache to the requests that continue it, then run the
    suffixes: (batch, keep, vocab) float32 logits, as the plain path returns for the full prompts."""
    import torch
    from torch.profiler import record_function

    device = model.device
    prefix = {k: v.to(device) if hasattr(v, "to") else v for k, v in shared.prefix.items()}
    row_of = shared.row_of.to(device)
    suffix_ids, suffix_mask = shared.suffix_ids.to(device), shared.suffix_mask.to(device)
    core = getattr(model, "model", None)
    mrope = core is not None and hasattr(core, "rope_deltas")
    if mrope:
        core.rope_deltas = None  # never reuse M-RoPE offsets from an earlier call
    precomputed = shared.mrope  # M-RoPE positions computed on the CPU while preparing
    if precomputed is not None:
        prefix["position_ids"] = precomputed[0].to(device)
    elif not (mrope and shared.images):
        # Prefixes of different lengths are left-padded: count positions from each row's first real
        # token (as the suffix positions below do), not from the padded row's start.
        prefix["position_ids"] = (prefix["attention_mask"].long().cumsum(dim=1) - 1).clamp(min=0)
    with record_function("mmjudge.judge.prefix"):
        out = model(**prefix, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    deltas = precomputed[1] if precomputed is not None else getattr(core, "rope_deltas", None)
    cache.batch_select_indices(row_of)  # row i of the cache = the prefix of request i
    mask = torch.cat([prefix["attention_mask"][row_of], suffix_mask], dim=1)
    # Positions continue from each prefix's real (unpadded) length, as in the unshared prompt.
    positions = prefix["attention_mask"].sum(dim=1)[row_of, None] + suffix_mask.long().cumsum(dim=1) - 1
    positions = positions.masked_fill(suffix_mask == 0, 1)
    if deltas is not None:  # Qwen2-VL M-RoPE: text after the image is offset by rope_deltas, on 3 axes
        positions = (positions + deltas.to(device)[row_of]).unsqueeze(0).expand(3, -1, -1)
    with record_function("mmjudge.judge.suffix"):
        out = model(input_ids=suffix_ids, attention_mask=mask, position_ids=positions,
                    past_key_values=cache, use_cache=True, logits_to_keep=keep)  # fmt: skip
    if mrope:
        core.rope_deltas = None
    return out.logits[:, -keep:, :].float()
