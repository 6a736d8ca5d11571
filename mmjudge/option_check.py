"""Checking keyword options before anything heavy happens: which keywords a constructor takes, and one
line for a misspelt one ("did you mean").

>>> def make(model=None, gamma=0.75): ...
>>> accepted_keywords(make)
['model', 'gamma']
>>> raise unknown_option_error("gama", "harmonic_eval", ["model", "gamma"])
Traceback (most recent call last):
ValueError: unknown option 'gama' for harmonic_eval; did you mean 'gamma'? Options: gamma, model.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence
from typing import Any


def keywords(func: Any) -> tuple[list[str], bool]:
    """The keyword names ``func`` accepts, and whether it also takes ``**kwargs``."""
    params = inspect.signature(func).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
    return names, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def accepted_keywords(func: Any) -> list[str] | None:
    """The keyword names ``func`` accepts, or ``None`` when it takes ``**kwargs`` (anything goes)."""
    names, takes_rest = keywords(func)
    return None if takes_rest else names


def unknown_option_error(key: str, owner: str, known: Sequence[str]) -> ValueError:
    """``unknown option 'gama' for harmonic_eval; did you mean 'gamma'?`` (and the list of options)."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return ValueError(f"unknown option {key!r} for {owner}{hint} Options: {', '.join(sorted(set(known)))}.")
