"""Polaris (Wada et al., Polos): human judgments of image captions, on the Hub as Parquet (``yuwd/Polaris``:
``refs``, ``cand``, ``img``, ``human_score``; the image's name from ``imgid`` or the image's path).

>>> from mmjudge.datasets.polaris import Polaris
>>> Polaris.PRETTY_NAME, Polaris.SPLITS
('Polaris', ('train', 'validation', 'test'))
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, content_ids, default_configs, embedded_image
from mmjudge.datasets._hub import hub_snapshot, read_hub_parquet, split_files
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments


class Polaris(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "Polaris"
    SPLITS = tuple(src.HUB_SPLITS)
    DESCRIPTION = (
        "Polaris, the human-judgment set of the Polos paper (Wada et al., CVPR 2024): captions of images with "
        "reference captions and a human score per caption (train / validation / test)."
    )
    CITATION = """@inproceedings{wada2024polos,
  title={Polos: Multimodal Metric Learning from Human Feedback for Image Captioning},
  author={Wada, Yuiga and Kaneda, Kanta and Saito, Daichi and Sugiura, Komei},
  booktitle={CVPR}, year={2024}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.POLARIS_REPO}"
    LICENSE = "see the Hub dataset card of yuwd/Polaris"
    SOURCE_FILES = "the Hub Parquet files of `yuwd/Polaris` (`<split>-*.parquet` or a folder per split; images inside)"
    KNOWN_ISSUES = (
        "Columns as CaptionEvalKit's loader reads them (refs, cand, img, human_score; the image's name from imgid "
        "or the image's path); ids come from (split, image name, caption).",
        "No upstream row count could be verified here; Kendall tau-c is the usual measure.",
    )
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

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return hub_snapshot(src.POLARIS_REPO, ["*.parquet", "README.md"])

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        splits = {}
        for split, names in src.HUB_SPLITS.items():
            files = split_files(source, names)
            if not files:
                continue
            hub = [row for row in read_hub_parquet(files) if not math.isnan(row.score)]
            ids = content_ids(f"polaris-{split}", [(r.image_name, r.text) for r in hub])
            splits[split] = [
                {
                    "id": row_id,
                    "image": embedded_image(row.image, row.image_name, self.config.check_images),
                    "image_path": row.image_name,
                    "text": row.text,
                    "references": row.references,
                    "score": row.score,
                }
                for row_id, row in zip(ids, hub)
            ]
        if not splits:
            raise DataError(f"No Polaris Parquet files (test-*.parquet, …) under {str(source)!r}.")
        return splits


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("polaris", dataset, correlation="tau_c", per_rating=False)
