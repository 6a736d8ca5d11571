"""The metric declarations: what a metric takes, returns and accepts, and the records that carry items through it.

A metric declares a :class:`MetricSpec` per configuration, once:

* **inputs** (:class:`InputSpec`) — the ``compute`` keywords (``predictions``, ``images``, ``references``,
  ``questions``, ``boxes``), each with its kind, whether it is required (always, or for some tasks), and
  the key it has in item dicts (JSONL lines, benchmark items: ``text``, ``image``, …);
* **outputs** (:class:`OutputSpec`) — per-sample values (scores, diagnostics such as σ, texts such as
  explanations) and the aggregates computed from them (``mean_<name>``, ``corpus_<name>``);
* **options** (:class:`OptionSpec`) — the ``compute`` keywords that say how to score (``task``,
  ``explain``, ``progress``);
* **primary** — the output a table ranks by, and whether higher is better.

Front doors read these without loading any model. :class:`Item`, :class:`ItemResult` and
:class:`ChunkScores` are what flows through :class:`mmjudge.metrics.base.Metric`: a checked item, its
result, and what a metric's scoring hook returns for a chunk.

>>> from mmjudge.metrics.clip_score import CLIPScore
>>> spec = CLIPScore.spec_for("ref_clip_score")
>>> spec.primary, spec.higher_is_better, [i.name for i in spec.inputs if i.required]
('ref_clip_score', True, ['predictions', 'images', 'references'])
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmjudge.signature import Signature

INPUT_KINDS = ("text", "image", "question", "box", "references")
OUTPUT_KINDS = ("score", "diagnostic", "text")
# The type of each input kind's column, in ``compute``'s signature.
INPUT_TYPES = {
    "text": Sequence[str],
    "image": Sequence[Any],
    "question": Sequence[str],
    "box": Sequence[Sequence[float]],
    "references": Sequence[Sequence[str]],
}


@dataclass(frozen=True)
class InputSpec:
    """One ``compute`` input.

    Attributes:
        name: the ``compute`` keyword (``predictions``, ``images``, …).
        kind: ``text`` | ``image`` | ``question`` | ``box`` | ``references``.
        required: needed on every call (``required_for`` lists tasks that need it otherwise).
        item_key: the key in item dicts (``text``, ``image``, ``question``, ``box``, ``references``).
        description: one line for documentation, forms and widgets.
        required_for: tasks for which an optional input is required (``questions`` for ``vqa``).
        noun: what one value is called in messages ("the {noun} is empty").
        missing: the message when the input is missing (``{metric}`` and ``{task}`` are filled in); by
            default "<metric> needs `<name>`: <description>."
    """

    name: str
    kind: str
    required: bool
    item_key: str
    description: str = ""
    required_for: tuple[str, ...] = ()
    noun: str = "text"
    missing: str = ""

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise ValueError(f"Expected InputSpec.kind to be one of {INPUT_KINDS}, but got {self.kind!r}.")

    def needed(self, task: str) -> bool:
        return self.required or task in self.required_for

    def missing_message(self, metric: str, task: str) -> str:
        if self.missing:
            return self.missing.format(metric=metric, task=task.upper())
        if not self.required and task in self.required_for:
            return f"The {task.upper()} task needs `{self.name}`: {self.description}."
        return f"{metric} needs `{self.name}`: {self.description}."


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
        optional: present only when asked for (explanations).
    """

    name: str
    kind: str = "score"
    description: str = ""
    higher_is_better: bool | None = True
    bounds: tuple[float, float] | None = None
    aggregates: tuple[str, ...] = ("mean",)
    optional: bool = False

    def __post_init__(self) -> None:
        if self.kind not in OUTPUT_KINDS:
            raise ValueError(f"Expected OutputSpec.kind to be one of {OUTPUT_KINDS}, but got {self.kind!r}.")

    @property
    def empty(self) -> Any:
        """The value of this output for an item that could not be scored: NaN, or ``None`` for texts."""
        return None if self.kind == "text" else math.nan


@dataclass(frozen=True)
class OptionSpec:
    """A ``compute`` keyword that says how to score rather than what (``task``, ``explain``, ``progress``).

    Attributes:
        name: the keyword.
        description: one line for documentation and front doors.
        default: its value when not given.
        annotation: its type, in ``compute``'s signature.
    """

    name: str
    description: str = ""
    default: Any = None
    annotation: Any = Any


PROGRESS = OptionSpec("progress", "show progress bars on long work", True, bool)
EXPLAIN = OptionSpec(
    "explain", "also generate the judge's explanation (default: the metric's own `explain`)", None, bool | None
)
TASK = OptionSpec("task", "the task of items that do not name their own (default: the metric's task)", None, str | None)


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
    extra_keys: tuple[str, ...] = field(default=("signature", "scored", "failures", "usage"))
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

    def input(self, name: str) -> InputSpec:
        for spec in self.inputs:
            if name in (spec.name, spec.item_key):
                return spec
        raise KeyError(f"{self.name} has no input {name!r}; it has {[i.name for i in self.inputs]}.")

    def option_names(self) -> list[str]:
        return [o.name for o in self.options]

    def score_names(self) -> list[str]:
        """Per-sample score outputs, primary first."""
        scores = [o.name for o in self.outputs if o.kind == "score"]
        return [self.primary] + [s for s in scores if s != self.primary]

    def aggregate_keys(self) -> list[str]:
        return [f"{agg}_{o.name}" for o in self.outputs for agg in o.aggregates if o.kind != "text"]

    def compute_keywords(self) -> list[str]:
        """What ``compute`` takes: the inputs, then the options."""
        return [i.name for i in self.inputs] + self.option_names()

    def compute_signature(self) -> inspect.Signature:
        """``compute``'s signature: keyword-only inputs (no default when always required), then the options.

        >>> from mmjudge.metrics.clip_score import CLIPScore
        >>> print(CLIPScore.spec_for("ref_clip_score").compute_signature())  # doctest: +NORMALIZE_WHITESPACE
        (*, predictions: collections.abc.Sequence[str], images: collections.abc.Sequence[typing.Any],
        references: collections.abc.Sequence[collections.abc.Sequence[str]], progress: bool = True)
        -> dict[str, typing.Any]
        """
        keyword = inspect.Parameter.KEYWORD_ONLY
        params = [
            inspect.Parameter(i.name, keyword, annotation=INPUT_TYPES[i.kind])
            if i.required
            else inspect.Parameter(i.name, keyword, default=None, annotation=INPUT_TYPES[i.kind] | None)
            for i in self.inputs
        ]
        params += [inspect.Parameter(o.name, keyword, default=o.default, annotation=o.annotation) for o in self.options]
        return inspect.Signature(params, return_annotation=dict[str, Any])

    @property
    def lead_input(self) -> str:
        """The input that sets how many items a ``compute`` call has: the first declared text (``predictions``;
        head to head, ``a``)."""
        return next(i.name for i in self.inputs if i.kind == "text")

    def compute_doc(self) -> str:
        """``compute``'s documentation, from this declaration: its inputs, options and outputs.

        >>> from mmjudge.metrics.clip_score import CLIPScore
        >>> print(CLIPScore.spec_for("clip_score").compute_doc())  # doctest: +ELLIPSIS
        Score ``predictions`` with CLIP-S: ...
        <BLANKLINE>
        Args:
            predictions: the texts being judged (captions, answers, expressions) (required).
            images: one image per prediction: PIL image, path or bytes (required).
            progress: show progress bars on long work.
        <BLANKLINE>
        Returns:
            A dict with one list per output, one value per prediction:
            clip_score: ...
        ...
        """
        lines = [f"Score ``{self.lead_input}`` with {self.label}: {self.description}.", "", "Args:"]
        for i in self.inputs:
            need = "required" if i.required else "optional"
            if i.required_for:
                need += f"; required for {', '.join(i.required_for)}"
            lines.append(f"    {i.name}: {i.description} ({need}).")
        lines += [f"    {o.name}: {o.description}." for o in self.options]
        lines += ["", "Returns:", "    A dict with one list per output, one value per prediction:"]
        for o in self.outputs:
            bounds = f", in [{o.bounds[0]:g}, {o.bounds[1]:g}]" if o.bounds else ""
            lines.append(f"    {o.name}: {o.description} ({o.kind}{bounds}{'; when asked' if o.optional else ''}).")
        lines += [
            f"    Aggregates: {', '.join(self.aggregate_keys())}.",
            "    scored: per score, how many items have a value; failures: per output, how many items have",
            "    each failed status; signature: what decides the numbers; usage (a judge that reports its",
            "    cost, the API backend): requests, tokens and US$ of the judge's calls so far.",
            "",
            "Raises:",
            "    ValueError: on bad input, naming the offending item, before any model work.",
        ]
        return "\n".join(lines)

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
REFERENCES = InputSpec("references", "references", True, "references", "a list of reference captions per prediction")


@dataclass
class Item:
    """One item on its way through a metric: checked values, its image decoded in its chunk.

    Attributes:
        index: its position in the stream.
        id: its ``id`` (the index as a string when it has none).
        task: its task (the item's own, else the call's).
        text, image, question, box, references: its inputs (``image`` a PIL image once decoded).
        digest: the pixel digest of ``image`` (set when decoded).
        source: where it came from, for messages (``items.jsonl:7``); ``None`` in ``compute``.
        position: its position in the whole input (the stream item's ``_i``: a resumed run or a process's
            share is part of a larger input), else ``index``.
        prepared: what the metric's ``_prepare_item`` derived from the inputs for its scoring (InfoMetIC: the
            image's precomputed region features, read in place of its pixels).
    """

    index: int
    id: str
    task: str
    text: str
    image: Any = None
    question: str | None = None
    box: Any = None
    references: list[str] | None = None
    digest: str | None = None
    source: str | None = None
    position: int | None = None  # ``index`` when not given (set in __post_init__)
    prepared: Any = None

    def __post_init__(self) -> None:
        if self.position is None:
            self.position = self.index

    def where(self, spec: InputSpec) -> str:
        """How messages name this item's input: ``images[3]`` in ``compute``, ``items.jsonl:7: image`` in a stream."""
        if self.source is None:
            return f"{spec.name}[{self.index}]"
        return f"{self.source}: {spec.item_key}"

    def failed(self, error: str) -> ItemResult:
        """This item's result when it cannot be scored: no values, and why."""
        return ItemResult(self.index, self.id, self.task, {}, error)


@dataclass
class ItemResult:
    """One item's result: its declared outputs, or why it could not be scored (``error``: the outputs are
    then NaN / ``None``)."""

    index: int
    id: str
    task: str
    values: dict[str, Any]
    error: str | None = None


@dataclass
class ChunkScores:
    """What :meth:`Metric._score_chunk` returns: per-item output lists (declared names) and, for metrics
    whose figures need the whole input (corpus BLEU, CIDEr-D), ``aggregates`` such as ``corpus_bleu_4``."""

    values: dict[str, list]
    aggregates: dict[str, Any] = field(default_factory=dict)


def raw_source(raw: Any, index: int) -> str:
    """How a stream item is named in messages: its ``_source`` (``items.jsonl:7``), else ``item <index>``."""
    source = raw.get("_source") if isinstance(raw, Mapping) else None
    return str(source) if source else f"item {index}"


def item_id(raw: Any, index: int) -> str:
    """An item's id: its own, else its position in the whole input (``_i``, set by the readers of
    :mod:`mmjudge.stream.sources`: the same in a resumed run or in any process's share), else ``index``."""
    if not isinstance(raw, Mapping):
        return str(index)
    if raw.get("id") is not None:
        return str(raw["id"])
    return str(raw.get("_i", index))


def failed_result(raw: Any, index: int, task: str, error: str) -> ItemResult:
    """The result of a stream item that could not even be read as an item."""
    own = raw.get("task") if isinstance(raw, Mapping) else None
    return ItemResult(index, item_id(raw, index), str(own or task), {}, error)
