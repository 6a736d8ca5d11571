"""Scoring for the Space: which metrics apply, running them, and what the page shows.

Metrics are offered from the engine's registry (:data:`mmjudge.metrics.METRICS`) and their declarations
(:meth:`~mmjudge.metrics.base.Metric.spec_for`: ``label``, ``judged``, ``requires``, ``tasks``,
``inputs``, ``description``); which labels the page offers, and in what order, is data in the settings
(:data:`~mmjudge.space.settings.DEFAULT_METRICS`). A metric that needs images, references or a task the
item lacks is skipped with the reason; results are read only through :class:`mmjudge.report.Report`.
Every message that repeats what a visitor typed (or what the judge wrote) goes into Markdown through
the one escaping helper, :func:`~mmjudge.report.markdown_text`.

>>> from mmjudge.space import Settings
>>> [c.label for c in metric_choices(Settings())]
['HarmonicEval', 'FLEUR', 'RefFLEUR', 'CLIP-S', 'RefCLIP-S', 'BLEU', 'ROUGE-L', 'CIDEr-D']
>>> choice = {c.label: c for c in metric_choices(Settings())}["RefCLIP-S"]
>>> choice.skip_reason({"task": "ic", "text": "a dog", "image": "x"})
'needs reference texts (one per line under References)'
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmjudge.metrics import METRICS
from mmjudge.metrics.base import MetricSpec
from mmjudge.metrics.statuses import NEEDS_IMAGE_NOTE, NOT_ASKED
from mmjudge.report import Report, markdown_text
from mmjudge.space.inputs import TASKS
from mmjudge.space.settings import RANDOM_DEMO_WARNING, Settings

Progress = Callable[..., Any]

PRIMARY = "HarmonicEval"  # the page's subject: its per-criterion chart, table and explanations
_NEEDS = {
    "image": "needs an image",
    "references": "needs reference texts (one per line under References)",
    "question": "needs a question",
    "box": "needs a box",
}


@dataclass(frozen=True)
class MetricChoice:
    """One metric configuration the page offers."""

    label: str
    name: str
    config: str | None
    spec: MetricSpec

    @property
    def note(self) -> str:
        """One line on what it measures (the metric's own declaration)."""
        return self.spec.description

    def skip_reason(self, item: dict) -> str | None:
        """Why this metric cannot score ``item`` (``None`` when it can)."""
        task = item.get("task", "ic")
        if task not in self.spec.tasks:
            names = ", ".join(TASKS.get(t, t) for t in self.spec.tasks)
            return f"scores {names} only"
        for spec in self.spec.inputs:
            needed = spec.required or task in spec.required_for
            if needed and spec.item_key != "text" and not item.get(spec.item_key):
                return _NEEDS.get(spec.kind, f"needs {spec.item_key}")
        return None


def declared_configurations(names: Sequence[str] | None = None) -> dict[str, tuple[str, str | None, MetricSpec]]:
    """label → (metric name, configuration, spec) for every configuration the registry declares (of the
    metrics in ``names`` when given); a metric that cannot even declare itself here is left out. The
    configuration is ``None`` for metrics that have only one (they take no ``config_name``)."""
    out: dict[str, tuple[str, str | None, MetricSpec]] = {}
    for name in METRICS.names() if names is None else names:
        try:
            cls = METRICS.get(name)
            configs = list(cls.configs) or [None]
            for config in configs:
                spec = cls.spec_for(config)
                out.setdefault(spec.label, (name, config if len(configs) > 1 else None, spec))
        except Exception:
            logging.getLogger("mmjudge.space").warning(
                "metric %s cannot declare itself; not offered", name, exc_info=True
            )
    return out


def metric_choices(settings: Settings, names: Sequence[str] | None = None) -> list[MetricChoice]:
    """The metric configurations this install offers: the settings' labels, in their order, that the
    registry declares and whose required options (``spec.requires``) the settings give."""
    declared = declared_configurations(names)
    out = []
    for label in settings.metrics:
        if label not in declared:
            continue
        name, config, spec = declared[label]
        options = settings.options_for(name, config)
        if any(option not in options for option in spec.requires):
            continue
        out.append(MetricChoice(label, name, config, spec))
    return out


@dataclass
class SpaceResult:
    """One scored item: a :class:`Report` per metric that ran, and why the others did not."""

    item: dict
    reports: dict[str, Report] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    demo: bool = False
    warning: str = ""  # the demo's label (Settings.demo_warning)

    def row(self, label: str) -> dict:
        return self.reports[label].rows[0]

    @property
    def harmonic(self) -> dict | None:
        return self.row(PRIMARY) if PRIMARY in self.reports else None


class Scorer:
    """Loads each chosen metric once (one judge shared by HarmonicEval and FLEUR) and scores items.

    Args:
        settings: the Space's settings.
        judge: a ready judge to use instead of the one the settings name (tests: ``ScriptedJudge``).
    """

    def __init__(self, settings: Settings, judge: Any = None):
        self.settings = settings
        self.choices = {c.label: c for c in metric_choices(settings)}
        self._judge = judge
        self._metrics: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()  # two requests must not load the same model twice

    def judge(self) -> Any:
        if self._judge is None:
            from mmjudge.judges.factory import build_judge

            options = {"device": self.settings.device} if self.settings.device else {}
            cache = self.settings.cache or False
            self._judge = build_judge(self.settings.model, self.settings.judge, cache, **options)
        return self._judge

    def metric(self, label: str) -> Any:
        """The loaded metric of choice ``label``, loaded once (explanations are a per-call option, so one
        instance serves requests with and without them)."""
        with self._lock:
            if label not in self._metrics:
                self._metrics[label] = self._load(self.choices[label])
            return self._metrics[label]

    def _load(self, choice: MetricChoice) -> Any:
        import mmjudge

        kwargs: dict[str, Any] = self.settings.options_for(choice.name, choice.config)
        if choice.spec.judged:
            kwargs.update(judge=self.judge(), cache=False)  # one judge for all judged metrics; it carries the cache
        return mmjudge.load(choice.name, choice.config, **kwargs)

    def score(
        self, item: dict, labels: Sequence[str], explain: bool = False, progress: Progress | None = None
    ) -> SpaceResult:
        """Score ``item`` with the metrics named in ``labels`` (unknown or inapplicable ones are listed
        in ``skipped``). ``progress(fraction, desc=...)`` is called before each metric."""
        if not labels:
            raise ValueError("Metrics: none chosen. Tick at least one metric.")
        result = SpaceResult(item=item, demo=self.settings.demo, warning=self.settings.demo_warning)
        todo = []
        for label in labels:
            choice = self.choices.get(label)
            reason = "not available in this Space" if choice is None else choice.skip_reason(item)
            if reason:
                result.skipped[label] = reason
            else:
                todo.append(label)
        for k, label in enumerate(todo):
            if progress is not None:
                progress(k / len(todo), desc=f"{label}: loading and scoring")
            try:
                metric = self.metric(label)
                # Explanations are HarmonicEval's per-criterion "why?" (the page's tick box asks for those).
                options = {"explain": True} if explain and metric.name == "harmonic_eval" else {}
                result.reports[label] = Report.from_items(metric, [item], default_task=item["task"], **options)
            except Exception as err:
                if len(todo) == 1:
                    raise
                logging.getLogger("mmjudge.space").exception("%s failed", label)
                result.failed[label] = short_reason(err)
        if progress is not None:
            progress(1.0, desc="done")
        return result


def short_reason(err: BaseException, limit: int = 160) -> str:
    """The first line of an error, shortened, for a table cell (``|`` would break the table)."""
    first = (str(err).strip().splitlines() or [""])[0].replace("|", "/")
    text = f"{type(err).__name__}: {first}" if not isinstance(err, ValueError) else first
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------- formatting
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
        lines.append(
            f"| {c} | {_num(row[c])} | {_num(row[f'{c}_sigma'])} | {_num(row[f'{c}_weight'])} "
            f"| {_num(row.get(f'{c}_mass'))} |"
        )
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

    >>> row = {"cider": float("nan"), "cider_reason": "CIDEr-D needs a corpus: not computed for one item"}
    >>> not_computed(row, "cider")
    'CIDEr-D needs a corpus: not computed for one item'
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
    measures; metrics that could not run, with why."""
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
        lines.append(f"| {md(label)} | {score} | {md(note)} |")
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


# ------------------------------------------------------------------------------------- one request
@dataclass
class PageValues:
    """Everything the page shows after Score, as plain values (the Gradio shell only places them)."""

    status: str
    overall: str = ""
    frame: Any = None  # pandas.DataFrame for the chart
    criteria_table: str = ""
    boxed_image: Any = None  # the REG image with its box drawn
    explanations: dict[str, str] = field(default_factory=dict)
    others: str = ""
    signatures: str = ""
    share_json: str = ""
    result: SpaceResult | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def error_line(err: BaseException) -> str:
    """The one line the page shows for a failed request."""
    if isinstance(err, ValueError):
        return f"**Error:** {markdown_text(err)}"  # user mistakes often repeat the input
    # Not a user mistake: say so without a traceback (the server log has it).
    return (
        f"**Error:** scoring failed ({type(err).__name__}). This is a problem of the Space, not of your "
        "input; the details are in its log."
    )


def score_page(
    scorer: Scorer,
    task: str,
    image: Any,
    text: str | None,
    question: str | None = None,
    references: str | None = None,
    editor: Any = None,
    box_text: str | None = None,
    metrics: Sequence[str] | None = None,
    explain: bool = False,
    progress: Progress | None = None,
) -> PageValues:
    """Check the page's fields, score them, and format everything the page shows. Never raises:
    a mistake becomes ``status`` (one readable line)."""
    from mmjudge.images import draw_box
    from mmjudge.space.inputs import build_item

    s = scorer.settings
    try:
        item = build_item(
            task, image, text, question, references, editor, box_text, s.max_chars, s.max_references, s.max_pixels
        )
        result = scorer.score(item, list(metrics or []), explain=explain, progress=progress)
    except Exception as err:
        if not isinstance(err, ValueError):
            logging.getLogger("mmjudge.space").exception("scoring failed")
        return PageValues(status=error_line(err))
    if not result.reports:
        why = "; ".join(f"{k}: {v}" for k, v in {**result.skipped, **result.failed}.items())
        return PageValues(status=f"**Error:** {markdown_text(f'no chosen metric could score this input ({why}).')}")
    ran = markdown_text(", ".join(result.reports))
    skipped = f" Not run: {markdown_text(', '.join(result.skipped))}." if result.skipped else ""
    failed = f" Failed: {markdown_text(', '.join(result.failed))} (see Other metrics)." if result.failed else ""
    return PageValues(
        status=f"Scored with {ran}.{skipped}{failed}",
        overall=overall_markdown(result),
        frame=criteria_frame(result),
        criteria_table=criteria_markdown(result),
        boxed_image=draw_box(item["image"], item["box"], "Box") if item.get("box") else None,
        explanations=explanation_texts(result),
        others=others_markdown(result, scorer.choices),
        signatures=signatures_text(result),
        share_json=share_json(result),
        result=result,
    )
