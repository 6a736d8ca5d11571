"""DetailCaps-4870 (Dong et al. 2024, the CAPTURE paper): 4,870 images with three detailed reference captions
(GPT-4o, GPT-4V, Gemini-1.5-Pro), three models' detailed captions (CogVLM, ShareCaptioner, LLaVA-1.5) and
GPT-4's score of each, which the dataset card calls the expert judgements a caption metric is compared with.

Upstream (Hub ``foundation-multimodal-models/DetailCaps-4870``) is one Parquet file (``DetailCaps-4870.parquet``,
split ``test``) with one row per image: ``image`` (where the image comes from: a COCO/Flickr path, a URL, a SAM
id), ``source``, ``binary`` (the image's bytes), ``GT_Caption_GPT4O``, ``GT_Caption_GPT4V``,
``GT_Caption_Gemini15Pro``, ``CogVLM``, ``ShareCaptioner``, ``LLaVA_v15`` and ``GPT4_Eval`` (a JSON object
``{"CogVLM": s, "ShareCaptioner": s, "LLaVA_v15": s}``, sometimes empty). This builder gives one row per (image,
candidate) that has a score.

>>> from mmjudge.datasets.detailcaps import DetailCaps
>>> DetailCaps.SPLITS, [c for c in DetailCaps.FEATURES if c in ("model", "score")]
(('test',), ['model', 'score'])
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, content_ids, default_configs, embedded_image, squash
from mmjudge.datasets._hub import hub_snapshot
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)
COL = src.DETAILCAPS_COLUMNS
_UNCHECKED = object()


class DetailCaps(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "DetailCaps-4870"
    SPLITS = ("test",)
    DESCRIPTION = (
        "DetailCaps-4870, the detailed-caption benchmark of the CAPTURE paper (Dong et al. 2024): images from COCO, "
        "SAM, LAION, CC, SBU, Coyo and Flickr with three detailed reference captions (GPT-4o, GPT-4V, Gemini-1.5-Pro) "
        "and the detailed captions of CogVLM, ShareCaptioner and LLaVA-1.5, each with a GPT-4 score (the card's "
        "expert judgements). One row per (image, candidate) with a score."
    )
    CITATION = """@article{dong2024benchmarking,
  title={Benchmarking and Improving Detail Image Caption},
  author={Dong, Hongyuan and Li, Jiawen and Wu, Bohong and Wang, Jiacong and Zhang, Yuan and Guo, Haoyuan},
  journal={arXiv preprint arXiv:2405.19092},
  year={2024}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.DETAILCAPS_REPO}"
    LICENSE = "cc-by-nc-sa-4.0"
    SOURCE_FILES = f"the Hub Parquet file of `{src.DETAILCAPS_REPO}` (`DetailCaps-4870.parquet`; images inside)"
    KNOWN_ISSUES = (
        "The scores are GPT-4's (`GPT4_Eval`), which the dataset card calls expert judgements; the paper's "
        "consistency table averages DetailCaps-100 (human-annotated, not released here) with DetailCaps-4870.",
        "A row whose GPT4_Eval has no score for a candidate is left out (the loader logs how many).",
        "Columns as public loaders read them (lmms-eval's detailcaps task); the file itself could not be read here.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "source": datasets.Value("string"),
            "model": datasets.Value("string"),
            "text": datasets.Value("string"),
            "references": datasets.Sequence(datasets.Value("string")),
            "score": datasets.Value("float32"),
        }
    )

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        return hub_snapshot(src.DETAILCAPS_REPO, ["*.parquet", "README.md"])

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        files = sorted(source.rglob("*.parquet"))
        if not files:
            raise DataError(f"No DetailCaps Parquet file (DetailCaps-4870.parquet) under {str(source)!r}.")
        rows, unscored = [], 0
        for path in files:
            for n, record in enumerate(_records(path)):
                scored, missing = self.image_rows(record, f"{path.name}:{n}")
                rows += scored
                unscored += missing
        if unscored:
            logger.info("DetailCaps: %d candidate captions without a GPT-4 score left out.", unscored)
        ids = content_ids("detailcaps", [(r["image_path"], r["model"], r["text"]) for r in rows])
        return {"test": [{"id": i, **r} for i, r in zip(ids, rows)]}

    def image_rows(self, record: dict, where: str) -> tuple[list[dict[str, Any]], int]:
        """One upstream row's scored candidates, and how many had no score."""
        missing = [c for c in (COL["image"], *src.DETAILCAPS_REFERENCES, *src.DETAILCAPS_MODELS) if c not in record]
        if missing:
            raise DataError(f"{where}: missing columns {missing}.")
        scores = _scores(record.get(COL["scores"]), where)
        name = str(record[COL["image"]])
        image = record.get(COL["binary"])
        cell = {"bytes": image, "path": Path(name).name or name} if isinstance(image, (bytes, bytearray)) else None
        references = [squash(str(record[c])) for c in src.DETAILCAPS_REFERENCES if record.get(c)]
        out, unscored, picture = [], 0, _UNCHECKED
        for model in src.DETAILCAPS_MODELS:
            text, score = record.get(model), scores.get(model)
            if not text or score is None or not math.isfinite(score):
                unscored += 1
                continue
            if picture is _UNCHECKED:  # the image's cell made (and checked to decode) once for its candidates
                picture = embedded_image(cell, name, self.config.check_images)
            out.append(
                {
                    "image": picture,
                    "image_path": name,
                    "source": str(record.get(COL["source"]) or ""),
                    "model": model,
                    "text": squash(str(text)),
                    "references": references,
                    "score": score,
                }
            )
        return out, unscored


def _records(path: Path):
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(path)
    for batch in reader.iter_batches(batch_size=64):
        yield from batch.to_pylist()


def _scores(value: Any, where: str) -> dict[str, float]:
    """``GPT4_Eval``: a JSON object (or already a mapping) of model -> score; empty when absent."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DataError(f"{where}: GPT4_Eval {value[:60]!r} is not JSON.") from None
    if not isinstance(value, dict):
        raise DataError(f"{where}: GPT4_Eval must be an object of scores, but got {type(value).__name__}.")
    out = {}
    for model, score in value.items():
        try:
            out[str(model)] = float(score)
        except (TypeError, ValueError):
            raise DataError(f"{where}: GPT4_Eval score {score!r} of {model} is not a number.") from None
    return out


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("detailcaps", dataset, correlation="tau_b", per_rating=False)
