"""ROUGE-L as pycocoevalcap computes it for captions (Lin 2004, β = 1.2).

Per item: the longest common subsequence (LCS) of the candidate with each reference gives a precision
LCS/|candidate| and a recall LCS/|reference|; the maximum precision and the maximum recall over the
references (taken separately) combine into F = (1 + β²)PR / (R + β²P). The corpus score is the mean.
Tokens are the candidate split on single spaces, as pycocoevalcap splits them.

The LCS length uses the bit-parallel algorithm (Allison & Dix 1986; Hyyrö 2004): one machine word
operation per reference token instead of a table of |candidate|·|reference| cells.

>>> score, per_item = compute_rouge_l(["a dog runs on the beach"], [["a dog on a beach", "a cat sleeps"]])
>>> round(score, 6), per_item.shape
(0.739394, (1,))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences.

    >>> lcs_length("a b c d".split(), "b d a".split())
    2
    """
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    return _lcs_with_masks(masks, len(a), b)


def _lcs_with_masks(masks: dict[str, int], length: int, b: Sequence[str]) -> int:
    full = (1 << length) - 1
    row = full  # bit i set: LCS does not grow at position i yet (Hyyrö's complemented vector)
    for token in b:
        match = masks.get(token)
        if match:
            low = row & match
            row = ((row + low) | (row - low)) & full
    return length - bin(row).count("1")


def compute_rouge_l(
    candidates: Sequence[str], references: Sequence[Sequence[str]], beta: float = 1.2
) -> tuple[float, np.ndarray]:
    """Mean ROUGE-L and per-item ROUGE-L (array of length ``items``)."""
    scores = np.zeros(len(candidates))
    beta2 = beta**2
    for item, (candidate, refs) in enumerate(zip(candidates, references)):
        tokens = candidate.split(" ")
        masks: dict[str, int] = {}
        for i, token in enumerate(tokens):
            masks[token] = masks.get(token, 0) | (1 << i)
        best_precision = best_recall = 0.0
        for ref in refs:
            ref_tokens = ref.split(" ")
            lcs = _lcs_with_masks(masks, len(tokens), ref_tokens)
            best_precision = max(best_precision, lcs / len(tokens))
            best_recall = max(best_recall, lcs / len(ref_tokens))
        if best_precision != 0 and best_recall != 0:
            scores[item] = (1 + beta2) * best_precision * best_recall / (best_recall + beta2 * best_precision)
    return float(np.mean(scores)), scores
