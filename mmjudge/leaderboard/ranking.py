"""From scored submissions to ranked tables — never ranking unlike signatures together.

Models track: a submission's per-item HarmonicEval rows (:class:`mmjudge.report.Report`) are summarised
as means overall, per criterion, per task and per task × criterion (:func:`summarise_models`).
Metrics track: the meta-evaluation of the submitted scores (:func:`mmjudge.metaeval.meta_evaluate`) is
summarised as Kendall τ per task × criterion and best-of-N accuracy per task, each with its bootstrap
interval (:func:`summarise_metaeval`).

Tables are built per **signature group** (:func:`group_by_signature`): rows whose signatures are not
:func:`~mmjudge.signature.comparable` (other judge, prompts, γ, protocol…) go to separate groups, each
with its own ranks.

>>> a = {"id": "1", "name": "A", "signature": "mmjudge=0.1.0|metric=he|gamma=0.75", "created_at": 1,
...      "summary": {"overall": 3.0, "criteria": {"fluency": 4.0}, "tasks": {}}}
>>> b = dict(a, id="2", name="B", created_at=2, summary={"overall": 3.5, "criteria": {"fluency": 3.0}, "tasks": {}})
>>> c = dict(a, id="3", name="C", created_at=3, signature="mmjudge=0.2.0|metric=he|gamma=0.75")
>>> d = dict(a, id="4", name="D", created_at=4, signature="mmjudge=0.1.0|metric=he|gamma=0.5")
>>> [[(r["rank"], r["name"]) for r in g["rows"]] for g in rank_models([a, b, c, d])]
[[(1, 'B'), (2, 'A'), (2, 'C')], [(1, 'D')]]
>>> [(r["rank"], r["name"]) for r in rank_models([a, b], criterion="fluency")[0]["rows"]]
[(1, 'A'), (2, 'B')]
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from mmjudge.signature import comparable

ALL = "all"
MAX_EXAMPLES = 3


# ------------------------------------------------------------------------------------- summaries
def _mean(values: Sequence[Any]) -> Optional[float]:
    xs = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(xs) / len(xs) if xs else None


def summarise_models(rows: Sequence[dict], criteria: Sequence[str], max_examples: int = MAX_EXAMPLES) -> dict:
    """Means of ``overall`` and each criterion, over all rows and per task, plus a few explanations.

    >>> rows = [{"id": "a", "task": "ic", "overall": 3.0, "fluency": 4.0, "fluency_explanation": "Reads well."},
    ...         {"id": "b", "task": "vqa", "overall": 4.0, "fluency": 2.0}]
    >>> s = summarise_models(rows, ["fluency"])
    >>> s["overall"], s["criteria"], s["tasks"]["vqa"], s["examples"][0]["explanation"]
    (3.5, {'fluency': 3.0}, {'overall': 4.0, 'fluency': 2.0, 'n': 1}, 'Reads well.')
    """
    tasks: dict[str, dict] = {}
    for task in dict.fromkeys(str(r.get("task") or ALL) for r in rows):
        part = [r for r in rows if str(r.get("task") or ALL) == task]
        tasks[task] = {"overall": _mean([r.get("overall") for r in part]),
                       **{c: _mean([r.get(c) for r in part]) for c in criteria}, "n": len(part)}  # fmt: skip
    examples = []
    for r in rows:
        for c in criteria:
            text = r.get(f"{c}_explanation")
            if isinstance(text, str) and text.strip() and len(examples) < max_examples:
                examples.append({"id": r["id"], "task": r.get("task"), "criterion": c, "score": r.get(c),
                                 "text": r.get("text"), "explanation": text})  # fmt: skip
    return {
        "overall": _mean([r.get("overall") for r in rows]),
        "criteria": {c: _mean([r.get(c) for r in rows]) for c in criteria},
        "tasks": tasks,
        "n": len(rows),
        "examples": examples,
    }


def summarise_metaeval(result: Any, metric: str) -> dict:
    """The figures of ``metric`` in a :class:`~mmjudge.metaeval.MetaEvalResult`: the benchmark's
    correlation per ``task/criterion`` and accuracy per ``kind/subset``, with intervals, and the headline."""
    measure = result.correlation_measure

    def fig(r: dict) -> dict:
        return {k: (None if isinstance(r.get(k), float) and not math.isfinite(r[k]) else r.get(k))
                for k in ("value", "ci_low", "ci_high")}  # fmt: skip

    correlations = {f"{r['task']}/{r['criterion']}": fig(r) for r in result.find(metric, measure=measure)}
    accuracy = {f"{r['kind']}/{r['subset']}": fig(r) for r in result.find(metric, measure="accuracy")}
    head = result.headline(metric)
    headline = None
    if head is not None:
        label = f"accuracy {head['kind']}/{head['subset']}" if head["measure"] == "accuracy" else f"{measure} {head['task']}/{head['criterion']}"
        headline = {"label": label, **fig(head)}
    return {"measure": measure, "correlations": correlations, "accuracy": accuracy, "headline": headline,
            "options": dict(result.options)}  # fmt: skip


# ------------------------------------------------------------------------------------- grouping
def group_by_signature(entries: Sequence[dict]) -> list[list[dict]]:
    """Entries split into groups of mutually comparable signatures (first come, first grouped)."""
    groups: list[list[dict]] = []
    for entry in entries:
        for group in groups:
            if comparable(group[0]["signature"], entry["signature"]):
                group.append(entry)
                break
        else:
            groups.append([entry])
    return groups


def competition_ranks(values: Sequence[Optional[float]], higher_is_better: bool = True) -> list[Optional[int]]:
    """Standard competition ranks ("1224"); missing values get no rank.

    >>> competition_ranks([0.5, 0.9, 0.5, None, 0.1])
    [2, 1, 2, None, 4]
    """
    present = [v for v in values if v is not None]
    out: list[Optional[int]] = []
    for v in values:
        if v is None:
            out.append(None)
        else:
            better = sum(1 for w in present if (w > v if higher_is_better else w < v))
            out.append(better + 1)
    return out


def _ranked(rows: list[dict], key: str) -> list[dict]:
    ranks = competition_ranks([r.get(key) for r in rows])
    for r, k in zip(rows, ranks):
        r["rank"] = k
    return sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["_created"], r["id"]))


def _base(entry: dict) -> dict:
    return {"id": entry["id"], "name": entry["name"], "link": entry.get("link", ""), "submitter": entry.get("submitter", ""),
            "_created": entry.get("created_at", 0)}  # fmt: skip


# -------------------------------------------------------------------------------------- tables
def model_columns(summary: dict, task: Optional[str] = None) -> dict[str, Optional[float]]:
    """``overall`` and each criterion, over all tasks or for one task; plus one column per task."""
    if task and task != ALL:
        part = summary.get("tasks", {}).get(task)
        if part is None:
            return {"overall": None}
        return {k: v for k, v in part.items() if k != "n"}
    out = {"overall": summary.get("overall"), **summary.get("criteria", {})}
    for t, part in summary.get("tasks", {}).items():
        out[f"task:{t}"] = part.get("overall")
    return out


def rank_models(entries: Sequence[dict], task: Optional[str] = None, criterion: str = "overall") -> list[dict]:
    """One table per signature group: rows with ``rank`` by ``criterion`` (``overall`` or a criterion
    name) over all tasks or one ``task``; groups with more rows first."""
    tables = []
    for group in group_by_signature(entries):
        rows = [{**_base(e), **model_columns(e["summary"], task)} for e in group]
        tables.append({"signature": group[0]["signature"], "rows": _ranked(rows, criterion), "by": criterion})
    return sorted(tables, key=lambda t: -len(t["rows"]))


def metric_columns(summary: dict, task: Optional[str] = None, criterion: Optional[str] = None) -> dict[str, Optional[float]]:
    """The headline and every correlation / accuracy figure, filtered by ``task`` and ``criterion``."""
    out: dict[str, Optional[float]] = {"headline": (summary.get("headline") or {}).get("value")}
    for key, fig in summary.get("correlations", {}).items():
        t, c = key.split("/", 1)
        if (not task or task == ALL or t == task) and (not criterion or c == criterion):
            out[f"{summary['measure']}:{key}"] = fig["value"]
    for key, fig in summary.get("accuracy", {}).items():
        subset = key.split("/", 1)[1]
        if not task or task == ALL or subset == task:
            out[f"accuracy:{key}"] = fig["value"]
    return out


def rank_metrics(entries: Sequence[dict], task: Optional[str] = None, criterion: Optional[str] = None,
                 by: str = "headline") -> list[dict]:  # fmt: skip
    """One table per (benchmark, signature group): rows ranked by ``by`` (default the headline)."""
    tables = []
    for benchmark in dict.fromkeys(e["benchmark"] for e in entries):
        for group in group_by_signature([e for e in entries if e["benchmark"] == benchmark]):
            rows = [{**_base(e), **metric_columns(e["summary"], task, criterion)} for e in group]
            label = (group[0]["summary"].get("headline") or {}).get("label", "")
            tables.append({"benchmark": benchmark, "signature": group[0]["signature"], "headline": label,
                           "rows": _ranked(rows, by), "by": by})  # fmt: skip
    return sorted(tables, key=lambda t: -len(t["rows"]))


def public_rows(table: dict) -> list[dict]:
    """Rows without private bookkeeping fields (``_created``)."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in table["rows"]]
