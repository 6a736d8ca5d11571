"""How metrics build their judge and check their options, before any model loads: backend routing
(``openai:`` models), unknown keywords with a "did you mean", strict booleans, text-length policies."""

from __future__ import annotations

import inspect
import os
from typing import Any, Optional, Sequence, Union

from mmjudge.cache import CachedJudge
from mmjudge.judges import Judge, load_judge
from mmjudge.metrics._inputs import DEFAULT_MAX_TEXT_CHARS, check_text_lengths


CacheOption = Union[bool, str, os.PathLike, None]


def build_judge(
    model: Optional[str],
    judge: Union[Judge, str, None] = None,
    cache: CacheOption = True,
    **judge_kwargs: Any,
) -> Judge:
    """A judge for ``model`` (``judge`` names the backend, default ``"transformers"``, or is a ready
    :class:`Judge`), wrapped in the persistent cache unless ``cache`` is ``False``/``None``.
    ``cache=True`` uses the default cache file; a path uses that file."""
    from mmjudge.cache import check_cache_path, default_cache_path

    wrap = cache is not None and cache is not False and not isinstance(judge, CachedJudge)
    # Checked before the model loads (a bad path must not cost a model load); a ready CachedJudge is used as is.
    path = check_cache_path(default_cache_path() if cache is True else cache) if wrap else None
    if isinstance(judge, Judge):
        if judge_kwargs:
            raise ValueError(f"Judge options {sorted(judge_kwargs)} cannot be applied to a ready judge instance.")
        built = judge
    else:
        if model is not None:
            judge_kwargs["model"] = model
        backend = _backend_name(judge, model)
        check_judge_options(backend, judge_kwargs)
        built = load_judge(backend, **judge_kwargs)
    if path is None or isinstance(built, CachedJudge):
        return built
    return CachedJudge(built, path)


def _backend_name(judge: Optional[str], model: Any) -> str:
    """The judge backend that ``judge=`` / ``model=`` select: ``judge``, default ``"transformers"``, except
    that ``model="openai:gpt-4o"`` alone selects the chat-API backend.

    >>> _backend_name(None, "openai:gpt-4o"), _backend_name("dummy", None), _backend_name(None, "org/vlm")
    ('openai', 'dummy', 'transformers')
    """
    if judge in (None, "transformers") and isinstance(model, str) and model.startswith("openai:"):
        return "openai"
    return judge or "transformers"


def _keywords(func: Any) -> tuple[list[str], bool]:
    """The keyword names ``func`` accepts, and whether it also takes ``**kwargs``."""
    params = inspect.signature(func).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
    return names, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def accepted_keywords(func: Any) -> Optional[list[str]]:
    """The keyword names ``func`` accepts, or ``None`` when it takes ``**kwargs`` (anything goes)."""
    names, takes_rest = _keywords(func)
    return None if takes_rest else names


def _judge_keywords(backend: str) -> Optional[list[str]]:
    """The options of the judge backend ``backend`` (``None``: anything goes); ``ValueError`` if unknown."""
    from mmjudge.judges import JUDGES

    return accepted_keywords(JUDGES.get(backend).__init__)


def unknown_option_error(key: str, owner: str, known: Sequence[str]) -> ValueError:
    """``unknown option 'gama' for harmonic_eval; did you mean 'gamma'?`` (and the list of options)."""
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return ValueError(f"unknown option {key!r} for {owner}{hint} Options: {', '.join(sorted(set(known)))}.")


def check_judge_options(backend: str, options: dict) -> None:
    """``ValueError`` for an option the judge backend ``backend`` does not take (instead of a ``TypeError``
    from its constructor), with a "did you mean" hint."""
    known = _judge_keywords(backend)
    if known is None:
        return
    for key in options:
        if key not in known:
            raise unknown_option_error(key, f"the {backend!r} judge", known)


def check_metric_options(cls: Any, options: dict) -> None:
    """Every key of ``options`` is a keyword of the metric class ``cls`` or of its judge backend
    (``options["judge"]``, default ``transformers``); otherwise a ``ValueError`` naming the option.

    >>> from mmjudge.metrics.harmonic_eval import HarmonicEval
    >>> check_metric_options(HarmonicEval, {"judge": "dummy", "gama": 0.5})
    Traceback (most recent call last):
    ValueError: unknown option 'gama' for harmonic_eval; did you mean 'gamma'? Options: ...
    """
    own, passes_rest = _keywords(cls.__init__)
    known = list(own)
    if passes_rest:  # the rest goes to the judge backend: its keywords are options too
        judge = options.get("judge")
        if "judge" not in own or not (judge is None or isinstance(judge, str)):
            return  # a ready judge instance, or a metric that forwards elsewhere: cannot check here
        try:
            backend_known = _judge_keywords(_backend_name(judge, options.get("model")))  # as build_judge routes it
        except (ValueError, ImportError):
            return  # the metric reports the unknown backend itself
        if backend_known is None:
            return
        known += backend_known
    for key in options:
        if key not in known:
            raise unknown_option_error(key, getattr(cls, "name", cls.__name__), known)


# Longest text a judge is asked to read, in characters: about 5,000 tokens, well inside every
# supported judge's context (Qwen2.5-VL: 32k tokens, LLaVA-1.5: 4k with the prompt). A judge may
# declare its own through a `max_text_chars` attribute.
def build_text_judge(
    model: Optional[str],
    judge: Union[Judge, str, None],
    cache: CacheOption,
    judge_kwargs: dict,
    *,
    default_model: str,
    max_text_chars: Optional[int],
    long_texts: str,
) -> tuple[Judge, Optional[int]]:
    """The set-up every judge-reading metric repeats: check the ``long_texts`` policy and
    ``max_text_chars`` (cheap, before any model loads), build the judge (``default_model`` when the
    backend is ``transformers``) and return it with the text limit to apply — the judge's own
    ``max_text_chars`` when the caller kept the default (the judge knows its context best).

    >>> judge, limit = build_text_judge(None, "dummy", False, {}, default_model="x", max_text_chars=500, long_texts="truncate")
    >>> limit
    500
    >>> build_text_judge(None, "dummy", False, {}, default_model="x", max_text_chars=20, long_texts="cut")
    Traceback (most recent call last):
    ValueError: Expected argument `long_texts` to be one of ('error', 'truncate'), but got 'cut'.
    """
    check_text_lengths([], None, long_texts)  # the policy name
    limit: Optional[int] = None
    if max_text_chars is not None:
        try:
            limit = int(max_text_chars)
        except (TypeError, ValueError):
            limit = 0
        if limit < 1 or isinstance(max_text_chars, bool):
            raise ValueError(
                f"Expected argument `max_text_chars` to be a positive integer or None (no limit), but got {max_text_chars!r}."
            )
    if judge is None or judge == "transformers":
        model = model or default_model
    built = build_judge(model, judge, cache, **judge_kwargs)
    if max_text_chars == DEFAULT_MAX_TEXT_CHARS and getattr(built, "max_text_chars", None):
        limit = int(built.max_text_chars)
    return built, limit
