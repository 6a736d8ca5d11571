"""Seeded bootstrap resampling of the units of a figure (items, triplets or pairs).

A resample is drawn as counts: how many times each unit appears (B × n integer matrix), which lets
every figure be computed for all resamples in one vectorised pass. The generator of a figure is
derived from the user's seed and the figure's key *without* the metric name, so every metric in one
table is resampled identically (a paired bootstrap): differences between metrics are then meaningful.

>>> counts = resample_counts(4, 3, rng_for(0, "mmhe", "ic"))
>>> counts.shape, counts.sum(axis=1).tolist()
((3, 4), [4, 4, 4])
>>> [round(v, 6) for v in percentile_interval(np.arange(101.0), 0.9)]
[5.0, 95.0]
"""

from __future__ import annotations

import hashlib

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


def check_resamples(n_resamples: int) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise ValueError(f"Expected argument `bootstrap` to be a non-negative integer, but got {n_resamples!r}.")
    return int(n_resamples)


def check_confidence(confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"Expected argument `confidence` to be in (0, 1), but got {confidence!r}.")
    return float(confidence)


def rng_for(seed: int, *key: str) -> np.random.Generator:
    """A generator that depends only on ``seed`` and ``key`` (not on the order figures are computed in)."""
    words = [int(hashlib.sha256(str(k).encode()).hexdigest()[:8], 16) for k in key]
    return np.random.default_rng([int(seed), *words])


def resample_counts(n_units: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_units) counts of each unit in resamples of size ``n_units`` drawn with replacement."""
    if n_units == 0:
        return np.zeros((n_resamples, 0), dtype=np.int64)
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_resamples)


def percentile_interval(values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the finite ``values`` (NaN resamples, e.g. constant ones, are dropped)."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)
