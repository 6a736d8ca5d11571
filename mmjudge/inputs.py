"""Checks of the values a metric or scorer reads, each naming the offending value (``predictions[3]``,
``references[0][1]``, ``items.jsonl:7: text``) and saying what was expected. A leaf module: the metric
contract (:mod:`mmjudge.metrics.base`) and the classic scorers (:mod:`mmjudge.metrics.baselines`) both use it.

>>> check_text("A dog.", "predictions[0]")
'A dog.'
>>> check_text(" ", "predictions[1]")
Traceback (most recent call last):
ValueError: predictions[1]: the text is empty.
>>> check_reference_list("a cat", "references[0]")
['a cat']
>>> check_reference_list([], "references[0]", owner="VELA")
Traceback (most recent call last):
ValueError: references[0]: VELA needs at least one reference caption per prediction.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from numbers import Real
from typing import Any

DEFAULT_MAX_TEXT_CHARS = 20_000
LONG_TEXT_POLICIES = ("error", "truncate")


def check_text(value: Any, where: str, noun: str = "text", allow_empty: bool = False) -> str:
    """``value`` if it is a (non-blank, unless ``allow_empty``) string; ``noun`` names it in the message."""
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string, but got {type(value).__name__}.")
    if not allow_empty and not value.strip():
        raise ValueError(f"{where}: the {noun} is empty.")
    return value


def check_text_length(text: str, where: str, max_chars: int | None, policy: str = "error") -> str:
    """Refuse (``policy="error"``) or cut with a warning (``"truncate"``) a text longer than ``max_chars``
    characters; ``max_chars=None`` means no limit.

    >>> check_text_length("x" * 30, "predictions[1]", 20)
    Traceback (most recent call last):
    ValueError: predictions[1]: the text has 30 characters, more than max_text_chars=20; shorten it,
    pass long_texts='truncate' to cut it, or raise max_text_chars.
    """
    if max_chars is None or len(text) <= max_chars:
        return text
    if policy == "error":
        raise ValueError(
            f"{where}: the text has {len(text)} characters, more than max_text_chars={max_chars}; shorten it, "
            "pass long_texts='truncate' to cut it, or raise max_text_chars."
        )
    warnings.warn(f"{where}: the text has {len(text)} characters; only the first {max_chars} are judged.", stacklevel=3)
    return text[:max_chars]


def check_long_text_options(max_text_chars: Any, long_texts: str) -> int | None:
    """The ``max_text_chars`` limit (``None``: no limit) after checking it and the ``long_texts`` policy.

    >>> check_long_text_options(500, "truncate"), check_long_text_options(None, "error")
    (500, None)
    >>> check_long_text_options(20, "cut")
    Traceback (most recent call last):
    ValueError: Expected argument `long_texts` to be one of ('error', 'truncate'), but got 'cut'.
    """
    if long_texts not in LONG_TEXT_POLICIES:
        raise ValueError(f"Expected argument `long_texts` to be one of {LONG_TEXT_POLICIES}, but got {long_texts!r}.")
    if max_text_chars is None:
        return None
    try:
        limit = int(max_text_chars)
    except (TypeError, ValueError):
        limit = 0
    if limit < 1 or isinstance(max_text_chars, bool):
        raise ValueError(
            "Expected argument `max_text_chars` to be a positive integer or None (no limit), but got "
            f"{max_text_chars!r}."
        )
    return limit


def check_reference_list(
    group: Any, where: str, owner: str | None = None, noun: str = "text", allow_empty_text: bool = False
) -> list[str]:
    """One item's references as a non-empty list of strings. A lone string is a one-reference list;
    ``None`` or ``[]`` is refused (``owner``, e.g. ``"VELA"``, names who needs them in that message)."""
    if isinstance(group, str):
        group = [group]
    elif group is None:
        group = []
    elif isinstance(group, bytes) or not isinstance(group, Sequence):
        raise ValueError(
            f"{where}: expected a list of reference strings (or one string), but got {type(group).__name__}."
        )
    if len(group) == 0:
        if owner:
            raise ValueError(f"{where}: {owner} needs at least one reference caption per prediction.")
        raise ValueError(f"{where}: the reference list is empty; every prediction needs at least one reference.")
    return [check_text(r, f"{where}[{j}]", noun, allow_empty_text) for j, r in enumerate(group)]


def check_column(values: Any, n: int | None, name: str) -> None:
    """``values`` is a list (one entry per prediction when ``n`` is given), or ``ValueError``."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or isinstance(values, dict):
        raise ValueError(
            f"Expected `{name}` to be a list with one entry per prediction, but got {type(values).__name__}."
        )
    if n is not None and len(values) != n:
        raise ValueError(f"Expected `{name}` to have one entry per prediction ({n}), but got {len(values)}.")


def check_references(
    references: Any,
    n: int,
    name: str = "references",
    *,
    owner: str | None = None,
    noun: str = "text",
    allow_empty_text: bool = False,
) -> list[list[str]]:
    """One non-empty list of reference strings per prediction (``n`` of them).

    >>> check_references([["a dog", "a puppy"], "a cat"], 2)
    [['a dog', 'a puppy'], ['a cat']]
    """
    check_column(references, n, name)
    return [check_reference_list(g, f"{name}[{i}]", owner, noun, allow_empty_text) for i, g in enumerate(references)]


def is_number(value: Any) -> bool:
    """A real number that is not a bool (``True`` is an ``int`` in Python)."""
    if type(value) is float or type(value) is int:  # the common case, without the ABC check (hot: every score)
        return True
    return isinstance(value, Real) and not isinstance(value, bool)


def finite_mean(values: Sequence[Any]) -> float:
    """The mean of the finite numbers in ``values``; ``None``, NaN and ±inf are left out, and ``NaN`` is
    the mean of nothing.

    This is THE rule for every ``mean_<name>``: NaN marks a sample without a score (a judge that gave no
    rating); ±inf is left out too, because a single infinite sample would make the mean infinite (and not
    JSON-safe) while saying nothing about the other samples.

    >>> finite_mean([1.0, float("nan"), 2, None, float("inf")])
    1.5
    >>> finite_mean([float("nan")])
    nan
    """
    kept = [float(v) for v in values if is_number(v) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else math.nan
