"""Flickr8k-Expert and Flickr8k-CF share one reader: the original Hodosh et al. text files
(``Flickr8k.token.txt`` + ``ExpertAnnotations.txt`` / ``CrowdFlowerAnnotations.txt``) or the widely used
JSON layout (``flickr8k.json`` / ``crowdflower_flickr8k.json``, as FLEUR and PAC-S read them: image key ->
``image_path``, ``ground_truth`` references and a ``human_judgement`` list of {image_id, image_path,
caption, rating}). Both layouts yield the same rows — ids from (image file, caption), ``image_path``
always ``Flicker8k_Dataset/<file>`` whatever folder a copy names — so numbers do not depend on which
copy a user has."""

from __future__ import annotations

import logging
import math
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import (
    BenchmarkBuilder,
    DataError,
    ImageLocator,
    check_count,
    check_range,
    default_configs,
    embedded_image,
    load_json,
    squash,
    stable_id,
)

logger = logging.getLogger(__name__)

CITATION = """@article{hodosh2013framing,
  title={Framing Image Description as a Ranking Task: Data, Models and Evaluation Metrics},
  author={Hodosh, Micah and Young, Peter and Hockenmaier, Julia},
  journal={Journal of Artificial Intelligence Research}, volume={47}, pages={853--899}, year={2013}
}"""

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "image_id": datasets.Value("string"),
        "image": datasets.Image(),
        "image_path": datasets.Value("string"),
        "text": datasets.Value("string"),
        "references": datasets.Sequence(datasets.Value("string")),
        "ratings": datasets.Sequence(datasets.Value("float32")),
        "score": datasets.Value("float32"),
    }
)


def read_tokens(path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``image.jpg -> [5 captions]`` and ``image.jpg#n -> caption`` from Flickr8k.token.txt."""
    refs: dict[str, list[str]] = defaultdict(list)
    by_id: dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        caption_id, sep, caption = line.partition("\t")
        if not sep or "#" not in caption_id:
            raise DataError(f"{path.name}:{n}: expected 'image.jpg#k<TAB>caption', but got {line[:80]!r}.")
        refs[caption_id.split("#")[0]].append(squash(caption))
        by_id[caption_id] = squash(caption)
    return dict(refs), by_id


def read_table(path: Path, columns: int) -> list[list[str]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cells = line.rstrip("\n").split("\t")
        if len(cells) != columns:
            raise DataError(f"{path.name}:{n}: expected {columns} tab-separated columns, but got {len(cells)}.")
        rows.append(cells)
    return rows


def _row(prefix: str, image_file: str, caption: str, refs: list[str], ratings: list[float]) -> dict:
    return {
        "id": stable_id(prefix, image_file, caption),
        "image_id": image_file.rsplit(".", 1)[0],
        "image_path": f"{src.FLICKR8K_FILES['images']}/{image_file}",
        "text": caption,
        "references": list(refs),
        "ratings": ratings,
        "score": sum(ratings) / len(ratings),
    }


def by_image(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows grouped by image in order of first appearance (a stable sort), the order of the JSON layout,
    which keys its entries by image."""
    first: dict[str, int] = {}
    for k, row in enumerate(rows):
        first.setdefault(row["image_id"], k)
    return sorted(rows, key=lambda row: first[row["image_id"]])


def read_expert_original(paths: dict[str, Path]) -> list[dict[str, Any]]:
    refs, by_id = read_tokens(paths[src.FLICKR8K_FILES["token"]])
    rows = []
    for n, (image_file, caption_id, *scores) in enumerate(read_table(paths[src.FLICKR8K_FILES["expert"]], 5), 1):
        if caption_id not in by_id or image_file not in refs:
            raise DataError(
                f"ExpertAnnotations.txt:{n}: caption {caption_id!r} or image {image_file!r} is not in "
                "Flickr8k.token.txt."
            )
        caption = by_id[caption_id]
        if caption in refs[image_file]:  # the image's own caption: dropped (SPICE / CLIPScore protocol)
            continue
        ratings = [check_range(s, 1, 4, f"ExpertAnnotations.txt:{n}") for s in scores]
        rows.append(_row("f8k-ex", image_file, caption, refs[image_file], ratings))
    return by_image(rows)


def read_crowdflower_original(paths: dict[str, Path]) -> list[dict[str, Any]]:
    refs, by_id = read_tokens(paths[src.FLICKR8K_FILES["token"]])
    table = read_table(paths[src.FLICKR8K_FILES["crowdflower"]], 5)
    # The JSON layout removes every judged caption of an image from that image's references; do the same.
    image_refs = {image: list(r) for image, r in refs.items()}
    for n, (image_file, caption_id, *_rest) in enumerate(table, 1):
        if caption_id not in by_id or image_file not in refs:
            raise DataError(
                f"CrowdFlowerAnnotations.txt:{n}: caption {caption_id!r} or image {image_file!r} is not in "
                "Flickr8k.token.txt."
            )
        if by_id[caption_id] in image_refs[image_file]:
            image_refs[image_file].remove(by_id[caption_id])
    # A caption judged on two lines becomes one row with two shares, as the JSON layout (grouped by
    # image and caption) reads it.
    shares: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
    for n, (image_file, caption_id, share, yes, no) in enumerate(table, 1):
        share_f = check_range(share, 0, 1, f"CrowdFlowerAnnotations.txt:{n}")
        if int(yes) + int(no) == 0 or abs(share_f - int(yes) / (int(yes) + int(no))) > 1e-4:
            raise DataError(
                f"CrowdFlowerAnnotations.txt:{n}: share of yes {share!r} disagrees with {yes} yes / {no} no."
            )
        shares.setdefault((image_file, by_id[caption_id]), []).append(share_f)
    rows = [
        _row("f8k-cf", image_file, caption, image_refs[image_file], values)
        for (image_file, caption), values in shares.items()
    ]
    return by_image(rows)


JSON_LAYOUT = 'an object {image key: {"ground_truth": [...], "human_judgement": [...]}} (FLEUR\'s layout)'
JUDGEMENT_KEYS = ("image_path", "caption", "rating")


def read_json(path: Path, prefix: str, low: float, high: float, per_caption: int | None) -> list[dict[str, Any]]:
    data = load_json(path, dict, JSON_LAYOUT)
    rows, skipped = [], 0
    for key, entry in data.items():
        if not isinstance(entry, dict) or "human_judgement" not in entry or "ground_truth" not in entry:
            raise DataError(f"{path.name}: entry {key!r} lacks 'human_judgement' / 'ground_truth'.")
        judgements, refs = entry["human_judgement"], entry["ground_truth"]
        if not isinstance(judgements, list) or not isinstance(refs, list):
            raise DataError(f"{path.name}: entry {key!r}: expected lists for 'human_judgement' and 'ground_truth'.")
        grouped: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        for j in judgements:
            if not isinstance(j, dict) or any(k not in j for k in JUDGEMENT_KEYS):
                raise DataError(
                    f"{path.name}: entry {key!r}: expected judgements with {', '.join(JUDGEMENT_KEYS)}, but got "
                    f"{str(j)[:80]!r}."
                )
            try:
                rating = float(j["rating"])
            except (TypeError, ValueError):
                raise DataError(f"{path.name}: entry {key!r}: rating {j['rating']!r} is not a number.") from None
            if math.isnan(rating):
                skipped += 1
                continue
            grouped.setdefault((Path(j["image_path"]).name, squash(j["caption"])), []).append(
                check_range(rating, low, high, f"{path.name}: {key!r}")
            )
        refs = [squash(r) for r in refs]
        for (image_file, caption), ratings in grouped.items():
            if per_caption is not None and len(ratings) != per_caption:
                raise DataError(
                    f"{path.name}: caption {caption[:40]!r} of {key!r} has {len(ratings)} ratings, expected "
                    f"{per_caption}."
                )
            rows.append(_row(prefix, image_file, caption, refs, ratings))
    if skipped:
        logger.warning("%s: skipped %d NaN ratings (as the reference protocol does).", path.name, skipped)
    return rows


def read_hub(files: list[Path], prefix: str, low: float, high: float) -> list[dict[str, Any]]:
    """The Hub Parquet copy (``yuwd/Flickr8k-HumanEval``): rows of (image, caption, references, score), one
    per judgment or one per caption; a caption's rows become one row with their scores as its ratings, in the
    order the file gives them (grouped by image, as the JSON layout is). A score outside the upstream scale is
    kept, with a warning (a rescaled copy changes no rank correlation, but its scores differ from the other
    layouts')."""
    from mmjudge.datasets._hub import read_hub_parquet

    grouped: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
    skipped, outside = 0, 0
    for hub in read_hub_parquet(files):
        if math.isnan(hub.score):
            skipped += 1
            continue
        outside += not low <= hub.score <= high
        entry = grouped.setdefault(
            (hub.image_name, hub.text), {"references": hub.references, "ratings": [], "image": hub.image}
        )
        entry["ratings"].append(hub.score)
    if skipped:
        logger.warning("%s: skipped %d rows without a score.", files[0].parent.name, skipped)
    if outside:
        logger.warning(
            "%s: %d scores lie outside the upstream scale [%g, %g].", files[0].parent.name, outside, low, high
        )
    rows = []
    for (image_file, caption), entry in grouped.items():
        row = _row(prefix, image_file, caption, entry["references"], entry["ratings"])
        row["image"] = entry["image"]
        rows.append(row)
    return by_image(rows)


class Flickr8kBuilder(BenchmarkBuilder):
    # 1.1.0: the same rows from the original release or the preprocessed JSON (ids from content)
    BUILDER_CONFIGS = default_configs("1.1.0")
    FEATURES = FEATURES
    CITATION = CITATION
    HOMEPAGE = "https://hockenmaier.cs.illinois.edu/8k-pictures.html"
    LICENSE = "Flickr8k terms of use (research only; images may not be redistributed)"
    KIND = "expert"
    PREFIX = "f8k-ex"
    SCALE = (1.0, 4.0)

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return Path(dl_manager.download_and_extract(src.FLICKR8K_URLS["text_zip"]))

    def read_rows(self, layout: str, paths: dict[str, Path]) -> list[dict[str, Any]]:  # pragma: no cover - per subclass
        raise NotImplementedError

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        from mmjudge.datasets._layouts import parquet_files

        layout, paths = self.detect_layout(source)
        if layout.parquet is not None:
            rows = read_hub(parquet_files(source, layout.parquet), self.PREFIX, *self.SCALE)
        else:
            rows = self.read_rows(layout.name, paths)
        judgments = self.expected_counts.get("judgments")
        if judgments is not None:
            check_count(f"{self.name} judgments", sum(len(r["ratings"]) for r in rows), judgments)
        if layout.parquet is not None:  # images come inside the files
            for row in rows:
                row["image"] = embedded_image(row["image"], row["image_path"], self.config.check_images)
            return {"test": rows}
        locate = ImageLocator(source, src.FLICKR8K_IMAGE_FOLDERS, "Flickr8k images")
        for row in rows:
            row["image"] = self.image(locate(row["image_path"]))
        return {"test": rows}
