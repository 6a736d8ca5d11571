"""Reading the files of the benchmarks of judges (VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge,
Multi-Crit, CapArena): Parquet files whose columns are checked against the schema at load time, JSON and JSON
Lines records whose fields are checked one by one, images that must all be there, and upstream ids kept as they
are. Every problem is one :class:`~mmjudge.datasets._errors.DataError` line naming the file, the row and the fix.

>>> upstream_ids(["a", "b", "a"])
['a', 'b', 'a-2']
>>> record_field({"ID": "x1"}, ("Better",), "all_data.json: record 0 ('x1')")
Traceback (most recent call last):
...
mmjudge.datasets._errors.DataError: all_data.json: record 0 ('x1') has no field 'Better' (its fields: ID).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mmjudge.datasets._base import content_ids, embedded_image, load_json
from mmjudge.datasets._errors import DataError

logger = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


def upstream_ids(ids: Iterable[str]) -> list[str]:
    """The upstream ids as they are; the k-th repeat of one (``-k``) so rows stay addressable, logged once."""
    seen: dict[str, int] = {}
    out = []
    for raw in ids:
        seen[raw] = seen.get(raw, 0) + 1
        out.append(raw if seen[raw] == 1 else f"{raw}-{seen[raw]}")
    repeated = [i for i, n in seen.items() if n > 1]
    if repeated:
        logger.warning("%d upstream ids repeat (e.g. %r); their repeats get -2, -3, ...", len(repeated), repeated[0])
    return out


def ids_or_content(prefix: str, upstream: Sequence[Any], keys: Sequence[tuple]) -> list[str]:
    """``<prefix>-<upstream id>`` where the row has one, else an id from its content (:func:`content_ids`)."""
    from_content = iter(content_ids(prefix, [k for u, k in zip(upstream, keys) if u is None]))
    return upstream_ids(f"{prefix}-{u}" if u is not None else next(from_content) for u in upstream)


def record_field(record: Any, names: Sequence[str], where: str, optional: bool = False) -> Any:
    """The value of the first of ``names`` that ``record`` has (several names: the spellings upstream files use).

    Raises:
        DataError: when the record is not an object, or has none of the names (unless ``optional``).
    """
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, but got {type(record).__name__}.")
    for name in names:
        if name in record:
            return record[name]
    if optional:
        return None
    wanted = " or ".join(repr(n) for n in names)
    raise DataError(f"{where} has no field {wanted} (its fields: {', '.join(map(str, record)) or 'none'}).")


def text_field(record: dict, names: Sequence[str], where: str, optional: bool = False) -> str:
    """A field that must hold text (a number is accepted and written as text); missing and ``optional``: ``""``."""
    value = record_field(record, names, where, optional)
    if value is None and optional:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(f"{where}: expected {names[0]!r} to be text, but got {type(value).__name__}.")
    return str(value)


def read_json_list(path: Path, what: str) -> list[Any]:
    """A JSON file holding a list of records (:func:`~mmjudge.datasets._base.load_json`); a torn file or another
    shape is one line naming the benchmark and the file."""
    try:
        return load_json(path, list, "a list of records")
    except DataError as err:
        raise DataError(f"{what}: {err}") from None


def read_jsonl(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for every non-empty line; a line that is not JSON is one error naming it."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(
                    f"{what}: {path.name}:{number} is not valid JSON ({err}); truncated download?"
                ) from None


def parquet_rows(
    files: Sequence[Path], required: Sequence[str], optional: Sequence[str], what: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("<file>:<row>", row)`` for every row of ``files``, read batch by batch. The schema is read first: a
    missing ``required`` column is an error naming the file and its columns; ``optional`` ones are read when there.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in files:
        try:
            reader = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as err:
            raise DataError(
                f"{what}: {path.name} cannot be read as Parquet ({_first_line(err)}); truncated download?"
            ) from None
        names = reader.schema_arrow.names
        missing = [c for c in required if c not in names]
        if missing:
            raise DataError(
                f"{what}: {path.name} has no column {missing[0]!r} (its columns: {', '.join(names)}); expected "
                f"the columns {', '.join(required)}."
            )
        columns = [c for c in (*required, *optional) if c in names]
        n = 0
        try:
            for batch in reader.iter_batches(columns=columns, batch_size=64):
                for row in batch.to_pylist():
                    yield f"{path.name}:{n}", row
                    n += 1
        except (pa.ArrowException, OSError) as err:
            raise DataError(
                f"{what}: {path.name} is damaged at row {n} ({_first_line(err)}); truncated download?"
            ) from None


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def required_image(cell: Any, where: str, check: bool) -> dict[str, Any]:
    """An ``Image()`` cell from an embedded image (``{bytes, path}`` or bytes); a row without one is an error."""
    if isinstance(cell, (bytes, bytearray)):
        cell = {"bytes": bytes(cell), "path": None}
    image = embedded_image(cell if isinstance(cell, dict) else None, where, check)
    if image is None:
        raise DataError(f"{where} has no image (the `image` cell holds no bytes).")
    return image


class ImageFiles:
    """Finds images under ``root``: at ``<root>/<folder>/<relative path>`` for each of ``folders`` (in order), else
    (``by_name``) by file name anywhere below ``root``, the folder listed once, when first needed."""

    def __init__(self, root: Path, folders: Sequence[str | Path] = ("",), by_name: bool = True):
        self.root = root
        self.folders = [root / f for f in folders]
        self.by_name = by_name
        self._names: dict[str, Path] | None = None

    def find(self, rel_path: str) -> Path | None:
        rel = str(rel_path).replace("\\", "/").lstrip("/")
        for folder in self.folders:
            if (folder / rel).is_file():
                return folder / rel
        if not self.by_name:
            return None
        if self._names is None:
            self._names = {}
            for folder, subdirs, files in os.walk(self.root):
                subdirs.sort()  # a deterministic first match
                for file in files:
                    if file.lower().endswith(IMAGE_SUFFIXES):
                        self._names.setdefault(file, Path(folder) / file)
        return self._names.get(Path(rel).name)
