"""What every benchmark builder shares: its configuration, validation helpers and image handling.

A benchmark module subclasses :class:`BenchmarkBuilder` and implements ``read(source) -> {split: rows}``
(plain dicts, ids included); the base class validates ids and counts, then hands rows to ``datasets``,
which writes and caches the Arrow files the usual way (``cache_dir``/``HF_DATASETS_CACHE``).
:meth:`BenchmarkBuilder.detect_layout` says which copy of the benchmark ``data_dir`` holds.

Ids do not depend on the copy a user has: they are built from the row's content (:func:`content_ids`).

>>> content_ids("pascal50s-mm", [("a.jpg", "x", "y"), ("b.jpg", "x", "y"), ("a.jpg", "x", "y")])
['pascal50s-mm-851a40e705ef', 'pascal50s-mm-b03e2fb168da', 'pascal50s-mm-851a40e705ef-2']
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets._errors import DataError

logger = logging.getLogger(__name__)


@dataclass
class BenchmarkConfig(datasets.BuilderConfig):
    """``expected_counts``: rows per split (and other named counts) that validation must find; ``None``
    means upstream's published numbers (``_sources.py``), ``{}`` disables count checks (tiny fixtures
    pass their own numbers instead). ``check_images``: open every image and fail on undecodable ones.
    ``layout``: read this copy of the benchmark (``"original"`` or ``"json"``) even when ``data_dir`` holds
    both (by default the original release wins)."""

    expected_counts: dict | None = None
    check_images: bool = True
    layout: str | None = None


class BenchmarkBuilder(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIG_CLASS = BenchmarkConfig
    # The prepared-data cache is keyed by name, config and version only (no code hash): a benchmark whose
    # rows change bumps its version (default_configs) so old caches are not read as the new rows.
    BUILDER_CONFIGS = [BenchmarkConfig(name="default", version=datasets.Version("1.0.0"))]
    DEFAULT_CONFIG_NAME = "default"

    # Filled in by each benchmark; the dataset card is generated from these (see mmjudge.datasets.card).
    PRETTY_NAME = ""
    DESCRIPTION = ""
    CITATION = ""
    LICENSE = "unknown"
    HOMEPAGE = ""
    SOURCE_FILES = ""  # what a data_dir must hold (markdown)
    KNOWN_ISSUES: tuple[str, ...] = ()
    FEATURES: datasets.Features
    DEFAULT_COUNTS: dict = {}

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.DESCRIPTION,
            citation=self.CITATION,
            license=self.LICENSE,
            homepage=self.HOMEPAGE,
            features=self.FEATURES,
        )

    # --- to implement -----------------------------------------------------------------------------
    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        """Fetch the public annotation files when no ``data_dir`` is given; the default explains."""
        raise DataError(
            f"{self.PRETTY_NAME or self.name} has no verified public download: pass data_dir=<folder> holding "
            f"{self.SOURCE_FILES or 'the upstream files'} (see datasets_scripts/{self.name}/README.md)."
        )

    # --- shared machinery ------------------------------------------------------------------------
    @property
    def expected_counts(self) -> dict:
        given = self.config.expected_counts
        return dict(self.DEFAULT_COUNTS) if given is None else dict(given)

    def download_and_prepare(self, *args: Any, verification_mode: Any = None, **kwargs: Any) -> None:
        """As in ``datasets``; ``verification_mode="no_checks"`` also skips our row-count checks."""
        mode = getattr(verification_mode, "value", verification_mode)
        self._count_checks = mode != "no_checks"
        return super().download_and_prepare(*args, verification_mode=verification_mode, **kwargs)

    def detect_layout(self, source: Path) -> tuple[Any, dict[str, Path]]:
        """The :class:`~mmjudge.datasets._layouts.Layout` ``source`` holds (``_sources.LAYOUTS[self.name]``) and
        the paths of its files, by file name; a folder with none of them is one clear error."""
        from mmjudge.datasets import _sources as src
        from mmjudge.datasets._layouts import detect

        layout, paths = detect(source, src.LAYOUTS[self.name], self.PRETTY_NAME or self.name, self.config.layout)
        logger.info("%s: reading the %s layout from %s.", self.PRETTY_NAME, layout.name, source)
        return layout, paths

    def source_dir(self, dl_manager: datasets.DownloadManager) -> Path:
        if self.config.data_dir:
            path = Path(os.path.expanduser(str(self.config.data_dir)))
            if not path.is_dir():
                from mmjudge.paths import not_a_regular_file

                problem = not_a_regular_file(path)  # a link loop, a device …: said as such
                found = f" ({problem})" if problem and "folder" not in problem else " (a file)" if path.exists() else ""
                raise DataError(f"Expected argument `data_dir` to be an existing folder, but got {str(path)!r}{found}.")
            return path
        return self.download(dl_manager)

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        from mmjudge.datasets import _sources as src

        if self.config.layout is not None and self.name not in src.LAYOUTS:
            raise DataError(
                f"{self.PRETTY_NAME or self.name} is read from one copy only: drop argument `layout` "
                f"(got {self.config.layout!r})."
            )
        source = self.source_dir(dl_manager)
        try:
            splits = self.read(source)
        except (KeyError, TypeError, AttributeError, IndexError) as err:
            # A file of another shape than upstream's that a reader's own checks let through: one line naming
            # the benchmark and the folder, never a traceback from deep inside the reader.
            raise DataError(
                f"{self.PRETTY_NAME or self.name}: the files in {str(source)!r} are not in the layout expected "
                f"({type(err).__name__}: {err}); see datasets_scripts/{self.name}/README.md for what to give."
            ) from None
        if not splits or not any(splits.values()):
            raise DataError(f"{self.name}: no rows were read; the source files are empty or truncated.")
        for split, rows in splits.items():
            check_unique_ids(rows, f"{self.name}/{split}")
            expected = self.expected_counts.get(split)
            if expected is not None and getattr(self, "_count_checks", True):
                check_count(f"{self.name} split {split!r} rows", len(rows), expected)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"rows": rows}) for split, rows in splits.items()]

    def _generate_examples(self, rows: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
        for row in rows:
            yield row["id"], row

    def image(self, path: Path | None) -> dict[str, Any] | None:
        """An ``Image()`` cell holding the file's bytes (so exports are self-contained), or ``None``. A file that
        several rows show (a DOCCI image in several CapArena battles, a Flickr8k image under each of its
        captions) is read and checked once, and those rows share its bytes: the rows of a split are held until
        they are written, so memory grows with the distinct images, not with the rows."""
        if path is None:
            return None
        read: dict[str, bytes] = self.__dict__.setdefault("_image_bytes", {})
        key = os.path.abspath(path)
        if key not in read:
            read[key] = load_image(path, check=self.config.check_images)["bytes"]
        return {"bytes": read[key], "path": Path(path).name}


def default_configs(version: str) -> list[BenchmarkConfig]:
    """``BUILDER_CONFIGS`` of a benchmark at ``version`` (bumped when its rows change)."""
    return [BenchmarkConfig(name="default", version=datasets.Version(version))]


class ImageLocator:
    """Finds a row's image under ``root``: at the path the source file names, else by file name in the
    first existing of ``folders``. ``None`` when none of the folders exists (the image column is then
    None and text-only metrics still work); an error when a folder exists but lacks the file."""

    def __init__(self, root: Path, folders: Iterable[str], what: str = "the images"):
        self.root = root
        self.folders = [root / f for f in folders if (root / f).is_dir()]
        if not self.folders:
            logger.warning(
                "No folder of %s (%s) under %s: the image column will be None.", what, ", ".join(folders), root
            )

    def __call__(self, rel_path: str) -> Path | None:
        if not self.folders:
            return None
        name = Path(rel_path).name
        for path in (self.root / rel_path, *(folder / name for folder in self.folders)):
            if path.is_file():
                return path
        raise DataError(
            f"Image {rel_path!r} is missing from {', '.join(map(str, self.folders))}: incomplete image folder."
        )


def load_image(path: Path, check: bool = True) -> dict[str, Any]:
    if not path.is_file():
        raise DataError(f"Image file {str(path)!r} is missing: the image folder is incomplete.")
    data = path.read_bytes()
    if check:
        check_decodes(data, f"Image file {str(path)!r}")
    return {"bytes": data, "path": path.name}


def embedded_image(cell: dict | None, where: str, check: bool = True) -> dict[str, Any] | None:
    """An ``Image()`` cell from bytes a Parquet file embeds (``{bytes, path}``), checked to decode; ``None``
    stays ``None``."""
    if cell is None or not cell.get("bytes"):
        return None
    data = bytes(cell["bytes"])
    if check:
        check_decodes(data, f"The image of {where}")
    return {"bytes": data, "path": cell.get("path")}


def check_decodes(data: bytes, what: str) -> None:
    """A ``DataError`` saying ``what`` cannot be decoded unless PIL verifies ``data`` as an image.

    >>> check_decodes(b"not an image", "The image of row 3")
    Traceback (most recent call last):
    mmjudge.datasets._errors.DataError: The image of row 3 cannot be decoded (cannot identify image file ...).
    """
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.verify()
    except Exception as err:  # PIL raises many types for broken files
        raise DataError(f"{what} cannot be decoded ({err}).") from None


def load_json(path: Path, shape: type | tuple[type, ...] | None = None, layout: str = "") -> Any:
    """A JSON file's data; a file that is not JSON (most often a truncated download) is a ``DataError``
    naming it, and so is one whose top level is not ``shape`` (``dict`` or ``list``; ``layout`` says what was
    expected, e.g. FLEUR's ``{image key: {...}}``).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "flickr8k.json"
    >>> _ = path.write_text('[{"a": 1}]')
    >>> load_json(path, dict, "an object {image key: {ground_truth, human_judgement}}")
    Traceback (most recent call last):
    mmjudge.datasets._errors.DataError: flickr8k.json: expected an object {image key: {ground_truth,
    human_judgement}} at the top level, but got a JSON array (of 1 entries).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path.name} is not valid JSON ({err}); truncated download?") from None
    if shape is not None and not isinstance(data, shape):
        raise DataError(f"{path.name}: expected {layout or shape} at the top level, but got {json_kind(data)}.")
    return data


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words, for messages.

    >>> json_kind([1, 2]), json_kind({}), json_kind("x"), json_kind(None)
    ('a JSON array (of 2 entries)', 'a JSON object (of 0 keys)', 'a JSON string', 'JSON null')
    """
    if isinstance(value, list):
        return f"a JSON array (of {len(value)} entries)"
    if isinstance(value, dict):
        return f"a JSON object (of {len(value)} keys)"
    if value is None:
        return "JSON null"
    if isinstance(value, bool):
        return "a JSON boolean"
    return "a JSON string" if isinstance(value, str) else "a JSON number"


def image_folder(root: Path, name: str, needed: bool = False) -> Path | None:
    """The images' folder under ``root`` if present. Missing is fine for classic sets (metrics without
    images still work; the image column is None), unless ``needed``."""
    folder = root / name
    if folder.is_dir():
        return folder
    if needed:
        raise DataError(f"Expected the image folder {str(folder)!r}, but it does not exist.")
    logger.warning("No image folder %s: the image column will be None.", folder)
    return None


def check_unique_ids(rows: list[dict[str, Any]], where: str) -> None:
    seen: set[str] = set()
    for row in rows:
        if row["id"] in seen:
            raise DataError(f"{where}: duplicate id {row['id']!r}; the source has repeated entries.")
        seen.add(row["id"])


def check_count(what: str, actual: int, expected: int) -> None:
    if actual != expected:
        hint = "truncated or incomplete download?" if actual < expected else "unexpected extra entries?"
        raise DataError(
            f"{what}: expected {expected}, but read {actual} ({hint} expected_counts={{}} reads it as it is)."
        )


def check_range(value: Any, low: float, high: float, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected a number in [{low}, {high}], but got {value!r}.") from None
    if math.isnan(number) or not low <= number <= high:
        raise DataError(f"{where}: expected a number in [{low}, {high}], but got {value!r}.")
    return number


def stable_id(prefix: str, *parts: Any) -> str:
    """A short id that depends only on the content (stable across runs and machines)."""
    digest = hashlib.sha1("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{digest}"


def content_ids(prefix: str, keys: Iterable[tuple]) -> list[str]:
    """One id per key, from the key's content (:func:`stable_id`), so the original release and a
    preprocessed copy give the same ids whatever order or numbering they use; the k-th repeat of a key
    (upstream files do repeat some entries) gets ``-k``."""
    seen: dict[str, int] = {}
    ids = []
    for key in keys:
        base = stable_id(prefix, *key)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def squash(text: str) -> str:
    """Whitespace-normalised text (the classic sets' captions carry stray spaces and tabs)."""
    return " ".join(str(text).split())
