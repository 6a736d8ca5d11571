"""Composite (Aditya et al. 2018): AMT correctness ratings (1–5) of captions for Flickr8k, Flickr30k and
COCO images. One row per judged caption, read from the release's CSVs or from ``composite.json`` (FLEUR's
``annotations/``, ``{subset: [{"image", "caption", "human"}]}``) with the same rows and ids; references are
the other captions judged for the same image.

>>> from mmjudge.datasets.composite import Composite
>>> Composite.PRETTY_NAME
'Composite'
"""

from __future__ import annotations

import csv
import logging
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import (
    BenchmarkBuilder,
    DataError,
    ImageLocator,
    check_range,
    content_ids,
    default_configs,
    embedded_image,
    load_json,
    squash,
)
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)
CSV = src.COMPOSITE_CSV
JSON = src.COMPOSITE_JSON


class Composite(BenchmarkBuilder):
    # 1.1.0: the same rows from the original release or the preprocessed JSON (ids from content)
    BUILDER_CONFIGS = default_configs("1.1.0")
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
    SOURCE_FILES = (
        "`8k_correctness.csv`, `30k_correctness.csv`, `coco_correctness.csv` (`;`-separated AMT exports), or "
        "`composite.json`, or the Hub Parquet files of `yuwd/Composite` (images inside); images in "
        "`Flicker8k_Dataset/`, `flickr30k_images/`, `val2014/` (optional)"
    )
    KNOWN_ISSUES = (
        "Rows whose rating is empty are dropped (the reference code drops them too); the count is logged.",
        "References are the other captions judged for the same image in the same subset, the candidate itself "
        "excluded (public evaluation code often keeps it, inflating reference-based metrics).",
        "Ids come from (subset, image, caption), so both layouts give the same ids; a repeated caption gets `-2`.",
        "No exact upstream row count could be verified here.",
        "Hub Parquet copy (yuwd/Composite): the columns CaptionEvalKit's loader reads (imgid / file_name, img, "
        "cand / mt, refs, human_score); the subset comes from the image's file name (COCO_val2014_*, "
        "<digits>_<hex>.jpg Flickr8k, <digits>.jpg Flickr30k) and the file's `refs` are not used, so the rows and "
        "ids are the other layouts'.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "subset": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "text": datasets.Value("string"),
            "references": datasets.Sequence(datasets.Value("string")),
            "score": datasets.Value("float32"),
        }
    )

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        from mmjudge.datasets._layouts import parquet_files

        layout, paths = self.detect_layout(source)
        if layout.parquet is not None:
            judged, embedded = self.read_parquet(parquet_files(source, layout.parquet))
            return {"test": self.rows(source, judged, embedded)}
        judged = self.read_csvs(paths) if layout.name == "original" else self.read_json(paths[JSON["file"]])
        return {"test": self.rows(source, judged)}

    def read_parquet(self, files: list[Path]) -> tuple[list[tuple[str, str, str, float]], dict]:
        """The Hub copy (``yuwd/Composite``): one row per judged caption, the image inside. Its subset is read
        from the image's file name (``COCO_val2014_*`` is COCO, ``<digits>_<hex>.jpg`` Flickr8k, ``<digits>.jpg``
        Flickr30k); its ``refs`` are not used: references are built as in the other layouts (the other captions
        judged for the image), so a metric sees the same inputs whichever copy it reads."""
        from mmjudge.datasets._hub import read_hub_parquet

        judged, embedded, dropped = [], {}, 0
        for n, hub in enumerate(read_hub_parquet(files)):
            subset = composite_subset(hub.image_name, f"{files[0].name} row {n}")
            if math.isnan(hub.score):
                dropped += 1  # as the CSV layout drops unrated rows
                continue
            judged.append((subset, hub.image_name, hub.text, check_range(hub.score, 1, 5, f"{hub.image_name}")))
            embedded.setdefault((subset, hub.image_name), hub.image)
        if dropped:
            logger.warning("Composite Parquet: dropped %d captions without a rating.", dropped)
        # The CSV layout's subset order, the file's order within a subset.
        order = list(src.COMPOSITE_FILES)
        judged.sort(key=lambda j: order.index(j[0]))
        return judged, embedded

    # Both readers yield (subset, image file name, caption, score) in file order; `rows` does the rest.
    def read_csvs(self, paths: dict[str, Path]) -> list[tuple[str, str, str, float]]:
        judged = []
        for subset, (file_name, n_texts, _folder) in src.COMPOSITE_FILES.items():
            if file_name not in paths:
                logger.warning("Composite: %s not found, subset %s skipped.", file_name, subset)
                continue
            judged += self.read_csv(paths[file_name], subset, n_texts)
        return judged

    def read_csv(self, path: Path, subset: str, n_texts: int) -> list[tuple[str, str, str, float]]:
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter=CSV["sep"])
            needed = [
                CSV["image_url"],
                *(CSV["text"].format(i) for i in range(1, n_texts + 1)),
                *(CSV["answer"].format(i) for i in range(1, n_texts + 1)),
            ]
            missing = [c for c in needed if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{path.name}: missing columns {missing}.")
            judged, dropped = [], 0
            for n, record in enumerate(reader, 2):
                values = [record.get(c) for c in needed]
                if any(v is None or not str(v).strip() for v in values):
                    dropped += 1
                    continue
                image_name = Path(record[CSV["image_url"]]).name
                for i in range(1, n_texts + 1):
                    score = check_range(record[CSV["answer"].format(i)], 1, 5, f"{path.name}:{n}")
                    judged.append((subset, image_name, squash(record[CSV["text"].format(i)]), score))
        if dropped:
            logger.warning("%s: dropped %d rows with empty cells.", path.name, dropped)
        return judged

    def read_json(self, path: Path) -> list[tuple[str, str, str, float]]:
        data = load_json(path)
        if not isinstance(data, dict) or not data:
            raise DataError(
                f"{path.name}: expected {{subset: [samples]}} with subsets {list(src.COMPOSITE_FILES)}, "
                f"but got {type(data).__name__}."
            )
        unknown = [k for k in data if k not in src.COMPOSITE_FILES]
        if unknown:
            raise DataError(f"{path.name}: expected subsets among {list(src.COMPOSITE_FILES)}, but got {unknown}.")
        judged, dropped = [], 0
        for subset in src.COMPOSITE_FILES:  # the CSV layout's order, whatever the file's key order
            for n, sample in enumerate(data.get(subset, [])):
                where = f"{path.name}: {subset}[{n}]"
                needed = (JSON["image"], JSON["text"], JSON["score"])
                if not isinstance(sample, dict) or any(k not in sample for k in needed):
                    raise DataError(
                        f"{where}: expected an object with {JSON['image']!r}, {JSON['text']!r} and "
                        f"{JSON['score']!r}, but got {str(sample)[:80]!r}."
                    )
                score = sample[JSON["score"]]
                if score is None or (isinstance(score, float) and math.isnan(score)):
                    dropped += 1  # the CSV layout drops unrated rows too
                    continue
                judged.append(
                    (
                        subset,
                        Path(str(sample[JSON["image"]])).name,
                        squash(sample[JSON["text"]]),
                        check_range(score, 1, 5, where),
                    )
                )
        if dropped:
            logger.warning("%s: dropped %d captions without a rating.", path.name, dropped)
        return judged

    def rows(
        self, source: Path, judged: list[tuple[str, str, str, float]], embedded: dict | None = None
    ) -> list[dict[str, Any]]:
        """One row per judged caption. References: the other captions judged for the same image in the same
        subset (the candidate itself excluded); ids from (subset, image, caption). ``embedded``: the images a
        Parquet copy holds, by (subset, image)."""
        captions: dict[tuple[str, str], list[str]] = defaultdict(list)
        for subset, image_name, text, _score in judged:
            captions[(subset, image_name)].append(text)
        locators = {
            subset: ImageLocator(source, folders, f"Composite {subset} images")
            for subset, folders in src.COMPOSITE_IMAGE_FOLDERS.items()
            if embedded is None and any(j[0] == subset for j in judged)
        }
        images: dict[tuple[str, str], dict | None] = {}
        rows = []
        for subset in src.COMPOSITE_FILES:
            mine = [j for j in judged if j[0] == subset]
            ids = content_ids(f"composite-{subset}", [(image_name, text) for _, image_name, text, _ in mine])
            for row_id, (_, image_name, text, score) in zip(ids, mine):
                key = (subset, image_name)
                if key not in images:
                    images[key] = (
                        embedded_image(embedded.get(key), image_name, self.config.check_images)
                        if embedded is not None
                        else self.image(locators[subset](image_name))
                    )
                others = list(captions[key])
                others.remove(text)
                rows.append(
                    {
                        "id": row_id,
                        "subset": subset,
                        "image": images[key],
                        "image_path": f"{src.COMPOSITE_FILES[subset][2]}/{image_name}",
                        "text": text,
                        "references": others,
                        "score": score,
                    }
                )
        return rows


def composite_subset(image_name: str, where: str) -> str:
    """The Composite subset an image belongs to, from its file name (the Hub copy has no subset column).

    >>> [composite_subset(n, "x") for n in ("COCO_val2014_000000000042.jpg", "1000268201_693b08cb0e.jpg", "36979.jpg")]
    ['coco', 'flickr8k', 'flickr30k']
    """
    if image_name.startswith("COCO_"):
        return "coco"
    if re.fullmatch(r"\d+_[0-9a-f]+\.jpg", image_name):
        return "flickr8k"
    if re.fullmatch(r"\d+\.jpg", image_name):
        return "flickr30k"
    raise DataError(f"{where}: cannot tell the Composite subset of image {image_name!r} from its name.")


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("composite", dataset, correlation="tau_c", per_rating=False)
