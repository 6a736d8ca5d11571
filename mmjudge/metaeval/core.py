"""From metric scores and human judgments to every figure of a meta-evaluation, with bootstrap CIs.

:func:`meta_evaluate` joins each metric's per-item scores to a :class:`~mmjudge.human_judgments.HumanJudgments`
by id and computes

- correlations (Kendall τ-b, τ-c, Pearson, Spearman) per task (and ``"all"`` tasks) and per human
  criterion, under the ``"per_judgment"`` protocol (one row per human rating, the item's metric score
  repeated: Flickr8k-Expert/CF) or the ``"averaged"`` one (one row per item, mean human score);
- pairwise accuracy on best-of-N choices (per task, plus ``"avg"`` = mean over tasks, MMHE's Table 2)
  and on ready-made pairs (per category, plus ``"avg"``: Pascal-50S, FOIL);
- a percentile bootstrap interval for every figure: items are resampled for correlations (all the
  judgments of an item move together), best-of-N groups or pairs for accuracies. Resamples depend on
  the seed and the figure only, so all metrics share them and :meth:`MetaEvalResult.compare` gives a
  paired interval for the difference between two metrics.

A NaN score is a **failed item** (its judge gave no rating): each figure that needs that score leaves
the item out (a correlation drops its rows, an accuracy the pairs it is a side of), the other figures keep
it, and every record counts what it left out (``n_failed``); :meth:`MetaEvalResult.failure_lines` says
it per metric. Score files keyed by (image, text) are joined by content first
(:func:`~mmjudge.metaeval.scores.join_scores`).

>>> from mmjudge.human_judgments import HumanJudgments
>>> hj = HumanJudgments(
...     name="toy", items=[{"id": i, "task": "ic"} for i in "abcd"], criteria=["overall"],
...     ratings=[{"id": i, "task": "ic", "criterion": "overall", "score": s} for i, s in zip("abcd", [1, 2, 3, 5])],
... )
>>> result = meta_evaluate(hj, {"m": {i: {"score": s} for i, s in zip("abcd", [0.1, 0.3, 0.2, 0.9])}}, bootstrap=0)
>>> round(result.value("m", measure="tau_b", task="ic", criterion="overall"), 4)
0.6667
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    check_confidence,
    check_resamples,
    percentile_interval,
    resample_counts,
    rng_for,
)
from mmjudge.metaeval.correlation import MEASURES, check_measure, correlation, correlation_batch
from mmjudge.metaeval.pairwise import BEST_OF, TIES, check_option, pair_outcomes, pairs_from_choices
from mmjudge.metaeval.result import ALL, AVG, OVERALL, MetaEvalResult, figure_key
from mmjudge.metaeval.scores import Scores, is_failed, join_scores, score_key

PROTOCOLS = ("per_judgment", "averaged")


# ------------------------------------------------------------------------------------------ main
def meta_evaluate(
    judgments: HumanJudgments,
    scores: Mapping[str, Scores],
    measures: Sequence[str] = MEASURES,
    protocol: str = "per_judgment",
    best_of: str = "majority",
    ties: str = "wrong",
    bootstrap: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    criterion_scores: bool = True,
    progress: bool = False,
) -> MetaEvalResult:
    """Every figure of ``judgments`` for each metric in ``scores`` (metric name → id → {key: value}).

    Args:
        measures: correlation measures to compute (default all four).
        protocol: ``"per_judgment"`` (one row per human rating) or ``"averaged"`` (one row per item).
        best_of: how best-of-N choices become pairs (see :data:`mmjudge.metaeval.pairwise.BEST_OF`).
        ties: a metric tie in a pair counts ``"wrong"`` (default) or ``"half"``.
        bootstrap: number of resamples for the intervals (0: no intervals, NaN bounds).
        seed: bootstrap seed; same seed, same intervals.
        confidence: interval coverage (default 0.95).
        criterion_scores: correlate a human criterion with the metric's column of the same name when it
            has one (criterion-wise metrics, as in HarmonicEval's Table 3), else with its overall score.

    Scores keyed by (image, text) instead of id (:func:`~mmjudge.metaeval.scores.read_scores` of such a
    file) are joined by content first. A NaN score is a failed item, left out of the figures that need it.

    Raises:
        ValueError: bad options; scores with inf, missing, duplicate or unknown ids (or content that does
            not join); ratings naming unknown items or holding non-finite scores; a benchmark with nothing
            to evaluate.
    """
    measures = [check_measure(m) for m in measures]
    check_option(protocol, PROTOCOLS, "protocol")
    check_option(best_of, BEST_OF, "best_of")
    check_option(ties, TIES, "ties")
    bootstrap = check_resamples(bootstrap)
    confidence = check_confidence(confidence)
    ids = _check_judgments(judgments, scores)
    scores = {name: join_scores(table, judgments, name) for name, table in scores.items()}
    ratings = _check_ratings(judgments, set(ids))
    if not ratings and not judgments.choices and not judgments.pairs:
        raise ValueError(f"{judgments.name}: no ratings, choices or pairs: nothing to meta-evaluate.")

    result = MetaEvalResult(
        dataset=judgments.name,
        metrics=list(scores),
        records=[],
        options=dict(
            protocol=protocol,
            best_of=best_of,
            ties=ties,
            bootstrap=bootstrap,
            seed=seed,
            confidence=confidence,
            criterion_scores=criterion_scores,
            measures=list(measures),
        ),
        correlation=judgments.correlation,
    )
    used: dict[str, set] = {name: set() for name in scores}  # score columns some figure read
    if ratings:
        _correlations(judgments, ratings, scores, result, progress, used)
    pair_sets = _pair_sets(judgments, best_of)
    if pair_sets:
        outcomes = score_outcomes(scores, ties, criterion_scores, used)
        _accuracies(judgments.name, pair_sets, list(scores), outcomes, result)
    for name, table in scores.items():
        result.coverage[name] = _coverage(table, ids, used[name])
    return result


def _check_judgments(judgments: Any, scores: Mapping[str, Any]) -> list[str]:
    """The benchmark's item ids, once it is known to be one with unique ids and there are scores to join."""
    if not isinstance(judgments, HumanJudgments):
        raise ValueError(f"Expected `judgments` to be HumanJudgments, but got {type(judgments).__name__}.")
    if not scores:
        raise ValueError("Expected `scores` to hold at least one metric, but got none.")
    ids = judgments.ids()
    if len(set(ids)) != len(ids):
        dup = [i for i in dict.fromkeys(ids) if ids.count(i) > 1]
        raise ValueError(f"{judgments.name}: duplicate item ids {dup[:5]}.")
    return ids


def _coverage(table: Scores, ids: Sequence[str], used: set) -> dict[str, Any]:
    """How a metric's scores joined the benchmark, and how many items failed in a column some figure read."""
    joined = getattr(table, "join", None) or {"by": "id", "items": len(ids), "joined": len(ids), "unjoined_rows": 0}
    return {**joined, "failed": sum(1 for i in ids if any(is_failed(table[i][k]) for k in used))}


def _check_ratings(judgments: HumanJudgments, known: set) -> list[dict[str, Any]]:
    tasks = {it["id"]: str(it.get("task") or "") for it in judgments.items}
    out = []
    for n, r in enumerate(judgments.ratings):
        if r.get("id") not in known:
            raise ValueError(f"{judgments.name}: rating {n} names unknown item id {r.get('id')!r}.")
        value = r.get("score")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{judgments.name}: rating {n} (id {r['id']!r}) has score {value!r}, not a finite number.")
        task = str(r.get("task") or tasks[r["id"]]) or ALL  # benchmarks without tasks: one "all" task
        out.append({**r, "task": task, "criterion": str(r.get("criterion") or "overall")})
    return out


def _correlations(hj, ratings, scores, result, progress, used):
    """Every correlation figure (per task and criterion), with its interval, into ``result.records``."""
    options = result.options
    measures, protocol, bootstrap, seed = (
        options["measures"],
        options["protocol"],
        options["bootstrap"],
        options["seed"],
    )
    tasks = list(dict.fromkeys(r["task"] for r in ratings))
    criteria = [c for c in hj.criteria if any(r["criterion"] == c for r in ratings)]
    criteria += [c for c in dict.fromkeys(r["criterion"] for r in ratings) if c not in criteria]
    result.tasks, result.criteria = tasks, criteria
    subsets = tasks + ([ALL] if len(tasks) > 1 and ALL not in tasks else [])
    keys = {
        name: {c: score_key(table, name, c if options["criterion_scores"] else None) for c in criteria}
        for name, table in scores.items()
    }
    from mmjudge.progress import progress_bar

    figures = [(t, c) for t in subsets for c in criteria]
    for task, criterion in progress_bar(figures, desc="correlations", disable=not progress):
        rows = [r for r in ratings if r["criterion"] == criterion and (task == ALL or r["task"] == task)]
        if not rows:
            continue
        item_ids, row_items, human = _human_rows(rows, protocol)
        weights = None
        if bootstrap:
            counts_b = resample_counts(
                len(item_ids), bootstrap, rng_for(seed, hj.name, "corr", task, criterion, protocol)
            )
            weights = counts_b[:, row_items]
        for name, table in scores.items():
            key = keys[name][criterion]
            used[name].add(key)
            metric = np.array([table[item_ids[k]][key] for k in row_items])
            # Failed items (NaN) leave this figure; the resample weights of the others are unchanged, so
            # the bootstrap stays paired with the other metrics'.
            keep = ~np.isnan(metric)
            failed = len({int(k) for k in row_items[~keep]})
            x, y, w = metric[keep], human[keep], None if weights is None else weights[:, keep]
            where = f"{name} on {hj.name} task={task} criterion={criterion}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                boot = correlation_batch(x, y, w, measures) if w is not None else {}
            for measure in measures:
                value = correlation(x, y, measure, where=where)
                record = dict(
                    dataset=hj.name,
                    metric=name,
                    measure=measure,
                    task=task,
                    criterion=criterion,
                    protocol=protocol,
                    score_key=key,
                    value=value,
                    n_rows=int(keep.sum()),
                    n_items=len(item_ids) - failed,
                    n_failed=failed,
                )
                low, high = (
                    percentile_interval(boot[measure], options["confidence"])
                    if measure in boot
                    else (math.nan, math.nan)
                )
                record.update(ci_low=low, ci_high=high)
                result.records.append(record)
                if measure in boot:
                    result.resamples[(figure_key(record), name)] = boot[measure]


def _human_rows(rows: list[dict], protocol: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(item ids, each row's item position, human scores)``: one row per rating (``per_judgment``) or per
    item, its ratings averaged (``averaged``)."""
    item_ids = list(dict.fromkeys(r["id"] for r in rows))
    position = {i: k for k, i in enumerate(item_ids)}
    if protocol == "per_judgment":
        return item_ids, np.array([position[r["id"]] for r in rows]), np.array([float(r["score"]) for r in rows])
    sums, counts = np.zeros(len(item_ids)), np.zeros(len(item_ids))
    for r in rows:
        sums[position[r["id"]]] += float(r["score"])
        counts[position[r["id"]]] += 1
    return item_ids, np.arange(len(item_ids)), sums / counts


def _pair_sets(hj: HumanJudgments, best_of: str) -> dict[tuple[str, str, str], list[dict]]:
    """(kind, criterion, subset) → pairs. Best-of-N pairs are split by task, ready-made pairs by category;
    a pair or choice without ``criterion`` is an overall preference."""
    sets: dict[tuple[str, str, str], list[dict]] = {}
    known = set(hj.ids())
    for pair in pairs_from_choices(hj.choices, best_of) if hj.choices else []:
        sets.setdefault(("best_of_n", pair["criterion"], str(pair["task"] or ALL)), []).append(pair)
    for n, pair in enumerate(hj.pairs):
        for side in ("better", "worse"):
            if pair.get(side) not in known:
                raise ValueError(f"{hj.name}: pair {n} names unknown item id {pair.get(side)!r} as {side!r}.")
        group = {**pair, "group": pair.get("group", f"pair{n}")}
        key = (
            str(pair.get("kind") or "pairs"),
            str(pair.get("criterion") or OVERALL),
            str(pair.get("category") or ALL),
        )
        sets.setdefault(key, []).append(group)
    return sets


Outcomes = Callable[[str, list, str], tuple[np.ndarray, int, str]]
"""``(metric, pairs, criterion) -> (outcomes, failed items, score key)``: per pair 1.0 (the human-preferred
side won), 0.0, the tie value, or NaN (no figure: a failed item), for one metric on one pair set."""


def score_outcomes(scores: Mapping[str, Scores], ties: str, criterion_scores: bool, used: dict[str, set]) -> Outcomes:
    """The :data:`Outcomes` of pointwise metrics: the pair's two scores compared (:func:`pair_outcomes`)."""

    def outcomes(name: str, pairs: list, criterion: str) -> tuple[np.ndarray, int, str]:
        table = scores[name]
        key = score_key(table, name, criterion if criterion_scores and criterion != OVERALL else None)
        used[name].add(key)
        flat = {i: v[key] for i, v in table.items()}
        outcome = pair_outcomes([(p["better"], p["worse"]) for p in pairs], flat, ties)
        failed = len({i for p in pairs for i in (p["better"], p["worse"]) if is_failed(flat[i])})
        return outcome, failed, key

    return outcomes


def _accuracies(dataset, pair_sets, names, outcomes: Outcomes, result):
    """Every pairwise-accuracy figure (per kind, criterion and subset, and their average) of each metric in
    ``names`` (read through ``outcomes``) into ``result``; each figure's resamples are shared by all metrics
    (a paired bootstrap)."""
    options = result.options
    bootstrap, seed, confidence = options["bootstrap"], options["seed"], options["confidence"]
    for kind, criterion in dict.fromkeys((kind, criterion) for kind, criterion, _ in pair_sets):
        subsets = [s for k, c, s in pair_sets if (k, c) == (kind, criterion)]
        # The overall criterion keeps the resampling key it always had (same intervals as before criteria).
        rng_key = (kind,) if criterion == OVERALL else (kind, criterion)
        boots: dict[str, list[np.ndarray]] = {name: [] for name in names}
        values: dict[str, list[float]] = {name: [] for name in names}
        totals: dict[str, list[int]] = {name: [0, 0, 0] for name in names}  # pairs, units, failed items
        keys: dict[str, str] = {}
        for subset in subsets:
            pairs = pair_sets[(kind, criterion, subset)]
            groups = list(dict.fromkeys(str(p["group"]) for p in pairs))
            position = {g: k for k, g in enumerate(groups)}
            unit = np.array([position[str(p["group"])] for p in pairs])
            counts_b = None
            if bootstrap:
                rng = rng_for(seed, dataset, "acc", *rng_key, subset)
                counts_b = resample_counts(len(groups), bootstrap, rng).astype(np.float64)
            for name in names:
                outcome, failed, keys[name] = outcomes(name, pairs, criterion)
                # A pair with a failed side (NaN outcome) leaves the figure.
                keep = ~np.isnan(outcome)
                value = float(outcome[keep].mean()) if keep.any() else math.nan
                boot = None
                if counts_b is not None:
                    correct_per_unit = np.bincount(unit[keep], weights=outcome[keep], minlength=len(groups))
                    pairs_per_unit = np.bincount(unit[keep], minlength=len(groups)).astype(np.float64)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        boot = (counts_b @ correct_per_unit) / (counts_b @ pairs_per_unit)
                    boots[name].append(boot)
                values[name].append(value)
                n_units = len(set(unit[keep].tolist()))
                for t, n in enumerate((int(keep.sum()), n_units, failed)):
                    totals[name][t] += n
                figure = dict(
                    dataset=dataset, metric=name, kind=kind, criterion=criterion, subset=subset, score_key=keys[name]
                )
                _add_accuracy(result, figure, value, boot, confidence, (int(keep.sum()), n_units, failed))
        if len(subsets) > 1:  # the mean over tasks / categories ("Avg." of Table 2)
            for name in names:
                boot = np.mean(boots[name], axis=0) if boots[name] else None
                figure = dict(
                    dataset=dataset, metric=name, kind=kind, criterion=criterion, subset=AVG, score_key=keys[name]
                )
                _add_accuracy(result, figure, float(np.mean(values[name])), boot, confidence, totals[name])


def _add_accuracy(
    result: MetaEvalResult, figure: dict, value: float, boot: Any, confidence: float, counts: Sequence[int]
) -> None:
    """One accuracy record: ``figure`` (dataset, metric, kind, criterion, subset, score_key), its value and
    interval, and ``counts`` (pairs, units, failed items)."""
    low, high = percentile_interval(boot, confidence) if boot is not None else (math.nan, math.nan)
    n_pairs, n_units, n_failed = counts
    record = {
        **{k: figure[k] for k in ("dataset", "metric")},
        "measure": "accuracy",
        **{k: figure[k] for k in ("kind", "criterion", "subset", "score_key")},
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "n_pairs": n_pairs,
        "n_units": n_units,
        "n_failed": n_failed,
    }
    result.records.append(record)
    if boot is not None:
        result.resamples[(figure_key(record), figure["metric"])] = boot
