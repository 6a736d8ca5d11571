"""Systems of known strength battling under the adaptive schedule: what the ranking tests and
``benchmarks/pairwise.py`` measure the schedule on (no judge, no model: the preferences are drawn here).

>>> run = simulate_ranking(n_systems=6, n_items=40, seed=0)
>>> run.rounds >= 1 and len(run.history) > 0 and run.theta.shape == (6,)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mmjudge.pairwise.schedule import AdaptiveSchedule, History


@dataclass(frozen=True)
class SimulatedRanking:
    """The true strengths (in the order the systems were given), the schedule, its battles and how many
    rounds it ran."""

    theta: np.ndarray
    plan: AdaptiveSchedule
    history: History
    rounds: int


def simulate_ranking(
    n_systems: int = 20,
    n_items: int = 500,
    spread: float = 3.0,
    noise: float = 0.5,
    seed: int = 0,
    **schedule: Any,
) -> SimulatedRanking:
    """``n_systems`` with θ evenly spread over [−spread, spread] (given in a shuffled order); each output's
    quality is θ plus N(0, noise²); the judge's preference on a battle is σ(quality_a − quality_b).
    ``schedule``: :class:`~mmjudge.pairwise.schedule.AdaptiveSchedule`'s settings."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(-spread, spread, n_systems)[rng.permutation(n_systems)]
    quality = theta[:, None] + noise * rng.normal(size=(n_systems, n_items))
    plan = AdaptiveSchedule(n_systems, n_items, seed=seed, **schedule)
    history = History.empty()
    rounds = 0
    for number in range(plan.max_rounds):
        battles = plan.round(number, history)
        if not battles:
            break
        a, b, item = (np.array(x) for x in zip(*battles))
        history = history.extended(a, b, item, 1 / (1 + np.exp(-(quality[a, item] - quality[b, item]))))
        rounds = number + 1
    return SimulatedRanking(theta, plan, history, rounds)
