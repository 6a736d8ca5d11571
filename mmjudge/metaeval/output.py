"""Writing a meta-evaluation to a folder: the tables in each format, every record, a heatmap."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mmjudge.metaeval.result import MetaEvalResult
from mmjudge.metaeval.tables import FORMATS, all_tables, check_formats, heatmap, records_csv

TABLE_NAMES = ("accuracy", "criterion_correlation", "benchmarks")  # every table all_tables() can make


def output_files(out_dir: str | Path, formats: Sequence[str] | str = FORMATS) -> list[Path]:
    """Every file :func:`write_outputs` may write into ``out_dir`` (each table in each format, ``records.csv``,
    ``results.json``, ``heatmap.png``): what a command checks against its inputs before anything is written.

    >>> [p.name for p in output_files("out", "md")]
    ['accuracy.md', 'criterion_correlation.md', 'benchmarks.md', 'records.csv', 'results.json', 'heatmap.png']
    """
    out = Path(out_dir)
    tables = [out / f"{name}.{fmt}" for fmt in check_formats(formats) for name in TABLE_NAMES]
    return [*tables, out / "records.csv", out / "results.json", out / "heatmap.png"]


def write_outputs(
    results: Sequence[MetaEvalResult],
    out_dir: str | Path,
    formats: Sequence[str] | str = FORMATS,
    measure: str | None = None,
    ci: bool = True,
) -> tuple[str, list[Path]]:
    """Write tables (``<table>.md/.csv/.json``), ``records.csv`` (every figure, long form),
    ``results.json`` (reloadable with :meth:`MetaEvalResult.load`; a list when several benchmarks)
    and ``heatmap.png`` (criterion correlations, one benchmark). Returns (Markdown of all tables, paths).
    """
    formats = check_formats(formats)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = all_tables(results, measure)
    written: list[Path] = []
    for table in tables:
        written += table.write(out, formats, ci)
    (out / "records.csv").write_text(records_csv(results), encoding="utf-8")
    data = [r.to_dict() for r in results]
    (out / "results.json").write_text(
        json.dumps(data[0] if len(data) == 1 else data, indent=1, allow_nan=False, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    written += [out / "records.csv", out / "results.json"]
    if len(results) == 1:
        try:
            png = heatmap(results[0], out / "heatmap.png", measure)
        except ImportError:  # matplotlib is optional: the tables are the result, the picture a bonus
            import sys

            print(
                "note: matplotlib is not installed, so heatmap.png was skipped (pip install matplotlib).",
                file=sys.stderr,
            )
            png = None
        if png is not None:
            written.append(png)
    markdown = "\n".join(t.markdown(ci) for t in tables)
    return markdown, written
