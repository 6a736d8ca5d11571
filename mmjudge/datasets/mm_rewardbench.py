"""Multimodal RewardBench (Yasunaga, Zettlemoyer, Ghazvininejad 2025): (image, prompt, two responses, the better one)
triplets from ``data/all_data.json`` of ``facebookresearch/multimodal_rewardbench``, written with the images by its
``scripts/0_download_data.py`` (``data/all_data_release.json``, the committed file, is read when that was not run).

>>> reporting_category("safety", "pairs_12"), reporting_category("safety", "hateful_3")
('safety/bias', 'safety/toxicity')
>>> reporting_category("reasoning", "MathVista_7"), reporting_category("reasoning", "EMMA-Coding_2")
('reasoning/math', 'reasoning/coding')
>>> reporting_category("open_generation/correctness_task", "nocaps_1")
'open_generation/correctness_task'
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, default_configs
from mmjudge.datasets._judge_files import ImageFiles, read_json_list, record_field, text_field, upstream_ids
from mmjudge.datasets._judge_pairs import pair_judgments
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)


def reporting_category(category: str, record_id: str) -> str:
    """The category the authors' ``scripts/2_get_accuracy.py`` reports a record under: ``safety`` split into
    ``safety/bias`` (the lower-cased ID starts with ``pairs``) and ``safety/toxicity``, ``reasoning`` into
    ``reasoning/math`` (``math``) and ``reasoning/coding``; any other category as it is."""
    if category not in src.MMRB_SPLIT_CATEGORIES:
        return category
    prefix, matched, other = src.MMRB_SPLIT_CATEGORIES[category]
    return matched if record_id.lower().startswith(prefix) else other


class MMRewardBench(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "Multimodal RewardBench"
    DESCRIPTION = (
        "Multimodal RewardBench (Yasunaga et al. 2025), a benchmark of vision-language reward models and judges: "
        "(image, prompt, two responses, the better one) triplets over general correctness, general preference, "
        "knowledge, reasoning, safety and VQA — 5,211 in the paper, fewer in the public rebuild (see known issues). "
        "A row: `responses` (Output1, Output2), `preferred` (0 or 1, from `Better`), the upstream `category` and the "
        "`reporting_category` the authors' accuracy script reports it under."
    )
    CITATION = """@article{yasunaga2025multimodal,
  title={Multimodal RewardBench: Holistic Evaluation of Reward Models for Vision Language Models},
  author={Yasunaga, Michihiro and Zettlemoyer, Luke and Ghazvininejad, Marjan},
  journal={arXiv preprint arXiv:2502.14191}, year={2025}
}"""
    HOMEPAGE = src.MMRB_REPO
    LICENSE = (
        "CC BY-NC 4.0 (the repository's LICENSE); the images come from third-party data sets under their own "
        "licences (listed in the repository's README)"
    )
    SOURCE_FILES = (
        "`data/all_data.json` (or `data/all_data_release.json`) of github.com/facebookresearch/multimodal_rewardbench "
        "and the images its `scripts/0_download_data.py` writes to `data/images/<source>/` (the authors do not "
        "redistribute them: the script fetches them from NoCaps, VisIT-Bench, MMMU-Pro, MathVista, image2struct, "
        "RealWorldQA, MMBench, SEED-Bench, EMMA and PAIRS). Every record's image must be there"
    )
    KNOWN_ISSUES = (
        "No row count is enforced: the paper has 5,211 triplets, the README says 5,000, and the public rebuild lacks "
        "the Hateful Memes part of safety/toxicity (not processed for licence reasons), so it cannot match the paper.",
        "`data/all_data_release.json` lacks the prompts (`Text`) of several sources, which the download script fills "
        "in; read from it, those rows have an empty `query` (a warning counts them). Run the script.",
        "`preferred` follows `Better` strictly (Output1 -> 0, Output2 -> 1); the authors' judge script reads anything "
        "but Output2 as Output1, and any other value is refused here.",
        "Ids are upstream's `ID`; a repeated ID gets `-2`.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "query": datasets.Value("string"),
            "responses": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "preferred": datasets.Value("int32"),
            "category": datasets.Value("string"),
            "reporting_category": datasets.Value("string"),
        }
    )

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        _layout, paths = self.detect_layout(source)
        path = next(paths[name] for name in src.MMRB_FILES if name in paths)
        # `Image` is relative to data/ (the JSON file's folder); only the exact path is a match: file names such
        # as 0.jpg repeat across the sources' folders.
        images = ImageFiles(path.parent, ("", "data"), by_name=False)
        records = read_json_list(path, self.PRETTY_NAME)
        rows = [self.row(record, n, path, images) for n, record in enumerate(records)]
        empty = sum(not row["query"] for row in rows)
        if empty:
            logger.warning(
                "%s: %d of %d records have no prompt (Text) in %s; run the repository's scripts/0_download_data.py, "
                "which writes all_data.json with them.",
                self.PRETTY_NAME,
                empty,
                len(rows),
                path.name,
            )
        for row, row_id in zip(rows, upstream_ids(r["id"] for r in rows)):
            row["id"] = row_id
        return {"test": rows}

    def row(self, record: Any, n: int, path: Path, images: ImageFiles) -> dict[str, Any]:
        where = f"{self.PRETTY_NAME}: {path.name}: record {n}"
        record_id = text_field(record, ("ID",), where)
        where = f"{where} ({record_id!r})"
        for name in src.MMRB_REQUIRED:
            record_field(record, (name,), where)
        better = record["Better"]
        if better not in src.MMRB_BETTER:
            raise DataError(f"{where}: expected `Better` to be 'Output1' or 'Output2', but got {better!r}.")
        image_path = text_field(record, ("Image",), where)
        found = images.find(image_path)
        if found is None:
            raise DataError(
                f"{where}: its image {image_path!r} is missing from {str(path.parent)!r}; run the repository's "
                "scripts/0_download_data.py, which downloads the images into data/images/."
            )
        category = text_field(record, ("Category",), where)
        return {
            "id": record_id,
            "query": text_field(record, ("Text",), where, optional=True),
            "responses": [text_field(record, ("Output1",), where), text_field(record, ("Output2",), where)],
            "image": self.image(found),
            "image_path": image_path,
            "preferred": src.MMRB_BETTER[better],
            "category": category,
            "reporting_category": reporting_category(category, record_id),
        }


def to_human_judgments(dataset: Any) -> HumanJudgments:
    """Two items per row (``<id>-0``, ``<id>-1``) and the human preference between them."""
    return pair_judgments("mm_rewardbench", dataset)
