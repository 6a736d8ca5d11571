"""A metric's per-item scores: reading JSONL / CSV files and checking them against a benchmark's ids.

A score file has one row per item: ``id`` and one or more numeric columns, ``score`` (or
``overall``) and optionally one per criterion (``correctness``, ``fluency``, …). Other text columns
(``text``, ``signature``) are ignored. Everything wrong is reported with the offending id or line:
NaN / inf, non-numbers, duplicate ids, ids the benchmark lacks, benchmark ids the file lacks.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "scores.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write(json.dumps({"id": "a", "score": 0.5, "signature": "x"}) + "\\n")
...     _ = f.write(json.dumps({"id": "b", "score": 0.7}) + "\\n")
>>> read_scores(path)
{'a': {'score': 0.5}, 'b': {'score': 0.7}}
>>> check_scores(read_scores(path), ["a", "b", "c"], "my-metric")
Traceback (most recent call last):
...
ValueError: my-metric: no score for 1 id(s) of the benchmark: 'c'.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from mmjudge.errors import shown_ids
from mmjudge.jsonl import JsonLineError, decode, json_lines

Scores = dict[str, dict[str, float]]
"""id → {score key → value}."""


class ScoreTable(dict):
    """:data:`Scores` that also know the metric's declared primary column (``primary``), when known:
    from the metric itself (on-the-fly scoring) or from a ``primary`` field in the rows of a score file
    written by ``mmjudge score --output`` (:mod:`mmjudge.report`)."""

    def __init__(self, data=(), primary: Optional[str] = None):
        super().__init__(data)
        self.primary = primary

PRIMARY_KEYS = ("score", "overall")


def _number(value: Any) -> Optional[float]:
    """``value`` as a float if it is a number (not bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{where}: score is {value} (NaN and inf are not valid scores).")
    return value


def read_scores(path: str | os.PathLike) -> Scores:
    """Read a ``.jsonl`` (one JSON object per line) or ``.csv`` (header row) score file.

    Raises:
        ValueError: unreadable lines, a row without ``id``, duplicate ids, NaN/inf, a score column
            holding a non-number, or a file without any numeric column.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Score file {str(path)!r} does not exist.")
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
    else:
        rows = _read_jsonl(path)
    primaries = {str(row["primary"]) for _, row in rows if isinstance(row.get("primary"), str)}
    return ScoreTable(_table(rows, str(path)), primaries.pop() if len(primaries) == 1 else None)


def _read_jsonl(path: Path) -> list[tuple[str, dict]]:
    rows = []
    try:
        for n, row in json_lines(decode(path.read_bytes())):
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object, but got {type(row).__name__}.")
            rows.append((f"{path}:{n}", row))
    except JsonLineError as err:
        raise ValueError(f"{path}:{err.line}: {err.reason}") from None
    return rows


def _read_csv(path: Path) -> list[tuple[str, dict]]:
    with open(path, encoding="utf-8-sig", newline="") as f:  # -sig: a byte-order mark (Excel) is not a column name
        reader = csv.DictReader(f)
        raw = [(f"{path}:{n}", dict(row)) for n, row in enumerate(reader, 2)]
        fields = reader.fieldnames or []
    # A column is a score column when any of its cells parses as a number; then every cell must.
    numeric = set()
    for name in fields:
        if name == "id":
            continue
        for _, row in raw:
            try:
                float(row.get(name) or "x")
                numeric.add(name)
                break
            except ValueError:
                pass
    rows = []
    for where, row in raw:
        parsed: dict[str, Any] = {"id": row.get("id")}
        for name in numeric:
            cell = (row.get(name) or "").strip()
            try:
                parsed[name] = float(cell)
            except ValueError:
                raise ValueError(f"{where} (id {row.get('id')!r}): column {name!r} holds {cell!r}, not a number.") from None
        rows.append((where, parsed))
    return rows


def _table(rows: list[tuple[str, dict]], source: str) -> Scores:
    keys: list[str] = []
    for _, row in rows:
        for key, value in row.items():
            if key != "id" and key not in keys and (_number(value) is not None or value is None):
                keys.append(key)
    if not rows:
        raise ValueError(f"{source}: no rows.")
    if not keys:
        raise ValueError(f"{source}: no numeric score column (expected e.g. 'score').")
    out: Scores = {}
    for where, row in rows:
        if row.get("id") in (None, ""):
            raise ValueError(f"{where}: the row has no 'id'.")
        item_id = str(row["id"])
        if item_id in out:
            raise ValueError(f"{where}: duplicate id {item_id!r}.")
        values = {}
        for key in keys:
            if key not in row:
                raise ValueError(f"{where} (id {item_id!r}): missing score {key!r}.")
            number = _number(row[key])
            if number is None:
                raise ValueError(f"{where} (id {item_id!r}): score {key!r} is {row[key]!r}, not a number.")
            values[key] = _finite(number, f"{where} (id {item_id!r}) {key!r}")
        out[item_id] = values
    return out


def scores_from_columns(ids: list[str], columns: Mapping[str, list], source: str = "metric") -> Scores:
    """Scores from per-sample lists (a metric's ``compute`` output); non-numeric lists are ignored."""
    keys = [k for k, v in columns.items() if isinstance(v, list) and len(v) == len(ids) and all(_number(x) is not None for x in v)]
    if not keys:
        raise ValueError(f"{source}: the metric returned no per-sample numeric scores.")
    out: Scores = {}
    for n, item_id in enumerate(ids):
        out[item_id] = {k: _finite(float(columns[k][n]), f"{source} (id {item_id!r}) {k!r}") for k in keys}
    return out


def check_scores(scores: Scores, ids: Iterable[str], name: str) -> Scores:
    """``scores`` restricted to nothing else than the benchmark's ``ids``: every id scored, no unknown id.

    Raises:
        ValueError: naming (up to five of) the missing or unknown ids.
    """
    wanted = list(dict.fromkeys(ids))
    known = set(wanted)
    missing = [i for i in wanted if i not in scores]
    if missing:
        raise ValueError(f"{name}: no score for {len(missing)} id(s) of the benchmark: {shown_ids(missing)}.")
    unknown = [i for i in scores if i not in known]
    if unknown:
        raise ValueError(f"{name}: {len(unknown)} id(s) are not in the benchmark: {shown_ids(unknown)}.")
    for item_id, values in scores.items():
        for key, value in values.items():
            _finite(float(value), f"{name} (id {item_id!r}) {key!r}")
    return scores


def score_key(scores: Scores, name: str, criterion: Optional[str] = None) -> str:
    """The column used for a figure: the criterion's own column when the metric has one (criterion-wise
    metrics such as HarmonicEval), else the metric's declared primary column (:class:`ScoreTable`),
    else ``score``, ``overall`` or the only numeric column."""
    keys = list(next(iter(scores.values())).keys()) if scores else []
    if criterion is not None and criterion in keys:
        return criterion
    primary = getattr(scores, "primary", None)
    if primary is not None and primary in keys:
        return primary
    for key in PRIMARY_KEYS:
        if key in keys:
            return key
    if len(keys) == 1:
        return keys[0]
    raise ValueError(f"{name}: cannot tell which column is the overall score among {keys}; name one 'score'.")
