"""The ids a stream has met, in about 16 bytes each, so a repeated id fails its item without the stream's
memory growing by a Python string and dict entry per item (about 190 bytes: 190 MB at a million items).

Each id is kept as a 64-bit hash with the input position of the item that had it first: recent ones in a
dict, older ones folded into two sorted numpy arrays. Two distinct ids share a hash with probability about
n²/2⁶⁵ (3·10⁻⁸ at a million items); such a pair would read as a repeat, which fails the later item's row with
the reason said, never changes a score.

>>> ids = SeenIds()
>>> ids.first_position("a", 0), ids.first_position("b", 1), ids.first_position("a", 2)
(None, None, 0)
>>> ids = SeenIds(fold_at=2)
>>> [ids.first_position(str(k % 5), k) for k in range(8)]
[None, None, None, None, None, 0, 1, 2]
"""

from __future__ import annotations

import hashlib

import numpy as np

# Recent ids wait in a dict (about 100 bytes each) until there are this many; then they are sorted and merged
# into the arrays, a copy of the arrays (16 bytes per id) once every FOLD_AT items.
FOLD_AT = 65_536


class SeenIds:
    """Ids met so far, with the input position of the first item that had each."""

    def __init__(self, fold_at: int = FOLD_AT):
        self._fold_at = int(fold_at)
        self._recent: dict[int, int] = {}
        self._hashes = np.empty(0, dtype=np.uint64)
        self._positions = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._recent) + int(self._hashes.size)

    def first_position(self, item_id: str, position: int) -> int | None:
        """The input position of an earlier item with ``item_id``; ``None`` if it is new (it is remembered
        at ``position``)."""
        key = int.from_bytes(
            hashlib.blake2b(item_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
        )
        earlier = self._recent.get(key)
        if earlier is not None:
            return earlier
        if self._hashes.size:
            at = int(np.searchsorted(self._hashes, np.uint64(key)))
            if at < self._hashes.size and int(self._hashes[at]) == key:
                return int(self._positions[at])
        self._recent[key] = int(position)
        if len(self._recent) >= self._fold_at:
            self._fold()
        return None

    def _fold(self) -> None:
        count = len(self._recent)
        hashes = np.fromiter(self._recent.keys(), dtype=np.uint64, count=count)
        positions = np.fromiter(self._recent.values(), dtype=np.int64, count=count)
        order = np.argsort(hashes)
        hashes, positions = hashes[order], positions[order]
        at = np.searchsorted(self._hashes, hashes)
        self._hashes = np.insert(self._hashes, at, hashes)
        self._positions = np.insert(self._positions, at, positions)
        self._recent = {}
