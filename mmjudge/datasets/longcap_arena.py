"""LongCap-Arena (Matsuda et al., VELA): long captions of DCI images with long references and human
Descriptiveness / Relevance / Fluency scores. Upstream (Hub ``Ka2ukiMatsuda/LongCap-Arena``) keeps one
Parquet split per criterion (``dci_val.desc``, ``dci_val.rel``, ``dci_val.flu`` …); this builder joins the
three per (image, candidate) and fails if any candidate lacks a criterion.

>>> from mmjudge.datasets.longcap_arena import LongCapArena
>>> [c for c in LongCapArena.FEATURES if c in ("descriptiveness", "relevance", "fluency")]
['descriptiveness', 'relevance', 'fluency']
"""

from __future__ import annotations

import logging
import math
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
        "the Hub Parquet files (`<split>.<desc|rel|flu>*.parquet`, e.g. `dci_val.desc-00000-of-00001.parquet`)"
    )
    KNOWN_ISSUES = (
        "The paper's per-split sizes (11,971 / 1,309 / 294 / 324) are approximate; validation checks the "
        "Parquet row counts against the Hub's own metadata (README dataset_info) when it is present.",
        "Upstream prefixes of train/validation are assumed ('train', 'val'); testA = dci_val, testB = dci_test.",
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
        published = published_counts(source / "README.md")
        splits: dict[str, list[dict[str, Any]]] = {}
        for split, prefix in src.LONGCAP_SPLITS.items():
            tables = {
                crit: criterion_files(source, f"{prefix}.{short}") for crit, short in src.LONGCAP_CRITERIA.items()
            }
            present = [c for c, files in tables.items() if files]
            if not present:
                continue
            if len(present) != len(tables):
                missing = sorted(set(tables) - set(present))
                raise DataError(
                    f"LongCap-Arena {split} ({prefix}): files for {missing} are missing; the three criteria must all "
                    "be present."
                )
            splits[split] = self.join(split, prefix, tables, published)
        if not splits:
            raise DataError(f"No LongCap-Arena Parquet files (e.g. dci_val.desc*.parquet) under {str(source)!r}.")
        return splits

    def join(self, split: str, prefix: str, tables: dict[str, list[Path]], published: dict[str, int]) -> list[dict]:
        import pyarrow.parquet as pq

        by_criterion: dict[str, dict[tuple[str, str], dict]] = {}
        for crit, files in tables.items():
            rows = [r for f in files for r in pq.read_table(f).to_pylist()]
            upstream_name = f"{prefix}.{src.LONGCAP_CRITERIA[crit]}"
            if upstream_name in published:
                check_count(f"LongCap-Arena {upstream_name} rows (Hub metadata)", len(rows), published[upstream_name])
            keyed: dict[tuple[str, str], dict] = {}
            for n, row in enumerate(rows):
                missing = [c for c in COL.values() if c not in row]
                if missing:
                    raise DataError(f"LongCap-Arena {upstream_name} row {n}: missing columns {missing}.")
                key = (str(row[COL["image_name"]]), str(row[COL["text"]]))
                if key in keyed:
                    raise DataError(f"LongCap-Arena {upstream_name}: candidate for {key[0]!r} appears twice.")
                score = row[COL["score"]]
                if score is None or not math.isfinite(float(score)):
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
                    "image": _image_cell(base[COL["image"]], key[0]),
                    "references": [str(r) for r in base[COL["references"]] or []],
                    "text": key[1],
                    **{crit: float(by_criterion[crit][key][COL["score"]]) for crit in src.LONGCAP_CRITERIA},
                }
            )
        return rows


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
    if value is None:
        return None
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
