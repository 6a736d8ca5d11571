"""How sure a ranking is: bootstrap intervals over items and paired comparisons of neighbouring rows.

A Models-track row's figure is a mean over the benchmark's items. Its interval resamples the items
(percentile bootstrap); whether it is *separable* from the row above resamples the same items for both
submissions and asks whether the interval of the mean difference excludes 0 (a paired bootstrap: both
rows answered the same items, so item difficulty cancels out). Resamples are drawn from a generator
keyed by the seed and the figure only (:func:`mmjudge.metaeval.bootstrap.rng_for`), never by the
submission: every row of a table sees the same resamples, as the meta-evaluation's figures do, so a
Metrics-track pair is compared by subtracting the two rows' stored resample values
(:func:`separable_resamples`).

Items a judge failed on (``None``) are left out of a row's mean; a pair uses the items both rows have.

>>> a = [4.0, 4.5, 3.5, 4.0, 5.0, 4.0]
>>> b = [2.0, 2.5, 2.0, 1.5, 3.0, 2.0]
>>> low, high = mean_interval(a, resamples=200, seed=0, key=("demo", "overall"))
>>> low < sum(a) / len(a) < high
True
>>> paired(a, b, resamples=200, seed=0, key=("demo", "overall"))["separable"]
True
>>> noise = [x + 0.01 for x in a[:3]] + [x - 0.01 for x in a[3:]]
>>> paired(a, noise, resamples=200, seed=0, key=("demo", "overall"))["separable"]
False
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge.metaeval.bootstrap import DEFAULT_CONFIDENCE, percentile_interval, resample_counts, rng_for

Interval = tuple[float | None, float | None]


def _vector(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(values with missing ones as 0, mask of present ones)."""
    x = np.array(
        [float(v) if isinstance(v, (int, float)) and math.isfinite(v) else np.nan for v in values], dtype=np.float64
    )
    present = np.isfinite(x)
    return np.where(present, x, 0.0), present.astype(np.float64)


def _counts(n: int, resamples: int, seed: int, key: Sequence[str]) -> np.ndarray:
    return resample_counts(n, resamples, rng_for(seed, "leaderboard", *map(str, key))).astype(np.float64)


def _interval(boot: np.ndarray, confidence: float) -> Interval:
    low, high = percentile_interval(boot, confidence)
    return (None, None) if not (math.isfinite(low) and math.isfinite(high)) else (low, high)


def mean_interval(
    values: Sequence[Any], resamples: int, seed: int, key: Sequence[str], confidence: float = DEFAULT_CONFIDENCE
) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` over items (``None`` entries left out);
    ``(None, None)`` without resamples or values."""
    x, present = _vector(values)
    if resamples <= 0 or not present.any():
        return None, None
    counts = _counts(len(x), resamples, seed, key)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (counts @ x) / (counts @ present)
    return _interval(boot, confidence)


def paired(
    upper: Sequence[Any],
    lower: Sequence[Any],
    resamples: int,
    seed: int,
    key: Sequence[str],
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Paired bootstrap of ``mean(upper − lower)`` over the items both have: ``difference``, its
    interval, and ``separable`` (the interval excludes 0; ``None`` when it cannot be told)."""
    if len(upper) != len(lower):
        return {"difference": None, "ci_low": None, "ci_high": None, "separable": None}
    a, pa = _vector(upper)
    b, pb = _vector(lower)
    both = pa * pb
    if resamples <= 0 or not both.any():
        return {"difference": None, "ci_low": None, "ci_high": None, "separable": None}
    d = (a - b) * both
    counts = _counts(len(d), resamples, seed, key)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (counts @ d) / (counts @ both)
    low, high = _interval(boot, confidence)
    separable = None if low is None else bool(low > 0 or high < 0)
    return {"difference": float(d.sum() / both.sum()), "ci_low": low, "ci_high": high, "separable": separable}


def separable_resamples(
    upper: Sequence[Any] | None, lower: Sequence[Any] | None, confidence: float = DEFAULT_CONFIDENCE
) -> bool | None:
    """Separable from the row above, from two rows' stored bootstrap values of the same figure (drawn
    from the same resamples, as the meta-evaluation draws them): the interval of their difference
    excludes 0. ``None`` when either row has none.

    >>> separable_resamples([0.5, 0.6, 0.55, 0.58], [0.2, 0.3, 0.25, 0.22])
    True
    >>> separable_resamples([0.5, 0.4], [0.45, 0.5])
    False
    """
    if not upper or not lower or len(upper) != len(lower):
        return None
    diff = np.array([float("nan") if u is None or v is None else u - v for u, v in zip(upper, lower)], dtype=np.float64)
    low, high = _interval(diff, confidence)
    return None if low is None else bool(low > 0 or high < 0)
