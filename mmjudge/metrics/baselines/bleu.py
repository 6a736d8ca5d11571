"""BLEU-1..n exactly as pycocoevalcap computes it (Papineni et al. 2002, the captioning variant).

Inputs are tokenised strings (:func:`mmjudge.metrics.baselines.ptb_tokenize`), split on whitespace. Clipped
n-gram counts against the per-n-gram maximum over the references; the effective reference length is
the *closest* reference length (the shorter one on ties); brevity penalty exp(1 − r/c) when c < r.
Per-sentence scores use the same formula on one sentence, with pycocoevalcap's smoothing constants
(1e-15 added to matches, 1e-9 to totals), so a sentence with no 4-gram match gets a tiny, not zero,
BLEU-4. BLEU-k is the geometric mean of the 1..k precisions.

>>> corpus, per_item = compute_bleu(["a dog runs on the beach"], [["a dog runs on the sand", "a dog on a beach"]])
>>> [round(x, 4) for x in corpus]
[1.0, 0.8944, 0.8434, 0.7953]
>>> per_item.shape
(4, 1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmjudge.metrics.baselines.ngrams import NgramCounts, lookup, pair_counts

_TINY = 1e-15
_SMALL = 1e-9


def compute_bleu(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    n: int = 4,
    counts: NgramCounts | None = None,
    multiplicity: np.ndarray | None = None,
) -> tuple[list[float], np.ndarray]:
    """Corpus BLEU-1..n (list of ``n`` floats) and per-item BLEU-1..n (array of shape ``(n, items)``).

    ``counts``: the call's n-gram counts from :func:`mmjudge.metrics.baselines.count_pair_ngrams`, to share the
    counting with CIDEr-D (computed here when not given). ``multiplicity``: how many rows each item stands
    for (:mod:`mmjudge.metrics.baselines.distinct`); the corpus figure pools each item's counts that often.

    >>> cands, refs = ["a dog runs", "a cat"], [["a dog runs fast"], ["one cat sleeps"]]
    >>> corpus, _ = compute_bleu(cands, refs, multiplicity=[2, 1])
    >>> corpus == compute_bleu([cands[0], *cands], [refs[0], *refs])[0] != compute_bleu(cands, refs)[0]
    True
    """
    n_items = len(candidates)
    item_of_ref, counts = pair_counts(candidates, references, n, counts)
    grams = max(counts.n_grams, 1)
    is_ref = counts.sentence >= n_items
    # the most times each n-gram occurs in any one reference of the item
    ref_item = item_of_ref[counts.sentence[is_ref] - n_items]
    ref_keys = ref_item * grams + counts.gram[is_ref]
    ordering = np.argsort(ref_keys)
    ref_keys, ref_counts = ref_keys[ordering], counts.count[is_ref][ordering]
    starts = np.flatnonzero(np.diff(ref_keys, prepend=-1))
    unique_keys = ref_keys[starts]
    max_counts = np.maximum.reduceat(ref_counts, starts) if len(starts) else np.zeros(0)
    # clipped matches of the candidate's n-grams
    cand = ~is_ref
    cand_items = counts.sentence[cand]
    clipped = np.minimum(counts.count[cand], lookup(cand_items * grams + counts.gram[cand], unique_keys, max_counts))
    correct = np.bincount(cand_items * n + counts.order[cand] - 1, clipped, minlength=n_items * n).reshape(n_items, n)
    test_lengths = counts.lengths[:n_items].astype(np.float64)
    guess = np.maximum(0, test_lengths[:, None] - np.arange(n)[None, :])
    # closest reference length, the shorter one on ties
    ref_lengths_all = counts.lengths[n_items:]
    tie_break = ref_lengths_all.max(initial=0) + 1
    keyed = np.abs(ref_lengths_all - counts.lengths[item_of_ref]) * tie_break + ref_lengths_all
    group_starts = np.concatenate([[0], np.cumsum([len(r) for r in references])[:-1]])
    ref_lengths = (np.minimum.reduceat(keyed, group_starts) % tie_break).astype(np.float64)
    per_item = _bleu_from_stats(correct, guess, test_lengths, ref_lengths)
    # pooled statistics (integers held as floats: the weighted sums are exact)
    weight = np.ones(n_items) if multiplicity is None else np.asarray(multiplicity, dtype=np.float64)
    corpus = _bleu_from_stats(
        (correct * weight[:, None]).sum(0)[None],
        (guess * weight[:, None]).sum(0)[None],
        (test_lengths * weight).sum()[None],
        (ref_lengths * weight).sum()[None],
    )
    return [float(x) for x in corpus[:, 0]], per_item


def _bleu_from_stats(correct: np.ndarray, guess: np.ndarray, test_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """BLEU-1..n per row of sufficient statistics, shape ``(n, rows)``."""
    n = correct.shape[1]
    log_precisions = np.log((correct + _TINY) / (guess + _SMALL))
    orders = np.arange(1, n + 1)
    scores = np.exp(np.cumsum(log_precisions, axis=1) / orders)
    ratio = (test_len + _TINY) / (ref_len + _SMALL)
    penalty = np.where(ratio < 1, np.exp(1 - 1 / np.minimum(ratio, 1)), 1.0)
    return (scores * penalty[:, None]).T
