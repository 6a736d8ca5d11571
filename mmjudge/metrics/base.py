"""The metric contract: what every metric declares, once, and the helpers all metrics share.

Every engine metric subclasses :class:`Metric` and declares a :class:`MetricSpec` (per configuration):

* **inputs** — the ``compute`` keywords (``predictions``, ``images``, ``references``, ``questions``,
  ``boxes``), each with its kind, whether it is required, and the key it has in item dicts (JSONL lines,
  benchmark items: ``text``, ``image``, …);
* **outputs** — per-sample values (scores, diagnostics such as σ, texts such as explanations) and the
  aggregates computed from them (``mean_<name>``, ``corpus_<name>``);
* **primary** — the output a table ranks by (``overall``, ``score``, ``clip_score``, ``ref_clip_score``,
  ``cider``, ``bleu_4`` …) and whether higher is better;
* a structured **signature** (:mod:`mmjudge.signature`).

The CLI, the meta-evaluation, the Space and the leaderboard read these declarations instead of guessing.

>>> from mmjudge.metrics.clip_score import CLIPScore
>>> spec = CLIPScore.spec_for("ref_clip_score")
>>> spec.primary, spec.higher_is_better, [i.name for i in spec.inputs if i.required]
('ref_clip_score', True, ['predictions', 'images', 'references'])
"""

from __future__ import annotations

import inspect
import os
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Optional, Sequence, Union

from mmjudge.cache import CachedJudge
from mmjudge.judges import Judge, load_judge
from mmjudge.signature import Signature

INPUT_KINDS = ("text", "image", "question", "box", "references")
OUTPUT_KINDS = ("score", "diagnostic", "text")


@dataclass(frozen=True)
class InputSpec:
    """One ``compute`` input.

    Attributes:
        name: the ``compute`` keyword (``predictions``, ``images``, …).
        kind: ``text`` | ``image`` | ``question`` | ``box`` | ``references``.
        required: needed on every call (``required_for`` lists tasks that need it otherwise).
        item_key: the key in item dicts (``text``, ``image``, ``question``, ``box``, ``references``).
        required_for: tasks for which an optional input is required (``questions`` for ``vqa``).
        description: one line for documentation, forms and widgets.
    """

    name: str
    kind: str
    required: bool
    item_key: str
    description: str = ""
    required_for: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise ValueError(f"Expected InputSpec.kind to be one of {INPUT_KINDS}, but got {self.kind!r}.")


@dataclass(frozen=True)
class OutputSpec:
    """One per-sample output.

    Attributes:
        name: the result key (a list with one value per sample).
        kind: ``score`` (a figure to rank or correlate), ``diagnostic`` (numeric, not a quality score:
            σ, weight, mass) or ``text`` (explanations, the method used).
        description: one line.
        higher_is_better: for scores.
        bounds: the range a score lies in, when it has one (e.g. ``(1, 5)``).
        aggregates: summary values the result also holds, ``<aggregate>_<name>`` (``mean``,
            ``corpus``).
    """

    name: str
    kind: str = "score"
    description: str = ""
    higher_is_better: Optional[bool] = True
    bounds: Optional[tuple[float, float]] = None
    aggregates: tuple[str, ...] = ("mean",)
    optional: bool = False  # present only when asked for (explanations)

    def __post_init__(self) -> None:
        if self.kind not in OUTPUT_KINDS:
            raise ValueError(f"Expected OutputSpec.kind to be one of {OUTPUT_KINDS}, but got {self.kind!r}.")


@dataclass(frozen=True)
class MetricSpec:
    """What one metric configuration takes and returns."""

    name: str
    config: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    primary: str
    description: str = ""
    tasks: tuple[str, ...] = ("ic",)
    extra_keys: tuple[str, ...] = field(default=("signature",))

    def __post_init__(self) -> None:
        names = [o.name for o in self.outputs]
        if self.primary not in names:
            raise ValueError(f"{self.name}: primary output {self.primary!r} is not among its outputs {names}.")
        if self.output(self.primary).kind != "score":
            raise ValueError(f"{self.name}: primary output {self.primary!r} must be a score.")

    @property
    def higher_is_better(self) -> bool:
        return bool(self.output(self.primary).higher_is_better)

    def output(self, name: str) -> OutputSpec:
        for out in self.outputs:
            if out.name == name:
                return out
        raise KeyError(f"{self.name} has no output {name!r}; it has {[o.name for o in self.outputs]}.")

    def score_names(self) -> list[str]:
        """Per-sample score outputs, primary first."""
        scores = [o.name for o in self.outputs if o.kind == "score"]
        return [self.primary] + [s for s in scores if s != self.primary]

    def aggregate_keys(self) -> list[str]:
        return [f"{agg}_{o.name}" for o in self.outputs for agg in o.aggregates if o.kind != "text"]

    def check_result(self, result: dict, n: int) -> None:
        """Raise ``AssertionError`` unless ``result`` holds every declared output (``n`` values each),
        every aggregate and the signature: the contract test every metric runs."""
        for out in self.outputs:
            if out.optional and out.name not in result:
                continue
            assert out.name in result, f"{self.name}: declared output {out.name!r} missing"
            assert len(result[out.name]) == n, f"{self.name}: {out.name!r} has {len(result[out.name])} values, not {n}"
        present = {o.name for o in self.outputs if not (o.optional and o.name not in result)}
        for o in self.outputs:
            for agg in o.aggregates if o.name in present and o.kind != "text" else ():
                assert f"{agg}_{o.name}" in result, f"{self.name}: aggregate {agg}_{o.name!r} missing"
        assert isinstance(result.get("signature"), Signature), f"{self.name}: no structured signature"
        undeclared = set(result) - {o.name for o in self.outputs} - set(self.aggregate_keys()) - set(self.extra_keys)
        assert not undeclared, f"{self.name}: undeclared result keys {sorted(undeclared)}"


# The inputs most metrics share, declared once.
PREDICTIONS = InputSpec("predictions", "text", True, "text", "the texts being judged (captions, answers, expressions)")
IMAGES = InputSpec("images", "image", True, "image", "one image per prediction: PIL image, path or bytes")
REFERENCES = InputSpec("references", "references", True, "references", "reference texts: a list of strings per prediction")


class Metric(ABC):
    """Base class of engine metrics: a :class:`MetricSpec` per configuration, ``compute``, a signature.

    Subclasses set :attr:`name`, :attr:`configs` and implement :meth:`spec_for` (a classmethod, so
    front doors can read a configuration's declaration without loading any model), :meth:`compute`
    and :meth:`signature_fields`.
    """

    name: ClassVar[str] = "metric"
    configs: ClassVar[tuple[str, ...]] = ()
    config_name: str = ""

    @classmethod
    @abstractmethod
    def spec_for(cls, config_name: Optional[str] = None) -> MetricSpec:
        """The declaration of configuration ``config_name`` (default: the first)."""

    @property
    def spec(self) -> MetricSpec:
        """This instance's declaration (may depend on options, e.g. HarmonicEval's criteria)."""
        return self.spec_for(self.config_name or None)

    @property
    def primary(self) -> str:
        return self.spec.primary

    @property
    def higher_is_better(self) -> bool:
        return self.spec.higher_is_better

    @abstractmethod
    def signature_fields(self) -> dict[str, Any]:
        """Fields after ``mmjudge=…|metric=…`` in this metric's signature."""

    @property
    def signature(self) -> Signature:
        config = {"config": self.config_name} if self.config_name and self.config_name != self.name else {}
        return Signature.make(self.name, **config, **self.signature_fields())

    @abstractmethod
    def compute(self, predictions: Optional[Sequence[str]] = None, **inputs: Any) -> dict[str, Any]:
        """Per-sample lists for every declared output, the aggregates and ``signature``."""

    @classmethod
    def check_config(cls, config_name: Optional[str]) -> str:
        config = config_name or cls.configs[0]
        if config == "default":
            config = cls.configs[0]
        if config not in cls.configs:
            raise ValueError(f"Expected argument `config_name` to be one of {cls.configs}, but got {config_name!r}.")
        return config


def take_predictions(predictions: Any, texts: Any) -> Any:
    """``predictions``, or the deprecated ``texts`` keyword of mmjudge < 0.2 (with a warning)."""
    if texts is not None:
        if predictions is not None:
            raise ValueError("Give the texts once, as `predictions=` (`texts=` is its old name).")
        warnings.warn("`texts=` is deprecated: use `predictions=` (the evaluate convention).", DeprecationWarning, stacklevel=3)
        return texts
    return predictions


def finite_mean(values: Sequence[Any]) -> float:
    """The mean of the finite numbers in ``values``; ``None``, NaN and ±inf are left out, and ``NaN`` is
    the mean of nothing.

    This is THE rule for every ``mean_<name>`` (:func:`add_means`, and what report summaries should use):
    NaN marks a sample without a score (FLEUR's judge printed none); ±inf is left out too, because a
    single infinite sample would make the mean infinite (and not JSON-safe) while saying nothing about
    the other samples.

    >>> finite_mean([1.0, float("nan"), 2, None, float("inf")])
    1.5
    >>> finite_mean([float("nan")])
    nan
    """
    import math
    from numbers import Real

    kept = [float(v) for v in values if isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else math.nan


def add_means(out: dict, spec: MetricSpec) -> dict:
    """Add ``mean_<name>`` (:func:`finite_mean`) for every output in ``out`` that declares a ``mean`` aggregate."""
    for o in spec.outputs:
        if "mean" in o.aggregates and o.name in out:
            out[f"mean_{o.name}"] = finite_mean(out[o.name])
    return out


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
    from mmjudge import registry

    return accepted_keywords(registry.entry("mmjudge.judges", backend, "judge backend").__init__)


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


def check_bool(value: Any, name: str) -> bool:
    """A strict boolean option: ``True``/``False``, ``0``/``1`` or ``"true"``/``"false"``; anything else
    is a ``ValueError`` (``bool("no")`` would be ``True``).

    >>> check_bool("false", "smoothing"), check_bool(1, "explain")
    (False, True)
    >>> check_bool("no", "smoothing")
    Traceback (most recent call last):
    ValueError: Expected argument `smoothing` to be true or false, but got 'no'; pass smoothing=False (--set smoothing=false).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(
        f"Expected argument `{name}` to be true or false, but got {value!r}; pass {name}=False (--set {name}=false)."
    )


# Longest text a judge is asked to read, in characters: about 5,000 tokens, well inside every
# supported judge's context (Qwen2.5-VL: 32k tokens, LLaVA-1.5: 4k with the prompt). A judge may
# declare its own through a `max_text_chars` attribute.
DEFAULT_MAX_TEXT_CHARS = 20_000
LONG_TEXT_POLICIES = ("error", "truncate")


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


def compute_kwargs(metric: Any, items: Sequence[dict], task: str, progress: Optional[bool] = None) -> dict[str, Any]:
    """Keyword arguments for ``metric.compute`` from item dicts of one task: each declared input whose
    ``item_key`` some item has, plus ``task`` and ``progress`` where ``compute`` takes them.

    >>> from mmjudge.metrics.harmonic_eval import HarmonicEval
    >>> sorted(compute_kwargs(HarmonicEval(judge="dummy", cache=False), [{"text": "a", "question": "q?"}], "vqa"))
    ['predictions', 'questions', 'task']
    """
    columns: dict[str, Any] = {}
    for spec in metric.spec.inputs:
        values = [it.get(spec.item_key) for it in items]
        if any(v is not None for v in values):  # a column nobody has is left to compute() to ask for
            columns[spec.name] = values
    accepted = inspect.signature(metric.compute).parameters
    if "task" in accepted:
        columns["task"] = task
    if progress is not None and "progress" in accepted:
        columns["progress"] = progress
    return columns


def compute_by_task(
    metric: Any, items: Sequence[dict], default_task: str = "ic", progress: Optional[bool] = None
) -> Iterator[tuple[list[int], str, dict]]:
    """Run ``metric.compute`` once per task (an item's ``task``, else ``default_task``), in the order the
    tasks first appear; yields ``(item indices, task, result)``."""
    tasks = [str(it.get("task") or default_task).lower() for it in items]
    for task in dict.fromkeys(tasks):
        idx = [i for i, t in enumerate(tasks) if t == task]
        yield idx, task, metric.compute(**compute_kwargs(metric, [items[i] for i in idx], task, progress))
