"""Building a judge from options: the backend that ``judge=`` / ``model=`` select, its options checked
before any model loads, wrapped for data parallelism (under a launcher) and in the persistent cache.

>>> backend_name(None, "openai:gpt-4o"), backend_name("dummy", None), backend_name(None, "org/vlm")
('openai', 'dummy', 'transformers')
>>> build_judge(None, "dummy", cache=False, gama=1)
Traceback (most recent call last):
ValueError: unknown option 'gama' for the 'dummy' judge. Options: batch_size, can_generate, full_distribution,
mass, model, seed, sees_images, teacher_forcing.
"""

from __future__ import annotations

import os
from typing import Any

from mmjudge.judges import JUDGES, load_judge
from mmjudge.judges.base import Judge, find_layer
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.data_parallel import parallel
from mmjudge.option_check import accepted_keywords, unknown_option_error
from mmjudge.paths import check_cache_path, default_cache_path

CacheOption = bool | str | os.PathLike | None


def build_judge(
    model: str | None,
    judge: Judge | str | None = None,
    cache: CacheOption = True,
    **judge_kwargs: Any,
) -> Judge:
    """A judge for ``model`` (``judge`` names the backend, default ``"transformers"``, or is a ready
    :class:`Judge`), wrapped in the persistent cache unless ``cache`` is ``False``/``None``.
    ``cache=True`` uses the default cache file; a path uses that file. A ready judge that already has a
    cache is used as it is."""
    wrap = cache is not None and cache is not False and find_layer(judge, CachedJudge) is None  # (a name: None)
    # Checked before the model loads (a bad path must not cost a model load).
    path = check_cache_path(default_cache_path() if cache is True else cache) if wrap else None
    if isinstance(judge, Judge):
        if judge_kwargs:
            raise ValueError(f"Judge options {sorted(judge_kwargs)} cannot be applied to a ready judge instance.")
        built = parallel(judge)
    else:
        if model is not None:
            judge_kwargs["model"] = model
        backend = backend_name(judge, model)
        check_judge_options(backend, judge_kwargs)
        built = load_judge(backend, **judge_kwargs)
    return CachedJudge(built, path) if path is not None else built


def backend_name(judge: str | None, model: Any) -> str:
    """The judge backend that ``judge=`` / ``model=`` select: ``judge``, default ``"transformers"``, except
    that ``model="openai:gpt-4o"`` alone selects the chat-API backend."""
    if judge in (None, "transformers") and isinstance(model, str) and model.startswith("openai:"):
        return "openai"
    return judge or "transformers"


def judge_keywords(backend: str) -> list[str] | None:
    """The options of the judge backend ``backend`` (``None``: anything goes); ``ValueError`` if unknown."""
    return accepted_keywords(JUDGES.get(backend).__init__)


def check_judge_options(backend: str, options: dict) -> None:
    """``ValueError`` for an option the judge backend ``backend`` does not take (instead of a ``TypeError``
    from its constructor), with a "did you mean" hint."""
    known = judge_keywords(backend)
    if known is None:
        return
    for key in options:
        if key not in known:
            raise unknown_option_error(key, f"the {backend!r} judge", known)
