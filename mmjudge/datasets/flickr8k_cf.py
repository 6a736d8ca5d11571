"""Flickr8k-CF: CrowdFlower yes/no judgments of image–caption pairs; the score is the share of "yes".

>>> from mmjudge.datasets.flickr8k_cf import Flickr8kCF
>>> Flickr8kCF.PRETTY_NAME
'Flickr8k-CF'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.datasets import _sources as src
from mmjudge.datasets._flickr8k import Flickr8kBuilder, read_crowdflower_original, read_json
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments


class Flickr8kCF(Flickr8kBuilder):
    PRETTY_NAME = "Flickr8k-CF"
    DESCRIPTION = (
        "CrowdFlower judgments from Hodosh et al. (2013): at least three workers say whether a caption "
        "describes the image; the score is the share of yes votes (0–1). References are the image's captions "
        "minus any judged caption of that image (as in the widely used crowdflower_flickr8k.json)."
    )
    SOURCE_FILES = (
        "`CrowdFlowerAnnotations.txt` + `Flickr8k.token.txt`, or `crowdflower_flickr8k.json`, or the Hub Parquet "
        "files of `yuwd/Flickr8k-HumanEval` (configuration `crowdflower`, images inside); images in "
        "`Flicker8k_Dataset/` (optional)"
    )
    KNOWN_ISSUES = (
        "No upstream row count could be verified here, so counts are checked only when expected_counts is given.",
        "Papers report Kendall tau-b on this set (many tied scores).",
        "Hub Parquet copy (yuwd/Flickr8k-HumanEval, crowdflower): the columns CaptionEvalKit's loader reads; its "
        "references are taken as the file gives them.",
    )
    DEFAULT_COUNTS = dict(src.FLICKR8K_CF_COUNTS)
    PREFIX = "f8k-cf"
    SCALE = (0.0, 1.0)

    def read_rows(self, layout: str, paths: dict[str, Path]) -> list[dict[str, Any]]:
        if layout == "original":
            return read_crowdflower_original(paths)
        return read_json(paths[src.FLICKR8K_FILES["crowdflower_json"]], "f8k-cf", 0, 1, per_caption=None)


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("flickr8k_cf", dataset, correlation="tau_b", per_rating=True)
