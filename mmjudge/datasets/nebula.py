"""Nebula (Matsuda et al., DENEB): human judgments of image captions, on the Hub as Parquet
(``Ka2ukiMatsuda/Nebula``: ``file_name``, ``image``, ``refs``, ``mt``, ``human_score``), with the published
correction of its test-split scores (``hiranohachiman/Spica``, one CSV per split keyed by ``imgid`` + ``mt``).

>>> from mmjudge.datasets.nebula import Nebula
>>> Nebula.PRETTY_NAME, [c for c in Nebula.FEATURES if "score" in c]
('Nebula', ['score', 'nebula_score'])
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkConfig, DataError, squash
from mmjudge.datasets._hub import HubCaptionBuilder, hub_snapshot
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.datasets._layouts import locate
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)


@dataclass
class NebulaConfig(BenchmarkConfig):
    """``spica``: correct the test split's scores from the Spica CSVs — ``None`` (default) when they are in
    ``data_dir`` (a warning when they are not), ``True`` to require them, ``False`` for Nebula's own scores."""

    spica: bool | None = None


class Nebula(HubCaptionBuilder):
    BUILDER_CONFIG_CLASS = NebulaConfig
    BUILDER_CONFIGS = [NebulaConfig(name="default", version=datasets.Version("1.0.0"))]
    PRETTY_NAME = "Nebula"
    ID_PREFIX = "nebula"
    DESCRIPTION = (
        "Nebula, the human-judgment set DENEB (Matsuda et al.) was trained and evaluated on: image captions with "
        "reference captions and a human score per caption. The test split's scores carry the published correction "
        "(hiranohachiman/Spica): a test row whose image and caption match Spica rows takes their mean score."
    )
    CITATION = """@inproceedings{matsuda2024deneb,
  title={DENEB: A Hallucination-Robust Automatic Evaluation Metric for Image Captioning},
  author={Matsuda, Kazuki and Wada, Yuiga and Sugiura, Komei},
  booktitle={ACCV}, year={2024}
}"""
    HOMEPAGE = f"https://huggingface.co/datasets/{src.NEBULA_REPO}"
    LICENSE = "see the Hub dataset cards of Ka2ukiMatsuda/Nebula and hiranohachiman/Spica"
    SOURCE_FILES = (
        "the Hub Parquet files of `Ka2ukiMatsuda/Nebula` (`<split>-*.parquet` or a folder per split; images inside) "
        "and, for the test-score correction, `spica_train.csv`, `spica_val.csv`, `spica_test.csv` of "
        "`hiranohachiman/Spica`"
    )
    KNOWN_ISSUES = (
        "What the correction changes: only test rows. For each, the key is (its file_name's stem, its `mt` with "
        "whitespace squashed); if Spica rows of any of the three CSVs have the key (their `imgid` stem and `mt`), "
        "`score` becomes the mean of their `score`, otherwise Nebula's `human_score` is kept. `nebula_score` always "
        "holds Nebula's own score and `corrected` says which rows changed; the loader logs how many. This is the "
        "correction arXiv:2512.21582 describes, applied as CaptionEvalKit applies it.",
        "spica=False keeps Nebula's own scores; without the CSVs the test scores are uncorrected (with a warning).",
        "No upstream row count could be verified here; Kendall tau-c is the usual measure.",
    )
    FEATURES = datasets.Features(
        {
            **HubCaptionBuilder.FEATURES,
            "nebula_score": datasets.Value("float32"),
            "corrected": datasets.Value("bool"),
        }
    )

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        root = hub_snapshot(src.NEBULA_REPO, ["*.parquet", "README.md"])
        if self.config.spica is not False:
            self._spica_root = hub_snapshot(src.SPICA_REPO, list(src.SPICA_FILES))
        return root

    def split_rows(self, split: str, files: list[Path], source: Path) -> list[dict[str, Any]]:
        lookup = self.spica(getattr(self, "_spica_root", source)) if split == "test" else {}
        rows, changed = [], 0
        for row_id, row in self.rated_rows(split, files):
            score = lookup.get((PurePosixPath(row.image_name).stem, row.text), row.score)
            changed += score != row.score
            rows.append(
                {
                    **self.caption_row(row_id, row),
                    "score": score,
                    "nebula_score": row.score,
                    "corrected": score != row.score,
                }
            )
        if lookup:
            logger.info("Nebula %s: %d of %d scores corrected from Spica.", split, changed, len(rows))
        return rows

    def spica(self, root: Path) -> dict[tuple[str, str], float]:
        """(image stem, squashed caption) -> mean Spica score, from whichever Spica CSVs are under ``root``."""
        if self.config.spica is False:
            return {}
        found = locate(root, src.SPICA_FILES)
        if not found:
            if self.config.spica:
                raise DataError(f"spica=True, but none of {', '.join(src.SPICA_FILES)} is under {str(root)!r}.")
            logger.warning("Nebula: no Spica CSVs under %s: the test scores are Nebula's own, uncorrected.", root)
            return {}
        col = src.SPICA_COLUMNS
        totals: dict[tuple[str, str], list[float]] = {}
        for name in src.SPICA_FILES:
            if name not in found:
                continue
            with open(found[name], encoding="utf-8", newline="") as f:
                for n, record in enumerate(csv.DictReader(f), 2):
                    try:
                        key = (PurePosixPath(str(record[col["image"]])).stem, squash(record[col["text"]]))
                        totals.setdefault(key, []).append(float(record[col["score"]]))
                    except (KeyError, TypeError, ValueError):
                        raise DataError(
                            f"{name}:{n}: expected columns {sorted(col.values())} with a numeric score."
                        ) from None
        return {key: sum(v) / len(v) for key, v in totals.items()}


def to_human_judgments(dataset: Any) -> HumanJudgments:
    return caption_judgments("nebula", dataset, correlation="tau_c", per_rating=False)
