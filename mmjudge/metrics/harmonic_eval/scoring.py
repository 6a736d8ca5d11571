"""Score smoothing and harmonic weighting (HarmonicEval §2, appendix A).

Everything here is pure numpy on rating distributions, so it can be checked by hand and reused by any
judge backend.

For a criterion ``c`` with rating distribution ``p_c(r)`` over the scale ``R``:

* smoothed score  ``s_c = Σ_r r·p_c(r)``
* spread          ``σ_c = sqrt(Σ_r (r − s_c)²·p_c(r))``
* harmonic weight ``w_c ∝ σ_c^(−2(1−γ)/γ)``, normalised over the criteria
* overall         ``S = Σ_c w_c·s_c``

``γ = 1`` gives uniform weights, ``γ = 0.5`` inverse-variance weights and ``γ → 0`` selects the
criterion with the smallest σ.

Example:
    >>> import numpy as np
    >>> from mmjudge.metrics.harmonic_eval.scoring import aggregate
    >>> probs = np.array([[[0, 0, 0, 0, 1.0],        # one sample, two criteria
    ...                    [0, 0.5, 0, 0.5, 0]]])
    >>> out = aggregate(probs, gamma=1.0)            # uniform weighting
    >>> out.scores.tolist(), out.sigmas.tolist(), out.overall.tolist()
    ([[5.0, 3.0]], [[0.0, 1.0]], [4.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_GAMMA = 0.75
DEFAULT_RATINGS = (1, 2, 3, 4, 5)
# A one-hot distribution has σ = 0, which would give an infinite weight; clamp σ to this floor so the
# weight stays finite (the most confident criteria then share the weight instead of dividing by zero).
DEFAULT_SIGMA_FLOOR = 1e-3


@dataclass
class Aggregate:
    """Result of :func:`aggregate`; arrays are ``(samples,)`` or ``(samples, criteria)``."""

    overall: np.ndarray
    scores: np.ndarray
    sigmas: np.ndarray
    weights: np.ndarray


def check_gamma(gamma: float) -> float:
    """Return ``gamma`` as a float, or raise if it lies outside (0, 1]."""
    try:
        value = float(gamma)
    except (TypeError, ValueError):
        raise ValueError(f"Expected argument `gamma` to be a float in the (0, 1] range, but got {gamma!r}.") from None
    if not (0.0 < value <= 1.0):
        raise ValueError(f"Expected argument `gamma` to be a float in the (0, 1] range, but got {gamma!r}.")
    return value


def _as_distributions(probs: np.ndarray | Sequence, n_ratings: int) -> np.ndarray:
    array = np.asarray(probs, dtype=np.float64)
    if array.shape[-1] != n_ratings:
        raise ValueError(f"Expected the last axis of `probs` to hold {n_ratings} ratings, but got shape {array.shape}.")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError("Expected `probs` to hold finite, non-negative probabilities.")
    totals = array.sum(axis=-1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("Every rating distribution in `probs` must have positive mass.")
    return array / totals


def smooth(probs: np.ndarray | Sequence, ratings: Sequence[float] = DEFAULT_RATINGS) -> np.ndarray:
    """Expected rating ``Σ r·p(r)`` over the last axis (distributions are renormalised first).

    >>> smooth([0.0, 0.0, 0.5, 0.5, 0.0]).item()
    3.5
    """
    r = np.asarray(ratings, dtype=np.float64)
    return _as_distributions(probs, len(r)) @ r


def sigma(probs: np.ndarray | Sequence, ratings: Sequence[float] = DEFAULT_RATINGS) -> np.ndarray:
    """Standard deviation ``sqrt(Σ (r − s)²·p(r))`` of the rating distribution over the last axis.

    >>> round(sigma([0.0, 0.0, 0.5, 0.5, 0.0]).item(), 6)
    0.5
    """
    r = np.asarray(ratings, dtype=np.float64)
    p = _as_distributions(probs, len(r))
    mean = p @ r
    variance = np.einsum("...k,...k->...", p, (r - mean[..., None]) ** 2)
    return np.sqrt(np.maximum(variance, 0.0))


def harmonic_weights(
    sigmas: np.ndarray | Sequence,
    gamma: float = DEFAULT_GAMMA,
    sigma_floor: float = DEFAULT_SIGMA_FLOOR,
    answered: np.ndarray | Sequence | None = None,
) -> np.ndarray:
    """Weights ``w_c ∝ σ_c^(−2(1−γ)/γ)`` normalised over the last axis.

    Computed in log space (a softmax of ``−2(1−γ)/γ · log σ``) so that small γ, where the exponent is
    huge, still gives finite weights that tend to selecting the least-variance criterion. ``answered``
    (booleans shaped like ``sigmas``; default all): a criterion without a rating gets weight NaN and the
    others are normalised among themselves (a row with none answered is all NaN).

    >>> harmonic_weights([1.0, 2.0], gamma=0.5).round(3).tolist()   # inverse variance: 1 : 1/4
    [0.8, 0.2]
    >>> harmonic_weights([1.0, 2.0, 0.5], gamma=0.5, answered=[True, True, False]).round(3).tolist()
    [0.8, 0.2, nan]
    """
    gamma = check_gamma(gamma)
    if sigma_floor <= 0:
        raise ValueError(f"Expected argument `sigma_floor` to be positive, but got {sigma_floor}.")
    s = np.asarray(sigmas, dtype=np.float64)
    ok = np.ones(s.shape, dtype=bool) if answered is None else np.asarray(answered, dtype=bool)
    logits = np.where(ok, -2.0 * (1.0 - gamma) / gamma * np.log(np.maximum(np.where(ok, s, 1.0), sigma_floor)), -np.inf)
    any_ok = ok.any(axis=-1, keepdims=True)
    logits = logits - np.where(any_ok, np.max(logits, axis=-1, keepdims=True), 0.0)
    w = np.exp(logits)
    return np.where(ok, w / np.where(any_ok, w.sum(axis=-1, keepdims=True), 1.0), np.nan)


def aggregate(
    probs: np.ndarray | Sequence,
    gamma: float = DEFAULT_GAMMA,
    ratings: Sequence[float] = DEFAULT_RATINGS,
    smoothing: bool = True,
    sigma_floor: float = DEFAULT_SIGMA_FLOOR,
    answered: np.ndarray | Sequence | None = None,
    partial: bool = False,
) -> Aggregate:
    """HarmonicEval's overall score from rating distributions of shape ``(samples, criteria, ratings)``.

    Args:
        probs: rating probabilities; each distribution is renormalised over the scale.
        gamma: harmonic weighting hyper-parameter in (0, 1]; 0.75 in the paper.
        ratings: the value of each rating on the scale (1..5 by default).
        smoothing: ``True`` uses the expected rating; ``False`` uses the most probable rating (the
            paper's "w/o score smoothing" ablation). The weights use σ of the distribution either way.
        sigma_floor: lower bound on σ so one-hot distributions give finite weights.
        answered: ``(samples, criteria)`` booleans, ``False`` where the judge gave no rating (default: all
            answered). Such a criterion's score, σ and weight are NaN — never a made-up distribution —
            and its row in ``probs`` is not read.
        partial: how ``overall`` treats a sample with a criterion missing: NaN (default: the overall
            score needs every criterion), or (``True``) the harmonic weighting over the criteria that
            answered, renormalised. A sample without any answered criterion is NaN either way.

    Returns:
        :class:`Aggregate` with ``overall`` (samples,) and ``scores``, ``sigmas``, ``weights``
        (samples, criteria).

    Raises:
        ValueError: if ``probs`` is not 3-D, holds negative/non-finite values or a zero-mass row where
            the judge answered, or ``gamma`` lies outside (0, 1].

    Example:
        >>> import numpy as np
        >>> p = np.array([[[0, 0, 0, 0.5, 0.5], [0, 0, 1.0, 0, 0]]])
        >>> out = aggregate(p, gamma=0.5)
        >>> out.weights.round(4).tolist()   # σ = (0.5, floor): the one-hot criterion dominates
        [[0.0, 1.0]]
        >>> round(float(out.overall[0]), 4)
        3.0
        >>> p = np.array([[[0, 0, 0, 1.0, 0], [0, 0, 0, 0, 0]]])   # the second criterion got no rating
        >>> strict = aggregate(p, answered=[[True, False]])
        >>> strict.overall.tolist(), aggregate(p, answered=[[True, False]], partial=True).overall.tolist()
        ([nan], [4.0])
    """
    r = np.asarray(ratings, dtype=np.float64)
    raw = np.asarray(probs, dtype=np.float64)
    if raw.ndim != 3:
        raise ValueError(f"Expected `probs` of shape (samples, criteria, ratings), but got shape {raw.shape}.")
    ok = np.ones(raw.shape[:2], dtype=bool) if answered is None else np.asarray(answered, dtype=bool)
    if ok.shape != raw.shape[:2]:
        raise ValueError(f"Expected `answered` of shape {raw.shape[:2]}, but got {ok.shape}.")
    # Rows without an answer are set to a placeholder so the arithmetic runs; their results are masked below.
    p = _as_distributions(np.where(ok[..., None], raw, 1.0), len(r))
    gamma = check_gamma(gamma)
    sigmas = np.where(ok, sigma(p, r), np.nan)
    scores = np.where(ok, p @ r if smoothing else r[np.argmax(p, axis=-1)], np.nan)
    weights = harmonic_weights(sigmas, gamma, sigma_floor, answered=ok)
    complete = ok.all(axis=-1) if not partial else ok.any(axis=-1)
    overall = np.where(complete, np.nansum(np.where(ok, weights * scores, 0.0), axis=-1), np.nan)
    if not partial:
        weights = np.where(complete[:, None], weights, np.nan)
    return Aggregate(overall=overall, scores=scores, sigmas=sigmas, weights=weights)
