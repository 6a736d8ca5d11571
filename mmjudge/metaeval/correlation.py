"""Correlations between metric scores and human scores: Kendall τ-b / τ-c, Pearson, Spearman.

Point estimates come from :mod:`scipy.stats` (the implementations papers use). Bootstrap resamples
are evaluated in one batch from integer resampling weights (:func:`correlation_batch`), which gives
the same numbers as calling scipy on each resampled data set, hundreds of times faster.

Undefined correlations (fewer than two rows, or all metric or all human scores equal) are ``NaN``
with a :class:`UndefinedCorrelationWarning`, never an exception from deep inside numpy or scipy.

>>> round(correlation([1, 2, 3, 4], [1, 3, 2, 4], "tau_b"), 4)
0.6667
>>> round(correlation([1, 2, 3, 4], [1, 3, 2, 4], "pearson"), 4)
0.8
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

MEASURES = ("tau_b", "tau_c", "pearson", "spearman")
"""Correlation measures, by the names used in results and tables."""

LABELS = {"tau_b": "τ_b", "tau_c": "τ_c", "pearson": "r", "spearman": "ρ"}

# Above this many rows the n×n sign matrix of the batched Kendall τ gets too large; resamples are
# then computed one by one with scipy (O(n log n) each).
BATCH_KENDALL_MAX_ROWS = 3000


class UndefinedCorrelationWarning(UserWarning):
    """A correlation is undefined (constant scores or under two rows) and was reported as NaN."""


def check_measure(measure: str) -> str:
    if measure not in MEASURES:
        raise ValueError(f"Expected argument `measure` to be one of {list(MEASURES)}, but got {measure!r}.")
    return measure


def _as_vectors(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"Expected two 1-D score lists of equal length, but got shapes {x.shape} and {y.shape}.")
    for name, v in (("metric scores", x), ("human scores", y)):
        bad = np.flatnonzero(~np.isfinite(v))
        if bad.size:
            raise ValueError(f"The {name} contain NaN or inf at position {int(bad[0])} ({bad.size} in all).")
    return x, y


def undefined_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    """Why a correlation of ``x`` and ``y`` is undefined, or ``None`` when it is defined."""
    if x.size < 2:
        return f"only {x.size} row(s)"
    if np.all(x == x[0]):
        return "the metric scores are constant"
    if np.all(y == y[0]):
        return "the human scores are constant"
    return None


def correlation(x: Sequence[float], y: Sequence[float], measure: str = "tau_c", where: str = "") -> float:
    """Correlation ``measure`` (``tau_b``, ``tau_c``, ``pearson``, ``spearman``) of ``x`` and ``y``.

    Returns ``NaN`` with an :class:`UndefinedCorrelationWarning` (naming ``where``) when it is undefined.

    Raises:
        ValueError: unknown measure, unequal lengths, NaN or inf in the inputs.
    """
    check_measure(measure)
    x, y = _as_vectors(x, y)
    reason = undefined_reason(x, y)
    if reason:
        warnings.warn(
            f"{measure} is undefined{' for ' + where if where else ''}: {reason}; reported as NaN.",
            UndefinedCorrelationWarning,
            stacklevel=2,
        )
        return float("nan")
    from scipy import stats  # here, not at import: scipy.stats takes a second to import and the CLI starts without it

    if measure == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if measure == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    return float(stats.kendalltau(x, y, variant=measure[-1]).statistic)


# ------------------------------------------------------------------------------------- batched
def correlation_batch(x: np.ndarray, y: np.ndarray, weights: np.ndarray, measures: Sequence[str]) -> dict:
    """Correlations of many weighted copies of one data set at once.

    ``weights`` is a (B, n) array of non-negative integers: row b stands for the data set in which
    row i of (``x``, ``y``) appears ``weights[b, i]`` times (a bootstrap resample). Returns
    ``{measure: array of B values}``, NaN where a resample is undefined. Equal to calling
    :func:`correlation` on each expanded resample.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    # Identical (x, y) rows are interchangeable: merge them and add their weights. Under the
    # per-judgment protocol this shrinks the data several-fold (an item's equal ratings collapse).
    unique, inverse = np.unique(np.stack([x, y], axis=1), axis=0, return_inverse=True)
    if len(unique) < len(x):
        x, y, w = unique[:, 0], unique[:, 1], _group_sums(w, inverse.ravel(), len(unique))
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        if "pearson" in measures:
            out["pearson"] = _weighted_pearson(x, y, w)
        if "spearman" in measures:
            out["spearman"] = _weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)
        kendall = [m for m in measures if m in ("tau_b", "tau_c")]
        if kendall:
            if x.size <= BATCH_KENDALL_MAX_ROWS:
                out.update(_kendall_matrix(x, y, w))
            else:
                out.update(_kendall_loop(x, y, w))
    return {m: out[m] for m in measures}


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    # x, y: (n,) or (B, n); w: (B, n)
    total = w.sum(axis=1, keepdims=True)
    mx = (w * x).sum(axis=1, keepdims=True) / total
    my = (w * y).sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    cov = (w * dx * dy).sum(axis=1)
    var = (w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1)
    r = cov / np.sqrt(var)
    # Exactly constant data leave float round-off in dx; treat tiny variances as zero.
    scale = np.maximum((w * x * x).sum(axis=1), 1.0) * np.maximum((w * y * y).sum(axis=1), 1.0)
    r[var <= 1e-24 * scale] = np.nan
    return np.clip(r, -1.0, 1.0)


def _weighted_ranks(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties get their mean rank) of each row's expanded data, per original row."""
    values, inverse = np.unique(v, return_inverse=True)
    counts = _group_sums(w, inverse, values.size)  # (B, k) copies of each distinct value
    before = np.cumsum(counts, axis=1) - counts
    mid = before + (counts + 1.0) / 2.0  # mean rank of a tie group of `counts` copies
    return mid[:, inverse]


def _group_sums(w: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    b = w.shape[0]
    index = (np.arange(b)[:, None] * k + groups[None, :]).ravel()
    return np.bincount(index, weights=w.ravel(), minlength=b * k).reshape(b, k)


def _tie_pairs(v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per resample: number of pairs tied in ``v`` and number of distinct values present."""
    values, inverse = np.unique(v, return_inverse=True)
    counts = _group_sums(w, inverse, values.size)
    return (counts * (counts - 1.0) / 2.0).sum(axis=1), (counts > 0).sum(axis=1)


def _kendall_from_counts(con_minus_dis, size, ties_x, ties_y, distinct_x, distinct_y) -> dict:
    pairs = size * (size - 1.0) / 2.0
    tau_b = con_minus_dis / np.sqrt((pairs - ties_x) * (pairs - ties_y))
    m = np.minimum(distinct_x, distinct_y).astype(np.float64)
    tau_c = 2.0 * con_minus_dis / (size**2 * (m - 1.0) / m)
    undefined = (distinct_x < 2) | (distinct_y < 2)
    tau_b[undefined] = np.nan
    tau_c[undefined] = np.nan
    return {"tau_b": np.clip(tau_b, -1.0, 1.0), "tau_c": np.clip(tau_c, -1.0, 1.0)}


def _kendall_matrix(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict:
    # Σ_{i<j} w_i w_j sign(x_i - x_j) sign(y_i - y_j) counts concordant minus discordant pairs of the
    # expanded data; copies of one row are tied in both and contribute nothing, as in scipy.
    # float32 is exact here: weights and signs are small integers and every partial sum stays below
    # the resample size, far under 2**24.
    signs = (np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])).astype(np.float32)
    exact = np.float32 if w.sum(axis=1).max(initial=0) < 2**24 else np.float64
    weighted = (w.astype(exact) @ signs.astype(exact)).astype(np.float64)
    con_minus_dis = 0.5 * np.einsum("bi,bi->b", weighted, w)
    ties_x, distinct_x = _tie_pairs(x, w)
    ties_y, distinct_y = _tie_pairs(y, w)
    return _kendall_from_counts(con_minus_dis, w.sum(axis=1), ties_x, ties_y, distinct_x, distinct_y)


def _kendall_loop(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict:
    from scipy import stats

    # scipy's O(n log n) τ-b per resample; τ-c then follows from the same concordance count:
    # C − D = τ_b · sqrt((n0 − n1)(n0 − n2)), with the tie counts computed from the weights.
    ties_x, distinct_x = _tie_pairs(x, w)
    ties_y, distinct_y = _tie_pairs(y, w)
    size = w.sum(axis=1)
    pairs = size * (size - 1.0) / 2.0
    tau_b = np.full(w.shape[0], np.nan)
    counts = w.astype(np.int64)
    for b in range(w.shape[0]):
        if distinct_x[b] > 1 and distinct_y[b] > 1:
            tau_b[b] = stats.kendalltau(np.repeat(x, counts[b]), np.repeat(y, counts[b]), variant="b").statistic
    con_minus_dis = tau_b * np.sqrt((pairs - ties_x) * (pairs - ties_y))
    return _kendall_from_counts(con_minus_dis, size, ties_x, ties_y, distinct_x, distinct_y)
