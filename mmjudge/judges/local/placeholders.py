"""A batch of prompts about images as token ids, with each distinct image preprocessed once.

The plain path hands every prompt and its image to the processor, which preprocesses the image and replaces
the prompt's image placeholder with the image's markup (``<image>`` repeated, Idefics3's tile grid,
InternVL's ``<img>…</img>``, Pixtral's rows closed by ``[IMG_BREAK]``, Gemma 3's ``<start_of_image>`` soft
tokens ``<end_of_image>``, …). Here the processor runs once per DISTINCT image, on the first prompt about
it, and reports the markup it wrote (``return_text_replacement_offsets``; Mllama, whose placeholder stays
one ``<|image|>`` token, answers through ``replace_image_token``). Every other prompt about that image gets
the same markup and is tokenised as the processor tokenises. Nothing is assumed: the first prompt's ids
must equal the processor's own ids, or :func:`expand` gives up (``None``) and the plain path answers.

Per-token inputs (Gemma 3's ``token_type_ids``, Qwen's ``mm_token_type_ids``, Mllama's
``cross_attention_mask``) are taken from the processor's row for the tokens a prompt shares with the first
prompt (the image and what precedes it); for the text after that, they must be constant in the processor's
row (text after an image: type 0, "sees the image"), and that value is used.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.judges.requests import RatingRequest

logger = logging.getLogger(__name__)


@dataclass
class ExpandedPrompts:
    """Prompts about images, ready to be split into a shared prefix and suffixes.

    Attributes:
        digests: the distinct images, in the order of ``vision``'s rows.
        vision: model inputs of the distinct images that are not per token (``pixel_values``,
            ``image_grid_thw``, ``aspect_ratio_ids`` …), as the processor returned them.
        ids: token ids of each request's full prompt, as the processor gives them.
        per_token: per-token input name → for each request, a tensor whose first dimension runs over its ids.
        last_vision: for each request, the position of its last image token (those replaced by vision
            features or marking where cross-attention starts).
    """

    digests: list
    vision: dict
    ids: list
    per_token: dict
    last_vision: list


def vision_token_ids(model: Any, processor: Any) -> frozenset:
    """Ids of the tokens that stand for an image in the sequence: the model's ``image_token_id`` /
    ``image_token_index`` (replaced by vision features, or Mllama's cross-attention marker) and the
    processor's ``image_token_id``."""
    found = {getattr(model.config, name, None) for name in ("image_token_id", "image_token_index")}
    found.add(getattr(processor, "image_token_id", None))
    return frozenset(int(i) for i in found if isinstance(i, int) and not isinstance(i, bool))


def expand(
    requests: Sequence[RatingRequest], texts: Sequence[str], processor: Any, tokenizer: Any, image_ids: frozenset
) -> ExpandedPrompts | None:
    """The :class:`ExpandedPrompts` of ``requests`` (every one with an image, ``texts`` their rendered
    prompts), or ``None`` where the processor's expansion cannot be reproduced exactly."""
    image_token = getattr(processor, "image_token", None)
    if not image_token or not image_ids or any(t.count(image_token) != 1 for t in texts):
        return None  # no placeholder to expand, or other than one image per prompt
    digests = list(dict.fromkeys(r.image_digest for r in requests))
    first = [next(k for k, r in enumerate(requests) if r.image_digest == d) for d in digests]
    try:
        vision = processor(
            text=[texts[k] for k in first],
            images=[[requests[k].image] for k in first],
            return_tensors="pt",
            padding=True,
            return_text_replacement_offsets=True,
        )
    except (TypeError, ValueError) as err:
        logger.debug("shared prefix off: the processor refused the distinct images (%s)", err)
        return None
    vision = dict(vision)
    markup = _markup(processor, vision, len(first))
    if markup is None:
        return None
    of = dict(zip(digests, markup))
    expanded = [t.replace(image_token, of[r.image_digest], 1) for t, r in zip(texts, requests)]
    own = [row[mask.bool()].tolist() for row, mask in zip(vision["input_ids"], vision["attention_mask"])]
    ids = _tokenise_as_processor(tokenizer, expanded, first, own)
    if ids is None:
        return None
    last_vision = [max((p for p, t in enumerate(row) if t in image_ids), default=-1) for row in ids]
    if min(last_vision) < 0:
        return None
    width = vision["input_ids"].shape
    per_token = {}
    for name in [n for n, v in vision.items() if n not in ("input_ids", "attention_mask")]:
        value = vision[name]
        if hasattr(value, "shape") and value.dim() >= 2 and tuple(value.shape[:2]) == tuple(width):
            group = [digests.index(r.image_digest) for r in requests]
            rows = _per_token_rows(value, vision["attention_mask"], ids, first, group, last_vision)
            if rows is None:
                logger.debug("shared prefix off: %s is not constant after the image", name)
                return None
            per_token[name] = rows
            del vision[name]
    for name in ("input_ids", "attention_mask", "text_replacement_offsets"):
        vision.pop(name, None)
    return ExpandedPrompts(digests=digests, vision=vision, ids=ids, per_token=per_token, last_vision=last_vision)


def _markup(processor: Any, vision: dict, count: int) -> list[str] | None:
    """What the processor wrote in place of each distinct image's placeholder."""
    offsets = vision.get("text_replacement_offsets")
    if offsets is not None:
        found = [[o for o in row if o.get("type") == "image"] for row in offsets]
        if any(len(row) != 1 for row in found):
            return None
        return [row[0]["replacement"] for row in found]
    try:  # processors that do not report offsets (Mllama's own __call__): ask for each image's markup
        return [processor.replace_image_token(vision, i) for i in range(count)]
    except (NotImplementedError, KeyError, IndexError, TypeError, AttributeError) as err:
        logger.debug("shared prefix off: the processor does not tell its image markup (%s)", err)
        return None


def _tokenise_as_processor(tokenizer: Any, expanded: list, first: list, own: list) -> list | None:
    """Token ids of ``expanded``, with or without the tokenizer's special tokens: whichever reproduces the
    processor's own ids (``own``) for the prompts at ``first``; ``None`` if neither does."""
    for special in (True, False):
        if tokenizer([expanded[k] for k in first], add_special_tokens=special)["input_ids"] == own:
            return tokenizer(expanded, add_special_tokens=special)["input_ids"]
    logger.debug("shared prefix off: the processor's token ids could not be reproduced")
    return None


def _per_token_rows(value: Any, mask: Any, ids: list, first: list, group: list, last_vision: list) -> list | None:
    """For each request, ``value`` (the processor's per-token input for the distinct images' first prompts)
    along its own ids: the first prompt's values where the two prompts agree, then the constant that the
    first prompt's values keep after that point (``None`` if they do not keep one)."""
    import torch

    reference = [value[i][mask[i].bool()] for i in range(value.shape[0])]
    rows = []
    for k, row in enumerate(ids):
        own = reference[group[k]]
        mine = ids[first[group[k]]]
        agree = next((p for p, (a, b) in enumerate(zip(row, mine)) if a != b), min(len(row), len(mine)))
        if agree <= last_vision[k] or not bool((own[agree:] == own[-1]).all()):
            return None
        tail = own[-1:].expand(len(row) - agree, *own.shape[1:])
        rows.append(torch.cat([own[:agree], tail]))
    return rows
