"""Composite (Aditya et al. 2018): AMT correctness ratings (1–5) of captions for Flickr8k, Flickr30k and
COCO images. One row per (image, caption); references are the other captions shown with it.

>>> from mmjudge.datasets.composite import Composite
>>> Composite.PRETTY_NAME
'Composite'
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, check_range, image_folder, squash, stable_id
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)
CSV = src.COMPOSITE_CSV


class Composite(BenchmarkBuilder):
    PRETTY_NAME = "Composite"
    DESCRIPTION = (
        "Composite dataset of Aditya et al. (2018): Amazon Mechanical Turk workers rated the correctness of "
        "human and machine captions (1–5) for images from Flickr8k, Flickr30k and COCO."
    )
    CITATION = """@article{aditya2018image,
  title={From Images to Sentences through Scene Description Graphs using Commonsense Reasoning and Knowledge},
  author={Aditya, Somak and Yang, Yezhou and Baral, Chitta and Aloimonos, Yiannis and Fermuller, Cornelia},
  journal={arXiv preprint arXiv:1511.03292}, year={2015}
}"""
    HOMEPAGE = src.COMPOSITE_HOMEPAGE
    LICENSE = "research use (see the authors' page); images under their sources' terms"
    SOURCE_FILES = "`8k_correctness.csv`, `30k_correctness.csv`, `coco_correctness.csv` (`;`-separated AMT exports); images optional"
    KNOWN_ISSUES = (
        "Rows whose rating is empty are dropped (the reference code drops them too); the count is logged.",
        "References exclude the candidate itself (public evaluation code often keeps it, inflating reference-based metrics).",
        "No exact upstream row count could be verified here.",
    )
    FEATURES = datasets.Features({
        "id": datasets.Value("string"),
        "subset": datasets.Value("string"),
        "image": datasets.Image(),
        "image_path": datasets.Value("string"),
        "text": datasets.Value("string"),
        "references": datasets.Sequence(datasets.Value("string")),
        "score": datasets.Value("float32"),
    })

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        rows: list[dict[str, Any]] = []
        found = 0
        for subset, (file_name, n_texts, folder_name) in src.COMPOSITE_FILES.items():
            path = next((p for p in (source / file_name, *source.rglob(file_name)) if p.is_file()), None)
            if path is None:
                logger.warning("Composite: %s not found, subset %s skipped.", file_name, subset)
                continue
            found += 1
            rows.extend(self.read_subset(source, path, subset, n_texts, image_folder(source, folder_name)))
        if not found:
            raise DataError(f"Expected Composite CSVs ({', '.join(f for f, _, _ in src.COMPOSITE_FILES.values())}) under {str(source)!r}.")
        return {"test": rows}

    def read_subset(self, root: Path, path: Path, subset: str, n_texts: int, images: Path | None) -> list[dict]:
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter=CSV["sep"])
            needed = [CSV["image_url"], *(CSV["text"].format(i) for i in range(1, n_texts + 1)),
                      *(CSV["answer"].format(i) for i in range(1, n_texts + 1))]
            missing = [c for c in needed if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{path.name}: missing columns {missing}.")
            rows, dropped = [], 0
            for n, record in enumerate(reader, 2):
                values = [record.get(c) for c in needed]
                if any(v is None or not str(v).strip() for v in values):
                    dropped += 1
                    continue
                image_name = Path(record[CSV["image_url"]]).name
                texts = [squash(record[CSV["text"].format(i)]) for i in range(1, n_texts + 1)]
                image = self.image(images / image_name) if images else None
                for i, text in enumerate(texts):
                    score = check_range(record[CSV["answer"].format(i + 1)], 1, 5, f"{path.name}:{n}")
                    rows.append({
                        "id": stable_id(f"composite-{subset}", image_name, i, text), "subset": subset,
                        "image": image, "image_path": f"{images.name if images else ''}/{image_name}".lstrip("/"),
                        "text": text, "references": texts[:i] + texts[i + 1:], "score": score,
                    })
        if dropped:
            logger.warning("%s: dropped %d rows with empty cells.", path.name, dropped)
        return rows


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("composite", dataset, correlation="tau_c", per_rating=False)
