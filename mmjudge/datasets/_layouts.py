"""Which copy of a benchmark a ``data_dir`` holds: the original release or a preprocessed JSON file.

Most people who meta-evaluate a caption metric have the JSON files that FLEUR's and PAC-S's evaluation
code reads (``flickr8k.json``, ``pascal_50s.json`` …), others the original release (``.mat``, CSV, text
files). A benchmark declares each copy it reads as a :class:`Layout` (in ``_sources.LAYOUTS``); the
builder asks :func:`detect` which one is present and reads it, so both give the same rows and ids.
When a folder holds none of them, the error names every layout's files and where they come from,
in one line.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "pascal_50s.json").write_text("{}")
>>> layouts = (Layout("original", (("pair_pascal.mat",), ("consensus_pascal.mat",)), "pyCIDErConsensus"),
...            Layout("json", (("pascal_50s.json",),), "FLEUR's annotations/"))
>>> layout, paths = detect(root, layouts, "Pascal-50S")
>>> layout.name, paths["pascal_50s.json"].name
('json', 'pascal_50s.json')
>>> detect(root / "nowhere", layouts, "Pascal-50S")
Traceback (most recent call last):
...
mmjudge.datasets._errors.DataError: Pascal-50S: ... holds none of its layouts: the original release needs
`pair_pascal.mat` + `consensus_pascal.mat` (from pyCIDErConsensus); the json layout needs `pascal_50s.json`
(from FLEUR's annotations/). Pass data_dir=<a folder with either>.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mmjudge.datasets._errors import DataError


@dataclass(frozen=True)
class Layout:
    """One copy of a benchmark.

    Attributes:
        name: ``"original"`` (the authors' release) or ``"json"`` (the preprocessed file).
        files: groups of file names; every group needs one of its names present (``(("a.csv", "b.csv"),)``
            means a.csv or b.csv, ``(("a",), ("b",))`` means a and b). Found anywhere under ``data_dir``.
        source: where the files come from (shown when none is found).
        optional: files read when present (e.g. MSCOCO captions for references).
        parquet: a Hub Parquet layout: present when ``*.parquet`` files are there whose path names this key
            (a folder or a file name starting with it, e.g. a dataset configuration ``expert``); ``""``: any.
    """

    name: str
    files: tuple[tuple[str, ...], ...]
    source: str
    optional: tuple[str, ...] = ()
    parquet: str | None = None

    def names(self) -> list[str]:
        return [n for group in self.files for n in group] + list(self.optional)

    def describe(self) -> str:
        """The files as Markdown, e.g. ``` `a.mat` + `b.mat` ``` or ``` `a.csv` or `b.csv` ```."""
        if self.parquet is not None:
            where = f" under a `{self.parquet}` folder or named `{self.parquet}*`" if self.parquet else ""
            return f"Parquet files (`*.parquet`{where})"
        return " + ".join(" or ".join(f"`{n}`" for n in group) for group in self.files)

    def title(self) -> str:
        return "the original release" if self.name == "original" else f"the {self.name} layout"


def locate(root: Path, names: Iterable[str]) -> dict[str, Path]:
    """``name -> path`` for each of ``names`` found under ``root`` (directly in it first, else the first
    match in a walk of its sub-folders, which are visited once for all names)."""
    wanted = set(names)
    found = {n: root / n for n in wanted if (root / n).is_file()}
    missing = wanted - set(found)
    if missing and root.is_dir():
        for folder, subdirs, files in os.walk(root):
            subdirs.sort()  # a deterministic first match
            for name in missing & set(files):
                found.setdefault(name, Path(folder) / name)
            if len(found) == len(wanted):
                break
    return found


def parquet_files(root: Path, key: str = "") -> list[Path]:
    """``*.parquet`` files under ``root`` (sorted) whose relative path names ``key``: a folder called ``key`` or
    a file name starting with it (Hub repositories keep a configuration's files under ``<config>/``);
    every one when ``key`` is empty.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("expert/test-00000-of-00001.parquet", "crowdflower/test-00000-of-00001.parquet"):
    ...     (root / name).parent.mkdir(parents=True, exist_ok=True); _ = (root / name).write_bytes(b"")
    >>> [str(p.relative_to(root)) for p in parquet_files(root, "expert")]
    ['expert/test-00000-of-00001.parquet']
    """
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*.parquet")):
        parts = path.relative_to(root).parts
        if not key or key in parts[:-1] or parts[-1].startswith(key):
            found.append(path)
    return found


def detect(
    root: Path, layouts: tuple[Layout, ...], what: str, forced: str | None = None
) -> tuple[Layout, dict[str, Path]]:
    """The first of ``layouts`` whose files are all under ``root`` (or the ``forced`` one) and the paths found.

    Raises:
        DataError: naming, in one line, every layout's files and where they come from.
    """
    candidates = layouts
    if forced is not None:
        candidates = tuple(layout for layout in layouts if layout.name == forced)
        if not candidates:
            raise DataError(
                f"Expected argument `layout` to be one of {[lay.name for lay in layouts]} for {what}, "
                f"but got {forced!r}."
            )
    found = locate(root, {n for layout in candidates for n in layout.names()})
    for layout in candidates:
        if layout.parquet is not None and not parquet_files(root, layout.parquet):
            continue
        if all(any(n in found for n in group) for group in layout.files):
            return layout, {n: found[n] for n in layout.names() if n in found}
    if len(candidates) == 1:
        layout = candidates[0]
        owner = f"{layout.title()} of {what}" if len(layouts) > 1 else f"the files of {what}"
        raise DataError(
            f"Expected {owner} under {str(root)!r}: {layout.describe()} (from {layout.source}), but "
            f"found {'none' if not found else 'only ' + ', '.join(sorted(found))}."
        )
    needs = "; ".join(f"{layout.title()} needs {layout.describe()} (from {layout.source})" for layout in candidates)
    raise DataError(f"{what}: {str(root)!r} holds none of its layouts: {needs}. Pass data_dir=<a folder with either>.")
