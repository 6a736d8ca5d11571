"""LongCap-Arena (Matsuda et al., VELA): long captions of DCI images with long references and human
Descriptiveness / Relevance / Fluency scores. Upstream keeps one table per criterion and split, in two copies
this builder reads into the same rows and ids: the Hub Parquet files (``Ka2ukiMatsuda/LongCap-Arena``,
``dci_val.desc``, ``dci_val.rel``, ``dci_val.flu`` …; images inside) and the authors' CSV files
(``desc_dci_val.csv`` … ``flu_dci_test.csv``: ``imgid``, ``mt``, ``refs`` as a list literal, ``score``; images
in an ``images/`` folder beside them), which CaptionEvalKit reads locally. It joins the three criteria per
(image, candidate) and fails if any candidate lacks a criterion.

>>> from mmjudge.datasets.longcap_arena import LongCapArena
>>> [c for c in LongCapArena.FEATURES if c in ("descriptiveness", "relevance", "fluency")]
['descriptiveness', 'relevance', 'fluency']
"""

from __future__ import annotations

import logging
import math
import os
import re
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, check_count, stable_id
from mmjudge.datasets._judgments import rows_of
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)
COL = src.LONGCAP_COLUMNS


class LongCapArena(BenchmarkBuilder):
    PRETTY_NAME = "LongCap-Arena"
    SPLITS = tuple(src.LONGCAP_SPLITS)
    DESCRIPTION = (
        "Long-caption evaluation benchmark from the VELA paper: images with long references (about 131 words) "
        "and long candidate captions (about 101 words) scored by humans for Descriptiveness, Relevance and "
        "Fluency (32,246 judgments in total). Splits train / validation / testA / testB."
    )
    CITATION = """@inproceedings{matsuda2025vela,
  title={VELA: An LLM-Hybrid-as-a-Judge Approach for Evaluating Long Image Captions},
  author={Matsuda, Kazuki and Wada, Yuiga and Kotsuki, Seitaro and Sugiura, Komei},
  year={2025}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.LONGCAP_REPO}"
    LICENSE = "see the Hub dataset card (images from DCI)"
    SOURCE_FILES = (
        "the Hub Parquet files (`<split>.<desc|rel|flu>*.parquet`, e.g. `dci_val.desc-00000-of-00001.parquet`), "
        "or the authors' CSV files (`<desc|rel|flu>_<split>.csv`, e.g. `desc_dci_val.csv`, with columns `imgid`, "
        "`mt` (or `cand`), `refs` (a list literal), `score`; images in an `images/` folder beside them)"
    )
    KNOWN_ISSUES = (
        "The paper's per-split sizes (11,971 / 1,309 / 294 / 324) are approximate; validation checks the "
        "Parquet row counts against the Hub's own metadata (README dataset_info) when it is present.",
        "Upstream prefixes of train/validation are assumed ('train', 'val'); testA = dci_val, testB = dci_test.",
        "CSV layout: a bare `imgid` gets the suffix of the file found in `images/` (`.jpg` without the folder), so "
        "ids match the Parquet layout's `file_name`; texts are kept as written (CaptionEvalKit squashes spaces).",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image_name": datasets.Value("string"),
            "image": datasets.Image(),
            "references": datasets.Sequence(datasets.Value("string")),
            "text": datasets.Value("string"),
            "descriptiveness": datasets.Value("float32"),
            "relevance": datasets.Value("float32"),
            "fluency": datasets.Value("float32"),
        }
    )

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        from huggingface_hub import snapshot_download

        return Path(
            snapshot_download(
                src.LONGCAP_REPO,
                repo_type="dataset",
                revision=src.LONGCAP_REVISION,
                allow_patterns=["*.parquet", "README.md"],
            )
        )

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        layout, paths = self.detect_layout(source)
        published = published_counts(source / "README.md") if layout.name == "parquet" else {}
        splits: dict[str, list[dict[str, Any]]] = {}
        for split, prefix in src.LONGCAP_SPLITS.items():
            if layout.name == "parquet":
                files = {
                    crit: criterion_files(source, f"{prefix}.{short}") for crit, short in src.LONGCAP_CRITERIA.items()
                }
            else:
                files = {crit: _csv_file(paths, prefix, short) for crit, short in src.LONGCAP_CRITERIA.items()}
            present = [c for c, found in files.items() if found]
            if not present:
                continue
            if len(present) != len(files):
                missing = sorted(set(files) - set(present))
                raise DataError(
                    f"LongCap-Arena {split} ({prefix}): files for {missing} are missing; the three criteria must all "
                    "be present."
                )
            read_rows = _parquet_rows if layout.name == "parquet" else _csv_rows
            tables = {crit: read_rows(found, source) for crit, found in files.items()}
            splits[split] = self.join(split, prefix, tables, published)
        if not splits:
            raise DataError(f"No LongCap-Arena Parquet files (e.g. dci_val.desc*.parquet) under {str(source)!r}.")
        return splits

    def join(self, split: str, prefix: str, tables: dict[str, list[dict]], published: dict[str, int]) -> list[dict]:
        """One row per (image, candidate) from the three criteria's rows (``image_name``, ``image``,
        ``references``, ``text``, ``score`` each, from either layout)."""
        by_criterion: dict[str, dict[tuple[str, str], dict]] = {}
        for crit, rows in tables.items():
            upstream_name = f"{prefix}.{src.LONGCAP_CRITERIA[crit]}"
            if upstream_name in published:
                check_count(f"LongCap-Arena {upstream_name} rows (Hub metadata)", len(rows), published[upstream_name])
            keyed: dict[tuple[str, str], dict] = {}
            for n, row in enumerate(rows):
                key = (row["image_name"], row["text"])
                if key in keyed:
                    raise DataError(f"LongCap-Arena {upstream_name}: candidate for {key[0]!r} appears twice.")
                score = row["score"]
                if score is None or not math.isfinite(score):
                    raise DataError(f"LongCap-Arena {upstream_name} row {n}: score {score!r} is not a number.")
                keyed[key] = row
            by_criterion[crit] = keyed
        first, *others = src.LONGCAP_CRITERIA
        keys = list(by_criterion[first])
        for crit in others:
            if set(by_criterion[crit]) != set(keys):
                only = len(set(keys) ^ set(by_criterion[crit]))
                raise DataError(
                    f"LongCap-Arena {split}: {first} and {crit} disagree on {only} (image, candidate) "
                    "pairs; a criterion file is truncated or from another version."
                )
        rows = []
        for key in keys:
            base = by_criterion[first][key]
            rows.append(
                {
                    "id": stable_id(f"longcap-{split}", *key),
                    "image_name": key[0],
                    "image": _image_cell(base["image"], key[0]),
                    "references": base["references"],
                    "text": key[1],
                    **{crit: by_criterion[crit][key]["score"] for crit in src.LONGCAP_CRITERIA},
                }
            )
        return rows


def _parquet_rows(files: list[Path], source: Path) -> list[dict[str, Any]]:
    """The rows of one criterion's Parquet files (the Hub layout: the image's bytes inside)."""
    import pyarrow.parquet as pq

    rows = []
    for path in files:
        for n, row in enumerate(pq.read_table(path).to_pylist()):
            missing = [c for c in COL.values() if c not in row]
            if missing:
                raise DataError(f"LongCap-Arena {path.name} row {n}: missing columns {missing}.")
            rows.append(
                {
                    "image_name": str(row[COL["image_name"]]),
                    "image": row[COL["image"]],
                    "references": [str(r) for r in row[COL["references"]] or []],
                    "text": str(row[COL["text"]]),
                    "score": _number(row[COL["score"]], f"LongCap-Arena {path.name} row {n}"),
                }
            )
    return rows


def _csv_file(paths: dict[str, Path], prefix: str, short: str) -> Path | None:
    return paths.get(src.LONGCAP_CSV.format(criterion=short, prefix=prefix))


def _csv_rows(path: Path, source: Path) -> list[dict[str, Any]]:
    """The rows of one criterion's CSV file (the authors' layout: ``imgid``, ``mt``, ``refs`` as a Python list
    literal, ``score``; the images in an ``images/`` folder beside the file, by ``imgid``)."""
    import csv

    images = _CsvImages(path, source)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = {
            field: next((c for c in names if c in (reader.fieldnames or [])), None)
            for field, names in src.LONGCAP_CSV_COLUMNS.items()
        }
        missing = [" / ".join(src.LONGCAP_CSV_COLUMNS[f]) for f, c in columns.items() if c is None]
        if missing:
            raise DataError(f"LongCap-Arena {path.name}: no column {', no column '.join(missing)}.")
        rows = []
        for n, row in enumerate(reader, start=2):  # line 1 is the header
            where = f"LongCap-Arena {path.name}:{n}"
            name, image = images.find(row[columns["image_name"]] or "", where)
            rows.append(
                {
                    "image_name": name,
                    "image": image,
                    "references": literal_list(row[columns["references"]], where),
                    "text": row[columns["text"]] or "",
                    "score": _number(row[columns["score"]], where),
                }
            )
    return rows


class _CsvImages:
    """The images of a CSV file, where CaptionEvalKit looks for them: an ``images/`` folder beside the file,
    beside its folder, or at the top of ``data_dir``; a bare ``imgid`` may lack its suffix (``.jpg`` …)."""

    SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")

    def __init__(self, path: Path, source: Path):
        name = src.LONGCAP_IMAGE_FOLDER
        candidates = (path.parent / name, path.parent.parent / name, source / name)
        self.folder = next((folder for folder in candidates if folder.is_dir()), None)
        if self.folder is None:
            logger.warning("No %s/ folder beside %s: the image column will be None.", name, path)

    def find(self, image_id: str, where: str) -> tuple[str, Path | None]:
        """``(image name, its file)``: the name as the Parquet layout has it (``.jpg`` added to a bare id, or
        the suffix the file has), the file ``None`` without an image folder."""
        if not image_id:
            raise DataError(f"{where}: no image id (imgid).")
        has_suffix = image_id.lower().endswith(self.SUFFIXES)
        if self.folder is None:
            return (image_id if has_suffix else image_id + ".jpg"), None
        for name in [image_id] if has_suffix else [image_id + s for s in self.SUFFIXES]:
            if (self.folder / name).is_file():
                return name, self.folder / name
        raise DataError(f"{where}: image {image_id!r} is missing from {str(self.folder)!r}: incomplete image folder.")


def literal_list(value: str | None, where: str) -> list[str]:
    r"""A reference list written into a CSV cell, as JSON or as a Python literal (``"['a', 'b']"``), read
    without evaluating code (``json``, then :func:`ast.literal_eval`).

    >>> literal_list("['A dog.', \"It's a cat.\"]", "x.csv:2"), literal_list('["a \\u00e9"]', "x.csv:3")
    (['A dog.', "It's a cat."], ['a é'])
    >>> literal_list("__import__('os')", "x.csv:4")
    Traceback (most recent call last):
    mmjudge.datasets._errors.DataError: x.csv:4: references "__import__('os')" are not a list of strings.
    """
    import ast
    import json

    parsed: Any = None
    try:
        parsed = json.loads(value or "")
    except ValueError:
        try:
            parsed = ast.literal_eval(value or "")
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            parsed = None
    if not isinstance(parsed, list) or not all(isinstance(r, str) for r in parsed):
        raise DataError(f"{where}: references {(value or '')[:60]!r} are not a list of strings.")
    return parsed


def _number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: score {value!r} is not a number.") from None


def criterion_files(root: Path, name: str) -> list[Path]:
    """Parquet files of one upstream split, e.g. ``dci_val.desc``: ``dci_val.desc.parquet``,
    ``dci_val.desc-00000-of-00001.parquet`` or ``dci_val.desc/*.parquet`` anywhere under ``root``."""
    pattern = re.compile(rf"^{re.escape(name)}([-_.].*)?\.parquet$")
    files = [p for p in root.rglob("*.parquet") if pattern.match(p.name) or p.parent.name == name]
    return sorted(files)


def published_counts(readme: Path) -> dict[str, int]:
    """``{split: num_examples}`` from a Hub README's ``dataset_info`` YAML, if any."""
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8")
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(
            r"-\s+name:\s*['\"]?([\w.]+)['\"]?\s*\n\s+num_bytes:\s*\d+\s*\n\s+num_examples:\s*(\d+)", text
        )
    }


def _image_cell(value: Any, name: str) -> dict[str, Any] | None:
    """An ``Image()`` cell from the Parquet layout's embedded image or the CSV layout's file."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):  # (not `Path`: `datasets` swaps a builder module's `Path` for its own class)
        data = Path(value).read_bytes()
    else:
        data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, (bytes, bytearray)):
        raise DataError(f"LongCap-Arena image for {name!r}: expected bytes, but got {type(data).__name__}.")
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.verify()
    except Exception as err:
        raise DataError(f"LongCap-Arena image {name!r} cannot be decoded ({err}).") from None
    return {"bytes": bytes(data), "path": name}


def to_human_judgments(dataset: Any) -> HumanJudgments:
    items, ratings = [], []
    for split, row in rows_of(dataset):
        items.append(
            {
                "id": row["id"],
                "task": "ic",
                "text": row["text"],
                "image": row["image"],
                "image_path": row["image_name"],
                "references": list(row["references"]),
                "split": split,
            }
        )
        for crit in src.LONGCAP_CRITERIA:
            ratings.append(
                {
                    "id": row["id"],
                    "task": "ic",
                    "criterion": crit,
                    "score": float(row[crit]),
                    "annotator": None,
                    "split": split,
                }
            )
    return HumanJudgments(
        name="longcap_arena", items=items, ratings=ratings, correlation="tau_c", criteria=list(src.LONGCAP_CRITERIA)
    )
