"""Scoring a benchmark's items with an mmjudge metric on the fly, for the meta-evaluation.

Items are scored as a stream (:meth:`mmjudge.metrics.base.Metric.stream`: bounded chunks, each item with
its own task), reading only the inputs the metric declares. Every per-sample numeric output becomes a score
column, so a criterion-wise metric (HarmonicEval) brings its ``overall`` and one column per criterion.

>>> from mmjudge.human_judgments import HumanJudgments
>>> hj = HumanJudgments(name="toy", items=[{"id": "a", "task": "ic", "text": "A dog."}])
>>> scores = score_items(hj, "harmonic_eval", judge="dummy", cache=False, criteria=["fluency"], progress=False)
>>> sorted(scores["a"]), scores.primary
(['fluency', 'fluency_mass', 'fluency_sigma', 'fluency_weight', 'overall'], 'overall')
"""

from __future__ import annotations

from typing import Any

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval.scores import Scores, ScoreTable, scores_from_columns

DEFAULT_TASK = "ic"


def score_items(
    judgments: HumanJudgments,
    metric: Any,
    config_name: str | None = None,
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
    results = list(metric.stream(items, task=DEFAULT_TASK, progress=progress))
    columns = {key: [r.values[key] for r in results] for key in results[0].values} if results else {}
    out = ScoreTable(primary=getattr(metric, "primary", None))
    out.update(scores_from_columns([r.id for r in results], columns, name))
    return out
