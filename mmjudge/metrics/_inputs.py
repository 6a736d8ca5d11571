"""Checks of a metric's inputs, each naming the offending item (``predictions[3]: …``)."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

DEFAULT_MAX_TEXT_CHARS = 20_000
LONG_TEXT_POLICIES = ("error", "truncate")


def check_text_lengths(texts: list[str], max_chars: Optional[int], policy: str = "error", name: str = "predictions") -> list[str]:
    """Refuse (``policy="error"``) or cut with a warning naming each item (``"truncate"``) the texts longer
    than ``max_chars`` characters; ``max_chars=None`` means no limit.

    >>> check_text_lengths(["ok", "x" * 30], 20)
    Traceback (most recent call last):
    ValueError: predictions[1]: the text has 30 characters, more than max_text_chars=20; shorten it, pass long_texts='truncate' to cut it, or raise max_text_chars.
    """
    if policy not in LONG_TEXT_POLICIES:
        raise ValueError(f"Expected argument `long_texts` to be one of {LONG_TEXT_POLICIES}, but got {policy!r}.")
    if max_chars is None:
        return texts
    out = list(texts)
    for i, text in enumerate(texts):
        if len(text) > max_chars:
            if policy == "error":
                raise ValueError(
                    f"{name}[{i}]: the text has {len(text)} characters, more than max_text_chars={max_chars}; shorten it, "
                    "pass long_texts='truncate' to cut it, or raise max_text_chars."
                )
            warnings.warn(f"{name}[{i}]: the text has {len(text)} characters; only the first {max_chars} are judged.", stacklevel=3)
            out[i] = text[:max_chars]
    return out


def check_texts(texts: Any, name: str = "predictions", noun: str = "text", allow_empty_text: bool = False) -> list[str]:
    """A list of non-empty strings, or ``ValueError`` naming the first bad item (``noun`` names what an
    item is in the message; ``allow_empty_text`` lets blank strings through)."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"Expected `{name}` to be a list of strings, but got {type(texts).__name__}.")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}]: expected a string, but got {type(text).__name__}.")
        if not allow_empty_text and not text.strip():
            raise ValueError(f"{name}[{i}]: the {noun} is empty.")
    if not texts:
        raise ValueError(f"`{name}` is empty: nothing to score.")
    return list(texts)


def check_length(values: Optional[Sequence], n: int, name: str) -> None:
    """``values`` (when given) is a list with one entry per prediction, or ``ValueError``."""
    if values is not None and (isinstance(values, (str, bytes)) or not hasattr(values, "__len__")):
        raise ValueError(f"Expected `{name}` to be a list with one entry per prediction, but got {type(values).__name__}.")
    if values is not None and len(values) != n:
        raise ValueError(f"Expected `{name}` to have one entry per prediction ({n}), but got {len(values)}.")


def check_references(
    references: Any,
    n: int,
    name: str = "references",
    *,
    owner: Optional[str] = None,
    noun: str = "text",
    allow_empty_text: bool = False,
) -> list[list[str]]:
    """One non-empty list of reference strings per prediction (``n`` of them), or ``ValueError`` naming
    the first bad item. A lone string as an item's references is a one-reference list; ``None`` or ``[]``
    is refused (``owner``, e.g. ``"VELA"``, names who needs them in that message).

    >>> check_references([["a dog", "a puppy"], "a cat"], 2)
    [['a dog', 'a puppy'], ['a cat']]
    >>> check_references([5], 1)
    Traceback (most recent call last):
    ValueError: references[0]: expected a list of reference strings (or one string), but got int.
    >>> check_references([[]], 1, owner="VELA")
    Traceback (most recent call last):
    ValueError: references[0]: VELA needs at least one reference caption per prediction.
    """
    check_length(references, n, name)
    out: list[list[str]] = []
    for i, group in enumerate(references):
        if isinstance(group, str):
            group = [group]
        elif group is None:
            group = []
        elif isinstance(group, bytes) or not isinstance(group, Sequence):
            raise ValueError(f"{name}[{i}]: expected a list of reference strings (or one string), but got {type(group).__name__}.")
        if len(group) == 0:
            if owner:
                raise ValueError(f"{name}[{i}]: {owner} needs at least one reference caption per prediction.")
            raise ValueError(f"{name}[{i}]: the reference list is empty; every prediction needs at least one reference.")
        out.append(check_texts(group, f"{name}[{i}]", noun, allow_empty_text))
    return out
