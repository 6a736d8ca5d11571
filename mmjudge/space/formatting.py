"""What the Space shows after Score, as text and data: the headline, the per-criterion table and chart,
the explanations, the other metrics side by side, the signatures and the "share" JSON. Everything a
visitor typed (or a judge wrote) goes into Markdown through :func:`~mmjudge.report.markdown_text`.

>>> criterion_label("fluency", {"fluency": 3.25, "fluency_sigma": float("nan")})
'fluency: 3.250 (σ —) — why?'
"""

from __future__ import annotations

import json
import math
from typing import Any

from mmjudge.metrics.statuses import NEEDS_IMAGE_NOTE, NOT_ASKED
from mmjudge.report import markdown_text
from mmjudge.space.choices import MetricChoice
from mmjudge.space.inputs import TASKS
from mmjudge.space.scorer import PRIMARY, SpaceResult
from mmjudge.space.settings import RANDOM_DEMO_WARNING


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}f}"
    return str(value)


DEMO_WARNING = RANDOM_DEMO_WARNING


def criteria(result: SpaceResult) -> list[str]:
    """HarmonicEval's criteria in this result, in their order."""
    if PRIMARY not in result.reports:
        return []
    return spec_criteria(result.reports[PRIMARY].spec)


def spec_criteria(spec: Any) -> list[str]:
    """The criteria a metric's spec scores (every score but the primary), in their order."""
    return [name for name in spec.score_names() if name != spec.primary]


def criterion_label(criterion: str, row: dict) -> str:
    """The label of a criterion's explanation panel: its score and σ when this result has them.

    >>> criterion_label("fluency", {"fluency": 3.25, "fluency_sigma": float("nan")})
    'fluency: 3.250 (σ —) — why?'
    >>> criterion_label("fluency", {})
    'fluency'
    """
    if criterion not in row:
        return criterion
    return f"{criterion}: {_num(row[criterion])} (σ {_num(row.get(criterion + '_sigma'))}) — why?"


def criteria_frame(result: SpaceResult):
    """A ``pandas.DataFrame`` with ``criterion``, ``score`` (1–5), ``sigma``, ``weight``: the chart's data."""
    import pandas as pd

    row = result.harmonic
    names = [c for c in criteria(result) if not row or row.get(f"{c}_status") not in NOT_ASKED]  # no bar: not rated
    return pd.DataFrame(
        {
            "criterion": names,
            "score": [float(row[c]) for c in names] if row else [],
            "sigma": [float(row[f"{c}_sigma"]) for c in names] if row else [],
            "weight": [float(row[f"{c}_weight"]) for c in names] if row else [],
        }
    )


def overall_markdown(result: SpaceResult) -> str:
    """The headline: HarmonicEval's overall score (or a note that it was not run)."""
    lines = []
    if result.demo:
        lines.append(f"**{result.warning or DEMO_WARNING}**\n")
    row = result.harmonic
    if row is None:
        lines.append("HarmonicEval was not run (tick it under Metrics for the per-criterion view).")
    else:
        lines.append(f"## Overall HarmonicEval score: {_num(row['overall'])} / 5")
        lines.append(
            f"Task: {TASKS.get(result.item.get('task'), '')}. Criteria are weighted by how sure the judge is "
            "(smaller σ, larger weight)."
        )
        unrated = [c for c in criteria(result) if row.get(f"{c}_status") in NOT_ASKED]
        if unrated:
            lines.append(
                f"Not rated: {', '.join(unrated)} ({NEEDS_IMAGE_NOTE[len('not rated: ') :]}); the overall "
                "score weighs the other criteria."
            )
    return "\n".join(lines)


def criteria_markdown(result: SpaceResult) -> str:
    """A table: each criterion's score, σ and weight (and how much probability the judge put on 1–5)."""
    row = result.harmonic
    if row is None:
        return ""
    lines = ["| Criterion | Score (1–5) | σ | Weight | Mass on 1–5 |", "|---|---:|---:|---:|---:|"]
    for c in criteria(result):
        if row.get(f"{c}_status") in NOT_ASKED:  # never asked (the judge cannot see images): say so, no numbers
            lines.append(f"| {c} | {markdown_text(row.get(f'{c}_note') or row[f'{c}_status'])} | | | |")
            continue
        figures = [row[c], row[f"{c}_sigma"], row[f"{c}_weight"], row.get(f"{c}_mass")]
        lines.append(f"| {c} | " + " | ".join(_num(v) for v in figures) + " |")
    return "\n".join(lines)


def explanation_texts(result: SpaceResult) -> dict[str, str]:
    """Criterion → its explanation (or a line saying how to get one)."""
    row = result.harmonic or {}
    out = {}
    for c in criteria(result):
        text = row.get(f"{c}_explanation")  # the judge's words, which may echo the visitor's text: escaped
        out[c] = (
            markdown_text(text) if text else "No explanation asked for: tick *Explain each criterion* and score again."
        )
    return out


def not_computed(row: dict, name: str) -> str | None:
    """Why ``row`` has no value for score ``name`` (``None`` when it has one): the metric's own reason
    when it gives one (an output ``<name>_reason``), else a general one. A score the engine cannot
    compute (CIDEr-D on one item: its IDF needs a corpus) is NaN, never a number.

    >>> not_computed({"cider": float("nan"), "cider_reason": "needs a corpus: not computed for one item"}, "cider")
    'needs a corpus: not computed for one item'
    >>> not_computed({"bleu_4": 0.0}, "bleu_4") is None
    True
    """
    value = row.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return None
    for key in (f"{name}_reason", f"{name}_note", "reason"):
        if isinstance(row.get(key), str) and row[key].strip():
            return row[key].strip()
    return "the metric gave no value for this input"


def others_markdown(result: SpaceResult, choices: dict[str, MetricChoice]) -> str:
    """Every other metric's primary score (and its other scores) side by side, each with what it
    measures and, when it was asked to explain, what it said; metrics that could not run, with why."""
    md = markdown_text  # labels may be anything an API client sent; reasons may repeat its input
    lines = ["| Metric | Score | What it measures |", "|---|---:|---|"]
    any_row = False
    for label, report in result.reports.items():
        if label == PRIMARY:
            continue
        row = report.rows[0]
        names = [n for n in report.spec.score_names() if n in row]
        why = not_computed(row, names[0])
        score = _num(row[names[0]]) if why is None else f"not computed: {md(why)}"
        extra = ", ".join(
            f"{n} {_num(row[n])}" if not_computed(row, n) is None else f"{n} not computed" for n in names[1:]
        )
        primary = report.spec.output(report.spec.primary)
        note = f"{report.spec.description}; {primary.name}: {primary.description}" + (
            f" (also {extra})" if extra else ""
        )
        said = [row[n] for n in row if n.endswith("explanation") and isinstance(row[n], str)]
        why_text = "".join(f" — why: {t.strip()}" for t in said if t.strip())  # asked with *Explain*
        lines.append(f"| {md(label)} | {score} | {md(note + why_text)} |")
        any_row = True
    for label, reason in result.skipped.items():
        note = choices[label].note if label in choices else ""
        lines.append(f"| {md(label)} | not run: {md(reason)} | {md(note)} |")
        any_row = True
    for label, reason in result.failed.items():
        note = choices[label].note if label in choices else ""
        lines.append(f"| {md(label)} | failed: {md(reason)} | {md(note)} |")
        any_row = True
    return "\n".join(lines) if any_row else "No other metric chosen."


def share_payload(result: SpaceResult) -> dict:
    """The "share this result" JSON: task, text, and per metric its scores and signature."""
    item = result.item
    payload: dict[str, Any] = {"task": item.get("task"), "text": item.get("text")}
    for key in ("question", "box", "references"):
        if item.get(key):
            payload[key] = item[key]
    if result.demo:
        payload["warning"] = result.warning or DEMO_WARNING
    payload["scores"] = {}
    for label, report in result.reports.items():
        record = report.to_records()[0]
        kept = {k: v for k, v in record.items() if k not in ("id", "task", "text")}
        payload["scores"][label] = kept
    return payload


def share_json(result: SpaceResult) -> str:
    return json.dumps(share_payload(result), ensure_ascii=False, indent=2)


def signatures_text(result: SpaceResult) -> str:
    """One ``label: signature`` line per metric that ran."""
    return "\n".join(f"{label}: {sig}" for label, report in result.reports.items() for sig in report.signatures)
