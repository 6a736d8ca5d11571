"""The human-judgment benchmarks as ``datasets`` builders, loadable in one line.

``datasets`` 5.x no longer runs loading scripts, so each benchmark is a ``GeneratorBasedBuilder``
subclass in this package (one module per benchmark, registered in :data:`DATASETS`). The jobs around
them live in one module each: name resolution and :func:`load_dataset` (``_loading``), conversion to
the meta-evaluation's :class:`~mmjudge.human_judgments.HumanJudgments` and its JSON file (``_judgments``),
Parquet export (``_export``) and the dataset card (``_card``). Which copy of a benchmark a ``data_dir``
holds — the original release or the preprocessed JSON most people have — is ``_layouts``' job. The
benchmarks of judges (VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge, Multi-Crit, CapArena) also
read as one shape of human preference, :class:`JudgePair` (:func:`judge_pairs`, in ``_judge_pairs``).

>>> "mmhe" in available_datasets() and "longcap_arena" in available_datasets()
True
"""

from __future__ import annotations

from mmjudge.datasets._card import card
from mmjudge.datasets._export import export_info, export_to_parquet
from mmjudge.datasets._judge_pairs import JudgePair, iter_judge_pairs, judge_pairs
from mmjudge.datasets._judgments import caption_judgments, human_judgments, rows_of, write_judgments
from mmjudge.datasets._loading import DATASETS, available_datasets, builder, load_dataset

__all__ = [
    "DATASETS",
    "JudgePair",
    "available_datasets",
    "builder",
    "caption_judgments",
    "card",
    "export_info",
    "export_to_parquet",
    "human_judgments",
    "iter_judge_pairs",
    "judge_pairs",
    "load_dataset",
    "rows_of",
    "write_judgments",
]
