"""Items read lazily from what people have: JSON Lines, CSV, Parquet, or a ``datasets`` dataset (a local
file or folder, a folder written by ``save_to_disk``, or a Hub id) — each process reading only its share.

An :class:`ItemSource` yields item dicts (``text``, ``image``, ``question``, ``box``, ``references``,
``task``, ``id`` … after the optional column mapping) one at a time, each with ``_source`` (where it is,
for messages: ``items.jsonl:7``) and ``_i`` (its position in the whole input, which orders the merged
output). An unreadable line becomes an item with ``_error`` (its reason), so a long run records it and
goes on. Under ``torchrun`` each process opens its own ``shard=(rank, world)``: a contiguous block of
the input, found without parsing the others' — JSON Lines and CSV by byte range (aligned to line starts;
only the newline bytes before the block are counted, to number lines), Parquet by row groups (from the
file's metadata), ``datasets`` by contiguous shard.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "items.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write("\\n".join(json.dumps({"id": f"x{k}", "text": f"caption {k}"}) for k in range(5)) + "\\n")
>>> [(it["id"], it["_source"].split("/")[-1]) for it in open_source(path, shard=(1, 2))]
[('x3', 'items.jsonl:4'), ('x4', 'items.jsonl:5')]
>>> src = open_source(path, shard=(0, 2)); src.total, [it["_i"] for it in src]
(3, [0, 1, 2])
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.images import parse_box
from mmjudge.jsonl import JsonLineError, decode
from mmjudge.paths import link_problem, special_file_kind

FORMATS = ("jsonl", "csv", "parquet", "datasets")
ITEM_KEYS = ("id", "text", "image", "question", "box", "references", "task")
_BLOCK = 1 << 20


@dataclass
class ItemSource:
    """One process's share of an input.

    Attributes:
        name: what the input is called in messages.
        kind: ``jsonl``, ``csv``, ``parquet`` or ``datasets``.
        total: items in this share (``None`` when it cannot be known cheaply).
        first: the input position of this share's first item.
        read: items materialised so far (tests check that a process read only its share).
    """

    name: str
    kind: str
    total: int | None
    first: int
    _rows: Callable[[int], Iterator[dict]] = field(repr=False)
    read: int = 0

    def __iter__(self) -> Iterator[dict]:
        return self.items()

    def items(self, skip: int = 0) -> Iterator[dict]:
        """The share's items, the first ``skip`` passed over without being built (resuming a run)."""
        for item in self._rows(skip):
            self.read += 1
            yield item


def parse_columns(text: str | None) -> dict[str, str]:
    """``--columns text=caption,image=file_name`` → ``{"text": "caption", "image": "file_name"}``.

    >>> parse_columns("text=caption, image=file_name")
    {'text': 'caption', 'image': 'file_name'}
    >>> parse_columns("caption")
    Traceback (most recent call last):
    ValueError: --columns: expected ITEM_KEY=COLUMN pairs such as text=caption,image=file_name, but got 'caption'.
    """
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, column = part.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not key or not column:
            raise ValueError(
                "--columns: expected ITEM_KEY=COLUMN pairs such as text=caption,image=file_name, but got "
                f"{part.strip()!r}."
            )
        if key not in ITEM_KEYS:
            raise ValueError(f"--columns: {key!r} is not an item key; the keys are {', '.join(ITEM_KEYS)}.")
        out[key] = column
    return out


def open_source(
    spec: Any,
    *,
    kind: str | None = None,
    split: str | None = None,
    columns: Mapping[str, str] | None = None,
    shard: tuple[int, int] = (0, 1),
    base_dir: str | None = None,
    option: str = "--input",
) -> ItemSource:
    """The items of ``spec``: a path (``.jsonl``, ``.csv``, ``.parquet``, a folder of data files or one
    written by ``save_to_disk``), a Hub dataset id, or a ``datasets.Dataset``.

    Args:
        kind: force the format (default: from the suffix; folders and Hub ids are ``datasets``).
        split: the split of a dataset with several.
        columns: item key → the input's column, for other schemas (``{"text": "caption"}``).
        shard: ``(rank, world)``: this process's share.
        base_dir: where relative image paths are resolved (default: the input file's folder).
        option: how messages name the input (the command's flag: ``--input``, ``--a`` …).
    """
    rank, world = shard
    if not (0 <= rank < world):
        raise ValueError(f"Expected shard (rank, world) with 0 <= rank < world, but got {shard}.")
    mapping = dict(columns or {})
    if not isinstance(spec, (str, os.PathLike)):
        return _dataset_source(spec, "dataset", mapping, rank, world)
    path = Path(spec).expanduser()
    problem = link_problem(path)
    if problem is not None:  # else a loop reads as "no such file", or a name looked up on the Hub
        raise ValueError(f"{option} {spec}: {problem}; give the file it should lead to.")
    special = special_file_kind(path)
    if special is not None:  # checked before anything opens it: opening a FIFO waits for a writer
        raise ValueError(
            f"{option} {spec}: is {special}, not a regular file; an input is read more than once (counted, split "
            "between processes, skipped on resume), so save it to a file first (e.g. cat PIPE > items.jsonl)."
        )
    kind = kind or _kind_of(path)
    if kind not in FORMATS:
        raise ValueError(f"Expected the input format to be one of {FORMATS}, but got {kind!r}.")
    if kind != "datasets":
        if path.is_dir():
            raise ValueError(
                f"{option} {spec}: is a folder; give a .jsonl, .csv or .parquet file, or a dataset folder with "
                "--input-format datasets."
            )
        if not path.is_file():
            raise FileNotFoundError(f"{option} {spec}: no such file.")
    folder = Path(base_dir) if base_dir else path.parent
    if kind == "jsonl":
        return _jsonl_source(path, mapping, rank, world, folder)
    if kind == "csv":
        return _csv_source(path, mapping, rank, world, folder)
    if kind == "parquet":
        return _parquet_source(path, mapping, rank, world, folder)
    return _dataset_source(_load_dataset(str(spec), split, option), str(spec), mapping, rank, world)


def _kind_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".parquet"):
        return suffix[1:]
    if path.is_dir() or not path.exists():
        return "datasets"  # a data folder, a save_to_disk folder, or a Hub id
    return "jsonl"


# ------------------------------------------------------------------------------------------ items
def _item(row: Mapping[str, Any], mapping: Mapping[str, str], where: str, index: int, folder: Path) -> dict:
    """An item dict from an input row: mapped columns, a relative image path resolved, ``_source``/``_i``."""
    item = dict(row)
    for key, column in mapping.items():
        if column not in row:
            return {
                "_source": where,
                "_i": index,
                "_error": f"no column {column!r} (mapped to {key!r}); it has {sorted(row)}.",
            }
        item[key] = row[column]
    image = item.get("image")
    if isinstance(image, str) and image and not os.path.isabs(image) and "://" not in image:
        item["image"] = str(folder / image)
    item["_source"], item["_i"] = where, index
    return item


def _byte_range(path: Path, rank: int, world: int) -> tuple[int, int]:
    """``[begin, end)`` of this rank's lines: the lines whose first byte lies in its ``world``-th of the
    file (the first line a range would cut in two belongs to the range where it starts)."""
    size = path.stat().st_size
    starts = [_line_start(path, size * k // world) for k in range(world)] + [size]
    return starts[rank], starts[rank + 1]


def _line_start(path: Path, offset: int) -> int:
    """The start of the first line at or after ``offset``."""
    if offset == 0:
        return 0
    with open(path, "rb") as f:
        f.seek(offset - 1)
        if f.read(1) == b"\n":
            return offset
        f.readline()
        return f.tell()


def _count_items_before(path: Path, end: int, skip_lines: int = 0) -> tuple[int, int]:
    """``(lines, non-blank lines)`` in the first ``end`` bytes, counting bytes only (nothing is parsed)."""
    lines = items = 0
    carry = b""
    with open(path, "rb") as f:
        remaining = end
        while remaining > 0:
            block = carry + f.read(min(_BLOCK, remaining))
            if len(block) == len(carry):
                break
            remaining -= len(block) - len(carry)
            pieces = block.split(b"\n")
            carry = pieces.pop()
            lines += len(pieces)
            items += sum(1 for p in pieces if p.strip())
    return lines, max(items - skip_lines, 0)


def _lines(path: Path, begin: int, end: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        f.seek(begin)
        while f.tell() < end:
            line = f.readline()
            if not line:
                return
            yield line


def _numbered(path: Path, begin: int, end: int, line0: int, first: int, skip: int) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, input position, line)`` of the non-blank lines in ``[begin, end)``, the first ``skip``
    of them passed over (counted, not parsed)."""
    number, index = line0, first
    for raw in _lines(path, begin, end):
        number += 1
        if not raw.strip():
            continue
        index += 1
        if index - first > skip:
            yield number, index - 1, raw


def _jsonl_source(path: Path, mapping: Mapping[str, str], rank: int, world: int, folder: Path) -> ItemSource:
    begin, end = _byte_range(path, rank, world)
    line0, first = _count_items_before(path, begin)
    total = sum(1 for line in _lines(path, begin, end) if line.strip())

    def rows(skip: int) -> Iterator[dict]:
        for number, index, raw in _numbered(path, begin, end, line0, first, skip):
            where = f"{path}:{number}"
            try:
                text = decode(raw[3:] if number == 1 and raw.startswith(b"\xef\xbb\xbf") else raw)
                value = json.loads(text)
            except JsonLineError as err:
                yield {"_source": where, "_i": index, "_error": err.reason}
                continue
            except json.JSONDecodeError as err:
                yield {"_source": where, "_i": index, "_error": f"not valid JSON ({err.msg} at column {err.colno})."}
                continue
            if not isinstance(value, dict):
                yield {
                    "_source": where,
                    "_i": index,
                    "_error": 'expected a JSON object like {"text": ..., "image": ...}, '
                    f"but got {type(value).__name__}.",
                }
                continue
            yield _item(value, mapping, where, index, folder)

    return ItemSource(str(path), "jsonl", total, first, rows)


def _csv_row(row: dict) -> dict:
    """A CSV row as an item: empty cells dropped, ``references`` split on ``|``, ``box`` parsed."""
    item = {k.strip(): v for k, v in row.items() if k is not None and v not in (None, "")}
    if "references" in item:
        item["references"] = [r for r in item["references"].split("|") if r]
    if "box" in item:
        try:
            item["box"] = parse_box(item["box"], "box", "10,20,100,50")
        except ValueError as err:
            item["_error"] = str(err)
    return item


def _csv_source(path: Path, mapping: Mapping[str, str], rank: int, world: int, folder: Path) -> ItemSource:
    with open(path, "rb") as f:
        header_bytes = f.readline()
    header = next(csv.reader([decode(header_bytes.lstrip(b"\xef\xbb\xbf"))]))
    begin, end = _byte_range(path, rank, world)
    begin = max(begin, len(header_bytes))
    line0, first = _count_items_before(path, begin)
    first = max(first - 1, 0)  # the header is not an item
    if world == 1:
        # One process reads the whole file through the csv module, so a quoted field may hold line breaks.
        def rows(skip: int) -> Iterator[dict]:
            with open(path, encoding="utf-8-sig", newline="") as f:
                reader = csv.DictReader(f)
                for index, row in enumerate(reader):
                    if index >= skip:
                        where = f"{path}:{reader.line_num}"
                        yield (
                            _item(_csv_row(row), mapping, where, index, folder)
                            if None not in row
                            else {
                                "_source": where,
                                "_i": index,
                                "_error": f"the row has more cells than the header's {len(header)}.",
                            }
                        )

        with open(path, encoding="utf-8-sig", newline="") as f:
            total = sum(1 for _ in csv.DictReader(f))
        return ItemSource(str(path), "csv", total, 0, rows)

    total = sum(1 for line in _lines(path, begin, end) if line.strip())

    def shard_rows(skip: int) -> Iterator[dict]:
        for number, index, raw in _numbered(path, begin, end, line0, first, skip):
            where = f"{path}:{number}"
            cells = next(csv.reader([decode(raw).rstrip("\r\n")]), [])
            if len(cells) != len(header) or raw.count(b'"') % 2:
                yield {
                    "_source": where,
                    "_i": index,
                    "_error": "the row does not split into the header's "
                    f"{len(header)} cells on its own line; a CSV whose fields hold line breaks can only be read by "
                    "one process (or convert it to JSON Lines or Parquet).",
                }
                continue
            yield _item(_csv_row(dict(zip(header, cells))), mapping, where, index, folder)

    return ItemSource(str(path), "csv", total, first, shard_rows)


def _parquet_source(path: Path, mapping: Mapping[str, str], rank: int, world: int, folder: Path) -> ItemSource:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    total_rows = sum(sizes)
    # Contiguous row groups per process, cut where the running row count crosses each process's share.
    cuts = [0]
    running = 0
    for g, n in enumerate(sizes):
        running += n
        while len(cuts) < world and running >= total_rows * len(cuts) / world:
            cuts.append(g + 1)
    while len(cuts) <= world:
        cuts.append(len(sizes))
    groups = list(range(cuts[rank], cuts[rank + 1]))
    first = sum(sizes[: cuts[rank]])
    total = sum(sizes[g] for g in groups)

    def rows(skip: int) -> Iterator[dict]:
        index = first
        handle = pq.ParquetFile(path)
        for group in groups:
            if skip >= sizes[group]:  # a whole row group already done: not even read
                skip -= sizes[group]
                index += sizes[group]
                continue
            for batch in handle.iter_batches(row_groups=[group], batch_size=256):
                for row in batch.to_pylist():
                    index += 1
                    if skip:
                        skip -= 1
                        continue
                    yield _item(row, mapping, f"{path} row {index - 1}", index - 1, folder)

    return ItemSource(str(path), "parquet", total, first, rows)


def _load_dataset(spec: str, split: str | None, option: str = "--input") -> Any:
    import datasets

    folder = Path(spec).expanduser()
    try:
        if (folder / "dataset_info.json").is_file() or (folder / "dataset_dict.json").is_file():
            data = datasets.load_from_disk(str(folder))
        else:
            data = datasets.load_dataset(str(folder) if folder.exists() else spec, split=split)
    except datasets.exceptions.DatasetGenerationError as err:
        # A folder of data files is read as ONE table: files with other columns fail deep in datasets' casting.
        reason = _column_differences(folder) if folder.is_dir() else None
        if reason is None:
            cause = " ".join(str(err.__cause__ or err).split())[:300]
            reason = f"datasets cannot read it as one table ({cause}); give one .jsonl, .csv or .parquet file."
        raise ValueError(f"{option} {spec}: {reason}") from None
    except (FileNotFoundError, ValueError, ConnectionError, datasets.exceptions.DatasetNotFoundError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        if folder.is_dir():
            raise ValueError(
                f"{option} {spec}: is a folder, but not a data set datasets can open ({reason}); give a .jsonl, "
                ".csv or .parquet file, or a folder of such files."
            ) from None
        raise ValueError(f"{option} {spec}: no such file, and no data set of that name ({reason}).") from None
    if isinstance(data, datasets.DatasetDict):
        if split is None:
            if len(data) != 1:
                raise ValueError(f"{option} {spec} has the splits {', '.join(data)}: pass --split.")
            split = next(iter(data))
        if split not in data:
            raise ValueError(f"{option} {spec} has no split {split!r}; it has {', '.join(data)}.")
        data = data[split]
    return data


_DATA_SUFFIXES = (".jsonl", ".json", ".ndjson", ".csv", ".tsv", ".parquet")


def _columns_of(path: Path) -> list[str] | None:
    """The columns of one data file, from its first line, header or schema (``None``: unreadable)."""
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        with open(path, encoding="utf-8-sig", newline="") as f:
            if path.suffix in (".csv", ".tsv"):
                return next(csv.reader(f, delimiter="\t" if path.suffix == ".tsv" else ","), None)
            first = next((line for line in f if line.strip()), "")
        row = json.loads(first)
        return sorted(row) if isinstance(row, dict) else None
    except (OSError, ValueError, StopIteration, ImportError):
        return None


def _column_differences(folder: Path) -> str | None:
    """One sentence naming the data files of ``folder`` whose columns differ, and how; ``None`` when they
    all agree (or there are fewer than two).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "one.jsonl").write_text('{"id": "a", "text": "x"}\\n')
    >>> _ = (d / "two.jsonl").write_text('{"id": "b", "caption": "y", "extra": 1}\\n')
    >>> print(_column_differences(d))
    its data files have different columns (a folder is read as one table: every file needs the same ones): two.jsonl
    has caption, extra, which one.jsonl lacks, and lacks text; give one file as --input, or give every file the
    same columns.
    """
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in _DATA_SUFFIXES and p.is_file())
    columns = {p: _columns_of(p) for p in files}
    known = [(p, c) for p, c in columns.items() if c is not None]
    if len(known) < 2:
        return None
    first, base = known[0]
    differ = []
    for path, cols in known[1:]:
        added, missing = [c for c in cols if c not in base], [c for c in base if c not in cols]
        if added or missing:
            has = f"has {_some(added)}, which {first.relative_to(folder)} lacks" if added else ""
            lacks = f"lacks {_some(missing)}" if missing else ""
            differ.append(f"{path.relative_to(folder)} {', and '.join(filter(None, (has, lacks)))}")
    if not differ:
        return None
    shown = "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more files differ" if len(differ) > 3 else "")
    return (
        "its data files have different columns (a folder is read as one table: every file needs the same ones): "
        f"{shown}; give one file as --input, or give every file the same columns."
    )


def _some(names: list[str], shown: int = 5) -> str:
    """Column names for a message: the first ``shown``, and how many more (a scores file has dozens).

    >>> _some(["a", "b"]), _some([f"c{k}" for k in range(8)])
    ('a, b', 'c0, c1, c2, c3, c4 and 3 more')
    """
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _dataset_source(data: Any, name: str, mapping: Mapping[str, str], rank: int, world: int) -> ItemSource:
    n = len(data)
    size, extra = divmod(n, world)  # contiguous shards, as datasets' Dataset.shard(contiguous=True) cuts them
    first = size * rank + min(rank, extra)
    total = size + (1 if rank < extra else 0)

    def rows(skip: int) -> Iterator[dict]:
        for index in range(first + skip, first + total):
            yield _item(data[index], mapping, f"{name} row {index}", index, Path("."))

    return ItemSource(name, "datasets", total, first, rows)


def read_items(path: str) -> list[dict]:
    """Every item of a small input file (one process), unreadable lines as one ``ValueError`` naming the
    line: for front doors that need all items at once (the leaderboard's uploads are line-checked too)."""
    out = []
    for item in open_source(path):
        if "_error" in item:
            raise ValueError(f"{item['_source']}: {item['_error']}")
        out.append(item)
    return out
