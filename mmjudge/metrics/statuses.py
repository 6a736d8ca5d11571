"""Why a score is missing: one status per score and item, so a judge's failure is never a number.

A score output ``x`` that a judge may fail to give has two companions: ``x_status`` — ``ok``,
``no_rating`` (the judge put no probability on the scale: it said something else), ``low_mass`` (it put
less than ``min_mass`` on it: the renormalised remainder is not its answer), ``error`` (the request
failed after its retries) or a metric's own reason (``needs_corpus``) — and ``x_note``: what the judge
said instead (its most likely token, or its generated text), or why the request failed. When the status
is not ``ok``, ``x`` is NaN (``null`` in JSON and CSV) and means leave it out.

``needs_image`` is not a failure: the judge cannot see images (a text-only model), so a criterion that
looks at the image was not asked at all. It is the same for every item of a run, its signature says so
(``unrated=…``), and it is never counted among the failures (:func:`count_failures`, ``--strict``, the
board's failure share): nothing went wrong, the configuration rates fewer criteria.

>>> from mmjudge.judges.requests import RatingResult
>>> rating_status(RatingResult(raw=[0.2, 0.3, 0.1, 0.1, 0.1], greedy="3"), min_mass=0.5)
('ok', '')
>>> rating_status(RatingResult(raw=[0.0] * 5, greedy=" I"), min_mass=0.5)
('no_rating', "the judge answered ' I'")
>>> rating_status(RatingResult(raw=[0.05] * 5, greedy="The"), min_mass=0.5)
('low_mass', "0.25 of the judge's probability was on the scale; it answered 'The'")
>>> rating_status(RatingResult(raw=[0.05] * 5, greedy="The", exact_mass=False), min_mass=0.5)  # a top-k lower bound
('ok', '')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from mmjudge.judges.requests import RatingResult

OK = "ok"
NO_RATING = "no_rating"
LOW_MASS = "low_mass"
ERROR = "error"
NEEDS_IMAGE = "needs_image"
NEEDS_IMAGE_NOTE = "not rated: the judge cannot see images"
STATUSES = (OK, NO_RATING, LOW_MASS, ERROR)
# Statuses of scores that were never asked for (a property of the run's configuration, not of an item): not failures.
NOT_ASKED = frozenset({NEEDS_IMAGE})
# Below half its probability on the scale, a judge is mostly saying something other than a rating: the
# renormalised remainder is not its answer. Only exact masses are held to it (a top-k API's mass is a
# lower bound: a rating outside the top k reads as 0).
DEFAULT_MIN_MASS = 0.5


def check_min_mass(value: Any) -> float:
    """``min_mass`` as a float in [0, 1].

    >>> check_min_mass(1.5)
    Traceback (most recent call last):
    ValueError: Expected argument `min_mass` to be a number in [0, 1], but got 1.5.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0.0 <= number <= 1.0:
        raise ValueError(f"Expected argument `min_mass` to be a number in [0, 1], but got {value!r}.")
    return number


def rating_status(result: RatingResult, min_mass: float = DEFAULT_MIN_MASS) -> tuple[str, str]:
    """``(status, note)`` of one rating (see the module)."""
    if result.error is not None:
        return ERROR, result.error
    mass = result.mass
    said = result.greedy.strip() and f"it answered {result.greedy!r}"
    if not mass > 0:
        return NO_RATING, f"the judge answered {result.greedy!r}" if result.greedy else "the judge gave no rating"
    if result.exact_mass and mass < min_mass:
        return LOW_MASS, f"{mass:.2g} of the judge's probability was on the scale" + (f"; {said}" if said else "")
    return OK, ""


def count_failures(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{output: {status: items}}`` over result rows, for every ``<output>_status`` that is not ``ok``
    (nor ``needs_image``: a criterion the judge was not asked, see the module).

    >>> count_failures([{"fluency_status": "ok"}, {"fluency_status": "no_rating", "clarity_status": "error"}])
    {'fluency': {'no_rating': 1}, 'clarity': {'error': 1}}
    >>> count_failures([{"fluency_status": "ok", "correctness_status": "needs_image"}])
    {}
    """
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        add_failures(out, row)
    return out


def add_failures(counts: dict[str, dict[str, int]], row: Mapping[str, Any]) -> bool:
    """Count one row's failed statuses into ``counts`` (see :func:`count_failures`); whether it had any."""
    failed = False
    for key, value in row.items():
        if key.endswith("_status") and value not in (OK, None) and value not in NOT_ASKED:
            per = counts.setdefault(key[: -len("_status")], {})
            per[str(value)] = per.get(str(value), 0) + 1
            failed = True
    return failed


def failure_line(
    counts: Mapping[str, Mapping[str, int]],
    failed_items: int,
    total: int,
    unit: str = "item",
    judged: str = "rating",
) -> str:
    """The one line a front door prints after a run with failures; ``unit`` is what was scored (a head to head
    counts ``"pair"``s) and ``judged`` what a judge gives it (a ``"preference"``).

    >>> failure_line({"fluency": {"no_rating": 9}, "clarity": {"low_mass": 3}}, 12, 10_000)
    '12 of 10,000 items got no rating: fluency 9 (no_rating), clarity 3 (low_mass) — see the `_status` columns'
    >>> failure_line({"cider": {"needs_corpus": 1}}, 1, 1)
    '1 of 1 items got no score: cider 1 (needs_corpus) — see the `_status` columns'
    >>> failure_line({"fluency": {"no_rating": 1}}, 0, 4)  # the overall score stood on the other criteria
    'every item got an overall rating, but not every criterion: fluency 1 (no_rating) — see the `_status` columns'
    >>> failure_line({"fluency": {"no_rating": 1}}, 1, 2, unit="pair", judged="preference")
    '1 of 2 pairs got no preference: fluency 1 (no_rating) — see the `_status` columns'
    >>> failure_line({"fluency": {"no_rating": 1}}, 0, 2, unit="pair", judged="preference")
    'every pair got an overall preference, but not every criterion: fluency 1 (no_rating) — see the `_status` columns'
    """
    parts = ", ".join(f"{name} {sum(per.values())} ({', '.join(sorted(per))})" for name, per in counts.items())
    # A judge's failures are missing ratings; a metric's own (CIDEr-D on one item, an empty text) are scores.
    what = judged if all(status in STATUSES for per in counts.values() for status in per) else "score"
    if failed_items == 0:
        return f"every {unit} got an overall {what}, but not every criterion: {parts} — see the `_status` columns"
    return f"{failed_items:,} of {total:,} {unit}s got no {what}: {parts} — see the `_status` columns"
