"""Polaris (Wada et al., Polos): human judgments of image captions, on the Hub as Parquet (``yuwd/Polaris``:
``refs``, ``cand``, ``img``, ``human_score``; the image's name from ``imgid`` or the image's path).

>>> from mmjudge.datasets.polaris import Polaris
>>> Polaris.PRETTY_NAME, Polaris.SPLITS
('Polaris', ('train', 'validation', 'test'))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import default_configs
from mmjudge.datasets._hub import HubCaptionBuilder, hub_snapshot
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments


class Polaris(HubCaptionBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "Polaris"
    ID_PREFIX = "polaris"
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

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return hub_snapshot(src.POLARIS_REPO, ["*.parquet", "README.md"])


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("polaris", dataset, correlation="tau_c", per_rating=False)
