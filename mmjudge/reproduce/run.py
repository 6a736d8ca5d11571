"""Rebuilding the papers' tables, cell by cell: each cell's figure recomputed with its bootstrap interval and
compared with the published number.

Cells run as a stream: grouped by the items they need (a benchmark, its split, how many references), one
group's items in memory at a time; within a group, one row (metric) at a time, its per-item scores computed
once (:mod:`mmjudge.reproduce.scoring`) and meta-evaluated once (:func:`mmjudge.metaeval.meta_evaluate`) for
all of its cells. Each finished cell is appended to a progress file, keyed by everything its figure depends
on (data folder, scores, metric options, bootstrap settings, version): a second run recomputes only what
changed, and a killed run resumes at the first unfinished cell. A cell that cannot run says why
(``not_run``) and is tried again next time.

**Match rule.** Figures are ×100 as printed. A cell ``match`` es when the published number lies inside our
95 % bootstrap interval, widened by half its last printed digit (30.8 stands for [30.75, 30.85]);
``outside`` otherwise. Without bootstrap (``bootstrap=0``), when ours rounds to the published number.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.reproduce.needs import cell_needs, first_missing
from mmjudge.reproduce.output import cell_text, write
from mmjudge.reproduce.results import CellResult, Reproduction, benchmark_label
from mmjudge.reproduce.tables import Cell, Column, Row, load_tables, select_cells
from mmjudge.reproduce.timing import time_metric

HALF_DIGIT = 0.05
# A failure these raise is a cell that cannot run (its reason is the message), not a crash of the whole run.
CELL_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, RuntimeError)


@dataclass
class Settings:
    """How to run: data folders and loader options per benchmark, score files per (row, benchmark), metric
    options per row, bootstrap settings, where results go."""

    data_dirs: dict[str, str] = field(default_factory=dict)
    dataset_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache: Any = True
    bootstrap: int = 1000
    seed: int = 0
    confidence: float = 0.95
    timing: bool = False
    timing_samples: int = 20
    progress: bool = True
    out: str | None = None

    def scored(self, cell: Cell) -> list[str] | None:
        return self.scores.get((cell.row.key, cell.benchmark))


def plan(
    table: str = "all",
    metrics: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Reproduction:
    """The selected cells and what each needs (nothing is loaded: the dry run)."""
    settings = settings or Settings()
    tables = load_tables()
    cells = select_cells(tables, table, metrics, benchmarks)
    needs = {
        c.key: cell_needs(c, settings.data_dirs, settings.options.get(c.row.key, {}), settings.scored(c) is not None)
        for c in cells
    }
    return Reproduction(tables, cells, needs)


def reproduce(
    table: str = "all",
    metrics: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Reproduction:
    """Recompute the selected cells (see the module); ``settings.out`` also receives ``cells.json``, ``cells.md``
    and ``cells.csv`` (:func:`mmjudge.reproduce.output.write`).

    >>> r = reproduce("harmonic_eval_8", metrics=["tiger"], settings=Settings(progress=False))
    >>> [(res.status, res.reason.split(":")[0]) for res in r.results.values()][0]
    ('not_run', 'TIGEr is not in mmjudge')
    """
    from mmjudge.reproduce import scoring

    settings = settings or Settings()
    run = plan(table, metrics, benchmarks, settings)
    progress = _Progress(_work_dir(settings) / "cells.progress.jsonl")
    # Each data folder is walked once in this run (not once per cell): the cells' keys and the rows' score
    # files all read its fingerprint from here. Only for this run: another run walks it again.
    data = functools.cache(scoring.folder_fingerprint)
    keys: dict[str, str] = {}
    groups: dict[tuple, list[Cell]] = {}
    for cell in run.cells:
        reason = first_missing(run.needs[cell.key])
        if reason:
            run.results[cell.key] = CellResult(cell, reason=reason)
            continue
        keys[cell.key] = _fingerprint(cell, settings, data(settings.data_dirs.get(cell.benchmark)))
        # With --timing a row computed by its metric runs again (its cached scores read back) so it is timed.
        timed = settings.timing and settings.scored(cell) is None
        known = None if timed else progress.get(keys[cell.key], cell)
        if known is not None:
            run.results[cell.key] = known
            continue
        groups.setdefault(cell.column.context, []).append(cell)
    for context, cells in groups.items():
        _run_context(context, cells, settings, run, progress, data, keys)
    run.results = {c.key: run.results[c.key] for c in run.cells}  # the tables' order
    if settings.out:
        write(run, settings.out)
    return run


def _work_dir(settings: Settings) -> Path:
    from mmjudge.paths import cache_dir

    folder = Path(settings.out) if settings.out else cache_dir() / "reproduce"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _scores_dir() -> Path:
    from mmjudge.paths import cache_dir

    return cache_dir() / "reproduce" / "scores"


def _fingerprint(cell: Cell, settings: Settings, data: str) -> str:
    """Everything a cell's figure depends on (its scores' source, the data, the protocol, the version);
    ``data``: the fingerprint of the cell's data folder."""
    from mmjudge._version import __version__
    from mmjudge.reproduce.scoring import files_fingerprint

    files = settings.scored(cell)
    key = {
        "cell": cell.key,
        "column": [cell.column.benchmark, cell.column.split, cell.column.criterion, cell.column.subset],
        "references": cell.column.references,
        "data": data,
        "dataset_options": settings.dataset_options.get(cell.benchmark, {}),
        "scores": files_fingerprint(files)
        if files
        else [cell.row.name, cell.row.options, settings.options.get(cell.row.key, {})],
        "bootstrap": [settings.bootstrap, settings.seed, settings.confidence],
        "version": __version__,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


class _Progress:
    """Finished cells, one JSON line each, appended as they finish (a cut-off last line is ignored)."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the line a killed run was writing
                self.done[record["fingerprint"]] = record

    def get(self, fingerprint: str, cell: Cell) -> CellResult | None:
        record = self.done.get(fingerprint)
        if record is None:
            return None
        return CellResult(cell, record["ours"], record["low"], record["high"], record["status"], record["reason"])

    def record(self, fingerprint: str, result: CellResult) -> None:
        self.done[fingerprint] = {"fingerprint": fingerprint, **result.to_dict()}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(self.done[fingerprint], ensure_ascii=False) + "\n")


# ------------------------------------------------------------------------------------------ running
def _run_context(
    context: tuple,
    cells: list[Cell],
    settings: Settings,
    run: Reproduction,
    progress: _Progress,
    data: Callable[[str | None], str],
    keys: Mapping[str, str],
) -> None:
    """Every cell of one benchmark context: its items loaded once, then row by row. ``data``: a data folder's
    fingerprint (computed once per run); ``keys``: each cell's progress key."""
    from mmjudge.reproduce.scoring import load_context

    benchmark, split, references = context
    try:
        judgments = load_context(
            benchmark, split, references, settings.data_dirs.get(benchmark), settings.dataset_options.get(benchmark, {})
        )
    except CELL_ERRORS as err:
        for cell in cells:
            result = CellResult(cell, reason=f"the benchmark did not load: {_line(err)}")
            _finish(run, progress, settings, result, keys[cell.key])
        return
    rows: dict[str, list[Cell]] = {}
    for cell in cells:
        rows.setdefault(cell.row.key, []).append(cell)
    for row_cells in rows.values():
        row = row_cells[0].row
        try:
            scores = _row_scores(row, row_cells[0], judgments, settings, run, data(settings.data_dirs.get(benchmark)))
            results = _figures(row, row_cells, judgments, scores, settings)
        except CELL_ERRORS as err:
            results = [CellResult(cell, reason=_line(err)) for cell in row_cells]
        for result in results:
            _finish(run, progress, settings, result, keys[result.cell.key])


def _row_scores(row: Row, cell: Cell, judgments, settings: Settings, run: Reproduction, data: str):
    """The row's per-item scores on this context: the user's ``--scores`` files, or computed (and cached);
    ``data``: the fingerprint of the benchmark's data folder."""
    from mmjudge.reproduce.scoring import compute_scores, metric_options, read_score_files, scores_path

    files = settings.scored(cell)
    if files:
        return read_score_files(files, row.label)
    import mmjudge
    from mmjudge._version import __version__
    from mmjudge.metrics import METRICS

    options = metric_options(row.options, settings.options.get(row.key, {}), settings.cache, METRICS.get(row.metric))
    path = scores_path(
        _scores_dir(),
        {
            "row": row.key,
            "metric": row.name,
            "options": {
                k: v for k, v in options.items() if k not in ("cache", "batch_size", "device", "max_concurrency")
            },
            "benchmark": cell.column.benchmark,
            "split": cell.column.split,
            "references": cell.column.references,
            "data": data,
            "dataset_options": settings.dataset_options.get(cell.benchmark, {}),
            "version": __version__,
        },
    )
    if row.images and any(it.get("image") is None for it in judgments.items):
        raise ValueError(f"no images: {row.label} looks at the images, and the {cell.benchmark} data folder has none")
    metric = None
    if settings.timing and row.key not in run.timings:
        # Timed before it scores anything, its caches set aside (time_metric): a cached answer would time the
        # cache. The same instance then scores: one model load.
        metric = mmjudge.load(row.metric, row.config, **options)
        run.timings[row.key] = time_metric(metric, judgments.items, settings.timing_samples)
    if path.exists():
        from mmjudge.metaeval.scores import read_scores

        return read_scores(path)
    if metric is None:
        metric = mmjudge.load(row.metric, row.config, **options)
    return compute_scores(metric, judgments, path, settings.progress)


def _figures(row: Row, cells: list[Cell], judgments, scores, settings: Settings) -> list[CellResult]:
    """One meta-evaluation of the row's scores for all its cells on this context, each cell's figure read out."""
    from mmjudge.metaeval import meta_evaluate

    measures = sorted({c.measure for c in cells if c.measure != "accuracy"}) or ["tau_c"]
    result = meta_evaluate(
        judgments,
        {row.key: scores},
        measures=measures,
        bootstrap=settings.bootstrap,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    return [_compare(cell, _figure(result, row.key, cell.column)) for cell in cells]


def _figure(result, metric: str, column: Column) -> dict:
    """The record of ``column``'s figure: its measure and criterion, over all tasks (or the one task);
    for accuracies, its subset (default the mean over categories, or the only subset)."""
    records = result.find(metric, measure=column.measure, criterion=column.criterion)
    if column.measure == "accuracy":
        subsets = {r["subset"]: r for r in records}
        wanted = column.subset or ("avg" if "avg" in subsets else next(iter(subsets), None))
        found = subsets.get(wanted)
    else:
        tasks = {r["task"]: r for r in records}
        found = tasks.get("all") or (next(iter(tasks.values())) if len(tasks) == 1 else None)
    if found is None:
        raise ValueError(f"the meta-evaluation has no {column.measure} figure for {benchmark_label(column)}")
    return found


def _compare(cell: Cell, record: Mapping[str, Any]) -> CellResult:
    ours = 100 * record["value"]
    if not math.isfinite(ours):
        return CellResult(cell, reason="the figure is undefined (every score, or every human rating, is the same)")
    low, high = 100 * record["ci_low"], 100 * record["ci_high"]
    if math.isfinite(low) and math.isfinite(high):
        inside = low - HALF_DIGIT <= cell.published <= high + HALF_DIGIT
        low, high = round(low, 4), round(high, 4)
    else:
        inside, low, high = round(ours, 1) == round(cell.published, 1), None, None
    # An outside cell says what is known about its published number (the table file's cell note), if anything.
    status = "match" if inside else "outside"
    return CellResult(cell, round(ours, 4), low, high, status, "" if inside else cell.note)


def _finish(run: Reproduction, progress: _Progress, settings: Settings, result: CellResult, key: str) -> None:
    """``result`` kept, and recorded in the progress file under ``key`` (the cell's :func:`_fingerprint`)."""
    run.results[result.cell.key] = result
    if result.status != "not_run":  # a cell that could not run is tried again next time
        progress.record(key, result)
    if settings.progress:
        print(
            f"{result.cell.table} · {result.cell.row.label} · {result.cell.column.label}: {cell_text(result)}",
            file=sys.stderr,
        )


def _line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 300 else text[:299] + "…"
