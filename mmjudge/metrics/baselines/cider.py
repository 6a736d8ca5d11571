"""CIDEr-D as pycocoevalcap computes it (Vedantam et al. 2015).

Each sentence becomes, for n = 1..4, a TF-IDF vector of its n-grams with
idf(g) = log(N) − log(max(1, df(g))), where ``N`` is the number of items in the call and ``df(g)`` the
number of items whose *references* contain ``g``. **The document frequencies therefore come from the
references of the whole call**: the same candidate scores differently in a different corpus, and
scoring items one at a time gives meaningless numbers (idf is 0 when ``N`` = 1). Score papers' test
sets in one call.

Per n: the candidate's weights are clipped to the reference's (min(c, r)·r summed, over the norms), a
Gaussian length penalty exp(−δ²/2σ²) with σ = 6 is applied, where δ is the difference of the
sentences' *bigram* counts (what pycocoevalcap measures as "length"), the four orders are averaged,
averaged over the references and multiplied by 10.

>>> score, per_item = compute_cider_d(["a dog runs", "a cat sleeps"], [["a dog runs fast"], ["a cat is sleeping"]])
>>> [round(float(x), 4) for x in per_item]
[5.7696, 2.0131]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from mmjudge.metrics.baselines.ngrams import NgramCounts, distinct, lookup, pair_counts


def _ngram_counts(sentence: str, n: int) -> Counter:
    words = sentence.split()
    counts: Counter = Counter()
    for k in range(1, n + 1):
        counts.update(zip(*(words[i:] for i in range(k))))
    return counts


def document_frequencies(references: Sequence[Sequence[str]], n: int = 4) -> Counter:
    """For each n-gram, the number of items whose references contain it (the CIDEr "documents")."""
    df: Counter = Counter()
    for refs in references:
        seen = set()
        for ref in refs:
            seen.update(_ngram_counts(ref, n))
        df.update(seen)
    return df


def compute_cider_d(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    n: int = 4,
    sigma: float = 6.0,
    counts: NgramCounts | None = None,
    multiplicity: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Mean CIDEr-D and per-item CIDEr-D (array of length ``items``); see the module docstring on idf.

    ``counts``: the call's n-gram counts from :func:`mmjudge.metrics.baselines.count_pair_ngrams`, to share the
    counting with BLEU (computed here when not given). ``multiplicity``: how many rows each item stands
    for (:mod:`mmjudge.metrics.baselines.distinct`): the number of items, the document frequencies and the
    mean count each item that often, so the scores are those of the repeated rows.

    >>> _, once = compute_cider_d(["a dog", "a cat"], [["a dog runs"], ["a cat"]], multiplicity=[2, 1])
    >>> _, rows = compute_cider_d(["a dog", "a dog", "a cat"], [["a dog runs"], ["a dog runs"], ["a cat"]])
    >>> once.tolist() == rows[[0, 2]].tolist()
    True
    """
    n_items = len(candidates)
    item_of_ref, counts = pair_counts(candidates, references, n, counts)
    grams = max(counts.n_grams, 1)
    is_ref = counts.sentence >= n_items
    ref_sentence = counts.sentence[is_ref] - n_items
    ref_item = item_of_ref[ref_sentence]
    weight = np.ones(n_items) if multiplicity is None else np.asarray(multiplicity, dtype=np.float64)
    # document frequency: in how many items' reference sets each n-gram occurs (an item counted as many
    # times as it stands for; whole numbers held as floats, so the sums are exact)
    item_grams = distinct(ref_item * grams + counts.gram[is_ref])
    df = np.bincount(item_grams % grams, weight[item_grams // grams], minlength=grams)
    log_items = math.log(float(weight.sum()))
    idf = log_items - np.log(np.maximum(1.0, df))
    weights = counts.count * idf[counts.gram]
    norms = np.sqrt(
        np.bincount(counts.sentence * n + counts.order - 1, weights**2, minlength=len(counts.lengths) * n)
    ).reshape(len(counts.lengths), n)
    bigrams = np.maximum(counts.lengths - 1, 0)  # pycocoevalcap's "length" is the bigram count
    # clipped dot products: Σ over the reference's n-grams of min(candidate weight, reference weight)·reference weight
    cand = ~is_ref
    cand_keys = counts.sentence[cand] * grams + counts.gram[cand]
    cand_weights = lookup(ref_item * grams + counts.gram[is_ref], cand_keys, weights[cand])
    ref_weights = weights[is_ref]
    n_refs = len(item_of_ref)
    dots = np.bincount(
        ref_sentence * n + counts.order[is_ref] - 1,
        np.minimum(cand_weights, ref_weights) * ref_weights,
        minlength=n_refs * n,
    ).reshape(n_refs, n)
    cand_norms, ref_norms = norms[item_of_ref], norms[n_items:]
    both = (cand_norms != 0) & (ref_norms != 0)
    cosines = np.where(both, dots / np.where(both, cand_norms * ref_norms, 1.0), dots)
    delta = (bigrams[item_of_ref] - bigrams[n_items:]).astype(np.float64)
    penalty = np.exp(-(delta**2) / (2 * sigma**2))
    per_ref = (cosines * penalty[:, None]).sum(axis=1)
    refs_per_item = np.array([len(r) for r in references], dtype=np.float64)
    scores = np.bincount(item_of_ref, per_ref, minlength=n_items) / n / refs_per_item * 10.0
    mean = np.mean(scores) if multiplicity is None else np.average(scores, weights=weight)
    return float(mean), scores
