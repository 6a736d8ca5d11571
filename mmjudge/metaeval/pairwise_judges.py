"""Meta-evaluation of pairwise judges: how often the judge prefers the text humans preferred, beside the
pointwise metrics turned into pairs, in one table with bootstrap intervals.

A pairwise judge gives, for a human pair (``better``, ``worse``), the probability ``P`` that ``better`` is the
better text (:meth:`HarmonicEval.compare <mmjudge.metrics.harmonic_eval.HarmonicEval.compare>`, per criterion
and overall). The pair counts as right when ``P > ½``, wrong when ``P < ½``; ``P = ½`` is a tie (wrong, or
half right with ``ties="half"``, as for metrics); no ``P`` (the judge gave no answer) leaves the pair out
and is counted. A pointwise metric's pair is its two scores compared — the very rule of
:func:`mmjudge.metaeval.meta_evaluate` — so its accuracies, intervals included, are the same through
either path. Every pair set of the judgments is used: ready-made pairs by category (Pascal-50S's HC, HI, HM,
MM), best-of-N choices as pairs by task, and per-criterion pairs against the judge's own criterion.

>>> from mmjudge.human_judgments import HumanJudgments
>>> hj = HumanJudgments(name="toy", items=[{"id": i, "task": "ic", "text": i} for i in "abcd"],
...                     pairs=[{"better": "a", "worse": "b"}, {"better": "c", "worse": "d"}])
>>> result = pairwise_meta_evaluate(hj, {"judge": {("a", "b"): {"overall": 0.8}, ("d", "c"): {"overall": 0.7}}},
...                                 scores={"metric": {i: {"score": s} for i, s in zip("abcd", [2, 1, 3, 3])}},
...                                 bootstrap=0)
>>> [(r["metric"], r["value"]) for r in result.records]
[('judge', 0.5), ('metric', 0.5)]
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    check_confidence,
    check_resamples,
)
from mmjudge.metaeval.core import OVERALL, MetaEvalResult, Outcomes, _accuracies, _pair_sets, score_outcomes
from mmjudge.metaeval.pairwise import BEST_OF, TIES, check_option
from mmjudge.metaeval.scores import Scores, is_failed, join_scores

Preferences = Mapping[tuple[str, str], Mapping[str, float]]
"""(item id of text A, item id of text B) → {criterion or ``"overall"``: P(A is better)}; NaN: no answer.
A pair may be given either way round (``P(b ≻ a) = 1 − P(a ≻ b)``)."""


def preference_outcomes(preferences: Mapping[str, Preferences], ties: str) -> Outcomes:
    """The :data:`~mmjudge.metaeval.core.Outcomes` of pairwise judges: 1 where the judge preferred the
    human-preferred side, 0 where not, the tie value at exactly ½, NaN without a preference."""
    tie_value = 0.5 if ties == "half" else 0.0

    def outcomes(name: str, pairs: list, criterion: str) -> tuple[np.ndarray, int, str]:
        table = preferences[name]
        out = np.empty(len(pairs))
        failed: set[str] = set()
        key = OVERALL
        for k, pair in enumerate(pairs):
            p, key = _preference(table, name, pair["better"], pair["worse"], criterion)
            if p != p:
                failed.update((pair["better"], pair["worse"]))
            out[k] = np.nan if p != p else 1.0 if p > 0.5 else 0.0 if p < 0.5 else tie_value
        return out, len(failed), key

    return outcomes


def _preference(table: Preferences, name: str, better: str, worse: str, criterion: str) -> tuple[float, str]:
    """P(better ≻ worse) on ``criterion`` (the judge's own criterion when it has it, else overall), and
    which it was."""
    values, flip = table.get((better, worse)), False
    if values is None:
        values, flip = table.get((worse, better)), True
    if values is None:
        raise ValueError(f"{name}: no preference for the pair {better!r} vs {worse!r}; compare every human pair.")
    key = criterion if criterion in values else OVERALL
    p = float(values[key]) if values.get(key) is not None else math.nan
    return (1.0 - p if flip else p), key


def pointwise_preferences(
    scores: Scores, pairs: list[tuple[str, str]], key: str = "score"
) -> dict[tuple[str, str], dict[str, float]]:
    """A pointwise metric turned into pairs: ``overall`` P = 1, 0 or ½ as ``scores[a][key]`` is above, below or
    equal to ``scores[b][key]``; NaN where either is missing.

    >>> scores = {"a": {"score": 2.0}, "b": {"score": 1.0}, "c": {"score": float("nan")}}
    >>> pointwise_preferences(scores, [("a", "b"), ("b", "c")])
    {('a', 'b'): {'overall': 1.0}, ('b', 'c'): {'overall': nan}}
    """
    out = {}
    for a, b in pairs:
        x, y = scores[a][key], scores[b][key]
        p = math.nan if is_failed(x) or is_failed(y) else 1.0 if x > y else 0.0 if x < y else 0.5
        out[(a, b)] = {OVERALL: p}
    return out


def pairwise_meta_evaluate(
    judgments: HumanJudgments,
    preferences: Mapping[str, Preferences],
    scores: Mapping[str, Scores] | None = None,
    best_of: str = "majority",
    ties: str = "wrong",
    bootstrap: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    criterion_scores: bool = True,
) -> MetaEvalResult:
    """Pairwise accuracy of each judge in ``preferences`` (name → :data:`Preferences`) and each pointwise
    metric in ``scores`` (name → per-item scores, as :func:`~mmjudge.metaeval.meta_evaluate` takes them) on
    every pair set of ``judgments``, with paired bootstrap intervals (every judge and metric resampled alike).

    Raises:
        ValueError: bad options; judgments without pairs or choices; a judge without a preference for some
            human pair; score problems as :func:`~mmjudge.metaeval.meta_evaluate` reports them.
    """
    check_option(best_of, BEST_OF, "best_of")
    check_option(ties, TIES, "ties")
    bootstrap, confidence = check_resamples(bootstrap), check_confidence(confidence)
    scores = {name: join_scores(table, judgments, name) for name, table in (scores or {}).items()}
    overlap = set(scores) & set(preferences)
    if overlap:
        raise ValueError(f"{sorted(overlap)[0]!r} names both a pairwise judge and a metric; give them other names.")
    if not preferences and not scores:
        raise ValueError("Expected at least one pairwise judge or metric, but got none.")
    pair_sets = _pair_sets(judgments, best_of)
    if not pair_sets:
        raise ValueError(f"{judgments.name}: no pairs or best-of-N choices: nothing to meta-evaluate pairwise.")
    result = MetaEvalResult(
        dataset=judgments.name,
        metrics=[*preferences, *scores],
        records=[],
        options=dict(best_of=best_of, ties=ties, bootstrap=bootstrap, seed=seed, confidence=confidence, pairwise=True),
        correlation="accuracy",
    )
    used: dict[str, set] = {name: set() for name in scores}
    judged, scored = preference_outcomes(preferences, ties), score_outcomes(scores, ties, criterion_scores, used)

    def outcomes(name: str, pairs: list, criterion: str) -> tuple[np.ndarray, int, str]:
        return (judged if name in preferences else scored)(name, pairs, criterion)

    _accuracies(judgments.name, pair_sets, result.metrics, outcomes, result)
    for name in result.metrics:
        records = result.find(name)
        result.coverage[name] = {
            "pairs": max((r["n_pairs"] for r in records), default=0),
            "failed": max((r["n_failed"] for r in records), default=0),
        }
    return result


def human_pairs(judgments: HumanJudgments, best_of: str = "majority") -> list[tuple[str, str]]:
    """Every distinct (better, worse) item pair that some figure of ``judgments`` uses."""
    return list(
        dict.fromkeys((p["better"], p["worse"]) for pairs in _pair_sets(judgments, best_of).values() for p in pairs)
    )


def pair_items(judgments: HumanJudgments, pairs: list[tuple[str, str]]) -> Iterator[dict[str, Any]]:
    """The items :meth:`PairwiseHarmonicEval.stream` compares for ``pairs``: A = the first item's text, B the
    second's, with the first item's image, question, box and task."""
    items = {item["id"]: item for item in judgments.items}
    for a, b in pairs:
        first, second = items[a], items[b]
        shared = {k: first.get(k) for k in ("image", "question", "box", "task") if first.get(k) is not None}
        yield {**shared, "id": f"{a} vs {b}", "text_a": first.get("text"), "text_b": second.get("text")}


def compare_judgments(
    metric: Any, judgments: HumanJudgments, best_of: str = "majority", progress: bool = False
) -> dict[tuple[str, str], dict[str, float]]:
    """The pairwise ``metric`` (``HarmonicEval(...).pairwise()``) run on every human pair of ``judgments``:
    :data:`Preferences` for :func:`pairwise_meta_evaluate` (a pair the judge could not compare, e.g. a bad
    image, has NaN preferences and is counted as failed)."""
    pairs = human_pairs(judgments, best_of)
    out: dict[tuple[str, str], dict[str, float]] = {}
    names = ["overall", *metric.criteria]
    for pair, result in zip(pairs, metric.stream(pair_items(judgments, pairs), on_error="record", progress=progress)):
        out[pair] = {name: float(result.values.get(name, math.nan)) for name in names}
    return out
