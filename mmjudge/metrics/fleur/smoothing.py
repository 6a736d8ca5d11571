"""FLEUR's score smoothing: expectations of the printed digits under the judge's full-vocabulary softmax.

* ``"0.xy"``: ``Σ_d p₁(d)·d/10 + Σ_d p₂(d)·d/100`` (the second term only when a second decimal is printed);
* ``"1.0"``: ``0.9·p(0) + p(1)`` at the leading digit.

>>> round(smooth_decimals([0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0], [0.0] * 5 + [1.0] + [0.0] * 4), 6)  # 0.75 + 0.05
0.8
>>> round(smooth_one([0.2, 0.8] + [0.0] * 8), 6)  # 0.9 * 0.2 + 0.8
0.98
"""

from __future__ import annotations

import re
from collections.abc import Sequence

DIGITS = tuple("0123456789")

# The first score in a generated text: "0.x", "0.xy" (more decimals are ignored) or "1.0".
SCORE_PATTERN = re.compile(r"(?<![\d.])(?:(?P<zero>0)\.(?P<d1>\d)(?P<d2>\d)?|(?P<one>1)\.0)")


def smooth_decimals(first: Sequence[float], second: Sequence[float] | None = None) -> float:
    """Smoothed ``"0.xy"``: ``Σ_d first[d]·d/10 + Σ_d second[d]·d/100`` (``second=None``: one decimal printed).

    ``first`` / ``second`` are the probabilities of the digits 0–9 under the full-vocabulary softmax
    (not renormalised, as published)."""
    _check_digits(first, "first")
    score = sum(p * d / 10 for d, p in enumerate(first))
    if second is not None:
        _check_digits(second, "second")
        score += sum(p * d / 100 for d, p in enumerate(second))
    return float(score)


def smooth_one(lead: Sequence[float]) -> float:
    """Smoothed ``"1.0"``: ``0.9·lead[0] + lead[1]``, digit probabilities at the leading digit."""
    _check_digits(lead, "lead")
    return float(0.9 * lead[0] + lead[1])


def _check_digits(probs: Sequence[float], name: str) -> None:
    if len(probs) != 10:
        raise ValueError(f"Expected argument `{name}` to hold 10 digit probabilities, but got {len(probs)}.")


def parse_score(text: str) -> re.Match | None:
    """The first ``0.x`` / ``0.xy`` / ``1.0`` in ``text`` (``None`` if there is none).

    >>> parse_score("Score: 0.85, because").group(0), parse_score("1.0") is not None, parse_score("7/10")
    ('0.85', True, None)
    """
    return SCORE_PATTERN.search(text)
