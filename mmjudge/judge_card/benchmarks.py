"""The benchmarks a judge card runs a judge on, and how each counts (data, not code paths).

Three kinds. **Pairs** (VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge's pair setting, Multi-Crit,
CapArena, Pascal-50S): two responses to one input and the human's preference; the judge compares them head to
head in both orders (:class:`~mmjudge.metrics.harmonic_eval.pairwise.PairwiseHarmonicEval`) and is scored by
:mod:`mmjudge.judge_card.measures` under the benchmark's rules. **Ratings** (Flickr8k-Expert / CF, Composite,
Polaris, Nebula, MLLM-as-a-Judge's score setting): one response and human scores; the judge rates it
(HarmonicEval's criteria, ``overall``) and is scored by the correlation the benchmark's papers report
(:func:`mmjudge.metaeval.meta_evaluate`). **Rankings** (MLLM-as-a-Judge's batch setting): three or four answers
and the human ranking; the judge's ranking, derived from head-to-head comparisons
(:mod:`mmjudge.judge_card.rankings`), is scored by its distance from the human's.

>>> sorted(JUDGE_BENCHMARKS)[:3], JUDGE_BENCHMARKS["vl_rewardbench"].rules.macro_over
(['caparena', 'composite', 'flickr8k_cf'], 'group')
>>> find_benchmarks("vl_rewardbench,flickr8k_expert")
['vl_rewardbench', 'flickr8k_expert']
>>> [JUDGE_BENCHMARKS[n].headline for n in ("mllm_judge", "mllm_judge_score", "mllm_judge_batch")]
['accuracy', 'pearson', 'levenshtein']
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from mmjudge.judge_card.measures import Rules

PAIRS, RATINGS, RANKINGS = "pairs", "ratings", "rankings"
KINDS = (PAIRS, RATINGS, RANKINGS)

# Multi-Crit's criteria, read by the HarmonicEval criterion that judges the same thing; a criterion with no
# counterpart (creativity, reflection) is read from the overall preference.
MULTI_CRIT_CRITERIA = {
    "completeness": "completeness",
    "coverage": "completeness",
    "visual grounding": "correctness",
    "details": "completeness",
    "factuality": "correctness",
    "no hallucination": "correctness",
    "clarity": "clarity",
    "coherence": "clarity",
    "logic": "clarity",
    "conciseness": "conciseness",
    "efficiency": "conciseness",
}


@dataclass(frozen=True)
class JudgeBenchmark:
    """One benchmark of judges.

    Attributes:
        name: the card's name for it (``--benchmarks``, ``--data-dir NAME=DIR``, ``--verdicts NAME=FILE``).
        dataset: the loader's name (:func:`mmjudge.load_dataset`) and ``config`` / ``split`` to load.
        kind: :data:`PAIRS`, :data:`RATINGS` or :data:`RANKINGS`.
        rules: how a pairs benchmark counts (:class:`~mmjudge.judge_card.measures.Rules`); for rankings, the
            measure's name and the subset keys.
        correlation: a ratings benchmark's measure (``tau_c``, ``tau_b``).
        task: the HarmonicEval task its inputs are judged as (``vqa`` when there is a question).
        needs: what its data folder must hold, for the dry run.
        source: where the numbers it is scored by are defined.
    """

    name: str
    dataset: str
    kind: str
    needs: str
    source: str
    rules: Rules = field(default_factory=Rules)
    correlation: str = "tau_c"
    config: str | None = None
    split: str | None = None
    task: str = "vqa"
    criteria: dict[str, str] = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """The figure it is ranked by: its rules' measure (pairs, rankings) or its correlation (ratings)."""
        return self.correlation if self.kind == RATINGS else self.rules.measure


JUDGE_BENCHMARKS: dict[str, JudgeBenchmark] = {
    b.name: b
    for b in (
        JudgeBenchmark(
            "vl_rewardbench",
            "vl_rewardbench",
            PAIRS,
            "the Hub Parquet of MMInstruction/VL-RewardBench (data/test-00000-of-00001.parquet)",
            "accuracy per query_source and per group, and the macro average over the three groups (general, "
            "hallucination, reasoning), as the authors' cal.py reports them",
            Rules(subsets=("query_source", "group"), macro_over="group"),
        ),
        JudgeBenchmark(
            "mm_rewardbench",
            "mm_rewardbench",
            PAIRS,
            "data/all_data.json (or all_data_release.json) and data/images/ of facebookresearch/multimodal_rewardbench",
            "accuracy over all items and per category (safety and reasoning split as scripts/2_get_accuracy.py does)",
            Rules(subsets=("reporting_category", "category")),
        ),
        JudgeBenchmark(
            "mllm_judge",
            "mllm_judge",
            PAIRS,
            "Dataset/Benchmark/pair.jsonl and Dataset/image/ of Dongping-Chen/MLLM-Judge",
            "pair agreement with the human label, a tie (C) an answer to match ('w. tie'), and without the pairs "
            "humans tied ('w.o. tie')",
            Rules(rule="three_way", subsets=("original_dataset",), without_ties=True),
            config="pair",
        ),
        JudgeBenchmark(
            "mllm_judge_score",
            "mllm_judge",
            RATINGS,
            "Dataset/Benchmark/score.jsonl and Dataset/image/ of Dongping-Chen/MLLM-Judge",
            "Pearson correlation between the judge's overall score and the human score (1-5), as the paper's score "
            "setting reports it",
            correlation="pearson",
            config="score",
        ),
        JudgeBenchmark(
            "mllm_judge_batch",
            "mllm_judge",
            RANKINGS,
            "Dataset/Benchmark/batch.jsonl and Dataset/image/ of Dongping-Chen/MLLM-Judge",
            "the normalised Levenshtein distance between the judge's ranking and the human's (lower is better; the "
            "edit distance of the two orders of answer letters over their length, our reading: the authors publish "
            "no scoring script), overall and per source data set",
            Rules(measure="levenshtein", subsets=("original_dataset",)),
            config="batch",
        ),
        JudgeBenchmark(
            "multi_crit",
            "multi_crit",
            PAIRS,
            "the Hub Parquet of txiong23/Multi-Crit (data/open_ended-*, data/reasoning-*)",
            "criterion-level accuracy per criterion and split, PAcc (a prompt right only when every criterion "
            "of it is), and on prompts where people preferred different responses under different criteria, TOS "
            "(the judge's verdicts oppose too) and CMR (every conflict resolved as people did; our reading)",
            Rules(subsets=("split", "criterion"), prompt_accuracy=True, trade_offs=True),
            criteria=MULTI_CRIT_CRITERIA,
        ),
        JudgeBenchmark(
            "caparena",
            "caparena",
            PAIRS,
            "caparena_annots_eval.json and the DOCCI images of njucckevin/CapArena",
            "agreement with the human battle outcome, ties included, battles against human captions left out "
            "(caparena_metrics.py, include_tie=True), overall and per cluster",
            Rules(rule="three_way", measure="agreement", subsets=("cluster",)),
            task="ic",
        ),
        JudgeBenchmark(
            "pascal50s",
            "pascal50s",
            PAIRS,
            "pascal_50s.json (FLEUR's or PAC-S's annotations) or the original release, with VOC2012 images",
            "pairwise accuracy per category (HC, HI, HM, MM) and overall",
            Rules(subsets=("category",)),
            task="ic",
        ),
        *(
            JudgeBenchmark(
                name,
                name,
                RATINGS,
                needs,
                f"Kendall {measure.replace('tau_', 'τ-')} between the judge's overall score and the human scores",
                correlation=measure,
                task="ic",
            )
            for name, measure, needs in (
                ("flickr8k_expert", "tau_c", "flickr8k.json (FLEUR's annotations) or the original release"),
                ("flickr8k_cf", "tau_b", "crowdflower_flickr8k.json or the original release"),
                ("composite", "tau_c", "composite.json or the original release"),
                ("polaris", "tau_c", "the Hub Parquet of yuwd/Polaris"),
                ("nebula", "tau_c", "the Hub Parquet of Ka2ukiMatsuda/Nebula"),
            )
        ),
    )
}


def find_benchmarks(names: str | None) -> list[str]:
    """The benchmarks named in a comma-separated list (``None`` or ``all``: every one), in the order given.

    >>> find_benchmarks("vl_rewardbnech")
    Traceback (most recent call last):
    ValueError: Unknown judge benchmark 'vl_rewardbnech'. Did you mean 'vl_rewardbench'? Available: ...
    """
    if names is None or names.strip() == "all":
        return list(JUDGE_BENCHMARKS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        raise ValueError("Expected at least one benchmark in --benchmarks, but got none.")
    for name in wanted:
        if name not in JUDGE_BENCHMARKS:
            close = difflib.get_close_matches(name, list(JUDGE_BENCHMARKS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unknown judge benchmark {name!r}.{hint} Available: {', '.join(JUDGE_BENCHMARKS)}.")
    return list(dict.fromkeys(wanted))
