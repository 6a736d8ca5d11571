"""Multi-Crit (Xiong et al., CVPR 2026): human preferences between two responses to an image prompt, one row per
(prompt, response pair, criterion), from the Hub Parquet files of ``txiong23/Multi-Crit`` (``data/open_ended-*``,
``data/reasoning-*``). A prompt appears once per criterion, and humans may prefer different responses under
different criteria — the benchmark's point.

>>> preference("model_a", "r"), preference("model_b", "r"), preference("Tie", "r")
(0.0, 1.0, 0.5)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, default_configs
from mmjudge.datasets._hub import hub_snapshot, split_files
from mmjudge.datasets._judge_files import parquet_rows, required_image, upstream_ids
from mmjudge.datasets._judge_pairs import pair_judgments
from mmjudge.human_judgments import HumanJudgments


def preference(value: Any, where: str) -> float:
    """``model_a`` -> 0.0 (``pred_a`` preferred), ``model_b`` -> 1.0, a tie (``tie``, ``equal``, ``both``) -> 0.5."""
    key = str(value).strip().lower()
    if key not in src.MULTICRIT_PREFERENCES:
        raise DataError(f"{where}: expected `preference` 'model_a', 'model_b' or a tie, but got {value!r}.")
    return src.MULTICRIT_PREFERENCES[key]


class MultiCrit(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    SPLITS = src.MULTICRIT_SPLITS
    PRETTY_NAME = "Multi-Crit"
    DESCRIPTION = (
        "Multi-Crit (Xiong et al., CVPR 2026), a benchmark of multimodal judges following pluralistic criteria: "
        "human preferences between two responses to an image prompt, one per criterion — 1,000 rows in `open_ended` "
        "(completeness, visual grounding, factuality, creativity, clarity) and 425 in `reasoning` (visual grounding, "
        "logic, factuality, reflection, conciseness). A row: `responses` (pred_a, pred_b), `criterion`, "
        "`preferred` (0, 1, or 0.5 for a tie), `prompt_id` (the rows of one prompt share it)."
    )
    CITATION = """@inproceedings{xiong2026multicrit,
  title={Multi-Crit: Benchmarking Multimodal Judges on Pluralistic Criteria-Following},
  author={Xiong, Tianyi and others},
  booktitle={CVPR}, year={2026}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.MULTICRIT_REPO}"
    LICENSE = "Apache-2.0 (the Hub card's metadata)"
    SOURCE_FILES = (
        "the Hub Parquet files of `txiong23/Multi-Crit` (`data/open_ended-*.parquet`, `data/reasoning-*.parquet`, or a "
        "folder per split). The images are inside the files"
    )
    KNOWN_ISSUES = (
        "Ids are upstream's `question_id` (the prompt key and the criterion); a repeated one gets `-2`.",
        "Only `model_a` / `model_b` were seen as `preference` values; `tie`, `equal` and `both` are read as a tie "
        "(0.5), anything else is refused.",
        "The paper's prompt-level figures (PAcc, trade-off sensitivity, conflict matching) group rows by `prompt_id`; "
        "the flattened JSON Lines files of the authors' GitHub repository are not read.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "prompt_id": datasets.Value("string"),
            "query": datasets.Value("string"),
            "responses": datasets.Sequence(datasets.Value("string")),
            "models": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "criterion": datasets.Value("string"),
            "preference": datasets.Value("string"),
            "preferred": datasets.Value("float32"),
            "split": datasets.Value("string"),
        }
    )
    DEFAULT_COUNTS = dict(src.MULTICRIT_COUNTS)

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return hub_snapshot(src.MULTICRIT_REPO, ["data/*.parquet", "README.md"])

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        self.detect_layout(source)
        splits = {}
        for split in self.SPLITS:
            files = split_files(source, [split])
            if not files:
                continue
            wanted = (src.MULTICRIT_REQUIRED, src.MULTICRIT_OPTIONAL, self.PRETTY_NAME)
            rows = [self.row(raw, split, f"{self.PRETTY_NAME} {where}") for where, raw in parquet_rows(files, *wanted)]
            for row, row_id in zip(rows, upstream_ids(r["id"] for r in rows)):
                row["id"] = row_id
            splits[split] = rows
        if not splits:
            raise DataError(
                f"{self.PRETTY_NAME}: no open_ended-*.parquet or reasoning-*.parquet under {str(source)!r} (the Hub "
                f"files of {src.MULTICRIT_REPO})."
            )
        return splits

    def row(self, raw: dict[str, Any], split: str, where: str) -> dict[str, Any]:
        where = f"{where} ({raw['question_id']!r})"
        for column in ("question", "pred_a", "pred_b", "criterion"):
            if not isinstance(raw[column], str):
                raise DataError(f"{where}: expected `{column}` to be text, but got {type(raw[column]).__name__}.")
        return {
            "id": str(raw["question_id"]),
            "prompt_id": str(raw.get("prompt_id") or ""),
            "query": raw["question"],
            "responses": [raw["pred_a"], raw["pred_b"]],
            "models": [str(raw.get("model_a") or ""), str(raw.get("model_b") or "")],
            "image": required_image(raw.get("image"), where, self.config.check_images),
            "image_path": str(raw.get("image_path") or ""),
            "criterion": raw["criterion"],
            "preference": str(raw["preference"]),
            "preferred": preference(raw["preference"], where),
            "split": split,
        }


def to_human_judgments(dataset: Any) -> HumanJudgments:
    """Two items per row (``<id>-0``, ``<id>-1``) and the human preference under the row's criterion (its
    ``category``); ties are counted apart."""
    return pair_judgments("multi_crit", dataset)
