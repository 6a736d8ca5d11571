"""Flickr8k-Expert: 5,664 image–caption pairs, each rated 1–4 by three experts (16,992 judgments).

>>> from mmjudge.datasets.flickr8k_expert import Flickr8kExpert
>>> Flickr8kExpert.FEATURES["ratings"].feature.dtype
'float32'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.datasets import _sources as src
from mmjudge.datasets._flickr8k import Flickr8kBuilder, read_expert_original, read_json
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments


class Flickr8kExpert(Flickr8kBuilder):
    PRETTY_NAME = "Flickr8k-Expert"
    DESCRIPTION = (
        "Expert judgments of image–caption relevance from Hodosh et al. (2013): each caption retrieved for an "
        "image is rated 1 (unrelated) to 4 (describes the image) by three experts. Pairs whose caption is one "
        "of the image's own five captions are dropped, as in SPICE/CLIPScore, leaving 5,664 pairs and 16,992 "
        "judgments; references are the image's five captions."
    )
    SOURCE_FILES = (
        "`ExpertAnnotations.txt` + `Flickr8k.token.txt`, or `flickr8k.json`, or the Hub Parquet files of "
        "`yuwd/Flickr8k-HumanEval` (configuration `expert`, images inside); images in `Flicker8k_Dataset/` (optional)"
    )
    KNOWN_ISSUES = (
        "Images are not redistributable: supply them in data_dir/Flicker8k_Dataset/ or the image column is None.",
        "Kendall tau-c over one row per judgment is the customary protocol (a candidate's score repeats 3 times).",
        "Hub Parquet copy (yuwd/Flickr8k-HumanEval, expert): read with the columns CaptionEvalKit's loader reads "
        "(imgid / file_name, img, cand / mt, refs, human_score); a caption's rows become its ratings, so one row per "
        "judgment gives the same rows and ids as the other layouts. A copy with one mean score per caption would "
        "give 5,664 rows of one rating each (a warning says when scores leave the 1-4 scale).",
    )
    DEFAULT_COUNTS = dict(src.FLICKR8K_EXPERT_COUNTS)

    def read_rows(self, layout: str, paths: dict[str, Path]) -> list[dict[str, Any]]:
        if layout == "original":
            return read_expert_original(paths)
        return read_json(paths[src.FLICKR8K_FILES["expert_json"]], "f8k-ex", 1, 4, per_caption=3)


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("flickr8k_expert", dataset, correlation="tau_c", per_rating=True)
