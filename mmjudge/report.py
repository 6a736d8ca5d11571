"""One results layer for every front door: a metric's result as per-item rows, a plain table, JSONL,
CSV or a ``pandas.DataFrame``, with the signature in every row.

The CLI, the Space and the leaderboard all go through :class:`Report`; none of them formats results
itself, and none imports another. Rows hold ``id``, ``task`` (when known), every declared per-sample
output of the metric (primary first), ``primary`` (the name of the ranking column) and ``signature``.
NaN becomes ``null`` in JSON and an empty cell in CSV and tables.

>>> from mmjudge.metrics.baselines import Baselines
>>> metric = Baselines("rouge_l")
>>> report = Report.from_items(metric, [{"id": "a", "text": "a dog runs", "references": ["a dog runs"]},
...                                     {"id": "b", "text": "two cats", "references": ["a dog runs"]}])
>>> [(row["id"], row["rouge_l"]) for row in report.rows]
[('a', 1.0), ('b', 0.0)]
>>> print(report.to_table(columns=["rouge_l"]))
id  rouge_l
a     1.000
b     0.000
>>> report.to_jsonl().splitlines()[1][:60]
'{"id": "b", "task": "ic", "primary": "rouge_l", "rouge_l": 0'
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, TextIO, Union

from mmjudge.metrics.base import MetricSpec, compute_by_task, finite_mean
from mmjudge.signature import Signature

PathOrFile = Union[str, os.PathLike, TextIO]


def _plain(value: Any) -> Any:
    """JSON-safe: NaN/inf → None, numpy scalars → Python numbers, Signatures → str."""
    if isinstance(value, Signature):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass
class Report:
    """Per-item rows of one metric run (possibly several ``compute`` calls, e.g. one per task).

    Attributes:
        spec: the metric's declaration (outputs, primary).
        rows: one dict per item, in input order.
        signatures: every distinct signature among the rows.
    """

    spec: MetricSpec
    rows: list[dict] = field(default_factory=list)

    # ------------------------------------------------------------------------------------- building
    @classmethod
    def from_result(
        cls,
        spec: MetricSpec,
        result: dict,
        ids: Optional[Sequence[Any]] = None,
        task: Optional[str] = None,
        extra: Optional[Sequence[dict]] = None,
    ) -> "Report":
        """Rows from one ``compute`` result: ``ids`` (default ``0..n-1``), the same ``task`` for all,
        ``extra`` per-row fields put after ``id``/``task`` (e.g. the text)."""
        report = cls(spec)
        report.add(result, ids=ids, task=task, extra=extra)
        return report

    @classmethod
    def from_items(
        cls,
        metric: Any,
        items: Sequence[dict],
        default_task: str = "ic",
        progress: Optional[bool] = False,
        keep: Sequence[str] = (),
    ) -> "Report":
        """Score item dicts (``id``, ``text``, ``image``, ``question``, ``box``, ``references``, ``task``)
        with ``metric``, one ``compute`` per task, and keep the item fields named in ``keep``."""
        report = cls(metric.spec)
        rows: list[Optional[dict]] = [None] * len(items)
        for idx, task, result in compute_by_task(metric, items, default_task, progress):
            part = cls.from_result(
                metric.spec, result, ids=[_item_id(items[i], i) for i in idx], task=task,
                extra=[{k: items[i].get(k) for k in keep} for i in idx],
            )  # fmt: skip
            for i, row in zip(idx, part.rows):
                rows[i] = row
        report.rows = [r for r in rows if r is not None]
        return report

    def add(self, result: dict, ids=None, task=None, extra=None) -> None:
        n = _length(result, self.spec)
        ids = list(ids) if ids is not None else list(range(len(self.rows), len(self.rows) + n))
        if len(ids) != n:
            raise ValueError(f"Expected {n} ids for {n} results, but got {len(ids)}.")
        signature = str(result.get("signature", ""))
        names = self.output_names(result)
        for k in range(n):
            row: dict[str, Any] = {"id": ids[k]}
            if task is not None:
                row["task"] = task
            if extra is not None:
                row.update(extra[k])
            row["primary"] = self.spec.primary
            for name in names:
                row[name] = result[name][k]
            row["signature"] = signature
            self.rows.append(row)

    def output_names(self, result: dict) -> list[str]:
        """Declared per-sample outputs present in ``result``: primary, other scores, diagnostics, texts."""
        order = self.spec.score_names() + [o.name for o in self.spec.outputs if o.kind != "score"]
        return [name for name in order if name in result]

    # ------------------------------------------------------------------------------------- reading
    @property
    def signatures(self) -> list[str]:
        return list(dict.fromkeys(row["signature"] for row in self.rows))

    def column(self, name: str) -> list[Any]:
        return [row.get(name) for row in self.rows]

    def summary(self) -> dict[str, Any]:
        """Mean of every score column over the rows (the metrics' own rule, :func:`finite_mean`: NaN and
        ±inf left out; a column with no finite value is left out here), and the signature(s)."""
        out: dict[str, Any] = {}
        for name in self.spec.score_names():
            mean = finite_mean(self.column(name))
            if not math.isnan(mean):
                out[f"mean_{name}"] = mean
        out["signatures"] = self.signatures
        return out

    # ------------------------------------------------------------------------------------- writing
    def to_records(self) -> list[dict]:
        """Rows as JSON-safe dicts (NaN → None)."""
        return [{k: _plain(v) for k, v in row.items()} for row in self.rows]

    def to_jsonl(self, path: Optional[PathOrFile] = None) -> str:
        """One JSON object per row; written to ``path`` when given. Returns the text."""
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.to_records())
        _write(path, text)
        return text

    def to_csv(self, path: Optional[PathOrFile] = None) -> str:
        """CSV with a header; lists are joined with ``;``; NaN is an empty cell."""
        records = self.to_records()
        columns = list(dict.fromkeys(k for r in records for k in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for r in records:
            writer.writerow({k: ";".join(map(str, v)) if isinstance(v, list) else v for k, v in r.items()})
        _write(path, buffer.getvalue())
        return buffer.getvalue()

    def to_dataframe(self):
        """A ``pandas.DataFrame`` (pandas is imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_table(self, columns: Optional[Sequence[str]] = None, digits: int = 3) -> str:
        """A plain fixed-width table: ``id``, (``task``), the score columns (or ``columns``)."""
        names = list(columns) if columns is not None else [n for n in self.spec.score_names() if n in (self.rows[0] if self.rows else {})]
        head = ["id"] + (["task"] if self.rows and "task" in self.rows[0] and columns is None else []) + names
        cells = [[_cell(row.get(h), digits) for h in head] for row in self.rows]
        widths = [max([len(h)] + [len(c[j]) for c in cells]) for j, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) if j == 0 else h.rjust(w) for j, (h, w) in enumerate(zip(head, widths))).rstrip()]
        for c in cells:
            lines.append("  ".join(v.ljust(w) if j == 0 else v.rjust(w) for j, (v, w) in enumerate(zip(c, widths))).rstrip())
        return "\n".join(lines)


def _cell(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _length(result: dict, spec: MetricSpec) -> int:
    return len(result[spec.primary])


def _item_id(item: dict, index: int) -> str:
    value = item.get("id")
    return str(index) if value is None else str(value)


def _write(path: Optional[PathOrFile], text: str) -> None:
    if path is None:
        return
    if hasattr(path, "write"):
        path.write(text)  # type: ignore[union-attr]
        return
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
