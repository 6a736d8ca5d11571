"""How EXPERT reads its score off the judge's greedy answer (Kim et al., ACL Findings 2025; the authors'
``expert.py``), step by step, numbers in and numbers out.

1. **The printed number** (:func:`printed_number`): every character of the stripped answer that is not a digit
   or a dot is dropped, dots at both ends are stripped, and the rest is read as a float; none (``"0.8, 0.9"``
   gives ``"0.80.9"``) or one outside [0, 1] gives no score (the authors' script raises or skips the item).
2. **Where its digits were generated** (:func:`digit_position`): the generated token *is* digit ``d`` when its
   id is the last token of encoding ``str(d)`` alone. The first decimal ``d1`` of ``str(number)`` is read at
   the only token that is ``d1``, or, when several are, the second such token if ``d1`` is 0 (the first is
   the leading "0") and the first otherwise; the second decimal (when ``str(number)`` has one: ``0.85`` does,
   ``0.80`` prints as ``0.8`` and does not) at the only such token or the second of several.
3. **Smoothing** (:func:`smoothed`): with ``p`` the digit probabilities at those generated positions (the
   full-vocabulary softmax, not renormalised), ``Σ_k p₁(k)·k/10 + Σ_k p₂(k)·k/100`` for a number below 1;
   ``0.9·p(0) + p(1)`` at the one token that is ``1`` for ``1.0`` — FLEUR's formulas
   (:mod:`mmjudge.metrics.fleur.smoothing`), which EXPERT's script writes again; only where the digits are read
   differs.

>>> printed_number("0.85"), printed_number(" Score: 0.7."), printed_number("0.8, 0.9"), printed_number("7")
(0.85, 0.7, None, None)
>>> digits = [0, None, 8, 5]  # the answer "0.85": the digit each generated token is (None: not a digit)
>>> p = [[0.0] * 10 for _ in digits]
>>> p[2][8], p[2][7], p[3][5] = 0.6, 0.4, 1.0
>>> round(smoothed(0.85, digits, p), 6)  # 0.6*0.8 + 0.4*0.7 + 1.0*0.05
0.81
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mmjudge.metrics.fleur.smoothing import smooth_decimals, smooth_one


def printed_number(answer: str) -> float | None:
    """The number EXPERT reads from the judge's answer (step 1), or ``None`` when there is none in [0, 1]."""
    digits = re.sub(r"[^\d.]", "", answer.strip())
    digits = re.sub(r"\.+$", "", re.sub(r"^\.+", "", digits))
    try:
        value = float(digits)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def digit_position(digits: Sequence[int | None], digit: int, pick: int) -> int | None:
    """The generated position read for ``digit``: the only token that is ``digit``, else the ``pick``-th
    (0-based) of several; ``None`` when there is no such token, or fewer than ``pick + 1`` of several (the
    authors' script fails there).

    >>> digit_position([0, None, 0, 5], 0, pick=1), digit_position([0, None, 5], 5, pick=1), digit_position([1], 0, 1)
    (2, 2, None)
    """
    found = [k for k, d in enumerate(digits) if d == digit]
    if len(found) == 1:
        return found[0]
    return found[pick] if len(found) > pick else None


def smoothed(number: float, digits: Sequence[int | None], probs: Sequence[Sequence[float]]) -> float | None:
    """EXPERT's score for the printed ``number`` (steps 2 and 3). ``digits``: the digit each generated token is
    (``None``: not a digit); ``probs``: at each generated position, the probabilities of the ten digit tokens.
    ``None`` where the authors' script cannot read one (a digit that was never generated as its own token, a
    number whose ``str`` has no decimal point such as ``1e-05``, several ``1`` tokens for ``1.0``)."""
    if len(digits) != len(probs):
        raise ValueError(f"Expected one digit row per generated token, but got {len(probs)} for {len(digits)}.")
    if number >= 1.0:
        ones = [k for k, d in enumerate(digits) if d == 1]
        return smooth_one(probs[ones[0]]) if len(ones) == 1 else None
    text = str(number)
    if "." not in text:
        return None
    dot = text.index(".")
    first = int(text[dot + 1])
    at = digit_position(digits, first, pick=1 if first == 0 else 0)
    second = digit_position(digits, int(text[dot + 2]), pick=1) if len(text) > 3 else None
    if at is None or (len(text) > 3 and second is None):
        return None
    return smooth_decimals(probs[at], probs[second] if second is not None else None)


def explanation_parts(text: str) -> dict[str, str] | None:
    """The three parts of EXPERT's explanation (``Fluency:`` / ``Relevance:`` / ``Descriptiveness:``, read as the
    authors' ``parse_explanation`` reads them), or ``None`` when the text does not follow that format.

    >>> explanation_parts("Fluency: fine.\\nRelevance: on topic.\\nDescriptiveness: thin.")
    {'fluency': 'fine.', 'relevance': 'on topic.', 'descriptiveness': 'thin.'}
    """
    match = re.search(r"Fluency:\s*(.*?)\nRelevance:\s*(.*?)\nDescriptiveness:\s*(.*)", text, re.DOTALL)
    if match is None:
        return None
    return {"fluency": match[1].strip(), "relevance": match[2].strip(), "descriptiveness": match[3].strip()}
