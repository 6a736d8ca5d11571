"""What a reproduction shows: each table in the paper's layout (the published number, then ours with its
95 % interval and ✓ inside / ✗ outside / — not run with a numbered reason), the dry run's list of what each
cell needs, and the files: ``cells.json`` (one object per cell, :data:`~mmjudge.reproduce.results.FIELDS`),
``cells.md``, ``cells.csv`` (every cell through :func:`mmjudge.report.spreadsheet_safe`) and, with timing,
``timing.json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

from mmjudge.report import CSV_LINE_END, csv_cell, markdown_text
from mmjudge.reproduce.needs import first_missing
from mmjudge.reproduce.results import FIELDS, CellResult, Reproduction
from mmjudge.reproduce.tables import MEASURE_LABELS, Table

MARKS = {"match": "✓", "outside": "✗", "not_run": "—"}


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def cell_text(result: CellResult) -> str:
    """One cell in a line: ``30.8 | 30.81 [29.97, 31.62] ✓``, or ``30.8 | — not run: <why>``.

    >>> from mmjudge.reproduce.tables import load_tables
    >>> cell = next(load_tables()["fleur_1"].cells())
    >>> cell_text(CellResult(cell, 52.3, 51.1, 53.4, "match"))
    '51.9 | 52.30 [51.10, 53.40] ✓'
    """
    published = f"{result.cell.published:.1f}"
    if result.status == "not_run":
        return f"{published} | — not run: {result.reason}"
    interval = f" [{_number(result.low, 2)}, {_number(result.high, 2)}]" if result.low is not None else ""
    known = f" ({result.reason})" if result.reason else ""
    return f"{published} | {_number(result.ours, 2)}{interval} {MARKS[result.status]}{known}"


def markdown(run: Reproduction) -> str:
    """Every selected table in the paper's layout, reasons as numbered notes under each table."""
    parts = []
    for name, table in run.tables.items():
        if any(c.table == name for c in run.cells):
            parts.append(_table_markdown(table, run))
    counts = run.counts()
    parts.append(
        f"{len(run.results)} cells: {counts['match']} ✓ inside the interval, {counts['outside']} ✗ outside, "
        f"{counts['not_run']} — not run."
    )
    return "\n\n".join(parts) + "\n"


def _table_markdown(table: Table, run: Reproduction) -> str:
    cells = [c for c in run.cells if c.table == table.name]
    columns = [col for col in table.columns if any(c.column.key == col.key for c in cells)]
    rows = [row for row in table.rows if any(c.row.key == row.key for c in cells)]
    timed = bool(table.time_label) and any(r.time_ms is not None for r in rows)
    head = ["", "Metric"] + [f"{markdown_text(col.label)} | ours [95% CI]" for col in columns]
    if timed:
        head.append(f"{table.time_label} | ours")
    lines = [f"**{markdown_text(table.title)}** ({markdown_text(table.source)})", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * (len(head) + len(columns) + (1 if timed else 0)))
    reasons: dict[str, int] = {}
    for row in rows:
        line = [markdown_text(row.group), markdown_text(row.label)]
        for col in columns:
            result = run.results.get(f"{table.name}/{row.key}/{col.key}")
            line += _cell_columns(result, reasons)
        if timed:
            timing = run.timings.get(row.key)
            line += ["–" if row.time_ms is None else f"{row.time_ms:g}", f"{timing.ms_per_sample:g}" if timing else "—"]
        lines.append("| " + " | ".join(line) + " |")
    if reasons:
        lines.append("")
        lines += [f"{n}. {markdown_text(reason)}" for reason, n in reasons.items()]
    devices = sorted({run.timings[r.key].device for r in rows if r.key in run.timings})
    if timed and devices:
        lines.append(f"\nOur times: ms per sample on {markdown_text(', '.join(devices))} (the paper's: RTX 3090).")
    return "\n".join(lines)


def _cell_columns(result: CellResult | None, reasons: dict[str, int]) -> list[str]:
    if result is None:
        return ["", ""]
    published = f"{result.cell.published:.1f}" + (f" ± {result.cell.spread:.1f}" if result.cell.spread else "")
    if result.status == "not_run":
        number = reasons.setdefault(result.reason, len(reasons) + 1)
        return [published, f"— ({number})"]
    interval = f" [{_number(result.low)}, {_number(result.high)}]" if result.low is not None else ""
    known = f" ({reasons.setdefault(result.reason, len(reasons) + 1)})" if result.reason else ""
    return [published, f"{_number(result.ours)}{interval} {MARKS[result.status]}{known}"]


def dry_run_text(run: Reproduction) -> str:
    """The dry run: per cell, what it needs with ✓ present / ✗ missing / ? unknown, and what is missing; then
    how many cells can run and why the others cannot."""
    lines, kinds = [], Counter()
    for cell in run.cells:
        needs = run.needs[cell.key]
        missing = first_missing(needs)
        listed = " · ".join(f"{n.mark()} {n.what} {n.detail}" for n in needs)
        verdict = "runnable" if missing is None else f"not runnable: {missing}"
        lines.append(
            f"{cell.table} · {cell.row.label} · {cell.column.label} ({MEASURE_LABELS[cell.measure]}, "
            f"published {cell.published:.1f}): {listed} → {verdict}"
        )
        kinds[cell_kind(needs)] += 1
    lines.append(f"\n{len(run.cells)} cells:")
    lines += [f"  {count:4d}  {kind}" for kind, count in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + "\n"


def cell_kind(needs) -> str:
    """``runnable here``; ``not runnable`` (no implementation, or a metric this mmjudge does not register); or
    ``runnable with`` what is missing (``data + images + weights``, …).

    >>> from mmjudge.reproduce.needs import Need
    >>> cell_kind([Need("metric", "PAC-S", False, "pac_s is not registered", unregistered=True)])
    'not runnable: metric or configuration not registered in this mmjudge'
    >>> cell_kind([Need("metric", "TIGEr", False, "TIGEr is not in mmjudge"), Need("data", "x", False)])
    'not runnable: no implementation in this mmjudge'
    >>> cell_kind([Need("metric", "BLEU", True), Need("data", "x", False), Need("images", "y", False)])
    'runnable with data + images'
    """
    missing = list(dict.fromkeys(n.what for n in needs if n.present is False))
    if not missing:
        return "runnable here"
    metric = next((n for n in needs if n.what == "metric" and n.present is False), None)
    if metric is not None:
        if metric.unregistered:
            return "not runnable: metric or configuration not registered in this mmjudge"
        return "not runnable: no implementation in this mmjudge"
    return "runnable with " + " + ".join(missing)


def csv_text(run: Reproduction) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_END)
    writer.writerow(FIELDS)
    for result in run.results.values():
        record = result.to_dict()
        writer.writerow([csv_cell(record[k]) for k in FIELDS])
    return buffer.getvalue()


OUTPUT_NAMES = ("cells.json", "cells.md", "cells.csv", "timing.json", "cells.progress.jsonl")


def output_files(out: str | Path) -> list[Path]:
    """Every file a run with ``out`` writes there: the cells in three formats, the timings, and the progress
    file a killed run resumes from.

    >>> [p.name for p in output_files("out")][:3]
    ['cells.json', 'cells.md', 'cells.csv']
    """
    return [Path(out) / name for name in OUTPUT_NAMES]


def write(run: Reproduction, out: str | Path) -> list[Path]:
    """``cells.json``, ``cells.md``, ``cells.csv`` (and ``timing.json`` when timed) into ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    records = [r.to_dict() for r in run.results.values()]
    files = {
        "cells.json": json.dumps(records, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
        "cells.md": markdown(run),
        "cells.csv": csv_text(run),
    }
    if run.timings:
        timings = {key: t.to_dict() for key, t in run.timings.items()}
        files["timing.json"] = json.dumps(timings, indent=1, ensure_ascii=False) + "\n"
    written = []
    for name, text in files.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
