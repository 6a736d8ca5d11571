"""A row's per-item scores on one benchmark: read from files someone else produced (``--scores``), or
computed by the row's mmjudge metric into a resumable file keyed by everything the scores depend on, so a
second run reads them back and a killed run goes on where it stopped.

The benchmark's items come from its loader (:func:`load_context`) with images left on disk (a path under the
data folder) or as the bytes a Parquet file embeds: nothing is decoded until a metric's chunk needs it.

>>> from mmjudge.human_judgments import HumanJudgments
>>> hj = HumanJudgments(name="toy", items=[{"id": "a", "text": "a b", "references": ["a b", "c d"]}],
...                     ratings=[{"id": "a", "score": 1.0}])
>>> [it["references"] for it in trim_references(hj, 1).items]
[['a b']]
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval.scores import ScoreTable, read_scores

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


def folder_fingerprint(folder: str | None) -> str:
    """What a data folder holds, cheaply: every non-image file's relative path, size and modification time
    (images are many and are checked by the loader). ``"none"`` without a folder.

    One walk of the folder, whatever order the file system lists it in: the files go into the digest folder by
    folder in the order of the folders' paths as strings (``a``, ``a.b``, ``a/x``: not the order of a walk, which
    would visit ``a/x`` before ``a.b``), each folder's files by name. A run walks each folder once
    (:func:`mmjudge.reproduce.run.reproduce`)."""
    if not folder:
        return "none"
    root = Path(folder).expanduser()
    digest = hashlib.sha256(str(root.resolve()).encode())
    listed = []  # (folder, its non-image file names): image names, the many, are not kept
    for dirpath, _, files in os.walk(root):
        listed.append((dirpath, sorted(name for name in files if not name.lower().endswith(IMAGE_SUFFIXES))))
    for dirpath, names in sorted(listed):
        for name in names:
            stat = (Path(dirpath) / name).stat()
            digest.update(f"{Path(dirpath, name).relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def files_fingerprint(paths: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        stat = Path(path).stat()
        digest.update(f"{Path(path).resolve()}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def load_context(
    benchmark: str,
    split: str | None,
    references: int | None,
    data_dir: str | None,
    dataset_options: Mapping[str, Any],
) -> HumanJudgments:
    """The benchmark's human judgments with items ready to score: each image a file path (under ``data_dir``,
    or written once to the mmjudge cache folder when a Parquet layout embeds it; ``None`` without images), so
    the items hold no image bytes; references cut to the first ``references`` when given."""
    from mmjudge.datasets import load_dataset
    from mmjudge.datasets._judgments import human_judgments

    kwargs = dict(dataset_options)
    if data_dir:
        kwargs["data_dir"] = data_dir
    dataset = with_image_paths(load_dataset(benchmark, split=split, **kwargs), data_dir)
    judgments = human_judgments(benchmark, dataset)
    for item in judgments.items:
        image = item.get("image")
        item["image"] = image.get("path") if isinstance(image, dict) else image
    return trim_references(judgments, references)


def with_image_paths(dataset: Any, data_dir: str | None) -> Any:
    """``dataset`` (a ``Dataset`` or ``DatasetDict``) with each ``image`` cell ``{bytes: None, path: <file>}``
    (:class:`_ImageFiles`), so rows built from it hold file paths, not image bytes; unchanged without images."""
    import datasets

    if isinstance(dataset, datasets.DatasetDict):
        return datasets.DatasetDict({name: with_image_paths(part, data_dir) for name, part in dataset.items()})
    if "image" not in dataset.column_names:
        return dataset
    dataset = dataset.cast_column("image", datasets.Image(decode=False))
    spill = _ImageFiles(data_dir)
    return dataset.map(spill, batched=True, batch_size=64, input_columns=["image"], desc="locating images")


class _ImageFiles:
    """A ``datasets.map`` function: each image cell becomes ``{bytes: None, path: <file>}``, the file found under
    the data folder by name, else the embedded bytes written once under the mmjudge cache folder (named by their
    hash), so the items built next hold paths, not bytes."""

    def __init__(self, data_dir: str | None):
        from mmjudge.datasets._judgments import _image_files
        from mmjudge.paths import cache_dir

        self.locate = _image_files(Path(data_dir).expanduser() if data_dir else None)
        self.folder = cache_dir() / "reproduce" / "images"

    def __call__(self, images: list) -> dict:
        out = []
        for cell in images:
            if not cell:
                out.append(None)
                continue
            found = self.locate(cell.get("path"))
            if found is None and cell.get("bytes"):
                data = cell["bytes"]
                suffix = Path(str(cell.get("path") or "")).suffix or ".img"
                found = str(self.folder / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}")
                if not Path(found).exists():
                    self.folder.mkdir(parents=True, exist_ok=True)
                    Path(found).write_bytes(data)
            out.append({"bytes": None, "path": found} if found else None)
        return {"image": out}


def trim_references(judgments: HumanJudgments, references: int | None) -> HumanJudgments:
    """Each item's first ``references`` references (FOIL's 1-ref column); unchanged when ``None``."""
    if references is None:
        return judgments
    items = [{**it, "references": list(it.get("references") or [])[:references]} for it in judgments.items]
    return dataclasses.replace(judgments, items=items)


def read_score_files(paths: Sequence[str], name: str) -> ScoreTable:
    """One score table from one or several files (FLEUR's Pascal-50S results come one file per category):
    files keyed by id are merged (an id in two files is an error), files keyed by content pool their rows.

    Raises:
        ValueError: a missing file, an id in two files, or files of both kinds.
    """
    tables = []
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"--scores {path}: no such file.")
        tables.append(read_scores(path))
    if len(tables) == 1:
        return tables[0]
    by_content = [t.content_rows is not None for t in tables]
    if any(by_content) and not all(by_content):
        raise ValueError(f"{name}: the --scores files mix rows keyed by id and rows keyed by (image, text).")
    merged = ScoreTable(
        primary=tables[0].primary, content_rows=[] if all(by_content) else None, source=", ".join(paths)
    )
    for path, table in zip(paths, tables):
        if merged.content_rows is not None:
            merged.content_rows.extend(table.content_rows or [])
            continue
        twice = set(merged) & set(table)
        if twice:
            raise ValueError(f"{name}: id {sorted(twice)[0]!r} is in two --scores files (the second is {path}).")
        merged.update(table)
    return merged


def metric_options(row_options: Mapping[str, Any], user: Mapping[str, Any], cache: Any, metric_cls: Any) -> dict:
    """The row's options (catalogue, then the user's ``--option``), plus the judge cache setting for metrics
    that take one."""
    options = {**row_options, **user}
    if "cache" in inspect.signature(metric_cls).parameters and "cache" not in options and cache is not None:
        options["cache"] = cache
    return options


def scores_path(folder: Path, key: Mapping[str, Any]) -> Path:
    """The file a row's computed scores on one benchmark live in: named by a hash of everything they depend on."""
    blob = json.dumps(key, sort_keys=True, default=str)
    return folder / f"{key['row']}-{key['benchmark']}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.jsonl"


def compute_scores(metric: Any, judgments: HumanJudgments, path: Path, progress: bool) -> ScoreTable:
    """Score every item with ``metric`` into ``path`` (rows flushed as they finish; a killed run resumes
    after the rows already there; metrics whose numbers need the whole input, or a run cut off inside one of
    a metric's groups of items, start again), then read it."""
    from mmjudge.stream import stream_rows
    from mmjudge.stream.outputs import PartFile, existing_parts, merge_parts, remove_outputs

    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        signature = str(metric.signature)
        if metric.chunk_size is None and existing_parts(str(path)):
            remove_outputs(str(path))  # CIDEr-D's idf over a remainder is not CIDEr-D over the whole input
        try:
            part = PartFile(str(path), 0, 1, signature)
        except ValueError:  # rows of another signature (the same options, another version): start again
            remove_outputs(str(path))
            part = PartFile(str(path), 0, 1, signature)
        if part.done % metric.chunk_multiple:  # cut off inside a group (Polos' norm_batch_size): start again
            part.close()
            remove_outputs(str(path))
            part = PartFile(str(path), 0, 1, signature)
        try:
            rows = stream_rows(metric, _items(judgments, part.done), keep=(), progress=progress, seen=part.seen_ids)
            for index, row in rows:
                part.write(row, index)
        finally:
            part.close()
        merge_parts(str(path), 1, "jsonl")
    failed = next(_errors(path), None)
    if failed:
        path.unlink()  # not a result to keep: the next run (with the images, say) scores again
        raise ValueError(f"{metric.spec.label}: {failed}")
    return read_scores(path)


def _items(judgments: HumanJudgments, skip: int) -> Iterator[dict]:
    for position, item in enumerate(judgments.items):
        if position >= skip:
            yield {**item, "_i": position}


def _errors(path: Path) -> Iterator[str]:
    """The first item errors a score file records (an item the metric refused: no image, an empty text)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if '"error"' in line:
                row = json.loads(line)
                if row.get("error"):
                    yield f"item {row.get('id')!r}: {row['error']}"
