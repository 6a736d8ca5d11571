"""Result rows written as they finish, a run that resumes where it was killed, and one output in input order.

Each process appends its rows to its own part file, ``<output>.part-<rank>-of-<world>.jsonl`` (one JSON
object per line, flushed row by row, with the row's input position ``_i``), so a run killed at any moment
loses at most the row being written. Run again, the part is opened, a cut-off last line dropped, and the
process's first rows — the ones its part holds — are skipped: rows are written in input order, so they
are a prefix of its share (so resume with the same input and the same number of processes; the rows'
signature is checked against the run's, another process count is refused). When every process is
done, the main one merges the parts in input order into ``<output>`` (JSON Lines, CSV or Parquet, written
to a temporary file and renamed, so ``<output>`` only ever appears complete) and removes them. An output
that exists without parts is complete: running again does nothing.

>>> import tempfile, os
>>> out = os.path.join(tempfile.mkdtemp(), "scores.jsonl")
>>> part = PartFile(out, rank=0, world=1, signature="sig")
>>> part.done
0
>>> part.write({"id": "a", "score": 1.0, "signature": "sig"}, 0); part.write({"id": "b", "score": None, "signature": "sig"}, 1)
>>> part.close(); merge_parts(out, world=1)
2
>>> open(out).read().splitlines()[1]
'{"id": "b", "score": null, "signature": "sig"}'
"""

from __future__ import annotations

import csv
import heapq
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmjudge.report import json_safe, spreadsheet_safe
from mmjudge.stream.seen_ids import SeenIds

OUTPUT_FORMATS = ("jsonl", "csv", "parquet")


def output_format(path: str, fmt: str | None = None) -> str:
    """The format of an output path: ``fmt`` when given, else from the suffix (``.csv``, ``.parquet``,
    anything else JSON Lines)."""
    if fmt is not None:
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(f"Expected the output format to be one of {OUTPUT_FORMATS}, but got {fmt!r}.")
        return fmt
    suffix = Path(path).suffix.lower()
    return {".csv": "csv", ".parquet": "parquet"}.get(suffix, "jsonl")


def part_path(output: str, rank: int, world: int) -> Path:
    return Path(f"{output}.part-{rank}-of-{world}.jsonl")


def existing_parts(output: str) -> list[Path]:
    folder, name = Path(output).parent, Path(output).name
    return sorted(folder.glob(f"{name}.part-*-of-*.jsonl")) if folder.is_dir() else []


def remove_outputs(output: str) -> None:
    """``--overwrite``: the output and every part of an earlier run."""
    for path in [Path(output), *existing_parts(output)]:
        if path.exists():
            path.unlink()


class PartFile:
    """One process's rows of a run (see the module). ``done`` is how many rows it already holds."""

    def __init__(self, output: str, rank: int, world: int, signature: str):
        self.path = part_path(output, rank, world)
        others = [p for p in existing_parts(output) if not p.name.endswith(f"-of-{world}.jsonl")]
        if others:
            raise ValueError(
                f"{output}: parts of a run with another number of processes are there ({others[0].name}); "
                f"resume with that number of processes, or pass --overwrite to start again."
            )
        self.done = self._recover(signature)
        self._file = open(self.path, "a", encoding="utf-8")

    def _recover(self, signature: str) -> int:
        """Rows already in the part (a cut-off last line removed), read line by line so resuming holds one row
        at a time; their ids go into :attr:`seen_ids`. The signature of the rows there must be this run's."""
        self.seen_ids = SeenIds()
        if not self.path.exists():
            return 0
        _drop_cut_off_line(self.path)
        count = 0
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                if count == 0 and row.get("signature") != signature:
                    raise ValueError(
                        f"{self.path}: it holds rows of another run (signature {row.get('signature')!r}, "
                        f"this run's is {signature!r}); pass --overwrite to start again, or another --output."
                    )
                self.seen_ids.first_position(str(row.get("id")), int(row.get("_i", count)))
                count += 1
        return count

    def write(self, row: dict, index: int) -> None:
        """Append one row (``index``: its input position) and hand it to the operating system."""
        self._file.write(json.dumps({**json_safe(row), "_i": index}, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _drop_cut_off_line(path: Path, block: int = 1 << 16) -> None:
    """Truncate ``path`` after its last newline (a run killed while writing a row leaves a partial line),
    reading backwards from the end, one block at a time."""
    with open(path, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            start = max(0, position - block)
            f.seek(start)
            found = f.read(position - start).rfind(b"\n")
            if found >= 0:
                keep = start + found + 1
                break
            position = start
        else:
            keep = 0
        if keep < end:
            f.truncate(keep)


def _part_rows(path: Path) -> Iterator[tuple[int, dict]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                yield row.pop("_i"), row


_INDEX_SUFFIX = re.compile(r'(?:, |\{)"_i": (\d+)\}$')


def _part_lines(path: Path) -> Iterator[tuple[int, str]]:
    """A part's JSON lines without their ``"_i"`` (written last by :meth:`PartFile.write`), with it."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            found = _INDEX_SUFFIX.search(line)
            if found is None:  # not as written here (edited by hand?): parse it
                row = json.loads(line)
                index = row.pop("_i")
                yield index, json.dumps(row, ensure_ascii=False)
            else:
                start = found.start()
                yield int(found.group(1)), (line[:start] + "}") if line[start] == "," else "{}"


def _write_lines(path: Path, lines: Iterator[str]) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
            count += 1
    return count


def merge_parts(output: str, world: int, fmt: str | None = None) -> int:
    """Merge every process's part into ``output`` in input order (then remove the parts); returns the rows
    written. Memory holds one row per part at a time (a k-way merge of files each in input order)."""
    parts = [part_path(output, r, world) for r in range(world)]
    parts = [p for p in parts if p.exists()]
    fmt = output_format(output, fmt)
    tmp = Path(f"{output}.tmp")
    merged = lambda: heapq.merge(*(_part_rows(p) for p in parts), key=lambda pair: pair[0])  # noqa: E731
    if fmt == "jsonl":
        # The parts already hold JSON lines: copy each without its "_i" instead of parsing and encoding it again.
        lines = heapq.merge(*(_part_lines(p) for p in parts), key=lambda pair: pair[0])
        count = _write_lines(tmp, (line for _, line in lines))
    elif fmt == "csv":
        columns = _columns(row for p in parts for _, row in _part_rows(p))
        count = _write_csv(tmp, columns, (row for _, row in merged()))
    else:
        count = _write_parquet(tmp, list(parts), (row for _, row in merged()))
    os.replace(tmp, output)
    for p in parts:
        p.unlink()
    return count


def _columns(rows: Iterator[dict]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: lists joined with ``;``, ``None``/NaN empty, text that a spreadsheet would run
    as a formula quoted (:func:`mmjudge.report.spreadsheet_safe`).

    >>> csv_cell(["a", "b"]), csv_cell(None), csv_cell("=1+1"), csv_cell(-0.5)
    ('a;b', '', "'=1+1", -0.5)
    """
    if isinstance(value, list):
        return spreadsheet_safe(";".join(map(str, value)))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return spreadsheet_safe(value)


def _write_csv(path: Path, columns: list[str], rows: Iterator[dict]) -> int:
    count = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_cell(v) for k, v in row.items()})
            count += 1
    return count


def _write_parquet(path: Path, parts: list[Path], rows: Iterator[dict], batch: int = 1000) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # One schema for the whole file, from every row's keys and value types (a column null in the first
    # rows but filled later keeps its type).
    types: dict[str, Any] = {}
    for p in parts:
        for _, row in _part_rows(p):
            for key, value in row.items():
                if types.get(key) is None and value is not None:
                    types[key] = pa.array([value]).type
                else:
                    types.setdefault(key, None)
    schema = pa.schema([(k, t if t is not None else pa.string()) for k, t in types.items()])
    count = 0
    with pq.ParquetWriter(path, schema) as writer:
        buffer: list[dict] = []
        for row in rows:
            buffer.append({k: row.get(k) for k in types})
            if len(buffer) >= batch:
                writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
                count += len(buffer)
                buffer = []
        if buffer or not count:
            writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
            count += len(buffer)
    return count
