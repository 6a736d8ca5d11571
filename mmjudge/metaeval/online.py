"""Scoring a benchmark's items with an mmjudge metric on the fly, for the meta-evaluation.

Items are scored task by task (one ``compute`` call per task, items keep their order), passing only
the columns the metric's ``compute`` accepts (:func:`mmjudge.metrics.base.compute_by_task`). Every per-sample numeric output becomes a score column, so a
criterion-wise metric (HarmonicEval) brings its ``overall`` and one column per criterion.

>>> from mmjudge.human_judgments import HumanJudgments
>>> hj = HumanJudgments(name="toy", items=[{"id": "a", "task": "ic", "text": "A dog."}])
>>> scores = score_items(hj, "harmonic_eval", judge="dummy", cache=False, criteria=["fluency"], progress=False)
>>> sorted(scores["a"]), scores.primary
(['fluency', 'fluency_mass', 'fluency_sigma', 'fluency_weight', 'overall'], 'overall')
"""

from __future__ import annotations

from typing import Any, Optional

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval.scores import Scores, ScoreTable, scores_from_columns
from mmjudge.metrics.base import compute_by_task

DEFAULT_TASK = "ic"


def score_items(
    judgments: HumanJudgments,
    metric: Any,
    config_name: Optional[str] = None,
    progress: bool = True,
    **metric_kwargs: Any,
) -> Scores:
    """Score every item of ``judgments`` with ``metric`` (a name for :func:`mmjudge.load`, or a metric
    object with ``compute``). Returns id → {column → value}.

    Raises:
        ValueError: an item without text (naming its id), or a metric that returns no per-sample scores.
    """
    if isinstance(metric, str):
        import mmjudge

        metric = mmjudge.load(metric, config_name, **metric_kwargs)
    elif metric_kwargs or config_name:
        raise ValueError("Metric options apply to a metric name, not to a ready metric object.")
    items = judgments.items
    for it in items:
        if not isinstance(it.get("text"), str) or not it["text"].strip():
            raise ValueError(f"{judgments.name}: item {it.get('id')!r} has no text to score.")
    name = getattr(metric, "name", type(metric).__name__)
    out = ScoreTable(primary=getattr(metric, "primary", None))
    for idx, task, result in compute_by_task(metric, items, DEFAULT_TASK, progress):
        ids = [str(items[i]["id"]) for i in idx]
        out.update(scores_from_columns(ids, result, f"{name} on task {task!r}"))
    return out
