"""A metric's constructor options, checked before any model loads: unknown keywords (with a "did you
mean"), and the judge that judge-reading metrics build with their text limits.

>>> from mmjudge.metrics.harmonic_eval import HarmonicEval
>>> check_metric_options(HarmonicEval, {"judge": "dummy", "gama": 0.5})
Traceback (most recent call last):
ValueError: unknown option 'gama' for harmonic_eval; did you mean 'gamma'? Options: ...
"""

from __future__ import annotations

from typing import Any

from mmjudge.inputs import DEFAULT_MAX_TEXT_CHARS, check_long_text_options
from mmjudge.judges.base import Judge
from mmjudge.judges.factory import CacheOption, backend_name, build_judge, judge_keywords
from mmjudge.option_check import keywords, unknown_option_error


def check_metric_options(cls: Any, options: dict) -> None:
    """Every key of ``options`` is a keyword of the metric class ``cls`` or of its judge backend
    (``options["judge"]``, default ``transformers``); otherwise a ``ValueError`` naming the option."""
    own, passes_rest = keywords(cls.__init__)
    known = list(own)
    if passes_rest:  # the rest goes to the judge backend: its keywords are options too
        judge = options.get("judge")
        if "judge" not in own or not (judge is None or isinstance(judge, str)):
            return  # a ready judge instance, or a metric that forwards elsewhere: cannot check here
        try:
            backend_known = judge_keywords(backend_name(judge, options.get("model")))  # as build_judge routes it
        except (ValueError, ImportError):
            return  # the metric reports the unknown backend itself
        if backend_known is None:
            return
        known += backend_known
    for key in options:
        if key not in known:
            raise unknown_option_error(key, getattr(cls, "name", cls.__name__), known)


def given_once(value: Any, model: Any, name: str, what: str = "the checkpoint") -> Any:
    """Option ``name`` or, under the CLI's name for it, ``model`` (``--model``): either one, or both alike.

    >>> given_once(None, "pac.pth", "checkpoint")
    'pac.pth'
    >>> given_once("a.pth", "b.pth", "checkpoint")
    Traceback (most recent call last):
    ValueError: Give the checkpoint once: model='b.pth' and checkpoint='a.pth' differ.
    """
    if model is not None and value is not None and str(model) != str(value):
        raise ValueError(f"Give {what} once: model={model!r} and {name}={value!r} differ.")
    return value if value is not None else model


def set_text_limits(metric: Any, max_pixels: int, max_text_chars: Any, long_texts: str) -> None:
    """The limits every judge-reading metric takes, checked (cheap, before any model loads) and set on
    ``metric``: the largest image in pixels, the longest text in characters, the ``long_texts`` policy.

    >>> class Metric: ...
    >>> metric = Metric()
    >>> set_text_limits(metric, 1_000_000, 500, "truncate")
    >>> metric.max_pixels, metric.max_text_chars, metric.long_texts
    (1000000, 500, 'truncate')
    """
    metric.max_text_chars = check_long_text_options(max_text_chars, long_texts)
    metric.long_texts = long_texts
    metric.max_pixels = int(max_pixels)


def build_text_judge(
    model: str | None, judge: Judge | str | None, cache: CacheOption, judge_kwargs: dict, default_model: str
) -> Judge:
    """The judge of a judge-reading metric: ``default_model`` when the backend is ``transformers`` and no
    model is named.

    >>> build_text_judge(None, "dummy", False, {}, "x").describe()
    'dummy:dummy'
    """
    if judge is None or judge == "transformers":
        model = model or default_model
    return build_judge(model, judge, cache, **judge_kwargs)


__all__ = [
    "CacheOption",
    "DEFAULT_MAX_TEXT_CHARS",
    "build_text_judge",
    "check_metric_options",
    "given_once",
    "set_text_limits",
]
