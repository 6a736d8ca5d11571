"""Which pairs to judge when ranking many systems: far fewer than all of them.

Round 0: every system against a few anchors (and the anchors against each other), on ``items_per_pair``
items each. After each round the Bradley–Terry strengths are refitted with bootstrap intervals
(:mod:`mmjudge.pairwise.bradley_terry`) and the systems put in order of strength; wherever two neighbours'
intervals overlap, they and the systems up to two places beyond them meet on ``items_per_pair`` more
items (two places, not one: a chain of neighbour-only battles leaves the middle of the ranking loosely
tied to the rest, and its intervals wide). It stops when every two neighbours are separated, when the
pairs around the overlaps have met on every item, or after ``max_rounds`` rounds. Where the ranking is
settled nothing more is judged.

Each pair of systems goes through the items in its own seeded random order, so a round's battles depend only
on the settings and the battles before it: a run killed in round 3 and started again schedules exactly the
same battles (:mod:`mmjudge.pairwise.arena` resumes it).

>>> schedule = AdaptiveSchedule(n_systems=5, n_items=100, anchors=(0, 4), items_per_pair=10)
>>> first = schedule.round(0, History.empty())
>>> len(first), sorted({(a, b) for a, b, _ in first})
(70, [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (3, 4)])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmjudge.metaeval.bootstrap import rng_for
from mmjudge.pairwise.bradley_terry import Strengths, fit_bradley_terry

DEFAULT_ANCHORS = 3
DEFAULT_ITEMS_PER_PAIR = 32
DEFAULT_MAX_ROUNDS = 20
SCHEDULE_BOOTSTRAP = 1000
# Neighbours whose intervals overlap meet each other and the systems up to this many places beyond: a
# chain of neighbour-only battles leaves the middle of the ranking loosely tied to the rest.
WINDOW = 2


def spread_anchors(n_systems: int, count: int = DEFAULT_ANCHORS) -> tuple[int, ...]:
    """``count`` systems spread evenly over the given order (the first and the last among them).

    >>> spread_anchors(20), spread_anchors(2)
    ((0, 10, 19), (0, 1))
    """
    count = max(1, min(count, n_systems))
    if count == 1:
        return (0,)
    return tuple(sorted({round(k * (n_systems - 1) / (count - 1)) for k in range(count)}))


@dataclass
class History:
    """The battles judged so far: system ``a`` vs ``b`` on item ``item`` with ``P(a ≻ b) = preference`` (NaN
    where the judge gave none: still a battle judged, never judged again)."""

    a: np.ndarray
    b: np.ndarray
    item: np.ndarray
    preference: np.ndarray

    @classmethod
    def empty(cls) -> History:
        return cls(*(np.zeros(0, dtype=np.int64) for _ in range(3)), np.zeros(0))

    def extended(self, a, b, item, preference) -> History:
        return History(
            np.concatenate([self.a, np.asarray(a, dtype=np.int64)]),
            np.concatenate([self.b, np.asarray(b, dtype=np.int64)]),
            np.concatenate([self.item, np.asarray(item, dtype=np.int64)]),
            np.concatenate([self.preference, np.asarray(preference, dtype=np.float64)]),
        )

    def __len__(self) -> int:
        return len(self.a)

    def met(self, i: int, j: int) -> int:
        """How many items systems ``i`` and ``j`` have met on (either way round)."""
        return int(np.sum(((self.a == i) & (self.b == j)) | ((self.a == j) & (self.b == i))))


class AdaptiveSchedule:
    """The rounds of an adaptive ranking (see the module).

    Args:
        n_systems, n_items: how many systems and items there are.
        anchors: the systems every other one meets in round 0 (default: three spread over the given order).
        items_per_pair: items two systems meet on per round.
        max_rounds: rounds at most (round 0 included).
        bootstrap, confidence, seed: the intervals the schedule decides on, and the item orders.
    """

    def __init__(
        self,
        n_systems: int,
        n_items: int,
        anchors: tuple[int, ...] | None = None,
        items_per_pair: int = DEFAULT_ITEMS_PER_PAIR,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        bootstrap: int = SCHEDULE_BOOTSTRAP,
        confidence: float = 0.95,
        seed: int = 0,
    ):
        if n_systems < 2:
            raise ValueError(f"Ranking needs at least two systems, but got {n_systems}.")
        if n_items < 1:
            raise ValueError("Ranking needs at least one item that every system has.")
        for name, value in (("items_per_pair", items_per_pair), ("max_rounds", max_rounds), ("bootstrap", bootstrap)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"Expected `{name}` to be a positive whole number, but got {value!r}"
                    + (" (the schedule decides on bootstrap intervals)." if name == "bootstrap" else ".")
                )
        self.n_systems, self.n_items = n_systems, n_items
        self.anchors = tuple(anchors) if anchors else spread_anchors(n_systems)
        if any(not 0 <= a < n_systems for a in self.anchors):
            raise ValueError(f"Anchors {self.anchors} are not all among the {n_systems} systems.")
        self.items_per_pair = min(items_per_pair, n_items)
        self.max_rounds = max_rounds
        self.bootstrap, self.confidence, self.seed = bootstrap, confidence, seed

    def settings(self) -> dict:
        """What decides the rounds (recorded with a ranking)."""
        return dict(
            anchors=list(self.anchors),
            items_per_pair=self.items_per_pair,
            max_rounds=self.max_rounds,
            schedule_bootstrap=self.bootstrap,
            confidence=self.confidence,
            seed=self.seed,
        )

    def item_order(self, i: int, j: int) -> np.ndarray:
        """The order in which systems ``i`` and ``j`` go through the items (the same whichever is first)."""
        low, high = min(i, j), max(i, j)
        return rng_for(self.seed, "pair-items", str(low), str(high)).permutation(self.n_items)

    def fit(self, history: History) -> Strengths:
        return fit_bradley_terry(
            history.a,
            history.b,
            history.preference,
            history.item,
            self.n_systems,
            self.bootstrap,
            self.confidence,
            self.seed,
        )

    def pairs_to_judge(self, number: int, history: History) -> list[tuple[int, int]]:
        """Round ``number``'s pairs of systems: the anchor pairs first; then, around every two neighbours (in
        order of strength) whose intervals overlap, the pairs within ``WINDOW`` places of them that still have
        items to meet on (the window widens while all such pairs have met on every item)."""
        if number >= self.max_rounds:
            return []
        if number == 0:
            others = [s for s in range(self.n_systems) if s not in self.anchors]
            pairs = [(a, b) for k, a in enumerate(self.anchors) for b in self.anchors[k + 1 :]]
            return pairs + [(min(a, s), max(a, s)) for s in others for a in self.anchors]
        fit = self.fit(history)
        order = [int(s) for s in np.argsort(fit.strength, kind="stable")]
        overlapping = [
            k
            for k in range(len(order) - 1)
            if not fit.separable(order[k], order[k + 1]) or not np.isfinite(fit.low).all()
        ]
        for window in range(WINDOW, len(order)):
            pairs: dict[tuple[int, int], None] = {}
            for k in overlapping:
                for d in range(1, window + 1):
                    for x, y in ((k, k + d), (k + 1 - d, k + 1)):
                        if 0 <= x < len(order) and 0 <= y < len(order):
                            pair = (min(order[x], order[y]), max(order[x], order[y]))
                            if history.met(*pair) < self.n_items:
                                pairs[pair] = None
            if pairs or not overlapping:
                return list(pairs)
        return []

    def round(self, number: int, history: History) -> list[tuple[int, int, int]]:
        """Round ``number``'s battles ``(system a, system b, item)`` given the battles before it; ``[]``: done."""
        battles = []
        for i, j in self.pairs_to_judge(number, history):
            met = history.met(i, j)
            for item in self.item_order(i, j)[met : met + self.items_per_pair]:
                battles.append((i, j, int(item)))
        return battles
