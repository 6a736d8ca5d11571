"""Running a token prefix shared by several requests of a batch once, and branching from its KV cache.

Why common-prefix analysis of the token ids, and not a hint from the metric: the judge interface stays
"requests in, results out", every metric benefits, and sharing is only done where it is provably the same
computation: rows whose ids agree up to a point have identical keys/values up to that point, so that
prefix is computed once and each request continues from a copy of its cache. Results equal the plain path
up to float rounding. Candidates for one prefix are the requests about one image (same digest: system
prompt + image, e.g. HarmonicEval's Correctness and Completeness) or, without an image, the requests of
one group (e.g. one criterion: its whole rubric comes before the text under evaluation); the shared length
is then measured on the token ids.

Images: each distinct image is preprocessed once per batch and every prompt about it is expanded and
tokenised exactly as the processor does, image markup and per-token inputs included
(:mod:`~mmjudge.judges.local.placeholders`); the prefix must cover every image token.

Attention (:mod:`~mmjudge.judges.local.attention`): requests continue their prefix's cache left-padded to
the longest suffix, so padding sits between a prefix and a shorter suffix. Full attention masks it. A
sliding-window layer counts its window in cache slots, so that padding would push real tokens out of the
window: for such models each request instead runs the last few tokens of its prefix (text after the image)
again at the start of its suffix, as many as its suffix is shorter, and its copy of the cache is shifted
so that these slots hold nothing — no gap, the window sees exactly the plain path's tokens (the cache keeps
every prefix position for this, not only the last ``window``). A request whose gap cannot be closed so and
whose prompt spans more than the window goes to the plain path (:attr:`SharedPrefixBatch.rows` lists the
requests the shared path answers). Models with other layer kinds (chunked, recurrent) are not shared.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.batching import pad_rows
from mmjudge.judges.local import placeholders
from mmjudge.judges.local.attention import AttentionLayout
from mmjudge.judges.requests import RatingRequest

logger = logging.getLogger(__name__)

# Text-only requests take the shared-prefix path only when it saves at least this share of their tokens.
MIN_SHARED_FRACTION = 0.2


@dataclass
class SharedPrefixBatch:
    """A batch prepared for the shared-prefix path (CPU tensors).

    Attributes:
        prefix: model inputs of the distinct prefixes (``input_ids``, ``attention_mask``, pixel values,
            per-token inputs …).
        mrope: ``(position_ids, rope_deltas)`` of the prefixes, computed on the CPU (Qwen2-VL-style models),
            or ``None``.
        images: whether the prefixes hold images.
        rows: the requests of the batch (indices) this answers, in the order of the rows below; the
            others take the plain path.
        suffix_ids, suffix_mask: each request's tokens after its prefix (left-padded), starting with the
            ``shift`` last tokens of its prefix that it runs again.
        suffix_inputs: per-token inputs of the suffixes (e.g. Mllama's ``cross_attention_mask``).
        row_of: for each request, the row of its prefix.
        shift: for each request, how many of its prefix's last tokens its suffix runs again (sliding
            windows; zeros otherwise).
        tokens: real tokens run (prefixes once + suffixes); unshared_tokens: what the requests cost unshared.
    """

    prefix: dict
    mrope: tuple | None
    images: bool
    rows: list
    suffix_ids: Any
    suffix_mask: Any
    suffix_inputs: dict
    row_of: Any
    shift: Any
    tokens: int
    unshared_tokens: int


def build(
    requests: Sequence[RatingRequest],
    texts: Sequence[str],
    keep: int,
    processor: Any,
    tokenizer: Any,
    layout: AttentionLayout,
    image_ids: frozenset,
    mrope: Callable[[dict], tuple | None],
) -> SharedPrefixBatch | None:
    """Inputs for the shared-prefix path, or ``None`` when this model, processor or batch does not allow it
    (or it would save little). ``keep``: positions read at the end of every request; ``layout``: the
    model's :class:`~mmjudge.judges.local.attention.AttentionLayout`; ``image_ids``: the ids of image tokens
    (:func:`~mmjudge.judges.local.placeholders.vision_token_ids`); ``mrope(prefix inputs)``: the model's
    multimodal RoPE positions for the prefixes (or ``None``)."""
    import torch

    with_images = requests[0].image is not None
    if not layout.shareable or any((r.image is not None) != with_images for r in requests):
        return None
    tokenized = _token_ids(requests, texts, processor, tokenizer, image_ids, with_images)
    if tokenized is None:
        return None
    expanded, keys, ids, last_image = tokenized
    digests = list(dict.fromkeys(keys))
    members = {d: [k for k, key in enumerate(keys) if key == d] for d in digests}
    lengths = _prefix_lengths(ids, members, last_image, keep)
    if lengths is None:
        return None
    prefix_len, spare = lengths
    rows, shift = _continuations(ids, keys, prefix_len, spare, layout.window)
    if not rows:
        return None
    used = {keys[k] for k in rows}
    if with_images and len(used) < len(digests):
        # Every image in the pixel values must be in a prefix: keep only the images some request still
        # shares (preprocessing them once more), the others' requests go to the plain path.
        subset = [k for k, key in enumerate(keys) if key in used]
        model_parts = (processor, tokenizer, layout, image_ids, mrope)
        inner = build([requests[k] for k in subset], [texts[k] for k in subset], keep, *model_parts)
        if inner is not None:
            inner.rows = [subset[k] for k in inner.rows]
        return inner
    total = sum(len(ids[k]) for k in rows)
    saved = sum((sum(keys[k] == d for k in rows) - 1) * prefix_len[d] for d in used)
    if not with_images and saved < MIN_SHARED_FRACTION * total:
        return None  # two passes for little: the plain path is as fast
    prefix_keys = [d for d in digests if d in used]
    pad = tokenizer.pad_token_id
    owner = {d: members[d][0] for d in prefix_keys}
    prefix_ids, prefix_mask = pad_rows([ids[owner[d]][: prefix_len[d]] for d in prefix_keys], pad, "left")
    starts = [prefix_len[keys[k]] - s for k, s in zip(rows, shift)]
    suffix_ids, suffix_mask = pad_rows([ids[k][start:] for k, start in zip(rows, starts)], pad, "left")
    prefix_inputs = {"input_ids": prefix_ids, "attention_mask": prefix_mask}
    suffix_inputs = {}
    if expanded is not None:
        prefix_inputs.update(expanded.vision)
        for name, per_request in expanded.per_token.items():
            prefix_inputs[name] = _pad_left([per_request[owner[d]][: prefix_len[d]] for d in prefix_keys])
            suffix_inputs[name] = _pad_left([per_request[k][start:] for k, start in zip(rows, starts)])
    return SharedPrefixBatch(
        prefix=prefix_inputs,
        mrope=mrope(prefix_inputs) if with_images else None,
        images=with_images,
        rows=rows,
        suffix_ids=suffix_ids,
        suffix_mask=suffix_mask,
        suffix_inputs=suffix_inputs,
        row_of=torch.tensor([prefix_keys.index(keys[k]) for k in rows], dtype=torch.long),
        shift=torch.tensor(shift, dtype=torch.long),
        tokens=int(prefix_mask.sum() + suffix_mask.sum()),
        unshared_tokens=total,
    )


def _token_ids(
    requests: Sequence[RatingRequest],
    texts: Sequence[str],
    processor: Any,
    tokenizer: Any,
    image_ids: frozenset,
    with_images: bool,
) -> tuple[Any, list, list, list] | None:
    """``(expanded vision inputs or None, each request's prefix key, token ids, last image position)``:
    requests share a prefix by image (with images) or by group (text only). ``None``: the image
    placeholders cannot be expanded here."""
    if with_images:
        expanded = placeholders.expand(requests, texts, processor, tokenizer, image_ids)
        if expanded is None:
            return None
        return expanded, [r.image_digest for r in requests], expanded.ids, expanded.last_vision
    # The plain path's tokenisation: the processor's (special tokens as it adds them) or, for a text-only
    # model, the bare tokenizer without special tokens (the chat template has them).
    ids = tokenizer(list(texts), add_special_tokens=processor is not None)["input_ids"]
    return None, [r.group for r in requests], ids, [-1] * len(requests)


def _prefix_lengths(ids: list, members: dict, last_image: list, keep: int) -> tuple[dict, dict] | None:
    """One prefix per key: the longest common prefix of its requests' ids, leaving ``keep`` positions to
    read in every request and covering every image token; ``spare``: its last tokens a suffix may run
    again (text after the image; the cache keeps at least one token). ``None``: nothing to share, or the
    requests of a key part before their image ends."""
    prefix_len, spare = {}, {}
    for d, member in members.items():
        rows = [ids[k] for k in member]
        common = min(len(x) for x in rows) - keep
        for pos in range(common):
            if any(x[pos] != rows[0][pos] for x in rows[1:]):
                common = pos
                break
        image_end = max(last_image[k] for k in member) + 1
        if common < max(image_end, 1):
            return None
        prefix_len[d] = common
        spare[d] = common - max(image_end, 1)
    return prefix_len, spare


def _continuations(ids: list, keys: list, prefix_len: dict, spare: dict, window: int | None) -> tuple[list, list]:
    """``(rows, shift)``: the requests the shared path answers exactly and, for each, how many of its
    prefix's last tokens its suffix runs again.

    Without a sliding window: every request, no shift. With one (``window`` tokens), a request whose whole
    span (prefix + padded suffix) fits in the window is exact as it is; otherwise, if its suffix is ``d``
    tokens shorter than the longest, it runs ``min(d, spare)`` prefix tokens again, and if padding is still
    left it goes to the plain path (the longest suffix is then measured again without it).

    >>> ids, keys = [[0] * 10, [0] * 14, [0] * 30], ["a", "a", "b"]  # suffixes of 4, 8 and 24 tokens
    >>> _continuations(ids, keys, {"a": 6, "b": 6}, {"a": 3, "b": 3}, window=None)
    ([0, 1, 2], [0, 0, 0])
    >>> _continuations(ids, keys, {"a": 6, "b": 6}, {"a": 3, "b": 3}, window=40)  # every span (30) fits
    ([0, 1, 2], [0, 0, 0])
    >>> _continuations(ids, keys, {"a": 6, "b": 6}, {"a": 3, "b": 3}, window=20)  # 0, 1: gaps of 17 and 13
    ([2], [0])
    >>> _continuations(ids[:2], keys[:2], {"a": 6}, {"a": 3}, window=12)  # 0 runs 3 again, 1 token of padding left
    ([0, 1], [3, 0])
    """
    rows = list(range(len(ids)))
    if window is None:
        return rows, [0] * len(rows)
    while rows:
        longest = max(len(ids[k]) - prefix_len[keys[k]] for k in rows)
        shift, late = [], []
        for k in rows:
            short = longest - (len(ids[k]) - prefix_len[keys[k]])
            fits = prefix_len[keys[k]] + longest <= window  # every key in every query's window, gap or not
            again = 0 if fits else min(short, spare[keys[k]])
            shift.append(again)
            if short > again and prefix_len[keys[k]] - again + longest > window:
                late.append(k)
        if not late:
            return rows, shift
        logger.debug("%d request(s) span more than the %d-token window with padding: plain path", len(late), window)
        rows = [k for k in rows if k not in late]
    return [], []


def _pad_left(rows: list) -> Any:
    """Per-token tensors (first dimension: tokens) stacked and left-padded with zeros."""
    width = max(len(r) for r in rows)
    out = rows[0].new_zeros((len(rows), width, *rows[0].shape[1:]))
    for k, row in enumerate(rows):
        if len(row):
            out[k, width - len(row) :] = row
    return out


def mrope_positions(model: Any, inputs: dict) -> tuple | None:
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
    kwargs = {
        k: inputs[k] for k in ("image_grid_thw", "attention_mask", "mm_token_type_ids") if k in inputs and k in accepted
    }
    try:
        positions, deltas = rope_index(inputs["input_ids"], **kwargs)
    except (TypeError, ValueError, RuntimeError, IndexError, StopIteration) as err:
        logger.debug("M-RoPE positions left to the model: %s", err)
        return None
    return positions, deltas


def cache_keyword(model: Any) -> str:
    """The forward keyword that takes a KV cache: ``cache`` in transformers >= 5.24 (``past_key_values`` is
    deprecated there, with a warning on every call, and removed in 5.40), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def returned_cache(out: Any) -> Any:
    """The KV cache a forward pass returned, under either name (see :func:`cache_keyword`)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def shared_logits(model: Any, shared: SharedPrefixBatch, keep: int, layout: AttentionLayout) -> Any:
    """Run each distinct prefix once, copy its KV cache to the requests that continue it (shifted where
    they run some of its tokens again), then run the suffixes: (requests, keep, vocab) float32 logits for
    ``shared.rows``, as the plain path returns for the full prompts."""
    import torch
    from torch.profiler import record_function

    device = model.device
    kv_keyword = cache_keyword(model)  # (it inspects the signature: once a batch, not per forward)
    # Inputs prepared in pinned memory (see TransformersJudge._prepare_rating) are copied without waiting.
    prefix = {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in shared.prefix.items()}
    row_of, shift = shared.row_of.to(device, non_blocking=True), shared.shift.to(device, non_blocking=True)
    suffix_ids = shared.suffix_ids.to(device, non_blocking=True)
    suffix_mask = shared.suffix_mask.to(device, non_blocking=True)
    core = getattr(model, "model", None)
    mrope = core is not None and hasattr(core, "rope_deltas")
    if mrope:
        core.rope_deltas = None  # never reuse M-RoPE offsets from an earlier call
    precomputed = shared.mrope  # M-RoPE positions computed on the CPU while preparing
    if precomputed is not None:
        prefix["position_ids"] = precomputed[0].to(device, non_blocking=True)
    elif not (mrope and shared.images):
        # Prefixes of different lengths are left-padded: count positions from each row's first real
        # token (as the suffix positions below do), not from the padded row's start.
        prefix["position_ids"] = (prefix["attention_mask"].long().cumsum(dim=1) - 1).clamp(min=0)
    if layout.window is not None:
        from transformers import DynamicCache

        # Every prefix position kept (a windowed cache keeps only the last `window`): the shifted copies
        # below need the positions the window reaches from the tokens run again.
        prefix[kv_keyword] = DynamicCache()
    with record_function("mmjudge.judge.prefix"):
        out = model(**prefix, use_cache=True, logits_to_keep=1)
    cache = returned_cache(out)
    deltas = precomputed[1] if precomputed is not None else getattr(core, "rope_deltas", None)
    shifted = bool(shared.shift.any())  # read on the CPU copy: on the device it would wait for the prefix pass
    prefix_mask = branch_cache(cache, prefix["attention_mask"], row_of, shift, layout.cross_attention_layers, shifted)
    mask = torch.cat([prefix_mask, suffix_mask], dim=1)
    # Positions continue from each prefix's real (unpadded, unshifted) length, as in the unshared prompt.
    positions = prefix_mask.sum(dim=1)[:, None] + suffix_mask.long().cumsum(dim=1) - 1
    positions = positions.masked_fill(suffix_mask == 0, 1)
    if deltas is not None:  # Qwen2-VL M-RoPE: text after the image is offset by rope_deltas, on 3 axes
        positions = (positions + deltas.to(device)[row_of]).unsqueeze(0).expand(3, -1, -1)
    extra = {k: v.to(device, non_blocking=True) for k, v in shared.suffix_inputs.items()}
    with record_function("mmjudge.judge.suffix"):
        out = model(
            input_ids=suffix_ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=keep,
            **{kv_keyword: cache},
            **extra,
        )
    if mrope:
        core.rope_deltas = None
    return out.logits[:, -keep:, :].float()


def branch_cache(
    cache: Any,
    prefix_mask: Any,
    row_of: Any,
    shift: Any,
    cross_attention_layers: frozenset = frozenset(),
    shifted: bool | None = None,
) -> Any:
    """Make row ``i`` of ``cache`` the prefix of request ``i`` (row ``row_of[i]``), its last ``shift[i]``
    positions moved to the front and masked (the request runs those tokens again); returns the requests'
    prefix attention mask. Cross-attention layers (image keys, not prompt positions) are only selected.
    ``shifted``: whether any ``shift`` is non-zero, when the caller knows it (else read from ``shift``)."""
    import torch

    mask = prefix_mask[row_of]
    if not (bool(shift.any()) if shifted is None else shifted):
        cache.batch_select_indices(row_of)
        return mask
    length = prefix_mask.shape[1]
    slots = torch.arange(length, device=shift.device)
    source = (slots[None, :] - shift[:, None]) % length  # slot j of request i holds old slot j - shift[i]
    for index, layer in enumerate(cache.layers):
        keys = getattr(layer, "keys", None)
        if index in cross_attention_layers or keys is None or keys.dim() != 4 or keys.shape[-2] != length:
            layer.batch_select_indices(row_of)
            continue
        # (requests, length, heads, dim) by advanced indexing, back to (requests, heads, length, dim)
        layer.keys = keys[row_of[:, None], :, source].transpose(1, 2)
        layer.values = layer.values[row_of[:, None], :, source].transpose(1, 2)
    return mask.gather(1, source).masked_fill(slots[None, :] < shift[:, None], 0)
