"""Meta-evaluation: how well a metric's scores agree with human judgments, as papers report it.

Correlations (Kendall τ-b / τ-c, Pearson, Spearman) per task and criterion, pairwise accuracy on
best-of-N choices and preference pairs, bootstrap intervals for every figure, and the HarmonicEval
paper's table layouts (Tables 2, 3 and 8) as Markdown, CSV and JSON plus a heatmap.

>>> from mmjudge.human_judgments import HumanJudgments
>>> from mmjudge.metaeval import meta_evaluate, accuracy_table
>>> hj = HumanJudgments(
...     name="toy", items=[{"id": i, "task": "ic"} for i in "abc"],
...     choices=[{"group": "g", "task": "ic", "candidates": ["a", "b", "c"], "annotator": str(k), "best": "a"}
...              for k in range(3)],
... )
>>> result = meta_evaluate(hj, {"good": {"a": {"score": 0.9}, "b": {"score": 0.1}, "c": {"score": 0.5}},
...                             "bad": {"a": {"score": 0.1}, "b": {"score": 0.1}, "c": {"score": 0.5}}}, bootstrap=0)
>>> print(accuracy_table(result).markdown(), end="")
**Pairwise accuracy (%) on toy**
<BLANKLINE>
| Metric | IC |
|---|---:|
| good | **100.0** |
| bad | 0.0 |
"""

from __future__ import annotations

from mmjudge.metaeval.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from mmjudge.metaeval.core import PROTOCOLS, MetaEvalResult, meta_evaluate
from mmjudge.metaeval.correlation import MEASURES, UndefinedCorrelationWarning, correlation
from mmjudge.metaeval.online import score_items
from mmjudge.metaeval.output import write_outputs
from mmjudge.metaeval.pairwise import BEST_OF, TIES, pair_outcomes, pairs_from_choices
from mmjudge.metaeval.scores import check_scores, read_scores
from mmjudge.metaeval.tables import accuracy_table, all_tables, benchmark_table, criterion_table, heatmap

__all__ = [
    "BEST_OF",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "MEASURES",
    "PROTOCOLS",
    "TIES",
    "MetaEvalResult",
    "UndefinedCorrelationWarning",
    "accuracy_table",
    "all_tables",
    "benchmark_table",
    "check_scores",
    "correlation",
    "criterion_table",
    "heatmap",
    "meta_evaluate",
    "pair_outcomes",
    "pairs_from_choices",
    "read_scores",
    "score_items",
    "write_outputs",
]
