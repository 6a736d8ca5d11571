"""Input checks shared by the scorers: clear errors naming the bad item, before any work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmjudge.inputs import check_references, check_text


def check_pairs(
    candidates: Any, references: Any, allow_empty_text: bool = False, name: str = "candidates"
) -> tuple[list[str], list[list[str]]]:
    """``candidates`` (one string each) and ``references`` (a non-empty list of strings each), same length.

    A single string as an item's references is accepted as a one-reference list
    (:func:`mmjudge.inputs.check_reference_list`, the rule every metric shares). Raises ``ValueError``
    naming the first offending item; ``name`` is what the caller calls the candidates (``predictions``).

    >>> check_pairs(["a dog"], ["a dog runs"])
    (['a dog'], [['a dog runs']])
    >>> check_pairs(["a dog"], [[]])
    Traceback (most recent call last):
    ...
    ValueError: references[0]: the reference list is empty; every prediction needs at least one reference.
    """
    if isinstance(candidates, str) or not isinstance(candidates, Sequence):
        raise ValueError(f"Expected argument `{name}` to be a list of strings, but got {type(candidates).__name__}.")
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise ValueError(
            f"Expected argument `references` to be a list of reference lists, but got {type(references).__name__}."
        )
    if len(candidates) != len(references):
        raise ValueError(
            f"Expected one reference list per entry of `{name}`, but got {len(candidates)} {name} and "
            f"{len(references)} reference lists."
        )
    if not candidates:
        raise ValueError(f"`{name}` is empty: nothing to score.")
    cands = [check_text(text, f"{name}[{i}]", "candidate", allow_empty_text) for i, text in enumerate(candidates)]
    refs = check_references(references, len(cands), noun="reference", allow_empty_text=allow_empty_text)
    return cands, refs
