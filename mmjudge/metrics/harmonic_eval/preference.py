r"""Two orders of one comparison made one preference; the judge's position bias; the overall preference.

Every pair (A, B) is asked twice per criterion: A in the first slot (order AB) and B in the first slot
(order BA). Each order gives a distribution over the three answers (first slot better, second slot better,
tie), renormalised over them. Per criterion ``c``:

* ``win_A = ½ (P_AB(first) + P_BA(second))``, ``win_B = ½ (P_AB(second) + P_BA(first))``,
  ``tie = ½ (P_AB(tie) + P_BA(tie))``: A's chances counted whichever slot it sat in;
* the preference ``p_c = P(A ≻ B) = win_A + ½ tie = ½ + ½ (win_A − win_B)`` (a tie counts half for each);
* the position bias ``β_c = ¼ [(P_AB(first) + P_BA(first)) − (P_AB(second) + P_BA(second))]``: how much
  more the judge gives the first slot than the second, whatever text sits there (in [−½, ½]; 0 = none). A
  judge whose answers are a text preference ``q`` plus ``β`` for the first slot gives ``p_c = q`` exactly
  and reports ``β``: the bias is cancelled, not just measured;
* slot following: both orders' most probable answers name the same slot — the verdict followed the slot
  instead of the text;
* the certainty of the preference, as HarmonicEval's σ of a rating distribution: the outcome is 1 (A
  better), ½ (tie) or 0 (B better), so ``σ_c² = ¼ (win_A + win_B) − (p_c − ½)²``;
* the overall preference weights the criteria by HarmonicEval's harmonic weights of these σ,
  ``w_c ∝ σ_c^(−2(1−γ)/γ)`` (:func:`~mmjudge.metrics.harmonic_eval.harmonic_weights`: the most certain
  criteria weigh most), ``P = ½ + Σ_c w_c (p_c − ½)``.

Swapping A and B swaps ``win_A`` and ``win_B`` and leaves ``tie``, β, σ and the weights as they are, so
compare(B, A) = 1 − compare(A, B). In floating point this holds EXACTLY: every preference is ½ plus a
deviation rounded to a multiple of 2⁻⁴⁸ (a change below 4·10⁻¹⁵), and ½ ± such a deviation and their sum
are exact.

>>> import numpy as np
>>> ab = np.array([[[0.75, 0.25, 0.0]]])    # A first: "first slot better" with 0.75
>>> ba = np.array([[[0.5, 0.5, 0.0]]])      # B first: the judge is split
>>> out = combine_orders(ab, ba, gamma=1.0)
>>> out.preference.tolist(), out.position_bias.tolist(), out.overall.tolist()
([[0.625]], [[0.125]], [0.625])
>>> swapped = combine_orders(ba, ab, gamma=1.0)
>>> swapped.preference.tolist(), (out.overall + swapped.overall).tolist()
([[0.375]], [1.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmjudge.metrics.harmonic_eval.scoring import DEFAULT_GAMMA, DEFAULT_SIGMA_FLOOR, harmonic_weights

# Preferences are 1/2 plus a deviation on this grid: then 1/2 + d and 1/2 - d are both exact.
GRID = 2.0**48
FIRST, SECOND, TIE = 0, 1, 2


@dataclass
class Combined:
    """Result of :func:`combine_orders`; arrays are ``(pairs,)`` or ``(pairs, criteria)``, NaN where the
    criterion (or, for ``overall``, the pair) has no answer.

    Attributes:
        preference: P(A ≻ B) per criterion.
        win_a, win_b, tie: the combined chances of each outcome.
        position_bias: β, the first slot's advantage (see the module).
        slot_following: 1.0 where both orders' most probable answers name the same slot, else 0.0.
        sigma: the spread of the outcome (1, ½, 0) under the combined distribution.
        weights: each criterion's weight in ``overall``.
        overall: the certainty-weighted preference.
    """

    preference: np.ndarray
    win_a: np.ndarray
    win_b: np.ndarray
    tie: np.ndarray
    position_bias: np.ndarray
    slot_following: np.ndarray
    sigma: np.ndarray
    weights: np.ndarray
    overall: np.ndarray


def on_grid(deviation: np.ndarray) -> np.ndarray:
    """``deviation`` rounded to a multiple of 2⁻⁴⁸ (half to even: ``on_grid(−x) == −on_grid(x)``).

    >>> on_grid(np.array([1 / 3, -1 / 3])).tolist() == [-v for v in on_grid(np.array([-1 / 3, 1 / 3])).tolist()]
    True
    """
    return np.round(np.asarray(deviation, dtype=np.float64) * GRID) / GRID


def distributions(raw: np.ndarray, answered: np.ndarray) -> np.ndarray:
    """Each order's raw answer probabilities renormalised over the three answers (a row without an answer
    is left as ones/3, never read)."""
    raw = np.asarray(raw, dtype=np.float64)
    safe = np.where(answered[..., None], raw, 1.0)
    return safe / safe.sum(axis=-1, keepdims=True)


def combine_orders(
    ab: np.ndarray,
    ba: np.ndarray,
    answered: np.ndarray | None = None,
    gamma: float = DEFAULT_GAMMA,
    partial: bool = False,
    sigma_floor: float = DEFAULT_SIGMA_FLOOR,
) -> Combined:
    """The preference of A over B from both orders' answers (see the module).

    Args:
        ab: ``(pairs, criteria, 3)`` probabilities of (first slot better, second slot better, tie) with A
            in the first slot; ``ba``: the same with B in the first slot.
        answered: ``(pairs, criteria)``: ``False`` where either order has no answer (its status is not
            ``ok``): the criterion's preference, β and weight are then NaN, never ½.
        gamma: HarmonicEval's γ of the harmonic weighting (1 = uniform weights).
        partial: ``overall`` of a pair with a criterion missing: NaN (default) or the weighting over the
            criteria that answered.

    Raises:
        ValueError: arrays of other shapes, or probabilities that are negative or not finite.
    """
    ab, ba = np.asarray(ab, dtype=np.float64), np.asarray(ba, dtype=np.float64)
    if ab.ndim != 3 or ab.shape[-1] != 3 or ab.shape != ba.shape:
        raise ValueError(f"Expected `ab` and `ba` of one shape (pairs, criteria, 3), but got {ab.shape}, {ba.shape}.")
    ok = np.ones(ab.shape[:2], dtype=bool) if answered is None else np.asarray(answered, dtype=bool)
    if ok.shape != ab.shape[:2]:
        raise ValueError(f"Expected `answered` of shape {ab.shape[:2]}, but got {ok.shape}.")
    for name, array in (("ab", ab), ("ba", ba)):
        if np.any(~np.isfinite(array)) or np.any(array < 0):
            raise ValueError(f"Expected `{name}` to hold finite, non-negative probabilities.")
    p, q = distributions(ab, ok), distributions(ba, ok)
    win_a = (p[..., FIRST] + q[..., SECOND]) / 2
    win_b = (p[..., SECOND] + q[..., FIRST]) / 2
    tie = (p[..., TIE] + q[..., TIE]) / 2
    half_gap = on_grid((win_a - win_b) / 2)
    bias = ((p[..., FIRST] + q[..., FIRST]) - (p[..., SECOND] + q[..., SECOND])) / 4
    verdict_ab, verdict_ba = p.argmax(axis=-1), q.argmax(axis=-1)
    following = ((verdict_ab == verdict_ba) & (verdict_ab != TIE)).astype(np.float64)
    sigma = np.sqrt(np.maximum((win_a + win_b) / 4 - half_gap**2, 0.0))
    nan = np.nan
    sigma = np.where(ok, sigma, nan)
    weights = harmonic_weights(sigma, gamma, sigma_floor, answered=ok)
    complete = ok.any(axis=-1) if partial else ok.all(axis=-1)
    overall_gap = on_grid(np.sum(np.where(ok, weights * half_gap, 0.0), axis=-1))
    if not partial:
        weights = np.where(complete[:, None], weights, nan)
    return Combined(
        preference=np.where(ok, 0.5 + half_gap, nan),
        win_a=np.where(ok, win_a, nan),
        win_b=np.where(ok, win_b, nan),
        tie=np.where(ok, tie, nan),
        position_bias=np.where(ok, bias, nan),
        slot_following=np.where(ok, following, nan),
        sigma=sigma,
        weights=weights,
        overall=np.where(complete, 0.5 + overall_gap, nan),
    )


def verdict(preference: float) -> str | None:
    """``"a"`` (A better), ``"b"`` or ``"tie"`` (exactly ½); ``None`` without a preference.

    >>> verdict(0.7), verdict(0.5), verdict(0.2), verdict(float("nan"))
    ('a', 'tie', 'b', None)
    """
    if preference != preference:
        return None
    return "a" if preference > 0.5 else "b" if preference < 0.5 else "tie"
