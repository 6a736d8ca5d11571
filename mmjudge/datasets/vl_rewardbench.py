"""VL-RewardBench (Li et al., CVPR 2025): 1,250 image–query pairs of two responses with the human-preferred one, from
the Hub Parquet file ``MMInstruction/VL-RewardBench`` (``data/test-00000-of-00001.parquet``). Each row is reported in
one of three groups, as the authors' ``cal.py`` maps its source dataset (:func:`group_of`).

>>> group_of("POVID", "x"), group_of("WildVision", "x"), group_of("MMMU-Pro", "x"), group_of("MathVerse", "x")
('hallucination', 'general', 'reasoning', 'reasoning')
>>> group_of(None, "hallucination_pair-12"), group_of("", "RLHF-V-3"), group_of(None, "vlf_7")
('hallucination', 'hallucination', 'general')
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, default_configs
from mmjudge.datasets._hub import hub_snapshot, split_files
from mmjudge.datasets._judge_files import parquet_rows, required_image, upstream_ids
from mmjudge.datasets._judge_pairs import pair_judgments
from mmjudge.datasets._layouts import parquet_files
from mmjudge.human_judgments import HumanJudgments


def dataset_of(query_source: str | None, row_id: str) -> str:
    """The source dataset of a row as ``cal.py`` names it: from ``query_source`` when it is a known source, else
    from the id's prefix (text before the first ``_`` or ``-``), ``vlfeedback`` for any other prefix."""
    key = re.sub(r"[^a-z0-9]", "", str(query_source or "").lower())
    if key in src.VLRB_SOURCES:
        return src.VLRB_SOURCES[key]
    prefix = re.split(r"[_-]", str(row_id), maxsplit=1)[0]
    return src.VLRB_ID_PREFIXES.get(prefix, src.VLRB_DEFAULT_DATASET)


def group_of(query_source: str | None, row_id: str) -> str:
    """The reported group (``general``, ``hallucination`` or ``reasoning``) of a row."""
    return src.VLRB_GROUPS[dataset_of(query_source, row_id)]


def preferred_index(ranking: Any, where: str) -> int:
    """The index of the preferred response from ``human_ranking`` (a rank per response, 0 the best).

    >>> preferred_index([0, 1], "r"), preferred_index([1, 0], "r")
    (0, 1)
    """
    if not isinstance(ranking, (list, tuple)) or len(ranking) != 2 or any(isinstance(r, bool) for r in ranking):
        raise DataError(f"{where}: expected `human_ranking` to be two ranks such as [0, 1], but got {ranking!r}.")
    try:
        first, second = (int(r) for r in ranking)
    except (TypeError, ValueError):
        raise DataError(
            f"{where}: expected `human_ranking` to be two ranks such as [0, 1], but got {ranking!r}."
        ) from None
    if first == second:
        raise DataError(f"{where}: `human_ranking` {ranking!r} ranks both responses the same; no preference.")
    return 0 if first < second else 1


class VLRewardBench(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "VL-RewardBench"
    DESCRIPTION = (
        "VL-RewardBench (Li et al., CVPR 2025), a benchmark of vision-language judges and reward models: 1,250 rows, "
        "each an image, a query, two responses and the one humans (or verified ground truth) prefer. Sources: "
        "WildVision and VLFeedback (reported as general), POVID, RLAIF-V and RLHF-V (hallucination), MMMU-Pro and "
        "MathVerse (reasoning). A row: `responses` (two texts), `preferred` (the index of the preferred one), "
        "`query_source` and the reported `group`."
    )
    CITATION = """@inproceedings{li2025vlrewardbench,
  title={VL-RewardBench: A Challenging Benchmark for Vision-Language Generative Reward Models},
  author={Li, Lei and Wei, Yuancheng and Xie, Zhihui and Yang, Xuqing and Song, Yifan and Wang, Peiyi and An, Chenxin
    and Liu, Tianyu and Li, Sujian and Lin, Bill Yuchen and Kong, Lingpeng and Liu, Qi},
  booktitle={CVPR}, year={2025}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.VLRB_REPO}"
    LICENSE = (
        "MIT (the Hub card's metadata); the card also says research use only, restricted by the licence agreements "
        "of the models whose outputs it holds"
    )
    SOURCE_FILES = (
        "the Hub Parquet file of `MMInstruction/VL-RewardBench` (`data/test-00000-of-00001.parquet`; any `*.parquet` "
        "under `data/` is read too). The images are inside the file"
    )
    KNOWN_ISSUES = (
        "`group` follows the authors' cal.py as of May 2025 (commit 91b241e): POVID counts as hallucination. Before "
        "that fix POVID rows fell through to general, so figures computed earlier may differ.",
        "`group` is read from `query_source`; a source cal.py does not know falls back to the id's prefix, as cal.py "
        "reads it (anything unknown counts as general, VLFeedback's group).",
        "The optional columns (`models`, `judge`, `rationale`, `meta`, …) were removed from the Hub file over time; "
        "only `id`, `query`, `response`, `image` and `human_ranking` are required, the rest is read when present.",
        "Ids are upstream's `id`; a repeated id gets `-2` (cal.py keys items by id, query and responses together).",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "query": datasets.Value("string"),
            "responses": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Image(),
            "preferred": datasets.Value("int32"),
            "human_ranking": datasets.Sequence(datasets.Value("int32")),
            "query_source": datasets.Value("string"),
            "group": datasets.Value("string"),
            "models": datasets.Sequence(datasets.Value("string")),
        }
    )
    DEFAULT_COUNTS = dict(src.VLRB_COUNTS)

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return hub_snapshot(src.VLRB_REPO, ["data/*.parquet", "README.md"])

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        self.detect_layout(source)
        files = split_files(source, ["test"]) or parquet_files(source / "data") or parquet_files(source)
        rows = []
        for where, raw in parquet_rows(files, src.VLRB_REQUIRED, src.VLRB_OPTIONAL, self.PRETTY_NAME):
            rows.append(self.row(raw, f"{self.PRETTY_NAME} {where} ({raw.get('id')!r})"))
        for row, row_id in zip(rows, upstream_ids(r["id"] for r in rows)):
            row["id"] = row_id
        return {"test": rows}

    def row(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        responses = raw["response"]
        if not isinstance(responses, list) or len(responses) != 2 or not all(isinstance(r, str) for r in responses):
            raise DataError(f"{where}: expected `response` to be two texts, but got {str(responses)[:80]!r}.")
        row_id = str(raw["id"])
        return {
            "id": row_id,
            "query": str(raw["query"] or ""),
            "responses": responses,
            "image": required_image(raw["image"], where, self.config.check_images),
            "preferred": preferred_index(raw["human_ranking"], where),
            "human_ranking": [int(r) for r in raw["human_ranking"]],
            "query_source": str(raw.get("query_source") or ""),
            "group": group_of(raw.get("query_source"), row_id),
            "models": [str(m) for m in raw.get("models") or []],
        }


def to_human_judgments(dataset: Any) -> HumanJudgments:
    """Two items per row (``<id>-0``, ``<id>-1``) and the human preference between them."""
    return pair_judgments("vl_rewardbench", dataset)
