"""Identical items scored once, counted as often as they occur.

A meta-evaluation repeats items: Flickr8k-Expert has one row per human judgment, so each (candidate,
references) pair comes three times (16,992 rows, 5,664 distinct pairs). An item's BLEU, ROUGE-L and
CIDEr-D depend only on the item and on corpus statistics, so each distinct item is scored once and the
corpus statistics count it ``multiplicity`` times (BLEU's pooled counts, CIDEr-D's number of items and
document frequencies): the numbers are those of scoring every row. An item's SPICE depends on the item alone,
so its jar gets each distinct item once as well; METEOR's corpus figure pools its jar's statistics over the
rows, so it gets every row.

>>> items = distinct_items(["a dog", "a cat", "a dog"], [["a dog runs"], ["a cat"], ["a dog runs"]])
>>> items.candidates, items.references, items.index.tolist(), items.multiplicity.tolist()
(['a dog', 'a cat'], [['a dog runs'], ['a cat']], [0, 1, 0], [2, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class DistinctItems:
    """The distinct items of a call, in order of first appearance.

    ``index[row]`` is the distinct item a row is (``per_item[index]`` gives one value per row);
    ``multiplicity[i]`` how many rows distinct item ``i`` stands for."""

    candidates: list[str]
    references: list[list[str]]
    index: np.ndarray
    multiplicity: np.ndarray


def distinct_items(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> DistinctItems:
    """Group rows with the same candidate and the same references (in the same order)."""
    position: dict[tuple[str, tuple[str, ...]], int] = {}
    index = np.empty(len(candidates), dtype=np.int64)
    cands: list[str] = []
    refs: list[list[str]] = []
    for row, (candidate, group) in enumerate(zip(candidates, references)):
        key = (candidate, tuple(group))
        found = position.get(key)
        if found is None:
            found = position[key] = len(cands)
            cands.append(candidate)
            refs.append(list(group))
        index[row] = found
    return DistinctItems(cands, refs, index, np.bincount(index, minlength=len(cands)))
