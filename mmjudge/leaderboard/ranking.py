"""From scored submissions to ranked tables — never ranking unlike signatures together.

Models track: a submission's per-item HarmonicEval rows (:class:`mmjudge.report.Report`) are summarised
as means overall, per criterion, per task and per task × criterion (:func:`summarise_models`).
Metrics track: the meta-evaluation of the submitted scores (:func:`mmjudge.metaeval.meta_evaluate`) is
summarised as Kendall τ per task × criterion and best-of-N accuracy per task, each with its bootstrap
interval (:func:`summarise_metaeval`).

Tables are built per benchmark and **signature group** (:func:`group_by_signature`): rows whose
signatures are not :func:`~mmjudge.signature.comparable` (other judge, prompts, γ, protocol…) go to
separate groups, each with its own ranks. Each row carries its figure's interval (bootstrap over items)
and whether it is separable from the row above (paired bootstrap on the same items,
:mod:`mmjudge.leaderboard.uncertainty`). A Models-track submission whose judge failed on more than
``max_failed_share`` of its items is listed without a rank, with the reason (:data:`MAX_FAILED_SHARE`).

>>> from dataclasses import replace
>>> from mmjudge.leaderboard.records import ScoredSubmission
>>> a = ScoredSubmission(id="1", track="models", benchmark="b", name="A", submitter="", created_at=1,
...                      signature="mmjudge=0.1.0|metric=he|gamma=0.75",
...                      summary={"overall": 3.0, "criteria": {"fluency": 4.0}, "tasks": {}})
>>> b = replace(a, id="2", name="B", created_at=2, summary={"overall": 3.5, "criteria": {"fluency": 3.0}, "tasks": {}})
>>> c = replace(a, id="3", name="C", created_at=3, signature="mmjudge=0.2.0|metric=he|gamma=0.75")
>>> d = replace(a, id="4", name="D", created_at=4, signature="mmjudge=0.1.0|metric=he|gamma=0.5")
>>> [[(r["rank"], r["name"]) for r in g["rows"]] for g in rank_models([a, b, c, d])]
[[(1, 'B'), (2, 'A'), (2, 'C')], [(1, 'D')]]
>>> [(r["rank"], r["name"]) for r in rank_models([a, b], criterion="fluency")[0]["rows"]]
[(1, 'A'), (2, 'B')]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mmjudge.leaderboard.records import ScoredSubmission
from mmjudge.leaderboard.uncertainty import mean_interval, paired, separable_resamples
from mmjudge.signature import comparable

ALL = "all"
MAX_EXAMPLES = 3
# A judge that fails (no rating, too little probability mass on the scale, an error) gives no score for
# that criterion of that item, and the item's overall needs every criterion. Means leave failed items
# out, so a submission that failed on many items would be ranked on the easier rest: above 5 % of its
# items failed, it is shown but not ranked. 5 %: a working judge fails on a handful of odd inputs; one
# that fails on one item in twenty is broken for that model's outputs, and its mean is no longer a
# mean over the benchmark.
MAX_FAILED_SHARE = 0.05
STATUS_OK = "ok"


# ------------------------------------------------------------------------------------- summaries
def _mean(values: Sequence[Any]) -> float | None:
    xs = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(xs) / len(xs) if xs else None


def _failed(row: dict, criterion: str) -> bool:
    """The judge gave no score for ``criterion`` of this item (``<c>_status`` other than ``ok``, or no
    value; rows from before the status existed have none and count as ``ok``)."""
    return row.get(f"{criterion}_status", STATUS_OK) != STATUS_OK or _number(row.get(criterion)) is None


def summarise_models(rows: Sequence[dict], criteria: Sequence[str], max_examples: int = MAX_EXAMPLES) -> dict:
    """Means of ``overall`` and each criterion, over all rows and per task (failed items left out), the
    judge's failures per criterion, the per-item values (for intervals) and a few explanations.

    >>> rows = [{"id": "a", "task": "ic", "overall": 3.0, "fluency": 4.0, "fluency_explanation": "Reads well."},
    ...         {"id": "b", "task": "vqa", "overall": 4.0, "fluency": 2.0},
    ...         {"id": "c", "task": "vqa", "overall": None, "fluency": None, "fluency_status": "no_rating"}]
    >>> s = summarise_models(rows, ["fluency"])
    >>> s["overall"], s["criteria"], s["tasks"]["vqa"], s["examples"][0]["explanation"]
    (3.5, {'fluency': 3.0}, {'overall': 4.0, 'fluency': 2.0, 'n': 2, 'failed': 1}, 'Reads well.')
    >>> s["failures"], s["failed_items"], s["items"]["overall"]
    ({'fluency': 1}, 1, [3.0, 4.0, None])
    """

    def failed_item(r: dict) -> bool:
        return any(_failed(r, c) for c in criteria) or _number(r.get("overall")) is None

    tasks: dict[str, dict] = {}
    for task in dict.fromkeys(str(r.get("task") or ALL) for r in rows):
        part = [r for r in rows if str(r.get("task") or ALL) == task]
        tasks[task] = {
            "overall": _mean([r.get("overall") for r in part]),
            **{c: _mean([r.get(c) for r in part]) for c in criteria},
            "n": len(part),
            "failed": sum(1 for r in part if failed_item(r)),
        }
    examples = []
    for r in rows:
        for c in criteria:
            text = r.get(f"{c}_explanation")
            if isinstance(text, str) and text.strip() and len(examples) < max_examples:
                examples.append(
                    {
                        "id": r["id"],
                        "task": r.get("task"),
                        "criterion": c,
                        "score": r.get(c),
                        "text": r.get("text"),
                        "explanation": text,
                    }
                )
    return {
        "overall": _mean([r.get("overall") for r in rows]),
        "criteria": {c: _mean([r.get(c) for r in rows]) for c in criteria},
        "tasks": tasks,
        "n": len(rows),
        "failures": {c: sum(1 for r in rows if _failed(r, c)) for c in criteria},
        "failed_items": sum(1 for r in rows if failed_item(r)),
        # Per-item values in the benchmark's order: every submission of a benchmark has the same items,
        # so the board can bootstrap a row's interval and compare two rows item by item.
        "items": {
            "task": [str(r.get("task") or ALL) for r in rows],
            "overall": [_number(r.get("overall")) for r in rows],
            **{c: [_number(r.get(c)) for r in rows] for c in criteria},
        },
        "examples": examples,
    }


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def summarise_metaeval(result: Any, metric: str) -> dict:
    """The figures of ``metric`` in a :class:`~mmjudge.metaeval.MetaEvalResult`: the benchmark's
    correlation per ``task/criterion`` and accuracy per ``kind/subset``, with intervals, and the headline
    with its bootstrap values (``resamples``: every submission under the same protocol and seed was
    resampled identically, so two rows' values give a paired comparison)."""
    measure = result.correlation_measure

    def fig(r: dict) -> dict:
        return {
            k: (None if isinstance(r.get(k), float) and not math.isfinite(r[k]) else r.get(k))
            for k in ("value", "ci_low", "ci_high")
        }

    correlations = {f"{r['task']}/{r['criterion']}": fig(r) for r in result.find(metric, measure=measure)}
    accuracy = {f"{r['kind']}/{r['subset']}": fig(r) for r in result.find(metric, measure="accuracy")}
    head = result.headline(metric)
    headline = None
    if head is not None:
        label = (
            f"accuracy {head['kind']}/{head['subset']}"
            if head["measure"] == "accuracy"
            else f"{measure} {head['task']}/{head['criterion']}"
        )
        headline = {"label": label, **fig(head), "resamples": _resamples_of(result, metric, head)}
    return {
        "measure": measure,
        "correlations": correlations,
        "accuracy": accuracy,
        "headline": headline,
        "options": dict(result.options),
    }


def _resamples_of(result: Any, metric: str, record: dict) -> list | None:
    """The in-memory bootstrap values of one figure (``resamples`` is keyed by the figure's fields and
    the metric's name)."""
    for (key, name), values in getattr(result, "resamples", {}).items():
        if name == metric and all(record.get(field) == value for field, value in key):
            return [_number(v) for v in values]
    return None


# ------------------------------------------------------------------------------------- grouping
def group_by_signature(entries: Sequence[ScoredSubmission]) -> list[list[ScoredSubmission]]:
    """Entries split into groups of mutually comparable signatures (first come, first grouped)."""
    groups: list[list[ScoredSubmission]] = []
    for entry in entries:
        for group in groups:
            if comparable(group[0].signature, entry.signature):
                group.append(entry)
                break
        else:
            groups.append([entry])
    return groups


def competition_ranks(values: Sequence[float | None], higher_is_better: bool = True) -> list[int | None]:
    """Standard competition ranks ("1224"); missing values get no rank.

    >>> competition_ranks([0.5, 0.9, 0.5, None, 0.1])
    [2, 1, 2, None, 4]
    """
    present = [v for v in values if v is not None]
    out: list[int | None] = []
    for v in values:
        if v is None:
            out.append(None)
        else:
            better = sum(1 for w in present if (w > v if higher_is_better else w < v))
            out.append(better + 1)
    return out


def _ranked(rows: list[dict], key: str, higher_is_better: bool = True) -> list[dict]:
    """Competition ranks by ``key`` among the rows that may be ranked (``ranked`` not False); the smallest first
    when lower is better (a distance)."""
    ranks = competition_ranks([r.get(key) if r.get("ranked", True) else None for r in rows], higher_is_better)
    for r, k in zip(rows, ranks):
        r["rank"] = k
    return sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["_created"], r["id"]))


def _base(entry: ScoredSubmission) -> dict:
    return {
        "id": entry.id,
        "name": entry.name,
        "link": entry.link,
        "submitter": entry.submitter,
        "_created": entry.created_at,
    }


def by_benchmark(entries: Sequence[ScoredSubmission]) -> dict[str, list[ScoredSubmission]]:
    """Entries per benchmark, in first-seen order: different benchmarks are never ranked together."""
    out: dict[str, list[ScoredSubmission]] = {}
    for e in entries:
        out.setdefault(e.benchmark, []).append(e)
    return out


# -------------------------------------------------------------------------------------- tables
def model_columns(summary: dict, task: str | None = None) -> dict[str, float | None]:
    """``overall`` and each criterion, over all tasks or for one task; plus one column per task."""
    if task and task != ALL:
        part = summary.get("tasks", {}).get(task)
        if part is None:
            return {"overall": None}
        return {k: v for k, v in part.items() if k not in ("n", "failed")}
    out = {"overall": summary.get("overall"), **summary.get("criteria", {})}
    for t, part in summary.get("tasks", {}).items():
        out[f"task:{t}"] = part.get("overall")
    return out


def failure_note(summary: dict, max_failed_share: float = MAX_FAILED_SHARE) -> tuple[int | None, str | None]:
    """(items the judge failed on, why the row is not ranked — None when it is ranked).

    >>> failure_note({"n": 100, "failed_items": 7, "failures": {"clarity": 7, "fluency": 0}})
    (7, 'not ranked: the judge failed on 7 of 100 items (7.0%: clarity 7), more than the 5% allowed')
    >>> failure_note({"n": 100, "failed_items": 5, "failures": {"clarity": 5}})
    (5, None)
    """
    failed, n = summary.get("failed_items"), summary.get("n") or 0
    if failed is None:  # scored before failures were counted
        return None, None
    if n and failed / n > max_failed_share:
        which = ", ".join(f"{c} {k}" for c, k in (summary.get("failures") or {}).items() if k)
        return failed, (
            f"not ranked: the judge failed on {failed} of {n} items ({100 * failed / n:.1f}%: {which}), "
            f"more than the {100 * max_failed_share:g}% allowed"
        )
    return failed, None


def rank_models(
    entries: Sequence[ScoredSubmission],
    task: str | None = None,
    criterion: str = "overall",
    max_failed_share: float = MAX_FAILED_SHARE,
    bootstrap: int = 0,
    seed: int = 0,
) -> list[dict]:
    """One table per benchmark and signature group: rows with ``rank`` by ``criterion`` (``overall`` or a
    criterion name) over all tasks or one ``task``; groups with more rows first. Each row has
    ``failed`` (items the judge failed on), ``ranked`` and ``note`` (why not); with ``bootstrap``
    resamples also ``ci_low``/``ci_high`` and ``separable`` (from the ranked row above)."""
    tables = []
    for benchmark, entries_b in by_benchmark(entries).items():
        for group in group_by_signature(entries_b):
            rows = []
            for e in group:
                failed, note = failure_note(e.summary, max_failed_share)
                rows.append(
                    {
                        **_base(e),
                        **model_columns(e.summary, task),
                        "failed": failed,
                        "ranked": note is None,
                        "note": note or "",
                        "_items": _item_values(e.summary, task, criterion),
                    }
                )
            rows = _ranked(rows, criterion)
            _add_uncertainty(rows, bootstrap, seed, (benchmark, task or ALL, criterion))
            tables.append({"benchmark": benchmark, "signature": group[0].signature, "rows": rows, "by": criterion})
    return sorted(tables, key=lambda t: -len(t["rows"]))


def _item_values(summary: dict, task: str | None, key: str) -> list | None:
    items = summary.get("items")
    if not items or key not in items:
        return None
    if not task or task == ALL:
        return list(items[key])
    return [v for t, v in zip(items["task"], items[key]) if t == task]


def _add_uncertainty(rows: list[dict], bootstrap: int, seed: int, key: tuple) -> None:
    """``ci_low``/``ci_high`` of each row and ``separable`` from the ranked row above (paired)."""
    above: list | None = None
    for r in rows:
        values = r.pop("_items")
        r["ci_low"], r["ci_high"] = mean_interval(values, bootstrap, seed, key) if values else (None, None)
        r["separable"] = None
        if r["rank"] is None:
            continue
        if above is not None and values:
            r["separable"] = paired(above, values, bootstrap, seed, key)["separable"]
        above = values


def metric_columns(summary: dict, task: str | None = None, criterion: str | None = None) -> dict[str, float | None]:
    """The headline and every correlation / accuracy figure, filtered by ``task`` and ``criterion``."""
    out: dict[str, float | None] = {"headline": (summary.get("headline") or {}).get("value")}
    for key, fig in summary.get("correlations", {}).items():
        t, c = key.split("/", 1)
        if (not task or task == ALL or t == task) and (not criterion or c == criterion):
            out[f"{summary['measure']}:{key}"] = fig["value"]
    for key, fig in summary.get("accuracy", {}).items():
        subset = key.split("/", 1)[1]
        if not task or task == ALL or subset == task:
            out[f"accuracy:{key}"] = fig["value"]
    return out


def rank_metrics(
    entries: Sequence[ScoredSubmission], task: str | None = None, criterion: str | None = None, by: str = "headline"
) -> list[dict]:
    """One table per (benchmark, signature group): rows ranked by ``by`` (default the headline), each
    with the headline's interval (``ci_low``/``ci_high``) and, ranked by the headline, ``separable``
    from the row above (their bootstrap values share the resamples)."""
    tables = []
    for benchmark, entries_b in by_benchmark(entries).items():
        for group in group_by_signature(entries_b):
            rows = []
            for e in group:
                head = e.summary.get("headline") or {}
                rows.append(
                    {
                        **_base(e),
                        **metric_columns(e.summary, task, criterion),
                        "ci_low": head.get("ci_low"),
                        "ci_high": head.get("ci_high"),
                        "_resamples": head.get("resamples"),
                    }
                )
            rows = _ranked(rows, by)
            above: list | None = None
            for r in rows:
                resamples = r.pop("_resamples")
                r["separable"] = separable_resamples(above, resamples) if by == "headline" and above else None
                if r["rank"] is not None:
                    above = resamples
            label = (group[0].summary.get("headline") or {}).get("label", "")
            tables.append(
                {"benchmark": benchmark, "signature": group[0].signature, "headline": label, "rows": rows, "by": by}
            )
    return sorted(tables, key=lambda t: -len(t["rows"]))


def public_rows(table: dict) -> list[dict]:
    """Rows without private bookkeeping fields (``_created``)."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in table["rows"]]
