"""Scoring inputs of any size: items read lazily, scored in bounded chunks, rows written as they finish,
a killed run resumed, and each process given its own shard.

:func:`score_file` is what ``mmjudge score --input … --output …`` runs: it opens this process's share of
the input (:mod:`~mmjudge.stream.sources`), skips what its part file already holds, scores the rest with
:meth:`mmjudge.metrics.base.Metric.stream`, writes each row to its part file as it finishes
(:mod:`~mmjudge.stream.outputs`), and when every process is done the main one merges the parts into the
output in input order. Memory holds one chunk of items (and one row per process while merging), whatever
the input's size; under ``torchrun`` each process reads only its share, and judges answer only their own
process's requests (:func:`mmjudge.distributed.own_items`).

>>> import json, tempfile, os, mmjudge
>>> d = tempfile.mkdtemp()
>>> with open(os.path.join(d, "in.jsonl"), "w") as f:
...     rows = ({"id": k, "text": f"a dog number {k}", "references": ["a dog"]} for k in "abc")
...     _ = f.write("\\n".join(json.dumps(row) for row in rows))
>>> source, output = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
>>> summary = score_file(mmjudge.load("baselines", "rouge_l"), source, output)
>>> summary.written, [json.loads(line)["id"] for line in open(os.path.join(d, "out.jsonl"))]
(3, ['a', 'b', 'c'])
>>> score_file(mmjudge.load("baselines", "rouge_l"), os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")).complete
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge import distributed
from mmjudge.metrics.spec import item_id
from mmjudge.metrics.statuses import add_failures
from mmjudge.progress import optional_bar
from mmjudge.report import result_row
from mmjudge.stream.outputs import (
    PartFile,
    check_output_file,
    check_output_spares_inputs,
    check_same_items,
    existing_parts,
    item_digest,
    merge_parts,
    output_format,
    remove_outputs,
)
from mmjudge.stream.seen_ids import SeenIds
from mmjudge.stream.sources import ItemSource, open_source

__all__ = ["RunSummary", "score_file", "stream_rows", "open_source"]


@dataclass
class RunSummary:
    """What one run did (all processes together, as the main process reports it).

    Attributes:
        total: items in the input; scored: rows written by this run; resumed: rows an earlier run had
            written; failed: rows recorded with an ``error`` (bad input); first_failure: the first such
            reason; complete: the output already held every row (nothing was done); output: the path.
    """

    total: int = 0
    written: int = 0
    resumed: int = 0
    failed: int = 0
    first_failure: str | None = None
    complete: bool = False
    output: str | None = None
    read: int = 0
    read_by_process: list[int] = field(default_factory=list)
    unrated: int = 0
    failures_by_output: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, row: dict) -> None:
        """One more row written: counted as failed (its ``error``), unrated (a score without a value) or scored."""
        self.written += 1
        if row.get("error") is not None:
            self.failed += 1
            self.first_failure = self.first_failure or row["error"]
        elif add_failures(self.failures_by_output, row):
            self.unrated += 1

    def add(self, other: RunSummary) -> None:
        self.total += other.total
        self.written += other.written
        self.resumed += other.resumed
        self.failed += other.failed
        self.read += other.read
        self.unrated += other.unrated
        self.first_failure = self.first_failure or other.first_failure
        for key, per in other.failures_by_output.items():
            mine = self.failures_by_output.setdefault(key, {})
            for status, count in per.items():
                mine[status] = mine.get(status, 0) + count


def score_file(
    metric: Any,
    source: Any,
    output: str,
    *,
    output_fmt: str | None = None,
    task: str | None = None,
    strict: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    chunk_size: int | None = None,
    keep: Sequence[str] = ("text",),
    source_options: dict | None = None,
    on_row: Callable[[dict], None] | None = None,
    on_start: Callable[[Path], None] | None = None,
    **options: Any,
) -> RunSummary:
    """Score ``source`` (a path, Hub id or ``datasets.Dataset``; see :func:`~mmjudge.stream.sources.open_source`,
    whose options ``source_options`` holds; or a function of ``(rank, world)`` returning that process's
    :class:`~mmjudge.stream.sources.ItemSource`, e.g. :func:`mmjudge.pairwise.sources.pair_source`) with
    ``metric`` into ``output`` (JSON Lines, CSV or Parquet).

    Args:
        task: the task of items without their own.
        strict: stop at the first item that cannot be scored, with one line naming it (the rows before it
            stay written); otherwise its row records the reason and the run goes on.
        overwrite: start again instead of resuming an earlier run of the same output.
        progress: one bar over the items (items/s, ETA), in the main process.
        keep: item fields copied into each row (the text by default).
        on_row: also called with each row as it is written (the CLI prints them).
        on_start: called with this process's part file once it is open, before the first row (the CLI says
            where the rows go: ``output`` itself appears only when the run completes).
        **options: the metric's compute options (``explain`` …).
    """
    rank, world = distributed.rank(), distributed.world_size()
    fmt = output_format(output, output_fmt)
    check_output_file(output)  # before --overwrite deletes anything
    check_output_spares_inputs(output, [("--input", source)], rank, world)
    if overwrite and distributed.is_main():
        remove_outputs(output)
    distributed.barrier()
    signature = str(metric.signature)
    summary = RunSummary(output=output)
    if Path(output).exists() and not existing_parts(output):
        summary.complete = True  # the output is only ever written whole: this run has nothing left to do
        return summary
    items = (
        source((rank, world))
        if callable(source)
        else open_source(source, shard=(rank, world), **(source_options or {}))
    )
    run = {"input": items.name, "options": run_options(task, keep, source_options, options)}
    part = PartFile(output, rank, world, signature, run)
    if on_start is not None:
        on_start(part.path)
    try:
        summary = _score_share(
            metric, items, part, task, strict, progress and distributed.is_main(), chunk_size, keep, on_row, options
        )
        summary = _gathered(summary)
        distributed.barrier()
        if distributed.is_main():
            merge_parts(output, world, fmt)
    finally:
        part.close()  # after the merge: the part's lock keeps another run into this output away until it is done
    distributed.barrier()
    summary.output = output
    return summary


def run_options(task: str | None, keep: Sequence[str], source_options: dict | None, options: dict) -> dict:
    """The settings a run's rows depend on besides the metric's signature, as a part's header records them:
    the default task, the fields copied into rows, how the input is read (format, split, columns) and the
    compute options (``explain`` …). The chunk size and progress bars change no row, so they are not here.

    >>> run_options("ic", ("text",), {"kind": None, "split": None, "columns": {"text": "caption"}}, {})
    {'task': 'ic', 'keep': ['text'], 'columns': {'text': 'caption'}}
    """
    read = {k: v for k, v in (source_options or {}).items() if v not in (None, {}, "")}
    return {"task": task, "keep": list(keep), **read, **options}


def stream_rows(
    metric: Any,
    items: Iterable[dict],
    task: str | None = None,
    strict: bool = False,
    keep: Sequence[str] = ("text",),
    chunk_size: int | None = None,
    progress: bool = False,
    seen: SeenIds | None = None,
    **options: Any,
) -> Iterator[tuple[int, dict]]:
    """``(input position, report row)`` for each item of ``items`` as it finishes (in input order): the
    metric's stream with the fields named in ``keep`` copied from each item, and a repeated ``id`` failing
    its item (``seen``: the ids of rows written before, when resuming). Holds only the items in flight (one
    chunk) and about 16 bytes per id.

    >>> import mmjudge
    >>> items = [{"id": "a", "text": t, "references": ["a dog"]} for t in ("a dog", "a cat")]
    >>> rows = stream_rows(mmjudge.load("baselines", "rouge_l"), items)
    >>> [(i, row["id"], row["rouge_l"], row.get("error", "").split(" (")[0]) for i, row in rows]
    [(0, 'a', 1.0, ''), (1, 'a', nan, "item 1: its id 'a' is already the id of input item 0")]
    """
    in_flight: dict[
        int, tuple[int, dict]
    ] = {}  # stream position -> (input position, kept fields): two chunks' worth at most
    # Every row's id is unique (a repeat fails its item; an item without an id has its input position as id),
    # within one process's share and across a resume (``seen`` holds the ids of the rows written before).
    seen = seen if seen is not None else SeenIds()

    def checked() -> Iterator[dict]:
        for position, raw in enumerate(items):
            if isinstance(raw, dict) and "_error" not in raw:
                key = item_id(raw, position)
                earlier = seen.first_position(key, raw.get("_i", position))
                if earlier is not None:
                    own = "its id" if raw.get("id") is not None else "its position, its id as it has none,"
                    raw = {
                        **raw,
                        "_error": f"{own} {key!r} is already the id of input item {earlier} (counting from 0); "
                        "ids must be unique.",
                    }
            index = raw.get("_i", position) if isinstance(raw, dict) else position
            in_flight[position] = (index, {k: raw.get(k) for k in keep} if isinstance(raw, dict) else {})
            yield raw

    spec, signature = metric.spec, str(metric.signature)
    results = metric.stream(
        checked(),
        task=task,
        on_error="raise" if strict else "record",
        chunk_size=chunk_size,
        progress=progress,
        **options,
    )
    for result in results:
        index, kept = in_flight.pop(result.index)
        yield index, result_row(spec, result, signature, kept)


def _score_share(
    metric: Any,
    items: ItemSource,
    part: PartFile,
    task: str | None,
    strict: bool,
    progress: bool,
    chunk_size: int | None,
    keep: Sequence[str],
    on_row: Callable[[dict], None] | None,
    options: dict,
) -> RunSummary:
    summary = RunSummary(total=items.total or 0, resumed=part.done)
    digests: dict[int, str] = {}  # input position -> its item's digest, for the items in flight

    def digested(share: Iterator[dict]) -> Iterator[dict]:
        for item in share:
            if isinstance(item, dict):
                digests[item.get("_i", -1)] = item_digest(item)
            yield item

    with contextlib.ExitStack() as stack:
        if distributed.is_distributed():
            stack.enter_context(distributed.own_items())
        # A part whose rows carry their items' digests is resumed only once each is the item now at its position
        # (the items before are built and checked, not skipped); an older part's rows are skipped as before.
        share = check_same_items(part, items.items()) if part.digested else items.items(skip=part.done)
        total = (items.total or 0) - part.done
        bar = stack.enter_context(
            optional_bar(progress, total=total or None, desc="scoring", unit="item", smoothing=0.1)
        )
        for index, row in stream_rows(
            metric, digested(share), task, strict, keep, chunk_size, seen=part.seen_ids, **options
        ):
            part.write(row, index, digests.pop(index, None))
            summary.count(row)
            if on_row is not None:
                on_row(row)
            if bar is not None:
                bar.update(1)
    summary.read, summary.read_by_process = items.read, [items.read]
    return summary


def _gathered(summary: RunSummary) -> RunSummary:
    """Every process's summary added up, in every process."""
    if not distributed.is_distributed():
        return summary
    from accelerate.utils import gather_object

    distributed.state()
    total = RunSummary()
    for part in gather_object([summary]):
        total.add(part)
        total.read_by_process.append(part.read)
    return total
