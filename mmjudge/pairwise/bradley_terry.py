r"""Bradley–Terry strengths from soft battles, with bootstrap intervals over items, and the win-rate matrix.

A battle is one item on which system ``a`` met system ``b``, with the judge's preference ``p = P(a ≻ b)``
(a fractional win: ``p`` for ``a``, ``1 − p`` for ``b``). The model: ``P(i ≻ j) = σ(θ_i − θ_j)``. The
strengths maximise the log-likelihood of the fractional wins ``W_ij = Σ p`` with a small Gaussian prior
``−λ/2 Σ θ_i²`` (λ = 0.01 by default, a few hundredths of a game: it keeps a system that won or lost
everything finite), by Newton's method (the objective is strictly concave, so it converges in a few
steps); θ is centred to mean 0. Intervals: items are resampled with replacement (every battle on an item
moves with it, as the meta-evaluation resamples items) and the strengths refitted per resample; the
percentile interval of each system's θ. A NaN preference (the judge gave none) is not a battle.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> true = np.array([-1.0, 0.0, 1.0])
>>> a, b = rng.integers(0, 3, 3000), rng.integers(0, 3, 3000)
>>> keep = a != b
>>> p = 1 / (1 + np.exp(-(true[a] - true[b])))
>>> fit = fit_bradley_terry(a[keep], b[keep], p[keep], np.arange(3000)[keep], 3, bootstrap=200)
>>> (fit.strength.round(1) + 0.0).tolist(), bool(np.all(fit.low < fit.strength) and np.all(fit.strength < fit.high))
([-1.0, 0.0, 1.0], True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmjudge.metaeval.bootstrap import percentile_interval, resample_counts, rng_for

DEFAULT_PRIOR = 0.01
MAX_NEWTON_STEPS = 100


@dataclass
class Strengths:
    """Bradley–Terry fit: ``strength`` (θ, mean 0; P(i ≻ j) = σ(θ_i − θ_j)), its bootstrap interval
    ``low``/``high`` (NaN without bootstrap), ``battles`` per system, and ``resamples`` (B × systems)."""

    strength: np.ndarray
    low: np.ndarray
    high: np.ndarray
    battles: np.ndarray
    resamples: np.ndarray | None = None

    def separable(self, i: int, j: int) -> bool:
        """Whether the intervals of systems ``i`` and ``j`` do not overlap."""
        return bool(self.high[i] < self.low[j] or self.high[j] < self.low[i])


def win_matrix(a: np.ndarray, b: np.ndarray, p: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """``W[i, j]``: system ``i``'s fractional wins over ``j`` (both directions of every battle).

    >>> win_matrix(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 0.25]), 2).tolist()
    [[0.0, 1.25], [0.75, 0.0]]
    """
    w = np.ones(len(p)) if weights is None else weights
    wins = np.bincount(a * n + b, weights=w * p, minlength=n * n) + np.bincount(
        b * n + a, weights=w * (1 - p), minlength=n * n
    )
    return wins.reshape(n, n)


def strengths_from_wins(wins: np.ndarray, prior: float = DEFAULT_PRIOR) -> np.ndarray:
    """θ maximising the penalised likelihood for win matrices ``wins`` of shape ``(..., n, n)``, by Newton's method
    (batched over the leading axes); centred to mean 0.

    >>> strengths_from_wins(np.array([[0.0, 3.0], [1.0, 0.0]]), prior=0).round(4).tolist()   # 3:1 -> ln 3 apart
    [0.5493, -0.5493]
    """
    wins = np.asarray(wins, dtype=np.float64)
    games = wins + np.swapaxes(wins, -1, -2)
    n = wins.shape[-1]
    theta = np.zeros(wins.shape[:-1])
    eye = np.eye(n)
    # Without a prior the likelihood only fixes differences: pin the mean with a tiny ridge instead.
    ridge = max(prior, 1e-9)
    for _ in range(MAX_NEWTON_STEPS):
        diff = theta[..., :, None] - theta[..., None, :]
        s = 1.0 / (1.0 + np.exp(-diff))
        grad = (wins - games * s).sum(axis=-1) - ridge * theta
        curvature = games * s * (1 - s)
        hessian = curvature - eye * (curvature.sum(axis=-1)[..., None] + ridge)
        step = np.linalg.solve(hessian, grad[..., None])[..., 0]
        # Far from the optimum (a system that wins nearly everything) a full step can overshoot: cap it.
        step = np.clip(step, -2.0, 2.0)
        theta = theta - step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta - theta.mean(axis=-1, keepdims=True)


def fit_bradley_terry(
    a: np.ndarray,
    b: np.ndarray,
    preference: np.ndarray,
    item: np.ndarray,
    n_systems: int,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prior: float = DEFAULT_PRIOR,
) -> Strengths:
    """Strengths of ``n_systems`` systems from battles (``a[k]`` vs ``b[k]`` on item ``item[k]`` with
    ``P(a ≻ b) = preference[k]``; NaN preferences are left out), with percentile intervals over ``bootstrap``
    resamples of the items (0: no intervals)."""
    a, b, item = (np.asarray(x, dtype=np.int64) for x in (a, b, item))
    p = np.asarray(preference, dtype=np.float64)
    keep = np.isfinite(p)
    a, b, p, item = a[keep], b[keep], p[keep], item[keep]
    theta = strengths_from_wins(win_matrix(a, b, p, n_systems), prior)
    battles = np.bincount(a, minlength=n_systems) + np.bincount(b, minlength=n_systems)
    nan = np.full(n_systems, np.nan)
    if not bootstrap or not len(p):
        return Strengths(theta, nan, nan.copy(), battles)
    items, position = np.unique(item, return_inverse=True)
    counts = resample_counts(len(items), bootstrap, rng_for(seed, "bradley_terry"))
    wins = np.stack([win_matrix(a, b, p, n_systems, counts[r, position].astype(np.float64)) for r in range(bootstrap)])
    resamples = strengths_from_wins(wins, prior)
    bounds = np.array([percentile_interval(resamples[:, i], confidence) for i in range(n_systems)])
    return Strengths(theta, bounds[:, 0], bounds[:, 1], battles, resamples)


def win_rates(a: np.ndarray, b: np.ndarray, preference: np.ndarray, n_systems: int) -> np.ndarray:
    """``R[i, j]``: the mean preference for ``i`` over ``j`` across their battles (NaN where they never met;
    ``R[i, j] + R[j, i] = 1``).

    >>> win_rates(np.array([0, 1]), np.array([1, 0]), np.array([0.75, 0.5]), 3).round(3).tolist()
    [[nan, 0.625, nan], [0.375, nan, nan], [nan, nan, nan]]
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    p = np.asarray(preference, dtype=np.float64)
    keep = np.isfinite(p)
    wins = win_matrix(a[keep], b[keep], p[keep], n_systems)
    games = np.bincount(a[keep] * n_systems + b[keep], minlength=n_systems**2).reshape(n_systems, n_systems)
    games = games + games.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, wins / games, np.nan)
