"""Ratings benchmarks on a card (the caption sets, MLLM-as-a-Judge's score setting): the judge's overall score per
caption or answer — HarmonicEval's ratings from a resumable judge run, or a verdict file's scores — correlated with
the human scores by the benchmark's own measure (:func:`mmjudge.metaeval.meta_evaluate`: Kendall τ-c or τ-b per
human judgment, Pearson; paired bootstrap intervals), as ``mmjudge reproduce`` computes a metric's cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mmjudge.human_judgments import HumanJudgments
from mmjudge.judge_card.benchmarks import JudgeBenchmark
from mmjudge.judge_card.measures import row


def read_judgments(
    bench: JudgeBenchmark, data_dir: str | None, options: Mapping[str, Any], limit: int | None
) -> HumanJudgments:
    """The benchmark's judgments, items holding image paths; with ``limit``, its first ``limit`` items and
    their ratings."""
    import dataclasses

    from mmjudge.reproduce.scoring import load_context

    checks = {"expected_counts": {}, **options}  # a partial copy is scored, its size shown as n
    if bench.config:  # MLLM-as-a-Judge's score setting is one configuration of its loader
        checks.setdefault("config_name", bench.config)
    judgments = load_context(bench.dataset, bench.split, None, data_dir, checks)
    if limit is not None:
        items = judgments.items[:limit]
        kept = {item["id"] for item in items}
        ratings = [r for r in judgments.ratings if r["id"] in kept]
        judgments = dataclasses.replace(judgments, items=items, ratings=ratings, choices=[], pairs=[])
    if not judgments.items:
        raise ValueError(f"{bench.name}: the data folder holds no items.")
    return judgments


def verdict_scores(
    judgments: HumanJudgments, verdicts: Mapping[str, float], limit: int | None = None
) -> dict[str, dict[str, float]]:
    """A verdict file's scores as a score table (NaN for an item without a verdict: no answer).

    Raises:
        ValueError: verdicts for ids the items do not have (:func:`~.verdicts.check_known`; ``limit``: the items
            are the benchmark's first ``limit``).
    """
    from mmjudge.judge_card.verdicts import check_known

    known = [item["id"] for item in judgments.items]
    check_known(verdicts, known, limit)
    return {i: {"score": verdicts.get(i, math.nan)} for i in known}


def correlation_rows(
    bench: JudgeBenchmark,
    judgments: HumanJudgments,
    scores: Mapping[str, Mapping[str, float]],
    key: str,
    bootstrap: int,
    seed: int,
    confidence: float,
    replicates: dict | None = None,
) -> list[dict]:
    """The card rows of a ratings benchmark: its correlation over all items, and the share with no score.
    ``replicates``: a dict that receives the correlation's bootstrap values (``(benchmark, "", measure)`` →
    array; the meta-evaluation draws them from the seed and the figure alone, so every judge's are alike)."""
    from mmjudge.metaeval import meta_evaluate

    table = {i: {"score": float(values.get(key, math.nan))} for i, values in scores.items()}
    result = meta_evaluate(
        judgments,
        {"judge": table},
        measures=[bench.correlation],
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        criterion_scores=False,
    )
    records = result.find("judge", measure=bench.correlation, criterion="overall")
    tasks = {r.get("task"): r for r in records}  # over all tasks, or the benchmark's one task
    records = [tasks["all"]] if "all" in tasks else list(tasks.values()) if len(tasks) == 1 else []
    if not records:
        raise ValueError(f"{bench.name}: the meta-evaluation has no {bench.correlation} figure.")
    record = records[0]
    if replicates is not None:
        from mmjudge.metaeval.result import figure_key

        found = result.resamples.get((figure_key(record), "judge"))
        if found is not None:
            replicates[(bench.name, "", bench.correlation)] = found
    low, high = record.get("ci_low"), record.get("ci_high")
    values = [v["score"] for v in table.values()]
    missing = sum(1 for v in values if v != v) / len(values)
    return [
        row(bench.name, "", bench.correlation, record["value"], low, high, int(record.get("n_items", len(values)))),
        row(bench.name, "", "no_answer", missing, None, None, len(values)),
    ]
