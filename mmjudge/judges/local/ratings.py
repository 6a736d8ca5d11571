"""Ratings read off a local model's logits: which single tokens spell each rating, and the rating
distribution (summed over a rating's token variants) at the positions a request asked for.

The full-vocabulary softmax is reduced where it was computed (on the GPU), so a few numbers per request
cross to the CPU instead of the full-vocabulary rows (about 150 MB per batch of 240 with Qwen's 152k
vocabulary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mmjudge.judges.requests import PrefixStep, RatingRequest, RatingResult

# Word-boundary markers that tokenizers put in front of a piece ("Ġ3" in byte-level BPE, "▁3" in
# SentencePiece): a rating token with or without one is the same rating.
_BOUNDARY_MARKS = ("Ġ", "▁", " ")


def rating_token_ids(tokenizer: Any, choices: Sequence[str]) -> list[list[int]]:
    """For each choice string, the ids of every single token that spells exactly that choice.

    Raises:
        ValueError: if a choice has no single token, or two choices share a token.
    """
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    wanted = {str(c).strip(): i for i, c in enumerate(choices)}
    found: list[set[int]] = [set() for _ in choices]
    for token, token_id in tokenizer.get_vocab().items():
        if token_id in special or len(token) > 8:
            continue
        bare = token
        for mark in _BOUNDARY_MARKS:
            bare = bare.replace(mark, "")
        if bare in wanted and tokenizer.decode([token_id]).strip() == bare:
            found[wanted[bare]].add(token_id)
    for i, choice in enumerate(choices):  # tokenizers whose vocab keys are not the surface form
        for text in (str(choice), " " + str(choice)):
            ids = tokenizer.encode(text, add_special_tokens=False)
            if ids and tokenizer.decode([ids[-1]]).strip() == str(choice).strip():
                found[i].add(ids[-1])
    for choice, ids in zip(choices, found):
        if not ids:
            raise ValueError(
                f"The rating {choice!r} is not a single token of this tokenizer, so its probability cannot be "
                "read from one forward pass. Use a scale whose ratings are single tokens."
            )
    seen: dict[int, str] = {}
    for choice, ids in zip(choices, found):
        for token_id in ids:
            if token_id in seen:
                raise ValueError(f"Ratings {seen[token_id]!r} and {choice!r} share token id {token_id}.")
            seen[token_id] = choice
    return [sorted(ids) for ids in found]


def reduce_on_device(
    requests: Sequence[RatingRequest], probs: Any, choice_ids: Callable[[tuple], list[list[int]]]
) -> tuple[list, Any]:
    """``(ratings, greedy)`` on the CPU from ``probs`` (batch, keep, vocab) on the model's device: per
    request, each rating's probability summed over its token variants ``(keep, choices)``, and the greedy
    token id ``(keep,)``. ``choice_ids(choices)`` gives a scale's token ids (one lookup per scale)."""
    import torch

    ratings: list = [None] * len(requests)
    parts = []  # (rows, their sums on the device), one per rating scale
    for choices in dict.fromkeys(tuple(r.choices) for r in requests):
        rows = [k for k, r in enumerate(requests) if tuple(r.choices) == choices]
        id_lists = choice_ids(choices)
        flat = torch.tensor([i for ids in id_lists for i in ids]).to(probs.device, non_blocking=True)
        owner = torch.tensor([c for c, ids in enumerate(id_lists) for _ in ids]).to(probs.device, non_blocking=True)
        picked = probs if len(rows) == len(requests) else probs[torch.tensor(rows).to(probs.device, non_blocking=True)]
        picked = picked.index_select(-1, flat)
        sums = torch.zeros(*picked.shape[:-1], len(id_lists), dtype=picked.dtype, device=picked.device)
        parts.append((rows, sums.index_add_(-1, owner, picked)))
    # Every result copied back without waiting, then ONE wait (a .cpu() per tensor would wait once each).
    on_host = [t.to("cpu", non_blocking=True) for t in [sums for _, sums in parts] + [probs.argmax(dim=-1)]]
    if probs.device.type == "cuda":
        torch.cuda.current_stream(probs.device).synchronize()
    for (rows, _), sums in zip(parts, on_host):
        for k, row in zip(rows, sums):
            ratings[k] = row
    return ratings, on_host[-1]


def read_ratings(
    requests: Sequence[RatingRequest],
    ratings: Sequence,
    greedy_ids: Any,
    offsets: Sequence[list[int] | None],
    decode: Callable[[list[int]], str],
) -> list[RatingResult]:
    """Results from :func:`reduce_on_device`'s per-request ratings and greedy ids (row -1: the answer;
    with ``read_prefix``, the rows before it are the positions inside the answer prefix)."""
    results = []
    for request, rows, greedy_row, prefix_offsets in zip(requests, ratings, greedy_ids, offsets):

        def read(position: int, rows=rows, greedy_row=greedy_row) -> tuple[list[float], str]:
            return rows[position].tolist(), decode([int(greedy_row[position])])

        raw, greedy = read(-1)
        steps = None
        if request.read_prefix:
            # row -1 follows the whole prefix; the distribution before prefix token j is row -1 - count + j
            count = len(prefix_offsets or [])
            steps = [PrefixStep(o, *read(-1 - count + j)) for j, o in enumerate(prefix_offsets or [])]
        results.append(RatingResult(raw=raw, greedy=greedy, steps=steps))
    return results
