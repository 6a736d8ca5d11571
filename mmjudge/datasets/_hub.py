"""Rows of the Hub Parquet copies of the caption benchmarks (``yuwd/Composite``, ``yuwd/Flickr8k-HumanEval``,
``Ka2ukiMatsuda/Nebula``, ``yuwd/Polaris``), read the way the code that reads them does (CaptionEvalKit's
``capevalkit/infrastructure/benchmarks/legacy.py``): each column may go by several names, a reference list may
be stored as a Python literal string, an image is a ``{bytes, path}`` struct.

>>> row = {"imgid": "1000_ab", "img": {"bytes": b"x", "path": "1000_ab.jpg"}, "cand": "A  dog .",
...        "refs": "['A dog .', 'A cat .']", "human_score": 3.0}
>>> cell = hub_row(row, "f.parquet:0")
>>> cell.image_name, cell.text, cell.references, cell.score, cell.image
('1000_ab.jpg', 'A dog .', ['A dog .', 'A cat .'], 3.0, {'bytes': b'x', 'path': '1000_ab.jpg'})
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, content_ids, embedded_image, squash

# Our field -> the column names the Hub copies use, in the order CaptionEvalKit tries them.
COLUMNS = {
    "image_name": ("imgid", "file_name", "id"),
    "image": ("img", "image"),
    "text": ("cand", "mt", "caption"),
    "references": ("refs", "references"),
    "score": ("human_score", "score"),
}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


@dataclass(frozen=True)
class HubRow:
    """One row: the image's file name (``.jpg`` added to a bare id, as the sets' images are JPEGs), the
    embedded image (``{bytes, path}`` or ``None``), the candidate text (whitespace squashed), references and
    the human score (NaN when empty)."""

    image_name: str
    image: dict | None
    text: str
    references: list[str]
    score: float


def _first(row: dict, field: str) -> Any:
    return next((row[c] for c in COLUMNS[field] if row.get(c) is not None), None)


def _references(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise DataError(f"{where}: references {value[:60]!r} are not a list.") from None
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise DataError(f"{where}: references must be a list, but got {type(value).__name__}.")
    return [squash(r) for r in value]


def hub_row(row: dict, where: str) -> HubRow:
    """One Parquet row as :class:`HubRow`.

    Raises:
        DataError: no caption column, no image name (neither a name column nor the image's path), a
            reference list that is not one, a score that is not a number.
    """
    text = _first(row, "text")
    if not isinstance(text, str):
        raise DataError(f"{where}: no caption (columns {' / '.join(COLUMNS['text'])}).")
    image = _first(row, "image")
    if image is not None and not isinstance(image, dict):
        image = {"bytes": image, "path": None}
    name = _first(row, "image_name") or (image or {}).get("path")
    if not name:
        raise DataError(f"{where}: no image name (columns {' / '.join(COLUMNS['image_name'])}, or the image's path).")
    name = PurePosixPath(str(name)).name
    if not name.lower().endswith(IMAGE_SUFFIXES):
        name += ".jpg"
    raw = _first(row, "score")
    try:
        score = math.nan if raw is None else float(raw)
    except (TypeError, ValueError):
        raise DataError(f"{where}: score {raw!r} is not a number.") from None
    embedded = {"bytes": image.get("bytes"), "path": name} if image and image.get("bytes") else None
    return HubRow(name, embedded, squash(text), _references(_first(row, "references"), where), score)


def read_hub_parquet(files: Sequence[Path]) -> Iterator[HubRow]:
    """Every row of ``files``, in file order, read batch by batch."""
    import pyarrow.parquet as pq

    for path in files:
        reader = pq.ParquetFile(path)
        names = set(reader.schema_arrow.names)
        wanted = [c for cols in COLUMNS.values() for c in cols if c in names]
        n = 0
        for batch in reader.iter_batches(columns=wanted, batch_size=256):
            for row in batch.to_pylist():
                yield hub_row(row, f"{path.name}:{n}")
                n += 1


def split_files(root: Path, names: Sequence[str]) -> list[Path]:
    """The Parquet files of one split under ``root``: a file named ``<split>-*.parquet`` / ``<split>.parquet``
    or any Parquet file in a folder named after the split (``names``: the split's spellings, e.g. ``validation``
    and ``val``).

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for name in ("data/test-00000-of-00001.parquet", "data/train-00000-of-00002.parquet", "default/val/0.parquet"):
    ...     (root / name).parent.mkdir(parents=True, exist_ok=True); _ = (root / name).write_bytes(b"")
    >>> [str(p.relative_to(root)) for p in split_files(root, ["test"])], len(split_files(root, ["validation", "val"]))
    (['data/test-00000-of-00001.parquet'], 1)
    """
    found = []
    for path in sorted(root.rglob("*.parquet")):
        stem = path.name.split("-")[0].split(".")[0]
        if stem in names or any(part in names for part in path.relative_to(root).parts[:-1]):
            found.append(path)
    return found


def hub_snapshot(repo: str, patterns: Sequence[str]) -> Path:
    """A local snapshot of the Hub dataset ``repo`` (only files matching ``patterns``), downloaded once into
    the Hugging Face cache."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo, repo_type="dataset", allow_patterns=list(patterns)))


class HubCaptionBuilder(BenchmarkBuilder):
    """A caption-judgment set published as Hub Parquet splits (Polaris, Nebula): one row per caption with a
    human score (rows without one dropped), ids from (split prefix, image name, caption). A set that does more
    (Nebula's score correction) overrides :meth:`split_rows`."""

    SPLITS = tuple(src.HUB_SPLITS)
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "text": datasets.Value("string"),
            "references": datasets.Sequence(datasets.Value("string")),
            "score": datasets.Value("float32"),
        }
    )
    ID_PREFIX = ""  # ids are ``<ID_PREFIX>-<split>-<hash>``

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        splits = {}
        for split, names in src.HUB_SPLITS.items():
            files = split_files(source, names)
            if files:
                splits[split] = self.split_rows(split, files, source)
        if not splits:
            raise DataError(f"No {self.PRETTY_NAME} Parquet files (test-*.parquet, …) under {str(source)!r}.")
        return splits

    def split_rows(self, split: str, files: list[Path], source: Path) -> list[dict[str, Any]]:
        return [self.caption_row(row_id, row) for row_id, row in self.rated_rows(split, files)]

    def rated_rows(self, split: str, files: list[Path]) -> list[tuple[str, HubRow]]:
        """The split's rows that have a score, each with its id."""
        hub = [row for row in read_hub_parquet(files) if not math.isnan(row.score)]
        return list(zip(content_ids(f"{self.ID_PREFIX}-{split}", [(r.image_name, r.text) for r in hub]), hub))

    def caption_row(self, row_id: str, row: HubRow) -> dict[str, Any]:
        return {
            "id": row_id,
            "image": embedded_image(row.image, row.image_name, self.config.check_images),
            "image_path": row.image_name,
            "text": row.text,
            "references": row.references,
            "score": row.score,
        }
