"""A metric's per-item scores: reading JSONL / CSV files and joining them to a benchmark's items.

A score file has one row per item: ``id`` and one or more numeric columns, ``score`` (or
``overall``) and optionally one per criterion (``correctness``, ``fluency``, …). Other text columns
(``text``, ``signature``, ``*_status``) are ignored. A ``null`` / NaN score (an empty CSV cell) marks a
**failed item** — its judge gave no rating; the meta-evaluation leaves it out of each figure that needs
that score and reports how many it left out. Everything else wrong is reported with the offending id or
line: inf, non-numbers, duplicate ids, ids the benchmark lacks, benchmark ids the file lacks.

A file without ``id`` whose rows name an image and a text (what most published per-item result files
are) is joined **by content** (:func:`join_scores`, rule in ``docs/metaeval.md``). FLEUR's own result files
(``results/fleur_*.txt`` of github.com/Yebin46/FLEUR: ``image file :``, ``caption :``, ``model score :``,
``our score :`` lines) are read as such rows: ``score`` is FLEUR's smoothed score, ``raw_score`` the number
LLaVA printed.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "scores.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write(json.dumps({"id": "a", "score": 0.5, "signature": "x"}) + "\\n")
...     _ = f.write(json.dumps({"id": "b", "score": None, "score_status": "no_rating"}) + "\\n")
>>> read_scores(path)
{'a': {'score': 0.5}, 'b': {'score': nan}}
>>> check_scores(read_scores(path), ["a", "b", "c"], "my-metric")
Traceback (most recent call last):
...
ValueError: my-metric: no score for 1 id(s) of the benchmark: 'c'.
"""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from mmjudge.errors import id_differences, shown_ids
from mmjudge.jsonl import JsonLineError, decode, json_lines
from mmjudge.report import from_spreadsheet_safe

Scores = dict[str, dict[str, float]]
"""id → {score key → value}; NaN marks a failed item."""

PRIMARY_KEYS = ("score", "overall")
IMAGE_KEYS = ("image", "image_path", "image_file", "file_name")
TEXT_KEYS = ("text", "caption", "candidate")
STATUS_SUFFIX = "_status"  # e.g. fluency_status: "no_rating" — why a score is missing, never a score
FAILED_CELLS = ("", "nan", "null", "none")  # CSV cells that mean "no score" (a failed item)


class ScoreTable(dict):
    """:data:`Scores` that also know the metric's declared primary column (``primary``), when known:
    from the metric itself (on-the-fly scoring) or from a ``primary`` field in the rows of a score file
    written by ``mmjudge score --output`` (:mod:`mmjudge.report`).

    A file keyed by content holds no ids yet: its rows wait in ``content_rows`` (``(key, values, where)``)
    until :func:`join_scores` turns them into ids; ``join`` then says how (``by``, ``items``, ``joined``,
    ``unjoined_rows``)."""

    def __init__(self, data=(), primary: str | None = None, content_rows: list | None = None, source: str = "scores"):
        super().__init__(data)
        self.primary = primary
        self.content_rows = content_rows
        self.source = source
        self.join: dict[str, Any] | None = None


def _number(value: Any) -> float | None:
    """``value`` as a float if it is a number (not bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _not_inf(value: float, where: str) -> float:
    if math.isinf(value):
        raise ValueError(f"{where}: score is {value} (inf is not a valid score; a failed item's score is null or NaN).")
    return value


def is_failed(value: float) -> bool:
    """Whether a score marks a failed item (NaN)."""
    return isinstance(value, float) and math.isnan(value)


def read_scores(path: str | os.PathLike) -> ScoreTable:
    """Read a ``.jsonl`` (one JSON object per line) or ``.csv`` (header row) score file.

    Raises:
        ValueError: unreadable lines, a row with neither ``id`` nor image and text, duplicate ids, inf,
            a score column holding a non-number, or a file without any numeric column.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Score file {str(path)!r} does not exist.")
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
    elif path.suffix.lower() == ".txt" and _is_fleur_text(path):
        rows = _read_fleur_text(path)
    else:
        rows = _read_jsonl(path)
    primaries = {str(row["primary"]) for _, row in rows if isinstance(row.get("primary"), str)}
    return _table(rows, str(path), primaries.pop() if len(primaries) == 1 else None)


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


FLEUR_FIELDS = {"image file": "image", "caption": "caption", "our score": "score", "model score": "raw_score"}


def _is_fleur_text(path: Path) -> bool:
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    return "image file :" in head and "our score :" in head


def _read_fleur_text(path: Path) -> list[tuple[str, dict]]:
    """FLEUR's result text: an ``image file :`` line, then per caption ``caption :``, ``model score :`` and
    ``our score :`` lines (Pascal-50S files add ``label :`` and two captions per image). One row per caption,
    keyed by (image, caption); a number that does not parse is a failed item (null), and such ``our score``
    lines are counted in one warning (``mmjudge: note: …`` from the CLI)."""
    rows: list[tuple[str, dict]] = []
    image, row, where = None, None, ""
    unreadable: list[tuple[int, str]] = []  # (line, text) of 'our score :' lines that hold no number
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            key, sep, value = line.rstrip("\n").partition(" : ")
            field = FLEUR_FIELDS.get(key.strip()) if sep else None
            if field == "image":
                image = value.strip()
            elif field == "caption":
                if image is None:
                    raise ValueError(f"{path}:{n}: a caption before any 'image file :' line.")
                row, where = {"image": image, "caption": value.strip()}, f"{path}:{n}"
                rows.append((where, row))
            elif field in ("score", "raw_score"):
                if row is None:
                    raise ValueError(f"{path}:{n}: {key.strip()!r} before any 'caption :' line.")
                try:
                    row[field] = float(value)
                except ValueError:
                    row[field] = None
                    if field == "score":
                        unreadable.append((n, value.strip()))
    missing = [w for w, r in rows if "score" not in r]
    if missing:
        raise ValueError(f"{missing[0]}: a caption without an 'our score :' line (FLEUR's result format).")
    if unreadable:  # a failed item each, as the format means; but said, not silent
        import warnings

        line, text = unreadable[0]
        warnings.warn(
            f"{path}: {len(unreadable)} of {len(rows)} 'our score :' lines hold no number (first: line {line}, "
            f"{text[:40]!r}); those captions count as failed items (no score).",
            stacklevel=3,
        )
    return rows


def _score_column(name: str) -> bool:
    return name not in ("id", *IMAGE_KEYS, *TEXT_KEYS) and not name.endswith(STATUS_SUFFIX)


def _read_csv(path: Path) -> list[tuple[str, dict]]:
    with open(path, encoding="utf-8-sig", newline="") as f:  # -sig: a byte-order mark (Excel) is not a column name
        reader = csv.DictReader(f)
        raw = [(f"{path}:{n}", dict(row)) for n, row in enumerate(reader, 2)]
        fields = reader.fieldnames or []
    # A column is a score column when any of its cells is a finite number; then every cell must be a number
    # or empty / NaN (a failed item).
    numeric = set()
    for name in filter(_score_column, fields):
        for _, row in raw:
            try:
                if math.isfinite(float(row.get(name) or "x")):
                    numeric.add(name)
                    break
            except ValueError:
                pass
    rows = []
    for where, row in raw:
        # Ids and texts as they were before the CSV writer neutralised spreadsheet formulas ('=x → =x).
        parsed: dict[str, Any] = {
            k: from_spreadsheet_safe(row.get(k))
            for k in ("id", *IMAGE_KEYS, *TEXT_KEYS)
            if row.get(k) not in (None, "")
        }
        for name in numeric:
            cell = (row.get(name) or "").strip()
            if cell.lower() in FAILED_CELLS:
                parsed[name] = None
                continue
            try:
                parsed[name] = float(cell)
            except ValueError:
                raise ValueError(
                    f"{where} (id {row.get('id')!r}): column {name!r} holds {cell!r}, not a number."
                ) from None
        rows.append((where, parsed))
    return rows


def _first(row: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    return next((str(row[k]) for k in keys if isinstance(row.get(k), str) and row[k].strip()), None)


def _table(rows: list[tuple[str, dict]], source: str, primary: str | None = None) -> ScoreTable:
    if not rows:
        raise ValueError(f"{source}: no rows.")
    keys: list[str] = []
    for _, row in rows:
        for key, value in row.items():
            if key not in keys and _score_column(key) and key != "primary" and _number(value) is not None:
                keys.append(key)
    if not keys:
        raise ValueError(f"{source}: no numeric score column (expected e.g. 'score').")
    by_content = all(row.get("id") in (None, "") for _, row in rows)
    out = ScoreTable(primary=primary, content_rows=[] if by_content else None, source=source)
    for where, row in rows:
        item_id = row.get("id")
        content = (_first(row, IMAGE_KEYS), _first(row, TEXT_KEYS))
        if by_content and None in content:
            raise ValueError(
                f"{where}: the row has no 'id' (nor an image and a text to join by content: "
                f"{IMAGE_KEYS[0]!r} and {TEXT_KEYS[0]!r} or {TEXT_KEYS[1]!r})."
            )
        if not by_content and item_id in (None, ""):
            raise ValueError(f"{where}: the row has no 'id' (the other rows of the file have one).")
        shown = f"id {str(item_id)!r}" if not by_content else f"image {content[0]!r}"
        values = {}
        for key in keys:
            if key not in row:
                raise ValueError(f"{where} ({shown}): missing score {key!r}.")
            value = row[key]
            number = math.nan if value is None else _number(value)
            if number is None:
                raise ValueError(f"{where} ({shown}): score {key!r} is {value!r}, not a number.")
            values[key] = _not_inf(number, f"{where} ({shown}) {key!r}")
        if by_content:
            out.content_rows.append((content_key(*content), values, where))
            continue
        item_id = str(item_id)
        if item_id in out:
            raise ValueError(f"{where}: duplicate id {item_id!r}.")
        out[item_id] = values
    return out


def scores_from_columns(ids: list[str], columns: Mapping[str, list], source: str = "metric") -> Scores:
    """Scores from per-sample lists (a metric's ``compute`` output); non-numeric lists are ignored, and a
    ``None`` / NaN among numbers is a failed item."""
    keys = [
        k
        for k, v in columns.items()
        if isinstance(v, list)
        and len(v) == len(ids)
        and all(x is None or _number(x) is not None for x in v)
        and any(_number(x) is not None for x in v)
    ]
    if not keys:
        raise ValueError(f"{source}: the metric returned no per-sample numeric scores.")
    out: Scores = {}
    for n, item_id in enumerate(ids):
        out[item_id] = {
            k: math.nan if columns[k][n] is None else _not_inf(float(columns[k][n]), f"{source} (id {item_id!r}) {k!r}")
            for k in keys
        }
    return out


def check_scores(scores: Scores, ids: Iterable[str], name: str) -> Scores:
    """``scores`` restricted to nothing else than the benchmark's ``ids``: every id scored (NaN, a failed
    item, counts as scored), no unknown id, no inf.

    Raises:
        ValueError: naming (up to five of) the missing or unknown ids.
    """
    missing, unknown = id_differences(scores, ids)
    if missing:
        raise ValueError(f"{name}: no score for {len(missing)} id(s) of the benchmark: {shown_ids(missing)}.")
    if unknown:
        raise ValueError(f"{name}: {len(unknown)} id(s) are not in the benchmark: {shown_ids(unknown)}.")
    for item_id, values in scores.items():
        for key, value in values.items():
            _not_inf(float(value), f"{name} (id {item_id!r}) {key!r}")
    return scores


# ------------------------------------------------------------------------------ joining by content
def content_key(image: Any, text: Any) -> tuple[str, str]:
    """The key a score row and a benchmark item are joined on: the image's file name (no folders) and the
    text with runs of whitespace made one space, both case-folded.

    >>> content_key("Flickr8k_Dataset/1056338697_4f7d7ce270.jpg", "A young  child .")
    ('1056338697_4f7d7ce270.jpg', 'a young child .')
    >>> content_key("C:\\\\imgs\\\\1056338697_4F7D7CE270.JPG", "a young child .")
    ('1056338697_4f7d7ce270.jpg', 'a young child .')
    """
    name = PurePosixPath(str(image).replace("\\", "/")).name
    return name.casefold(), " ".join(str(text).split()).casefold()


def item_key(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """An item's :func:`content_key`, from its ``image_path`` (or an ``image`` given as a path) and ``text``."""
    image = item.get("image_path") or (item.get("image") if isinstance(item.get("image"), (str, os.PathLike)) else None)
    if not image or not isinstance(item.get("text"), str):
        return None
    return content_key(image, item["text"])


def join_scores(scores: Scores, judgments: Any, name: str) -> Scores:
    """``scores`` keyed by the benchmark's ids: checked (:func:`check_scores`) when keyed by id, joined by
    content when the file had image and text instead (the rule of ``docs/metaeval.md``):

    - rows and items meet on :func:`content_key`;
    - a key with one row gives its scores to every item with that key (a caption scored once for an image
      that several pairs share); as many rows as items are matched in order (file order, benchmark
      order); otherwise the rows must agree, or the key is ambiguous (an error);
    - every item must be joined (a missing score is an error, as for ids); rows matching no item are
      counted in ``join["unjoined_rows"]``, not an error (published files often score more than the
      benchmark keeps).

    The returned :class:`ScoreTable` carries ``join``: ``by`` (``"id"`` or ``"content"``), ``items``,
    ``joined`` and ``unjoined_rows``.
    """
    ids = judgments.ids()
    rows = getattr(scores, "content_rows", None)
    if rows is None:
        check_scores(scores, ids, name)
        table = scores if isinstance(scores, ScoreTable) else ScoreTable(scores)
        if table.join is None:  # a table joined by content earlier keeps saying so
            table.join = {"by": "id", "items": len(ids), "joined": len(ids), "unjoined_rows": 0}
        return table
    by_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    unkeyed = []
    for item in judgments.items:
        key = item_key(item)
        if key is None:
            unkeyed.append(item["id"])
        else:
            by_key[key].append(item["id"])
    if unkeyed:
        raise ValueError(
            f"{name}: the score file has no ids, and {len(unkeyed)} item(s) of {judgments.name} have no "
            f"image name and text to join on: {shown_ids(unkeyed)}; give the file an 'id' column."
        )
    file_rows: dict[tuple[str, str], list[tuple[dict, str]]] = defaultdict(list)
    for key, values, where in rows:
        file_rows[key].append((values, where))
    out = ScoreTable(primary=scores.primary, source=scores.source)
    for key, item_ids in by_key.items():
        found = file_rows.get(key)
        if not found:
            continue
        if len(found) == 1 or all(_same(values, found[0][0]) for values, _ in found):
            for item_id in item_ids:
                out[item_id] = dict(found[0][0])
        elif len(found) == len(item_ids):
            for item_id, (values, _where) in zip(item_ids, found):
                out[item_id] = dict(values)
        else:
            raise ValueError(
                f"{name}: {found[0][1]}: {len(found)} rows with different scores for image {key[0]!r} and "
                f"text {key[1][:40]!r}, but {len(item_ids)} item(s) of {judgments.name} have them; "
                "which score belongs to which item is ambiguous: give the file an 'id' column."
            )
    missing = [i for i in ids if i not in out]
    if missing:
        raise ValueError(
            f"{name}: joined by (image, text), {len(ids) - len(missing):,} of {len(ids):,} items of "
            f"{judgments.name} found a row, but {len(missing):,} did not: {shown_ids(missing)} (texts "
            "are compared case-folded with whitespace squashed, images by file name)."
        )
    unjoined = sum(len(found) for key, found in file_rows.items() if key not in by_key)
    out.join = {"by": "content", "items": len(ids), "joined": len(ids), "unjoined_rows": unjoined}
    check_scores(out, ids, name)
    return out


def _same(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Equal score dicts, NaN equal to NaN (two failed rows agree)."""
    return a.keys() == b.keys() and all(x == y or (is_failed(x) and is_failed(y)) for x, y in ((a[k], b[k]) for k in a))


def join_line(name: str, scores: Scores) -> str | None:
    """The line the CLI prints for a content join: how many items joined, how many file rows did not."""
    join = getattr(scores, "join", None)
    if not join or join["by"] != "content":
        return None
    return (
        f"{name}: joined by (image, text): {join['joined']:,} of {join['items']:,} items; "
        f"{join['unjoined_rows']:,} row(s) of the file matched no item"
    )


def score_key(scores: Scores, name: str, criterion: str | None = None) -> str:
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
