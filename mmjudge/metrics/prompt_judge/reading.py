"""Reading a score out of a generated answer whose tokens list their top alternatives (what a chat API's
``logprobs`` give): pure functions of a :class:`~mmjudge.judges.base.ScoredText`, no judge.

* :func:`read_after_marker` — G-VEval's rule (``evaluation/gveval/scorer.py``): at the token right after
  the first token holding the marker (``$``), the listed alternatives that are exactly an integer of the
  scale are renormalised; the score is their expectation.
* :func:`read_fleur_decimal` — FLEUR's score smoothing on the tokens a judge generated: at the first
  ``0.x`` / ``0.xy`` / ``1.0`` it writes, every listed alternative of the decimal digits' tokens adds
  ``p · (its value at that place)`` (``"8"`` after ``"0."`` adds ``0.8 p``; one token ``"85"`` adds
  ``0.85 p``; a separate second-decimal token adds ``d/100``), not renormalised; ``1.0`` reads
  ``0.9 p("0") + p("1")`` at the leading digit.

>>> from mmjudge.judges.requests import ScoredText, ScoredToken
>>> answer = ScoredText("The final score is $85$.", [ScoredToken(t, top) for t, top in [
...     ("The final score is ", [("The final score is ", 1.0)]), ("$", [("$", 1.0)]),
...     ("85", [("85", 0.5), ("80", 0.25), (" 85", 0.2), ("9O", 0.05)]), ("$.", [("$.", 1.0)])]])
>>> r = read_after_marker(answer, "$", 0, 100, normalise=True)
>>> round(r.score, 4), r.printed, r.note
(83.3333, 85.0, '')
>>> fleur = ScoredText("0.85", [ScoredToken("0", [("0", 0.9), ("1", 0.1)]), ScoredToken(".", [(".", 1.0)]),
...                             ScoredToken("85", [("85", 0.6), ("8", 0.2), ("9", 0.1)])])
>>> round(read_fleur_decimal(fleur).score, 4)  # 0.85*0.6 + 0.8*0.2 + 0.9*0.1
0.76
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mmjudge.judges.requests import ScoredText
from mmjudge.metrics.fleur.smoothing import parse_score

READINGS = ("integer_after_marker", "fleur_decimal")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Reading:
    """A score read from an answer: ``score`` (NaN when there is none), ``printed`` (the number the judge
    wrote, NaN if none) and ``note`` (why there is no score; empty when there is one)."""

    score: float
    printed: float = math.nan
    note: str = ""


def _starts(answer: ScoredText) -> list[int]:
    out, at = [], 0
    for token in answer.tokens:
        out.append(at)
        at += len(token.token)
    return out


def _token_at(starts: list[int], answer: ScoredText, position: int) -> int | None:
    """Index of the token whose span holds character ``position`` of the answer."""
    for k, start in enumerate(starts):
        if start <= position < start + len(answer.tokens[k].token):
            return k
    return None


def read_after_marker(answer: ScoredText, marker: str, low: int, high: int, normalise: bool = True) -> Reading:
    """G-VEval's reading (see the module): integers ``low..high`` listed at the token after the marker.

    A listed token counts only when it is exactly the integer's spelling (``"85"``, not ``" 85"`` nor
    ``"085"``), as G-VEval's code compares them; later duplicates of a spelling replace earlier ones."""
    index = next((k for k, token in enumerate(answer.tokens) if marker in token.token), None)
    if index is None:
        return Reading(math.nan, note=f"no {marker!r} in the answer {_short(answer.text)!r}")
    if index + 1 >= len(answer.tokens):
        return Reading(math.nan, note=f"the answer ends at its {marker!r}: {_short(answer.text)!r}")
    after = answer.tokens[index + 1]
    values: dict[int, float] = {}
    for token, prob in after.top:
        if token.isdigit() and str(int(token)) == token and low <= int(token) <= high:
            values[int(token)] = prob
    printed = float(after.token) if after.token.isdigit() else math.nan
    total = sum(values.values())
    if not total > 0:
        return Reading(math.nan, printed, f"no integer {low}-{high} listed after {marker!r}: it wrote {after.token!r}")
    score = sum(v * p for v, p in values.items()) / (total if normalise else 1.0)
    return Reading(float(score), printed)


def read_fleur_decimal(answer: ScoredText) -> Reading:
    """FLEUR's smoothing on generated tokens (see the module): the first ``0.x``/``0.xy``/``1.0`` in the text."""
    match = parse_score(answer.text)
    if match is None:
        return Reading(math.nan, note=f"no 0.x / 1.0 score in the answer {_short(answer.text)!r}")
    starts = _starts(answer)
    printed = float(match.group(0))
    if match.group("one"):
        k = _token_at(starts, answer, match.start("one"))
        lead = answer.tokens[k]
        if lead.token.strip() != "1":
            return Reading(math.nan, printed, f"the leading digit is inside the token {lead.token!r}")
        # Every listed spelling of a digit counts ("1" and " 1"), as the local reading sums token variants.
        p0 = sum(p for t, p in lead.top if t.strip() == "0")
        p1 = sum(p for t, p in lead.top if t.strip() == "1")
        return Reading(0.9 * p0 + p1, printed)
    wanted = 2 if match.group("d2") else 1
    position, covered, score = match.start("d1"), 0, 0.0
    while covered < wanted:
        k = _token_at(starts, answer, position)
        if k is None:
            break
        token = answer.tokens[k]
        head = token.token[: position - starts[k]]  # what the token holds before the digits ("." or "0.")
        digits = _DIGITS.match(token.token, position - starts[k])
        if digits is None:
            break
        for alt, prob in token.top:
            if alt.startswith(head) and alt[len(head) :].isdigit():
                tail = alt[len(head) :]
                score += prob * int(tail) / 10 ** (covered + len(tail))
        covered += len(digits.group(0))
        position = starts[k] + digits.end()
    return Reading(float(score), printed)


def read(
    answer: ScoredText, reading: str, scale: tuple[float, float], marker: str = "$", normalise: bool = True
) -> Reading:
    """``answer`` read by the rule named ``reading`` (:data:`READINGS`)."""
    if answer.error is not None:
        return Reading(math.nan, note=answer.error)
    if reading == "integer_after_marker":
        return read_after_marker(answer, marker, int(scale[0]), int(scale[1]), normalise)
    if reading == "fleur_decimal":
        return read_fleur_decimal(answer)
    raise ValueError(f"Expected a reading among {READINGS}, but got {reading!r}.")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
