"""One progress-bar helper for every long loop in mmjudge.

Bars are tqdm bars, switched off by the caller (``progress=False``) or by the environment:
``TQDM_DISABLE=1`` (tqdm's own switch) or ``HF_HUB_DISABLE_PROGRESS_BARS=1`` (the Hugging Face one, as
``transformers``, ``datasets`` and ``huggingface_hub`` honour it).

>>> import os
>>> os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
>>> bars_disabled()
True
>>> list(progress_bar(range(3), desc="x"))
[0, 1, 2]
>>> del os.environ["HF_HUB_DISABLE_PROGRESS_BARS"]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

_TRUE = ("1", "true", "yes", "on")


def bars_disabled() -> bool:
    """Whether the environment asks for no progress bars."""
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE for var in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")
    )


def progress_bar(iterable: Iterable | None = None, *, disable: bool = False, **kwargs: Any):
    """``tqdm.auto.tqdm(iterable, **kwargs)``, disabled when ``disable`` or :func:`bars_disabled`."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=disable or bars_disabled(), **kwargs)


@contextlib.contextmanager
def optional_bar(enabled: bool, **kwargs: Any) -> Iterator[Any]:
    """A :func:`progress_bar` (``kwargs``: ``total``, ``desc``, ``unit`` …) while ``enabled``, else ``None``: for
    loops that update a bar only when the caller asked for one.

    >>> with optional_bar(False, total=3) as bar:
    ...     bar is None
    True
    """
    if not enabled:
        yield None
        return
    with progress_bar(**kwargs) as bar:
        yield bar
