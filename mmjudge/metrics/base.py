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
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Optional, Sequence

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
class OptionSpec:
    """A ``compute`` keyword that says how to score rather than what (``task``, ``explain``, ``progress``).

    Attributes:
        name: the keyword.
        description: one line for documentation and front doors.
    """

    name: str
    description: str = ""


PROGRESS = OptionSpec("progress", "show progress bars on long work")
EXPLAIN = OptionSpec("explain", "also generate the judge's explanation")
TASK = OptionSpec("task", "the task of items that do not name their own")


@dataclass(frozen=True)
class MetricSpec:
    """What one metric configuration takes and returns.

    Attributes:
        name, config: the metric and this configuration.
        inputs, outputs, primary: see :class:`InputSpec`, :class:`OutputSpec`; ``primary`` ranks tables.
        description: one line on what it measures.
        tasks: the tasks it scores.
        label: its name on pages and in tables (``"RefCLIP-S"``, ``"CIDEr-D"``).
        judged: scored by a VLM judge (``mmjudge.judges``), which front doors may share between metrics.
        requires: constructor options it cannot run without (VELA's ``checkpoint``): a front door offers
            it only once they are configured.
        options: the ``compute`` keywords that are not inputs (:class:`OptionSpec`).
    """

    name: str
    config: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    primary: str
    description: str = ""
    tasks: tuple[str, ...] = ("ic",)
    extra_keys: tuple[str, ...] = field(default=("signature",))
    label: str = ""
    judged: bool = False
    requires: tuple[str, ...] = ()
    options: tuple[OptionSpec, ...] = (PROGRESS,)

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.config or self.name)
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


# Input checks and judge/option building live in their own modules; metrics import them from here.
from mmjudge.errors import check_bool  # noqa: E402,F401  (metrics read true/false options with it)
from mmjudge.metrics._inputs import (  # noqa: E402,F401
    DEFAULT_MAX_TEXT_CHARS,
    LONG_TEXT_POLICIES,
    check_length,
    check_references,
    check_text_lengths,
    check_texts,
)
from mmjudge.metrics._options import (  # noqa: E402,F401
    CacheOption,
    accepted_keywords,
    build_judge,
    build_text_judge,
    check_judge_options,
    check_metric_options,
    unknown_option_error,
)


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
