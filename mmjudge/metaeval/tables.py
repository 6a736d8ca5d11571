"""The published table layouts, as Markdown, CSV and JSON, and a heatmap of criterion correlations.

- :func:`accuracy_table` — HarmonicEval Table 2: metric × task pairwise accuracy (%), ``Avg.`` column,
  best per column in bold.
- :func:`criterion_table` — Table 3: metric × (task, criterion) τ (×100); per metric and task the most
  correlated criterion is marked ``↑`` and the least ``↓`` (the paper's red/blue underlines), the
  best metric per column in bold.
- :func:`benchmark_table` — Table 8: metric × benchmark headline figure (τ_c, τ_b or accuracy).

Every cell carries its bootstrap interval: Markdown shows ``53.1 (50.2–55.9)``, CSV has ``…_ci_low`` /
``…_ci_high`` columns, JSON nests ``{"value", "ci_low", "ci_high", "mark"}``. NaN shows as ``–``.
Items a metric had no score for (failed items) are counted with every table: a note under the Markdown
table, an ``n_failed`` column in CSV and field in JSON (the most any cell of that row left out).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.metaeval.correlation import LABELS
from mmjudge.metaeval.result import ALL, AVG, MetaEvalResult
from mmjudge.report import CSV_LINE_END, csv_cell

CRITERION_ABBREVIATIONS = {
    "correctness": "Crt",
    "completeness": "Cmp",
    "clarity": "Clr",
    "fluency": "Flu",
    "conciseness": "Cnc",
    "descriptiveness": "Desc",
    "relevance": "Rel",
    "overall": "Overall",
}
FORMATS = ("md", "csv", "json")
MOST, LEAST = "↑", "↓"


@dataclass
class Cell:
    value: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    mark: str = ""
    best: bool = False


@dataclass
class Table:
    """A metric × column table. ``columns`` are (group, label) pairs; group is "" for flat tables."""

    name: str
    title: str
    columns: list[tuple[str, str]]
    rows: dict[str, list[Cell]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # metric -> items left out (most of any cell)
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------ renderers
    def markdown(self, ci: bool = True) -> str:
        grouped = any(g for g, _ in self.columns)
        head = [f"{g} {c}".strip() if grouped else c for g, c in self.columns]
        lines = [f"**{self.title}**", "", "| Metric | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
        for metric, cells in self.rows.items():
            lines.append(f"| {metric} | " + " | ".join(_md_cell(c, ci) for c in cells) + " |")
        if self.notes:
            lines += [""] + [f"_{note}._" for note in self.notes]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """The table as CSV; names (metric names come from score files, labels from data sets) pass through
        :func:`~mmjudge.report.csv_cell`, so no cell is a spreadsheet formula. Numbers are written as they are."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator=CSV_LINE_END)
        head = ["metric"]
        for g, c in self.columns:
            label = f"{g} {c}".strip()
            head += [label, f"{label}_ci_low", f"{label}_ci_high", f"{label}_mark"]
        writer.writerow([csv_cell(h) for h in head] + ["n_failed"])
        for metric, cells in self.rows.items():
            row: list[Any] = [csv_cell(metric)]
            for cell in cells:
                row += [_num(cell.value), _num(cell.ci_low), _num(cell.ci_high), csv_cell(cell.mark)]
            writer.writerow(row + [self.failed.get(metric, 0)])
        return buffer.getvalue()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "columns": [{"group": g, "label": c} for g, c in self.columns],
            "rows": [
                {
                    "metric": metric,
                    "cells": [
                        {
                            "value": _json(c.value),
                            "ci_low": _json(c.ci_low),
                            "ci_high": _json(c.ci_high),
                            "mark": c.mark,
                            "best": c.best,
                        }
                        for c in cells
                    ],
                    "n_failed": self.failed.get(metric, 0),
                }
                for metric, cells in self.rows.items()
            ],
            "notes": self.notes,
        }

    def write(self, out_dir: str | Path, formats: Sequence[str] = FORMATS, ci: bool = True) -> list[Path]:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for fmt in formats:
            path = out_dir / f"{self.name}.{fmt}"
            if fmt == "md":
                path.write_text(self.markdown(ci), encoding="utf-8")
            elif fmt == "csv":
                path.write_text(self.csv(), encoding="utf-8")
            else:
                path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
        return written


def check_formats(formats: Sequence[str] | str) -> list[str]:
    if isinstance(formats, str):
        formats = [f.strip() for f in formats.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"Expected formats among {list(FORMATS)}, but got {list(formats)}.")
    return list(formats)


def _num(value: float) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def _json(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else round(float(value), 6)


def _md_cell(cell: Cell, ci: bool) -> str:
    if cell.value is None or math.isnan(cell.value):
        return "–"
    text = f"{cell.value:.1f}"
    if cell.best:
        text = f"**{text}**"
    text += cell.mark
    if ci and not math.isnan(cell.ci_low):
        text += f" ({cell.ci_low:.1f}–{cell.ci_high:.1f})"
    return text


def _cell(record: dict | None) -> Cell:
    if record is None:
        return Cell(math.nan)
    return Cell(100.0 * record["value"], 100.0 * record["ci_low"], 100.0 * record["ci_high"])


def _mark_best(table: Table) -> None:
    for j in range(len(table.columns)):
        column = [cells[j] for cells in table.rows.values()]
        finite = [c.value for c in column if not math.isnan(c.value)]
        if len(finite) > 1:
            top = max(finite)
            for c in column:
                c.best = c.value == top


def abbreviation(criterion: str) -> str:
    return CRITERION_ABBREVIATIONS.get(criterion, criterion.title())


def _task_label(task: str) -> str:
    return task.upper() if len(task) <= 4 else task


# ------------------------------------------------------------------------------------ tables
def accuracy_table(result: MetaEvalResult) -> Table | None:
    """Table 2 shape: pairwise accuracy (%) per task (best-of-N) or category (pairs), plus Avg.; one group
    of columns per kind of pairs and per criterion when there are several."""
    records = [r for r in result.records if r["measure"] == "accuracy"]
    if not records:
        return None
    figure = lambda r: (r["kind"], r.get("criterion", "overall"), r["subset"])  # noqa: E731
    columns = list(dict.fromkeys(figure(r) for r in records))
    kinds = list(dict.fromkeys(k for k, _, _ in columns))
    criteria = list(dict.fromkeys(c for _, c, _ in columns))

    def group(kind: str, criterion: str) -> str:
        return " ".join(([kind] if len(kinds) > 1 else []) + ([abbreviation(criterion)] if len(criteria) > 1 else []))

    labels = [(group(k, c), "Avg." if s == AVG else ("All" if s == ALL else _task_label(s))) for k, c, s in columns]
    table = Table("accuracy", f"Pairwise accuracy (%) on {result.dataset}", labels)
    for metric in result.metrics:
        mine = {figure(r): r for r in records if r["metric"] == metric}
        table.rows[metric] = [_cell(mine.get(column)) for column in columns]
        _count_failed(table, metric, mine.values())
    _mark_best(table)
    _note_failed(table, [result])
    return table


def _count_failed(table: Table, metric: str, records) -> None:
    table.failed[metric] = max((int(r.get("n_failed") or 0) for r in records), default=0)


def _note_failed(table: Table, results: Sequence[MetaEvalResult]) -> None:
    """Under the table: the metrics that had no score for some items (the CLI prints the same lines)."""
    for result in results:
        lines = result.failure_lines()
        table.notes += [f"{line} ({result.dataset})" if len(results) > 1 else line for line in lines]


def criterion_table(result: MetaEvalResult, measure: str | None = None, include_all: bool = False) -> Table | None:
    """Table 3 shape: metric × task × criterion correlation (×100) with ↑ / ↓ on the most / least
    correlated criterion of each metric and task. ``measure`` defaults to the benchmark's τ variant."""
    measure = measure or result.correlation_measure
    records = [r for r in result.records if r["measure"] == measure]
    if not records:
        return None
    tasks = [t for t in dict.fromkeys(r["task"] for r in records) if include_all or t != ALL or len(result.tasks) <= 1]
    criteria = list(dict.fromkeys(r["criterion"] for r in records))
    columns = [(t, c) for t in tasks for c in criteria]
    labels = [("All" if t == ALL else _task_label(t) if len(tasks) > 1 else "", abbreviation(c)) for t, c in columns]
    title = (
        f"Kendall {LABELS.get(measure, measure)} (×100)" if measure.startswith("tau") else f"{LABELS[measure]} (×100)"
    )
    table = Table("criterion_correlation", f"{title} per task and criterion on {result.dataset}", labels)
    for metric in result.metrics:
        cells = []
        for task, criterion in columns:
            found = result.find(metric, measure=measure, task=task, criterion=criterion)
            cells.append(_cell(found[0] if found else None))
        if len(criteria) > 1:
            for t_index in range(len(tasks)):
                block = cells[t_index * len(criteria) : (t_index + 1) * len(criteria)]
                finite = [c.value for c in block if not math.isnan(c.value)]
                if len(set(finite)) > 1:
                    next(c for c in block if c.value == max(finite)).mark = MOST
                    next(c for c in block if c.value == min(finite)).mark = LEAST
        table.rows[metric] = cells
        _count_failed(table, metric, [r for r in records if r["metric"] == metric])
    _mark_best(table)
    _note_failed(table, [result])
    return table


def benchmark_table(results: Sequence[MetaEvalResult]) -> Table | None:
    """Table 8 shape: one column per benchmark with its headline figure (τ_c, τ_b or accuracy ×100)."""
    metrics = list(dict.fromkeys(m for r in results for m in r.metrics))
    columns, heads = [], []
    for result in results:
        found = next((result.headline(m) for m in result.metrics if result.headline(m)), None)
        if found is None:
            continue
        measure = "acc." if found["measure"] == "accuracy" else LABELS.get(found["measure"], found["measure"])
        columns.append(result)
        heads.append((result.dataset, measure))
    if not columns:
        return None
    table = Table("benchmarks", "Headline figure per benchmark (×100)", heads)
    for metric in metrics:
        heads = [r.headline(metric) if metric in r.metrics else None for r in columns]
        table.rows[metric] = [_cell(h) for h in heads]
        _count_failed(table, metric, [h for h in heads if h])
    _mark_best(table)
    _note_failed(table, columns)
    return table


def all_tables(results: Sequence[MetaEvalResult], measure: str | None = None) -> list[Table]:
    """The tables that apply: per single result its accuracy and criterion tables; the benchmark table always."""
    tables: list[Table] = []
    if len(results) == 1:
        for table in (accuracy_table(results[0]), criterion_table(results[0], measure)):
            if table is not None:
                tables.append(table)
    summary = benchmark_table(results)
    if summary is not None:
        tables.append(summary)
    return tables


def records_csv(results: Sequence[MetaEvalResult]) -> str:
    """Every figure in long form (one row per record), intervals included."""
    fields = [
        "dataset",
        "metric",
        "measure",
        "task",
        "criterion",
        "protocol",
        "kind",
        "subset",
        "score_key",
        "value",
        "ci_low",
        "ci_high",
        "n_rows",
        "n_items",
        "n_pairs",
        "n_units",
        "n_failed",
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore", lineterminator=CSV_LINE_END)
    writer.writeheader()
    for result in results:
        for record in result.records:
            # Numbers formatted, names (metric, task, criterion … from score files and data sets) neutralised.
            writer.writerow(
                {k: (_num(v) if k in ("value", "ci_low", "ci_high") else csv_cell(v)) for k, v in record.items()}
            )
    return buffer.getvalue()


# ----------------------------------------------------------------------------------- heatmap
def heatmap(result: MetaEvalResult, path: str | Path, measure: str | None = None) -> Path | None:
    """PNG heatmap of the criterion correlations (rows: metrics; columns: task × criterion).

    Uses matplotlib's Agg canvas directly (no pyplot, no change to the user's backend). Returns the
    path, or ``None`` when there are no correlations to draw."""
    table = criterion_table(result, measure)
    if table is None:
        return None
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    data = np.array([[c.value for c in cells] for cells in table.rows.values()], dtype=float)
    n_rows, n_cols = data.shape
    fig = Figure(figsize=(max(4.0, 0.55 * n_cols + 2.5), max(2.0, 0.45 * n_rows + 1.5)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    limit = float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0
    image = ax.imshow(
        np.ma.masked_invalid(data), cmap="RdBu_r", vmin=-max(limit, 1e-9), vmax=max(limit, 1e-9), aspect="auto"
    )
    ax.set_xticks(range(n_cols), [f"{g}\n{c}".strip() for g, c in table.columns], fontsize=7)
    ax.set_yticks(range(n_rows), list(table.rows), fontsize=8)
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isfinite(data[i, j]):
                dark = abs(data[i, j]) > 0.6 * limit  # white digits on the deep colours
                ax.text(
                    j, i, f"{data[i, j]:.0f}", ha="center", va="center", fontsize=6, color="white" if dark else "black"
                )
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(table.title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
