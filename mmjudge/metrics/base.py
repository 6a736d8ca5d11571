"""The metric base: one ``compute`` and one stream for every metric, around the one hook a metric writes.

A metric subclasses :class:`Metric`, declares a :class:`~mmjudge.metrics.spec.MetricSpec` per configuration
(:mod:`mmjudge.metrics.spec`) and implements :meth:`Metric._score_chunk`. The base does the rest:

* :meth:`Metric.stream` — items (dicts keyed like a JSONL line) checked one by one against the declared
  inputs, gathered into bounded chunks whose images decode in threads (:mod:`mmjudge.metrics.chunks`),
  scored chunk by chunk, yielded as :class:`~mmjudge.metrics.spec.ItemResult` s in input order;
* ``compute(**columns)`` — the in-memory convenience, as in ``evaluate``: the declared inputs as keyword
  columns, every item checked before any model work, the stream run, per-sample lists + means + ``scored``
  / ``failures`` + signature out. Its signature and help are built from the declaration, so
  ``help(metric.compute)`` lists this metric's inputs, options and outputs.

>>> import inspect
>>> from mmjudge.metrics.baselines import Baselines
>>> bleu = Baselines("bleu")
>>> list(inspect.signature(bleu.compute).parameters)
['predictions', 'references', 'progress']
>>> out = bleu.compute(predictions=["a dog runs"], references=[["a dog runs fast"]], progress=False)
>>> round(out["bleu_1"][0], 4), out["scored"]["bleu_4"]
(0.7165, 1)
"""

from __future__ import annotations

import contextlib
import inspect
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from mmjudge.inputs import check_column, check_reference_list, check_text, check_text_length, finite_mean, is_number
from mmjudge.metrics.chunks import DEFAULT_CHUNK_SIZE, ChunkImages, chunks, set_digests
from mmjudge.metrics.spec import (
    EXPLAIN,
    PROGRESS,
    TASK,
    ChunkScores,
    InputSpec,
    Item,
    ItemResult,
    MetricSpec,
    failed_result,
    item_id,
    raw_source,
)
from mmjudge.metrics.statuses import count_failures, failure_line
from mmjudge.progress import optional_bar
from mmjudge.signature import Signature

__all__ = [
    "ON_ERROR",
    "Metric",
    "add_means",
]

ON_ERROR = ("raise", "record")


class _ComputeMethod:
    """``metric.compute(**columns)``, the same for every metric: the declared inputs (keyword columns, one
    entry per prediction) and options in; per-sample lists, aggregates, ``scored``, ``failures`` and
    ``signature`` out (:meth:`Metric._compute_columns`).

    A descriptor rather than a plain method so that each metric's ``compute`` carries the signature and the
    help of its own declaration: ``help(metric.compute)`` lists this metric's inputs, options and outputs,
    and ``inspect.signature(metric.compute)`` gives front doors its keywords."""

    def __get__(self, metric: Metric | None, owner: type | None = None) -> Callable[..., dict[str, Any]]:
        if metric is None:
            return self._unbound(owner or Metric)

        def compute(**keywords: Any) -> dict[str, Any]:
            return metric._compute_columns(*metric._compute_arguments(keywords))

        return _documented(compute, type(metric), metric.spec.compute_signature(), metric.spec.compute_doc())

    @staticmethod
    def _unbound(owner: type) -> Callable[..., dict[str, Any]]:
        """``Class.compute``: the first configuration's help (``help(HarmonicEval)`` shows it)."""

        def compute(self: Metric, **keywords: Any) -> dict[str, Any]:
            return self._compute_columns(*self._compute_arguments(keywords))

        if inspect.isabstract(owner):
            return _documented(compute, owner, inspect.signature(compute), _ComputeMethod.__doc__ or "")
        spec = owner.spec_for()
        this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        signature = spec.compute_signature()
        return _documented(
            compute, owner, signature.replace(parameters=[this, *signature.parameters.values()]), spec.compute_doc()
        )


def _documented(compute: Callable, owner: type, signature: inspect.Signature, doc: str) -> Callable:
    compute.__signature__ = signature  # type: ignore[attr-defined]
    compute.__doc__ = doc
    compute.__qualname__ = f"{owner.__name__}.compute"
    return compute


class Metric(ABC):
    """Base of engine metrics: a :class:`MetricSpec` per configuration, a signature, and one method to
    implement, :meth:`_score_chunk`.

    Subclasses set :attr:`name`, :attr:`configs` and implement :meth:`spec_for` (a classmethod, so front
    doors read a configuration's declaration without loading any model), :meth:`signature_fields` and
    :meth:`_score_chunk`; they may override :meth:`_prepare_item` (per-item work that can fail, e.g. drawing
    a box) and :meth:`_check_options`. ``compute`` is the base's: it takes the declared inputs and options
    as keywords (see ``help(metric.compute)``).
    """

    name: ClassVar[str] = "metric"
    configs: ClassVar[tuple[str, ...]] = ()
    config_name: str = ""
    # Items per chunk; ``None``: the whole input is one chunk (metrics whose numbers depend on all of it).
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    # Chunks close only after a multiple of this many items (a metric scoring items in groups: Polos'
    # ``norm_batch_size``), so that no group is split between chunks.
    chunk_multiple: int = 1
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

    def cached_parts(self) -> tuple[Any, ...]:
        """The parts of this metric that keep a persistent cache, each with an ``uncached()`` context manager: a
        judged metric's judge, an embedding metric's encoder. Default: none (the metric caches nothing on disk)."""
        return ()

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """A block in which the metric neither reads nor writes a persistent cache, as if built with
        ``cache=False`` (its in-memory caches stay), and has its caches again afterwards: each of
        :meth:`cached_parts` steps aside.

        >>> import os, tempfile
        >>> from mmjudge.metrics.harmonic_eval.metric import HarmonicEval
        >>> he = HarmonicEval(judge="dummy", criteria=["fluency"], cache=os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        >>> texts = ["A dog runs."]
        >>> _ = he.compute(predictions=texts, progress=False)
        >>> with he.uncached():
        ...     _ = he.compute(predictions=texts, progress=False)
        >>> _ = he.compute(predictions=texts, progress=False)
        >>> he.judge.calls   # the first call and the one without its cache; the third read the cache
        2
        """
        with contextlib.ExitStack() as stack:
            for part in self.cached_parts():
                stack.enter_context(part.uncached())
            yield

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
        position = raw.get("_i")
        item = Item(
            index=index,
            id=item_id(raw, index),
            task=task or self._check_task(None),
            text="",
            source=source,
            position=position if isinstance(position, int) and not isinstance(position, bool) else index,
        )
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
        """Column-level checks of a ``compute`` call: the leading texts (``predictions``) a non-empty list,
        every other given input one entry per text, every input the task needs present."""
        lead = self.spec.lead_input
        texts = columns.get(lead)
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise ValueError(f"Expected `{lead}` to be a list of strings, but got {type(texts).__name__}.")
        if not texts:
            raise ValueError(f"`{lead}` is empty: nothing to score.")
        n = len(texts)
        for spec in self.spec.inputs:
            values = columns.get(spec.name)
            if values is None:
                if spec.needed(task):
                    raise ValueError(spec.missing_message(self.spec.label, task))
                continue
            check_column(values, n, spec.name)
        return n

    # ------------------------------------------------------------------------------------- compute
    compute = _ComputeMethod()

    def _compute_arguments(self, keywords: dict[str, Any]) -> tuple[dict[str, Any], str | None, bool, dict]:
        """``compute``'s keywords split into ``(columns, task, progress, options)``; an unknown one is a
        ``ValueError`` naming it (with a "did you mean")."""
        from mmjudge.option_check import unknown_option_error

        accepted = self.spec.compute_keywords()
        for key in keywords:
            if key not in accepted:
                error = unknown_option_error(key, self.spec.label, accepted)
                raise ValueError(str(error).replace("unknown option", "unknown compute keyword", 1))
        inputs = {i.name for i in self.spec.inputs}
        lead = self.spec.lead_input
        columns = {k: v for k, v in keywords.items() if k in inputs and (v is not None or k == lead)}
        columns.setdefault(lead, None)
        options = {k: v for k, v in keywords.items() if k not in inputs and k not in ("task", "progress")}
        return columns, keywords.get("task"), keywords.get("progress", PROGRESS.default), options

    def _compute_columns(
        self, columns: dict[str, Any], task: str | None = None, progress: bool = True, options: dict | None = None
    ) -> dict[str, Any]:
        """``compute``: check the columns and every item before any model work, score them as a stream,
        and return per-sample lists for every declared output, the aggregates and ``signature``."""
        task = self._check_task(task)
        options = self._check_options(dict(options or {}))
        n = self._check_columns(columns, task)
        specs = [s for s in self.spec.inputs if columns.get(s.name) is not None]
        items = [self.check_item({s.item_key: columns[s.name][i] for s in specs}, i, task) for i in range(n)]
        aggregates: dict[str, Any] = {}
        results: list[ItemResult] = []
        # One bar: the judge's per request when everything is one chunk, else one over the items.
        several = self.chunk_size is not None and n > self.chunk_size
        with optional_bar(progress and several, total=n, desc=self.spec.label, unit="item") as bar:
            for chunk_results, chunk_aggregates in self._run(items, "raise", progress and not several, options):
                results += chunk_results
                aggregates.update(chunk_aggregates)
                if bar is not None:
                    bar.update(len(chunk_results))
        out = self._aggregate(results, aggregates)
        if out["failures"]:
            failed = sum(1 for v in out[self.spec.primary] if not (is_number(v) and math.isfinite(v)))
            # stacklevel 3: the caller of compute (compute -> _compute_columns -> warn)
            warnings.warn(f"{self.spec.label}: {self._failure_line(out['failures'], failed, n)}.", stacklevel=3)
        # A paid judge (the API backend) says what the judge's calls so far cost: requests, tokens, US$.
        judge = getattr(self, "judge", None)  # metrics without a judge have none
        report = judge.usage_report() if judge is not None else None
        if report is not None:
            out["usage"] = report
        return out

    def _failure_line(self, counts: dict[str, dict[str, int]], failed: int, total: int) -> str:
        """The warning after a ``compute`` call with failures (:func:`~mmjudge.metrics.statuses.failure_line`)."""
        return failure_line(counts, failed, total)

    def _aggregate(self, results: list[ItemResult], aggregates: dict[str, Any]) -> dict[str, Any]:
        """Per-sample lists of every output present, the chunk aggregates, means, ``scored`` (how many items
        each score has), ``failures`` (why the others have none: the `_status` outputs) and ``signature``."""
        present = [o for o in self.spec.outputs if not o.optional or o.name in results[0].values]
        out: dict[str, Any] = {o.name: [r.values[o.name] for r in results] for o in present}
        out.update(aggregates)
        add_means(out, self.spec)
        out["scored"] = {
            o.name: sum(1 for v in out[o.name] if is_number(v) and math.isfinite(v))
            for o in present
            if o.kind == "score"
        }
        out["failures"] = count_failures(r.values for r in results)
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
                    yield failed_result(raw, index, task, str(err))

        for results, _ in self._run(checked(), on_error, progress, options, chunk_size):
            yield from results

    def _run(
        self, items: Iterable[Any], on_error: str, progress: bool, options: dict, chunk_size: int | None = None
    ) -> Iterator[tuple[list[ItemResult], dict]]:
        """Chunks of results, in input order, with each chunk's aggregates."""
        size = chunk_size if chunk_size is not None else self.chunk_size
        with self._chunk_images(on_error) as images:
            for chunk in chunks(items, size, images, self.chunk_multiple):
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
                chunk[position] = item.failed(str(err))
        set_digests(prepared, hashed)
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


def add_means(out: dict, spec: MetricSpec) -> dict:
    """Add ``mean_<name>`` (:func:`mmjudge.inputs.finite_mean`) for every output in ``out`` that declares a
    ``mean`` aggregate."""
    for o in spec.outputs:
        if "mean" in o.aggregates and o.name in out:
            out[f"mean_{o.name}"] = finite_mean(out[o.name])
    return out
