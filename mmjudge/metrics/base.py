"""The metric contract: what every metric declares, once, and the one path every metric scores through.

Every engine metric subclasses :class:`Metric` and declares a :class:`MetricSpec` (per configuration):

* **inputs** — the ``compute`` keywords (``predictions``, ``images``, ``references``, ``questions``,
  ``boxes``), each with its kind, whether it is required (always, or for some tasks), and the key it has
  in item dicts (JSONL lines, benchmark items: ``text``, ``image``, …). The spec checks them — once, here:
  a metric never re-checks its inputs by hand;
* **outputs** — per-sample values (scores, diagnostics such as σ, texts such as explanations) and the
  aggregates computed from them (``mean_<name>``, ``corpus_<name>``);
* **options** — the ``compute`` keywords that say how to score (``task``, ``explain``, ``progress``);
* **primary** — the output a table ranks by and whether higher is better; a structured **signature**.

Scoring is a stream (:meth:`Metric.stream`): items are checked one by one, gathered into bounded chunks
(each distinct image decoded once per chunk and released after it), scored chunk by chunk, and yielded as
:class:`ItemResult` s in input order as they finish; nothing about an item outlives its chunk but its
result. :meth:`Metric.compute` is the in-memory convenience on top: columns in, per-sample lists + means +
signature out. A metric implements one method, :meth:`Metric._score_chunk`.

>>> from mmjudge.metrics.clip_score import CLIPScore
>>> spec = CLIPScore.spec_for("ref_clip_score")
>>> spec.primary, spec.higher_is_better, [i.name for i in spec.inputs if i.required]
('ref_clip_score', True, ['predictions', 'images', 'references'])
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mmjudge.inputs import check_column, check_reference_list, check_text, check_text_length, finite_mean, is_number
from mmjudge.metrics.statuses import count_failures, failure_line
from mmjudge.signature import Signature

INPUT_KINDS = ("text", "image", "question", "box", "references")
OUTPUT_KINDS = ("score", "diagnostic", "text")
ON_ERROR = ("raise", "record")
# Items per chunk, and decoded image bytes after which a chunk closes early (2000x1500 RGB images are
# 9 MB each: a chunk of them stays near this bound, not 256 x 9 MB). Two chunks' images are alive at most
# (the one being scored, the next one decoding): 512 MB together.
DEFAULT_CHUNK_SIZE = 256
MAX_CHUNK_IMAGE_BYTES = 256 * 2**20


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
    extra_keys: tuple[str, ...] = field(default=("signature", "scored", "failures"))
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

    def where(self, spec: InputSpec) -> str:
        """How messages name this item's input: ``images[3]`` in ``compute``, ``items.jsonl:7: image`` in a stream."""
        if self.source is None:
            return f"{spec.name}[{self.index}]"
        return f"{self.source}: {spec.item_key}"


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


class Metric(ABC):
    """Base of engine metrics: a :class:`MetricSpec` per configuration, a signature, and one method to
    implement, :meth:`_score_chunk`.

    Subclasses set :attr:`name`, :attr:`configs` and implement :meth:`spec_for` (a classmethod, so front
    doors read a configuration's declaration without loading any model), :meth:`signature_fields` and
    :meth:`_score_chunk`; they may override :meth:`_prepare_item` (per-item work that can fail, e.g. drawing
    a box) and :meth:`_check_options`. Their ``compute`` names its keywords and calls :meth:`_compute`.
    """

    name: ClassVar[str] = "metric"
    configs: ClassVar[tuple[str, ...]] = ()
    config_name: str = ""
    # Items per chunk; ``None``: the whole input is one chunk (metrics whose numbers depend on all of it).
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    # Text limits of judge-reading metrics (:func:`mmjudge.inputs.check_long_text_options`).
    max_text_chars: int | None = None
    long_texts: str = "error"
    # Image limits: decompression-bomb size, and the aspect ratio the judges' processors accept.
    max_pixels: int | None = None
    max_aspect_ratio: float | None = None
    default_task: str = "ic"

    @classmethod
    @abstractmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        """The declaration of configuration ``config_name`` (default: the first)."""

    @property
    def spec(self) -> MetricSpec:
        """This instance's declaration (may depend on options, e.g. HarmonicEval's criteria), built once:
        every item's checks read it."""
        spec = self.__dict__.get("_spec")
        if spec is None:
            spec = self.__dict__["_spec"] = self._build_spec()
        return spec

    def _build_spec(self) -> MetricSpec:
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
    def _score_chunk(self, items: list[Item], **options: Any) -> ChunkScores:
        """Score one chunk of checked items (images decoded): every declared output, one value per item."""

    def _prepare_item(self, item: Item) -> Item:
        """Per-item work after the image is decoded (e.g. drawing a box); a ``ValueError`` fails the item."""
        return item

    def _check_options(self, options: dict) -> dict:
        """The call's options, checked against the declared ones. ``explain`` (for metrics that declare it):
        ``None`` takes the metric's own ``explain`` setting, and explaining needs a generating judge —
        checked here, where the effective value is known."""
        declared = self.spec.option_names()
        for key in options:
            if key not in declared or key in ("task", "progress"):
                raise ValueError(f"{self.spec.label}: unknown option {key!r}; it takes {', '.join(declared)}.")
        if EXPLAIN not in self.spec.options:
            return {}
        from mmjudge.errors import check_bool

        explain = options.get("explain")
        explain = bool(getattr(self, "explain", False)) if explain is None else check_bool(explain, "explain")
        if explain:
            self.judge.require(
                "can_generate", f"{self.spec.label} with explain=True", "explanations are generated text"
            )
        return {"explain": explain}

    def _check_task(self, task: str | None) -> str:
        task = str(task or self.default_task).lower()
        if task not in self.spec.tasks:
            raise ValueError(f"Unknown task {task!r}. Expected one of: {', '.join(self.spec.tasks)}.")
        return task

    @classmethod
    def check_config(cls, config_name: str | None) -> str:
        config = config_name or cls.configs[0]
        if config == "default":
            config = cls.configs[0]
        if config not in cls.configs:
            raise ValueError(f"Expected argument `config_name` to be one of {cls.configs}, but got {config_name!r}.")
        return config

    # ------------------------------------------------------------------------------------- checking
    def check_item(
        self, raw: Mapping[str, Any], index: int, task: str | None = None, source: str | None = None
    ) -> Item:
        """``raw`` (an item dict: ``text``, ``image``, ``question``, ``box``, ``references``, ``task``,
        ``id``) checked against the declared inputs: a ``ValueError`` names what is wrong. Images are
        only checked for presence here; they are decoded with their chunk."""
        own_task = raw.get("task")
        if own_task and TASK in self.spec.options:
            task = self._check_task(own_task)
        elif own_task:
            task = str(own_task).lower()  # recorded as given: this metric scores every task the same way
        item = Item(index=index, id=item_id(raw, index), task=task or self._check_task(None), text="", source=source)
        for spec in self.spec.inputs:
            value = raw.get(spec.item_key)
            needed = spec.needed(item.task)
            if value is None and spec.kind == "references" and needed:
                check_reference_list(value, item.where(spec), self._reference_owner(), spec.noun)  # raises: empty
            if value is None:
                if needed:
                    raise ValueError(self._missing(spec, item))
                continue
            where = item.where(spec)
            if spec.kind == "text":
                item.text = check_text_length(
                    check_text(value, where, spec.noun), where, self.max_text_chars, self.long_texts
                )
            elif spec.kind == "question":
                item.question = check_text(value, where, spec.noun) if needed else value
            elif spec.kind == "references":
                item.references = check_reference_list(value, where, self._reference_owner(), spec.noun)
            elif spec.kind == "image":
                item.image = value if needed or self._keeps_image(spec, item.task) else None
            elif spec.kind == "box":
                item.box = value if needed else None
        return item

    def _missing(self, spec: InputSpec, item: Item) -> str:
        if spec.kind == "image":
            why = f" ({spec.missing_message(self.spec.label, item.task).rstrip('.')})" if spec.missing else ""
            return f"{item.where(spec)}: an image is required but got None{why}."
        if spec.kind == "box":
            return f"{item.where(spec)}: a bounding box is required for the {item.task.upper()} task but got None."
        return f"{item.where(spec)}: {spec.missing_message(self.spec.label, item.task)}"

    def _reference_owner(self) -> str | None:
        """Who needs the references, in the empty-list message (``None``: the generic message)."""
        return None

    def _keeps_image(self, spec: InputSpec, task: str) -> bool:
        """Whether an image given for an item that does not need it is still decoded (no: it would cost a
        decode for nothing)."""
        return False

    def _check_columns(self, columns: dict[str, Any], task: str) -> int:
        """Column-level checks of a ``compute`` call: ``predictions`` a non-empty list, every other given
        input one entry per prediction, every input the task needs present."""
        predictions = columns.get("predictions")
        if isinstance(predictions, str) or not isinstance(predictions, Sequence):
            raise ValueError(f"Expected `predictions` to be a list of strings, but got {type(predictions).__name__}.")
        if not predictions:
            raise ValueError("`predictions` is empty: nothing to score.")
        n = len(predictions)
        for spec in self.spec.inputs:
            values = columns.get(spec.name)
            if values is None:
                if spec.needed(task):
                    raise ValueError(spec.missing_message(self.spec.label, task))
                continue
            check_column(values, n, spec.name)
        return n

    # ------------------------------------------------------------------------------------- scoring
    def _compute(
        self, columns: dict[str, Any], task: str | None = None, progress: bool = True, **options: Any
    ) -> dict[str, Any]:
        """``compute``: check the columns and every item before any model work, score them as a stream,
        and return per-sample lists for every declared output, the aggregates and ``signature``."""
        unknown = [k for k in columns if k not in {i.name for i in self.spec.inputs}]
        if unknown:
            raise ValueError(
                f"{self.spec.label}: unknown input {unknown[0]!r}; it takes {[i.name for i in self.spec.inputs]}."
            )
        task = self._check_task(task)
        options = self._check_options(options)
        n = self._check_columns(columns, task)
        specs = [s for s in self.spec.inputs if columns.get(s.name) is not None]
        items = [self.check_item({s.item_key: columns[s.name][i] for s in specs}, i, task) for i in range(n)]
        aggregates: dict[str, Any] = {}
        results: list[ItemResult] = []
        # One bar: the judge's per request when everything is one chunk, else one over the items.
        several = self.chunk_size is not None and n > self.chunk_size
        with _item_bar(progress and several, n, self.spec.label) as bar:
            for chunk_results, chunk_aggregates in self._run(items, "raise", progress and not several, options):
                results += chunk_results
                aggregates.update(chunk_aggregates)
                if bar is not None:
                    bar.update(len(chunk_results))
        present = [o for o in self.spec.outputs if not o.optional or o.name in results[0].values]
        out: dict[str, Any] = {o.name: [r.values[o.name] for r in results] for o in present}
        out.update(aggregates)
        add_means(out, self.spec)
        # How many items each score has, and why the others have none (the `_status` outputs).
        out["scored"] = {
            o.name: sum(1 for v in out[o.name] if is_number(v) and math.isfinite(v))
            for o in present
            if o.kind == "score"
        }
        out["failures"] = count_failures(r.values for r in results)
        if out["failures"]:
            failed = sum(1 for v in out[self.spec.primary] if not (is_number(v) and math.isfinite(v)))
            warnings.warn(f"{self.spec.label}: {failure_line(out['failures'], failed, n)}.", stacklevel=3)
        out["signature"] = self.signature
        return out

    def stream(
        self,
        items: Iterable[Mapping[str, Any]],
        task: str | None = None,
        on_error: str = "raise",
        progress: bool = False,
        chunk_size: int | None = None,
        **options: Any,
    ) -> Iterator[ItemResult]:
        """Score ``items`` (dicts keyed like a JSONL line: ``text``, ``image``, ``question``, ``box``,
        ``references``, ``task``, ``id``; an optional ``_source`` names where the item came from, e.g.
        ``items.jsonl:7``, else messages name inputs as ``compute`` does: ``images[7]``; an optional ``_i``, the
        item's position in a larger input this stream is part of, is the id of an item without one) in bounded chunks,
        yielding one :class:`ItemResult` per item, in input order, as chunks finish.

        Args:
            task: the task of items without their own.
            on_error: ``"raise"`` (a bad item stops the stream with one line naming it) or ``"record"``
                (its result carries the reason and the stream goes on).
            progress: a progress bar per chunk's judge work (front doors draw their own item bar).
            chunk_size: items per chunk (default :attr:`chunk_size`).
            **options: the metric's compute options (``explain`` …).
        """
        if on_error not in ON_ERROR:
            raise ValueError(f"Expected argument `on_error` to be one of {ON_ERROR}, but got {on_error!r}.")
        if chunk_size is not None and (
            isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
        ):
            # (a size below 1 would silently make every item its own chunk)
            raise ValueError(
                f"Expected argument `chunk_size` (--chunk-size) to be a whole number of items, at least 1, "
                f"but got {chunk_size!r}."
            )
        task = self._check_task(task)
        options = self._check_options(options)

        def checked() -> Iterator[Any]:
            for index, raw in enumerate(items):
                try:
                    if not isinstance(raw, Mapping):
                        raise ValueError(
                            f"{raw_source(raw, index)}: expected an item dict, but got {type(raw).__name__}."
                        )
                    source = raw.get("_source")
                    if raw.get("_error"):  # the reader could not make an item of it (a line that is not JSON …)
                        raise ValueError(f"{raw_source(raw, index)}: {raw['_error']}")
                    yield self.check_item(raw, index, task, source=str(source) if source is not None else None)
                except ValueError as err:
                    if on_error == "raise":
                        raise
                    yield _failed(raw, index, task, str(err))

        for results, _ in self._run(checked(), on_error, progress, options, chunk_size):
            yield from results

    def _run(
        self, items: Iterable[Any], on_error: str, progress: bool, options: dict, chunk_size: int | None = None
    ) -> Iterator[tuple[list[ItemResult], dict]]:
        """Chunks of results, in input order, with each chunk's aggregates."""
        size = chunk_size if chunk_size is not None else self.chunk_size
        with self._chunk_images(on_error) as images:
            for chunk in _chunks(items, size, images):
                scored = self._score_one_chunk(chunk, on_error, progress, options)
                del chunk  # released before the chunk after next starts decoding: at most two chunks of images alive
                yield scored

    def _score_one_chunk(
        self, chunk: list, on_error: str, progress: bool, options: dict
    ) -> tuple[list[ItemResult], dict]:
        """Prepare, score and turn one chunk into results (in input order)."""
        prepared: list[Item] = []
        hashed = {id(it.image): it.digest for it in chunk if isinstance(it, Item) and it.digest is not None}
        for position, item in enumerate(chunk):
            if not isinstance(item, Item):
                continue
            try:
                prepared.append(self._prepare_item(item))
                chunk[position] = prepared[-1]
            except ValueError as err:
                if on_error == "raise":
                    raise
                chunk[position] = _failed_item(item, str(err))
        _set_digests(prepared, hashed)
        scores = self._score_chunk(prepared, progress=progress, **options) if prepared else ChunkScores({})
        by_index = {it.index: k for k, it in enumerate(prepared)}
        results = []
        for entry in chunk:
            if isinstance(entry, ItemResult):
                results.append(self._with_empty_values(entry))
            elif entry.index in by_index:
                k = by_index[entry.index]
                results.append(
                    ItemResult(entry.index, entry.id, entry.task, {n: v[k] for n, v in scores.values.items()})
                )
        return results, scores.aggregates

    def _with_empty_values(self, failed: ItemResult) -> ItemResult:
        failed.values = {o.name: o.empty for o in self.spec.outputs if not o.optional}
        return failed

    def _chunk_images(self, on_error: str) -> ChunkImages:
        spec = next((s for s in self.spec.inputs if s.kind == "image"), None)
        return ChunkImages(spec, on_error, self.max_pixels, self.max_aspect_ratio)


@contextlib.contextmanager
def _item_bar(enabled: bool, total: int, desc: str) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from mmjudge.progress import progress_bar

    with progress_bar(total=total, desc=desc, unit="item") as bar:
        yield bar


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


def _failed(raw: Any, index: int, task: str, error: str) -> ItemResult:
    own = raw.get("task") if isinstance(raw, Mapping) else None
    return ItemResult(index, item_id(raw, index), str(own or task), {}, error)


def _failed_item(item: Item, error: str) -> ItemResult:
    return ItemResult(item.index, item.id, item.task, {}, error)


def _image_key(image: Any) -> Any:
    """What makes two inputs the same image within a chunk: the path of a file, else the object itself
    (whose id the chunk's items keep valid: they hold the object until it is decoded)."""
    if isinstance(image, (str, os.PathLike)):
        return ("path", os.fspath(image))
    if isinstance(image, Mapping) and image.get("path") and image.get("bytes") is None:
        return ("path", str(image["path"]))
    return ("object", id(image))


def _set_digests(items: list[Item], decoded: dict[int, str]) -> None:
    """Each item's pixel digest, computed once per distinct image object: ``decoded`` holds the digests
    hashed while decoding (by image id); an image ``_prepare_item`` replaced (a REG box drawn) is hashed here."""
    from mmjudge.images import image_digest

    seen = dict(decoded)
    for item in items:
        if item.image is not None:
            key = id(item.image)
            if key not in seen:
                seen[key] = image_digest(item.image)
            item.digest = seen[key]


def _chunks(items: Iterable[Any], size: int | None, images: ChunkImages) -> Iterator[list]:
    """Lists of at most ``size`` items (``None``: one list of all), closed early once their images (sized from
    their headers) would hold :data:`MAX_CHUNK_IMAGE_BYTES` decoded, each with its images decoded
    (:class:`ChunkImages`). The next list's images decode in the background while the caller scores this
    one, so the decoding threads and the judge work at the same time; at most these two lists' images are
    alive."""
    ahead = None  # (list, its decoding): closed, not yet handed out
    for chunk in _closed_chunks(items, size, images):
        decoding = images.start(chunk)
        if ahead is not None:
            done, ahead = ahead, (chunk, decoding)
            yield images.finish(*done)
            del done  # the caller has released it: keep only the list decoding now
        else:
            ahead = (chunk, decoding)
    if ahead is not None:
        yield images.finish(*ahead)


def _closed_chunks(items: Iterable[Any], size: int | None, images: ChunkImages) -> Iterator[list]:
    chunk: list = []
    image_bytes = 0
    for item in items:
        chunk.append(item)
        image_bytes += images.measure(item)
        if (size is not None and len(chunk) >= size) or image_bytes >= MAX_CHUNK_IMAGE_BYTES:
            yield chunk
            chunk, image_bytes = [], 0
            images.forget()
    if chunk:
        yield chunk


MAX_REMEMBERED_SIZES = 100_000


class ChunkImages:
    """The images of the chunks of one stream: each distinct image (by path, else by object) decoded once per
    chunk, the distinct ones in parallel threads (PIL releases the GIL while it decodes), and a bad one
    failing only its items (``on_error="record"``) or stopping the stream at the first item in order that
    has it (``"raise"``). Before decoding, :meth:`measure` sizes an item's image from its header, so a chunk
    closes before its pixels pass the bound."""

    def __init__(self, spec: InputSpec | None, on_error: str, max_pixels: int | None, max_aspect_ratio: float | None):
        self.spec, self.on_error = spec, on_error
        self.limits = {
            "max_aspect_ratio": max_aspect_ratio,
            **({} if max_pixels is None else {"max_pixels": max_pixels}),
        }
        self._seen: set = set()
        # Header sizes by path across chunks: datasets repeat images (COCO: five captions each), and reading a
        # header opens the file. Bounded; an image object is measured each time (its id may be reused).
        self._sizes: dict[Any, int] = {}
        self._pool: Any = None

    def __enter__(self) -> ChunkImages:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.shutdown()

    def measure(self, item: Any) -> int:
        """Bytes the item's image will hold decoded (0 for none, one already counted in this chunk, or one
        whose header cannot be read: decoding reports that)."""
        if not isinstance(item, Item) or item.image is None:
            return 0
        key = _image_key(item.image)
        if key in self._seen:
            return 0
        self._seen.add(key)
        if key[0] != "path":
            return _decoded_size(item.image)
        size = self._sizes.get(key)
        if size is None:
            if len(self._sizes) >= MAX_REMEMBERED_SIZES:
                self._sizes.clear()
            size = self._sizes[key] = _decoded_size(item.image)
        return size

    def forget(self) -> None:
        self._seen = set()

    def start(self, chunk: list) -> dict:
        """Begin decoding the chunk's distinct images (in threads when there are several and more than one
        core); :meth:`finish` waits for them."""
        first: dict[Any, int] = {}  # image key -> position of the first item that has it
        for position, item in enumerate(chunk):
            if isinstance(item, Item) and item.image is not None:
                first.setdefault(_image_key(item.image), position)
        if len(first) > 1 and (os.cpu_count() or 1) > 1:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(min(8, os.cpu_count() or 1), thread_name_prefix="mmjudge-decode")
            return {
                key: (position, self._pool.submit(self._decode_one, chunk[position])) for key, position in first.items()
            }
        return {key: (position, None) for key, position in first.items()}

    def finish(self, chunk: list, decoding: dict) -> list:
        """The chunk with its images decoded: each item's image and digest set, or the item failed (or the
        stream stopped, with ``on_error="raise"``) where its image could not be read."""
        decoded = {
            key: self._decode_one(chunk[position]) if future is None else future.result()
            for key, (position, future) in decoding.items()
        }
        for position, item in enumerate(chunk):
            if not isinstance(item, Item) or item.image is None:
                continue
            key = _image_key(item.image)
            answer = decoded[key]
            if isinstance(answer, ValueError):
                # The message names the first item with this image; each item's own row names itself.
                where = chunk[decoding[key][0]].where(self.spec)
                message = str(answer).replace(where, item.where(self.spec), 1)
                if self.on_error == "raise":
                    raise ValueError(message)
                chunk[position] = _failed_item(item, message)
                continue
            item.image, item.digest = answer
        return chunk

    def _decode_one(self, item: Item) -> Any:
        """``(decoded image, pixel digest)``, or the ValueError saying why it cannot be read (hashed in the
        decoding thread too: hashlib releases the GIL, as PIL does while it decodes)."""
        from mmjudge.images import image_digest, load_image

        try:
            image = load_image(item.image, item.where(self.spec), **self.limits)
        except ValueError as err:
            return err
        return image, image_digest(image)


def _decoded_size(image: Any) -> int:
    """Bytes of ``image`` once decoded, from what is known without decoding it (0 when unknown)."""
    import io

    from PIL import Image

    try:
        if isinstance(image, Image.Image):
            return image.width * image.height * len(image.getbands())
        if hasattr(image, "__array_interface__"):
            return int(getattr(image, "nbytes", 0))
        if isinstance(image, Mapping):
            image = image.get("bytes") if image.get("bytes") is not None else image.get("path")
        if isinstance(image, (bytes, bytearray, memoryview)):
            image = io.BytesIO(bytes(image))
        elif isinstance(image, (str, os.PathLike)):
            image = os.path.expanduser(os.fspath(image))
        elif isinstance(getattr(image, "path", None), (str, os.PathLike)):
            image = os.path.expanduser(os.fspath(image.path))
        else:
            return 0
        if isinstance(image, str):
            from mmjudge.paths import open_regular_file

            # Regular files only (opening a FIFO waits for a writer: the run would hang); decoding says why.
            with open_regular_file(image) as handle, Image.open(handle) as header:
                return header.width * header.height * max(3, len(header.getbands()))
        with Image.open(image) as header:  # reads the header only
            return header.width * header.height * max(3, len(header.getbands()))
    except Exception:
        return 0


def add_means(out: dict, spec: MetricSpec) -> dict:
    """Add ``mean_<name>`` (:func:`mmjudge.inputs.finite_mean`) for every output in ``out`` that declares a
    ``mean`` aggregate."""
    for o in spec.outputs:
        if "mean" in o.aggregates and o.name in out:
            out[f"mean_{o.name}"] = finite_mean(out[o.name])
    return out


def compute_kwargs(metric: Any, items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Keyword arguments for ``metric.compute`` from item dicts: each declared input whose ``item_key``
    some item has.

    >>> from mmjudge.metrics.harmonic_eval import HarmonicEval
    >>> sorted(compute_kwargs(HarmonicEval(judge="dummy", cache=False), [{"text": "a", "question": "q?"}]))
    ['predictions', 'questions']
    """
    columns: dict[str, Any] = {}
    for spec in metric.spec.inputs:
        values = [it.get(spec.item_key) for it in items]
        if any(v is not None for v in values):  # a column nobody has is left to compute() to ask for
            columns[spec.name] = values
    return columns
