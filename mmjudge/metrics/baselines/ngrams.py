"""Vectorised n-gram counting shared by BLEU and CIDEr-D: every distinct n-gram of a call gets an
integer id, every sentence a sparse row of counts, so the metrics become array operations."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain

import numpy as np


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector while building many small objects that hold no cycles
    (it would otherwise rescan them again and again: a large share of the run time on big corpora)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class NgramCounts:
    """Counts of 1..n-grams for a list of sentences, as parallel arrays of non-zero entries.

    ``sentence[j]`` holds n-gram ``gram[j]`` (of order ``order[j]`` in 1..n) ``count[j]`` times; entries
    are sorted by sentence then gram. ``lengths`` are the sentences' word counts.
    """

    sentence: np.ndarray
    gram: np.ndarray
    order: np.ndarray
    count: np.ndarray
    lengths: np.ndarray
    n_grams: int


def count_ngrams(sentences: Sequence[str], n: int = 4) -> NgramCounts:
    """Split on whitespace and count 1..n-grams of every sentence, ids shared across the list.

    Each distinct sentence is counted once and its row copied for every repeat (a meta-evaluation gives
    the same references with every candidate of an image); the ids are those of counting every sentence,
    since the distinct sentences, in order of first appearance, meet the words in the same order.

    >>> counts = count_ngrams(["a dog", "a cat", "a dog"], n=2)
    >>> counts.sentence.tolist(), counts.gram.tolist(), counts.lengths.tolist()
    ([0, 0, 0, 1, 1, 1, 2, 2, 2], [0, 1, 3, 0, 2, 4, 0, 1, 3], [2, 2, 2])
    """
    position: dict[str, int] = {}
    which = np.fromiter(
        (position.setdefault(sentence, len(position)) for sentence in sentences), dtype=np.int64, count=len(sentences)
    )
    if len(position) == len(sentences):
        return _count_distinct(sentences, n)
    return _repeat_rows(_count_distinct(list(position), n), which)


def _repeat_rows(counts: NgramCounts, which: np.ndarray) -> NgramCounts:
    """The counts of sentences ``which`` (indices into the rows of ``counts``), as one row each."""
    sizes = np.bincount(counts.sentence, minlength=len(counts.lengths))
    starts = np.cumsum(sizes) - sizes  # entries are sorted by sentence: each row is one block
    row_sizes = sizes[which]
    row_of_entry = np.repeat(np.arange(len(which), dtype=np.int64), row_sizes)
    within = np.arange(len(row_of_entry), dtype=np.int64) - np.repeat(np.cumsum(row_sizes) - row_sizes, row_sizes)
    source = starts[which][row_of_entry] + within
    return NgramCounts(
        row_of_entry,
        counts.gram[source],
        counts.order[source],
        counts.count[source],
        counts.lengths[which],
        counts.n_grams,
    )


def _count_distinct(sentences: Sequence[str], n: int) -> NgramCounts:
    """:func:`count_ngrams` of every sentence given (no repeats looked for)."""
    with paused_gc():
        split = [sentence.split() for sentence in sentences]
        lengths = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        flat = list(chain.from_iterable(split))
        vocabulary = {word: i for i, word in enumerate(dict.fromkeys(flat))}
        words = np.fromiter(map(vocabulary.__getitem__, flat), dtype=np.int64, count=len(flat))
        del split, flat
    owner = np.repeat(np.arange(len(sentences), dtype=np.int64), lengths)
    remaining = (np.cumsum(lengths)[owner] - np.arange(len(words))) if len(words) else np.zeros(0, dtype=np.int64)
    vocab_size = max(len(vocabulary), 1)
    grams_sentence, grams_id, grams_order = [], [], []
    offset = 0
    previous = words  # ids of the (k-1)-gram starting at each position (k = 1: the word itself)
    for k in range(1, n + 1):
        valid = remaining >= k
        if k == 1:
            keys = words
        else:
            shifted = np.zeros_like(words)
            shifted[: max(len(words) - (k - 1), 0)] = words[k - 1 :]  # (none when the words are fewer than k - 1)
            keys = previous * vocab_size + shifted  # exact: both factors < 2**31 in practice
        positions = np.nonzero(valid)[0]
        if k == 1:  # word ids are already compact
            unique, inverse = np.arange(vocab_size), keys
        else:
            unique, inverse = np.unique(keys[positions], return_inverse=True)
        local = np.full(len(words), -1, dtype=np.int64)
        local[positions] = inverse
        previous = np.maximum(local, 0)
        grams_sentence.append(owner[positions])
        grams_id.append(inverse + offset)
        grams_order.append(np.full(len(positions), k, dtype=np.int64))
        offset += len(unique)
    sentence = np.concatenate(grams_sentence)
    gram = np.concatenate(grams_id)
    order = np.concatenate(grams_order)
    key = sentence * max(offset, 1) + gram
    unique_key, first, count = np.unique(key, return_index=True, return_counts=True)
    return NgramCounts(sentence[first], gram[first], order[first], count.astype(np.float64), lengths, offset)


def flatten(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[list[str], np.ndarray]:
    """Candidates followed by all references, and the item each reference belongs to."""
    item_of_ref = np.repeat(np.arange(len(references)), [len(r) for r in references])
    return list(candidates) + [r for refs in references for r in refs], item_of_ref


def lookup(keys: np.ndarray, table_keys: np.ndarray, table_values: np.ndarray) -> np.ndarray:
    """``table_values`` at ``keys`` (``table_keys`` sorted, unique); 0 where a key is absent."""
    if len(table_keys) == 0:
        return np.zeros(len(keys))
    where = np.searchsorted(table_keys, keys)
    where = np.minimum(where, len(table_keys) - 1)
    found = table_keys[where] == keys
    return np.where(found, table_values[where], 0.0)


def distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: much faster than ``np.unique``'s hash path on large int arrays)."""
    ordered = np.sort(keys)
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def count_pair_ngrams(candidates: Sequence[str], references: Sequence[Sequence[str]], n: int = 4) -> NgramCounts:
    """n-gram counts of candidates and references in the layout BLEU and CIDEr-D take (``counts=``).

    >>> from mmjudge.metrics.baselines import compute_bleu, compute_cider_d
    >>> cands, refs = ["a dog runs", "a cat"], [["a dog runs fast"], ["a cat sleeps", "one cat"]]
    >>> counts = count_pair_ngrams(cands, refs)
    >>> compute_cider_d(cands, refs, counts=counts)[0] == compute_cider_d(cands, refs)[0]
    True
    """
    return count_ngrams(flatten(candidates, references)[0], n)


def pair_counts(
    candidates: Sequence[str], references: Sequence[Sequence[str]], n: int, counts: NgramCounts | None = None
) -> tuple[np.ndarray, NgramCounts]:
    """The item of each reference and the n-gram counts of candidates + references: ``counts`` when given
    (checked to belong to these sentences), else counted here. Shared by BLEU and CIDEr-D."""
    sentences, item_of_ref = flatten(candidates, references)
    if counts is None:
        counts = count_ngrams(sentences, n)
    elif len(counts.lengths) != len(sentences) or counts.order.max(initial=n) != n:
        raise ValueError(f"`counts` do not belong to these {len(sentences)} sentences and n = {n}.")
    return item_of_ref, counts
