"""Result rows written as they finish, a run that resumes where it was killed, and one output in input order.

Each process appends its rows to its own part file, ``<output>.part-<rank>-of-<world>.jsonl`` (one JSON
object per line, flushed row by row, with the row's input position ``_i``), so a run killed at any moment
loses at most the row being written. Run again, the part is opened, a cut-off last line dropped, and the
process's first rows — the ones its part holds — are skipped: rows are written in input order, so they
are a prefix of its share. So a resumed part must have been made from the same input and settings: it
begins with a header line (``{"_run": …}``: the metric's signature, the input's name, the run's options —
task, columns, split, compute options) that must match the run's, and each row records a digest of the item
it was made from (``_h``, :func:`item_digest`), checked against the input's item at that position before the
run goes on. A mismatch is refused in one line naming what differs (another number of processes too); items
after the rows written may change (a strict run stopped at a bad item, the item mended, the run resumed).
When every process is done, the main one merges the parts in input order into ``<output>`` (JSON Lines, CSV
or Parquet, written to a temporary file and renamed, so ``<output>`` only ever appears complete) and removes
them. An output that exists without parts is complete: running again does nothing. A process holds its part
locked (``flock``) from opening it until the merge is done, so a second run into the same output (or its
``--overwrite``) is refused in one line while the first runs. CSV cells go through
:func:`mmjudge.report.csv_cell` (spreadsheet formulas neutralised, RFC 4180 line ends).

>>> import tempfile, os
>>> out = os.path.join(tempfile.mkdtemp(), "scores.jsonl")
>>> part = PartFile(out, rank=0, world=1, signature="sig")
>>> part.done
0
>>> part.write({"id": "a", "score": 1.0, "signature": "sig"}, 0)
>>> part.write({"id": "b", "score": None, "signature": "sig"}, 1)
>>> part.close(); merge_parts(out, world=1)
2
>>> open(out).read().splitlines()[1]
'{"id": "b", "score": null, "signature": "sig"}'
"""

from __future__ import annotations

import csv
import heapq
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmjudge.report import CSV_LINE_END, csv_cell, json_safe
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


def output_files(output: str, rank: int = 0, world: int = 1) -> list[tuple[str, Path, str]]:
    """Every file a run into ``output`` writes, replaces or deletes, as ``(flag, path, how messages name it)``:
    the output, its temporary merge file, this process's part and every part already there (``--overwrite``
    deletes them)."""
    of = f"(of --output {output})"
    parts = dict.fromkeys([part_path(output, rank, world), *existing_parts(output)])
    return [
        ("--output", Path(output), f"--output {output}"),
        ("--output", Path(f"{output}.tmp"), f"the merge file {output}.tmp {of}"),
        *(("--output", p, f"the part file {p} {of}") for p in parts),
    ]


def check_output_spares_inputs(output: str, inputs: list[tuple[str, Any]], rank: int = 0, world: int = 1) -> None:
    """Refuse, in one line and before anything is touched, an ``output`` whose files (:func:`output_files`) would
    overwrite or delete an input: the same path, a symbolic or hard link to it, a part-file name that is the
    input, or an output inside an input folder (whose files are all read: a resumed run would read its own
    rows). ``inputs``: ``(flag, path)`` pairs; values that are not paths (a data set, a Hub id) are skipped.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); s = os.path.join(d, "s.jsonl"); _ = open(s, "w").close()
    >>> check_output_spares_inputs(os.path.join(d, "scores.jsonl"), [("--input", s)])  # another file: fine
    >>> check_output_spares_inputs(s[: -len(".jsonl")], [("--input", s)])  # s is not a part name of s[:-6]
    >>> check_output_spares_inputs(s, [("--input", s)])
    Traceback (most recent call last):
    ValueError: --output .../s.jsonl is the same file as --input .../s.jsonl: writing it would destroy the input;
    give another --output.
    >>> os.rename(s, os.path.join(d, "o.part-0-of-1.jsonl"))
    >>> check_output_spares_inputs(os.path.join(d, "o"), [("--input", os.path.join(d, "o.part-0-of-1.jsonl"))])
    Traceback (most recent call last):
    ValueError: the part file .../o.part-0-of-1.jsonl (of --output .../o) is the same file as --input
    .../o.part-0-of-1.jsonl: writing it would destroy the input; give another --output.
    """
    from mmjudge.paths import check_writes_spare_reads

    reads = [(flag, path) for flag, path in inputs if isinstance(path, (str, os.PathLike)) and os.path.lexists(path)]
    check_writes_spare_reads(output_files(output, rank, world), reads, folders_read_whole=True)


def check_output_file(output: str) -> None:
    """Refuse, in one line, an ``output`` that exists as something other than a regular file: a folder, or a
    FIFO, device or socket (``/dev/null``, ``/dev/stdout``). It would be taken for a complete output ("nothing
    to do"), and ``--overwrite`` would delete it (as root, ``/dev/null`` itself) to rename the rows into its place.

    >>> check_output_file("/dev/null")
    Traceback (most recent call last):
    ValueError: --output /dev/null: is a character device, not a regular file; the rows are written beside it and
    renamed into its place, so give a file's path (to print the rows only, leave --output out).
    """
    from mmjudge.paths import special_file_kind

    kind = "a folder" if os.path.isdir(output) else special_file_kind(output)
    if kind is not None:
        raise ValueError(
            f"--output {output}: is {kind}, not a regular file; the rows are written beside it and renamed into its "
            "place, so give a file's path (to print the rows only, leave --output out)."
        )


def remove_outputs(output: str) -> None:
    """``--overwrite``: the output and every part of an earlier run (refused while a running one writes them)."""
    for part in existing_parts(output):
        with open(part, "a", encoding="utf-8") as f:
            _lock(f, output, part)
    for path in [Path(output), *existing_parts(output)]:
        if path.exists():
            path.unlink()


def _lock(file: Any, output: str, path: Path) -> None:
    """Hold ``file`` (a part, open) for this process alone while it is open, or refuse in one line: two runs into
    one output appended to the same part (every row twice in the merged output) and raced to merge it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: unguarded
        return
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise ValueError(
            f"{output}: another run is writing it now (its part file {path.name} is in use); wait for that run to "
            "end, or give another --output."
        ) from None


RUN_KEY = "_run"  # the key of a part's header line (what its rows were made from); never a row's key


def item_digest(item: dict) -> str:
    """A short digest of an input item as a source yields it (its fields after the column mapping, its reading
    error if any; not where it was read from, so a moved input resumes): what a part records per row, so a
    resumed run can tell that its rows were made from the items now at their positions.

    >>> item_digest({"id": "a", "text": "a dog", "_source": "x.jsonl:1", "_i": 0})
    '73ee22df0cfc7299'
    >>> item_digest({"id": "a", "text": "a dog", "_source": "moved/x.jsonl:1", "_i": 0})
    '73ee22df0cfc7299'
    >>> item_digest({"id": "a", "text": "a cat", "_i": 0}) == item_digest({"id": "a", "text": "a dog", "_i": 0})
    False
    >>> from PIL import Image  # the same bytes in another shape is another picture
    >>> item_digest({"image": Image.new("RGB", (2, 3))}) == item_digest({"image": Image.new("RGB", (3, 2))})
    False
    """
    import hashlib

    fields = {k: v for k, v in item.items() if not k.startswith("_") or k == "_error"}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=_digestible)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _digestible(value: Any) -> str:
    """A value JSON cannot hold, as text that changes with its content: bytes (an embedded image) by their
    hash, a decoded image by :func:`mmjudge.images.image_digest` (its pixels, mode and size: what the judge
    cache keys it by), an array by its dtype, shape and bytes, anything else by its type."""
    import hashlib
    import sys

    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes:" + hashlib.blake2b(bytes(value), digest_size=16).hexdigest()
    pil = sys.modules.get("PIL.Image")  # a PIL image exists only once PIL is imported
    if pil is not None and isinstance(value, pil.Image):
        from mmjudge.images import image_digest

        return "image:" + image_digest(value)
    raw = getattr(value, "tobytes", None)
    if callable(raw):
        shape = f"{getattr(value, 'dtype', '')}{tuple(getattr(value, 'shape', ()))}"
        return f"{type(value).__name__}:{shape}:" + hashlib.blake2b(raw(), digest_size=16).hexdigest()
    return type(value).__name__


class PartFile:
    """One process's rows of a run (see the module). ``done`` is how many rows it already holds.

    ``run``: what this run's rows are made from (``{"input": name, "options": {...}}``), written with the
    signature as the part's first line and checked against the part's own when it resumes one; ``None``
    skips both (the rows' ``signature`` is still checked)."""

    def __init__(self, output: str, rank: int, world: int, signature: str, run: dict | None = None):
        self.path = part_path(output, rank, world)
        others = [p for p in existing_parts(output) if not p.name.endswith(f"-of-{world}.jsonl")]
        if others:
            raise ValueError(
                f"{output}: parts of a run with another number of processes are there ({others[0].name}); "
                f"resume with that number of processes, or pass --overwrite to start again."
            )
        header = None if run is None else json.loads(json.dumps({"signature": signature, **run}, default=str))
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the run, closed by close()
        _lock(self._file, output, self.path)  # before the part is read (or its cut-off line dropped)
        try:
            self.done = self._recover(signature, header)
        except BaseException:
            self._file.close()
            raise
        if header is not None and self.header is None and not self.done:
            self._file.write(json.dumps({RUN_KEY: header}, ensure_ascii=False) + "\n")
            self._file.flush()
            self.header = header

    def _recover(self, signature: str, header: dict | None) -> int:
        """Rows already in the part (a cut-off last line removed), read line by line so resuming holds one row
        at a time; their ids go into :attr:`seen_ids`. What the part was made from must be what this run is
        made from (its header line; in a part without one, the signature of its rows). :attr:`digested`: its
        rows carry their items' digests (an earlier version wrote none)."""
        self.seen_ids = SeenIds()
        self.header: dict | None = None
        self.digested = False
        _drop_cut_off_line(self.path)
        count = 0
        for row in _lines_of(self.path):
            if RUN_KEY in row:
                self.header = row[RUN_KEY]
                if header is not None:
                    check_same_run(self.path, self.header, header)
                continue
            if count == 0 and self.header is None and row.get("signature") != signature:
                raise ValueError(
                    f"{self.path}: it holds rows of another run (signature {row.get('signature')!r}, "
                    f"this run's is {signature!r}); pass --overwrite to start again, or another --output."
                )
            if count == 0:
                self.digested = row.get("_h") is not None
            self.seen_ids.first_position(str(row.get("id")), int(row.get("_i", count)))
            count += 1
        return count

    def digests(self) -> Iterator[tuple[int, str | None]]:
        """``(input position, item digest)`` of each row already in the part, in order (``None``: a row written
        without one, by an earlier version)."""
        for row in _lines_of(self.path):
            if RUN_KEY not in row:
                yield int(row.get("_i", -1)), row.get("_h")

    def write(self, row: dict, index: int, digest: str | None = None) -> None:
        """Append one row (``index``: its input position; ``digest``: its item's :func:`item_digest`) and hand
        it to the operating system."""
        marks = {"_h": digest, "_i": index} if digest is not None else {"_i": index}
        self._file.write(json.dumps({**json_safe(row), **marks}, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _lines_of(path: Path) -> Iterator[dict]:
    """The JSON objects of a part, line by line; a line that is none (the file was changed by something else)
    is one line naming the file and the line, never a bare JSON error or a traceback."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if raw.strip():
                yield _part_line(path, number, raw)


def _part_line(path: Path, number: int, raw: bytes) -> dict:
    """
    >>> _part_line(Path("s.jsonl.part-0-of-1.jsonl"), 2, b"[1, 2]")
    Traceback (most recent call last):
    ValueError: s.jsonl.part-0-of-1.jsonl, line 2: not a row as mmjudge writes them (a JSON list, not an object),
    so the part was changed by something else; pass --overwrite to start again, or give another --output.
    """
    try:
        row = json.loads(raw)
        why = None if isinstance(row, dict) else f"a JSON {type(row).__name__}, not an object"
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        why = " ".join(str(err).split())[:120]
    if why is not None:
        raise ValueError(
            f"{path}, line {number}: not a row as mmjudge writes them ({why}), so the part was changed by something "
            "else; pass --overwrite to start again, or give another --output."
        )
    return row


def check_same_run(path: Path, theirs: dict, mine: dict) -> None:
    """Refuse to resume the part at ``path`` (made as its header ``theirs`` says) with a run made as ``mine``
    says: one line naming each setting that differs, and the fix.

    >>> old = {"signature": "s", "input": "a.jsonl", "options": {"task": "ic", "columns": {"text": "caption"}}}
    >>> new = {"signature": "s", "input": "b.jsonl", "options": {"task": "vqa"}}
    >>> check_same_run(Path("s.jsonl.part-0-of-1.jsonl"), old, new)
    Traceback (most recent call last):
    ValueError: s.jsonl.part-0-of-1.jsonl holds rows made with other settings (from a.jsonl), so this run cannot
    resume it: task 'ic' then, 'vqa' now; columns {'text': 'caption'} then, None now. Run with the settings it began
    with to resume, or pass --overwrite to start again (or give another --output).
    >>> check_same_run(Path("p"), old, {**old, "input": "moved/a.jsonl"})  # the input's items are checked one by one
    """
    differences = []
    if theirs.get("signature") != mine.get("signature"):
        differences.append(f"the metric's signature {theirs.get('signature')!r} then, {mine.get('signature')!r} now")
    old, new = theirs.get("options") or {}, mine.get("options") or {}
    for key in dict.fromkeys([*old, *new]):
        if old.get(key) != new.get(key):
            differences.append(f"{key} {old.get(key)!r} then, {new.get(key)!r} now")
    if differences:
        raise ValueError(
            f"{path} holds rows made with other settings (from {theirs.get('input')}), so this run cannot resume "
            f"it: {'; '.join(differences)}. Run with the settings it began with to resume, or pass --overwrite to "
            "start again (or give another --output)."
        )


def check_same_items(part: PartFile, items: Iterator[dict]) -> Iterator[dict]:
    """``items`` (this process's share, from its start) past the rows ``part`` already holds, once each of
    those rows is known to have been made from the item now at its position (:func:`item_digest`); else one
    line naming the first item that differs, and the fix. Checked before anything is scored."""
    made_from = (part.header or {}).get("input")
    for position, (index, digest) in enumerate(part.digests()):
        item = next(items, None)
        if item is None:
            raise ValueError(
                f"{part.path} holds {part.done} rows but the input has only {position} items in this share: it was "
                f"made from another input ({made_from}). Pass --overwrite to start again, or give another --output."
            )
        if digest is not None and item_digest(item) != digest:
            where = item.get("_source") or f"item {index}"
            raise ValueError(
                f"{part.path} holds rows made from another input: input item {index} ({where}, id "
                f"{item.get('id')!r}) is not the item its row was made from (from {made_from}), so the output would "
                "mix rows of two inputs. Run with the input it began with to resume, or pass --overwrite to start "
                "again (or give another --output)."
            )
    return items


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
                if RUN_KEY not in row:
                    row.pop("_h", None)
                    yield row.pop("_i"), row


_HEADER_START = '{"' + RUN_KEY + '": '
_INDEX_SUFFIX = re.compile(r'(?:, |\{)(?:"_h": "[0-9a-f]+", )?"_i": (\d+)\}$')


def _part_lines(path: Path) -> Iterator[tuple[int, str]]:
    """A part's JSON lines without their ``"_h"`` and ``"_i"`` (written last by :meth:`PartFile.write`), with
    the ``"_i"``."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith(_HEADER_START):
                continue
            found = _INDEX_SUFFIX.search(line)
            if found is None:  # not as written here (edited by hand?): parse it
                row = json.loads(line)
                row.pop("_h", None)
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
    try:
        if fmt == "jsonl":
            # The parts already hold JSON lines: copy each without its "_i" instead of parsing and encoding again.
            lines = heapq.merge(*(_part_lines(p) for p in parts), key=lambda pair: pair[0])
            count = _write_lines(tmp, (line for _, line in lines))
        elif fmt == "csv":
            columns = _columns(row for p in parts for _, row in _part_rows(p))
            count = _write_csv(tmp, columns, (row for _, row in merged()))
        else:
            count = _write_parquet(tmp, list(parts), (row for _, row in merged()))
    except BaseException:  # Ctrl-C, a full disk: the parts stay (the next run merges them), half a merge does not
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, output)
    for p in parts:
        p.unlink()
    return count


def _columns(rows: Iterator[dict]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def _write_csv(path: Path, columns: list[str], rows: Iterator[dict]) -> int:
    count = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator=CSV_LINE_END)
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
