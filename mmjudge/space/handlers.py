"""One request of the Space: check the page's fields, score them, format what the page shows
(:func:`score_page`), and what the page's other events change (the fields a task needs, the metrics
that apply to it). Choosing metrics is :mod:`mmjudge.space.choices`, loading and running them
:mod:`mmjudge.space.scorer`, the text :mod:`mmjudge.space.formatting`; the layout is :mod:`mmjudge.space.app`.

>>> task_fields("reg")["question"], task_fields("vqa")["text_label"]
(False, 'Text to score (the answer)')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mmjudge.report import markdown_text
from mmjudge.space.choices import MetricChoice, declared_configurations, metric_choices
from mmjudge.space.formatting import (
    DEMO_WARNING,
    criteria_frame,
    criteria_markdown,
    criterion_label,
    explanation_texts,
    not_computed,
    others_markdown,
    overall_markdown,
    share_json,
    signatures_text,
    spec_criteria,
)
from mmjudge.space.inputs import BOX_TASKS, QUESTION_TASKS, TEXT_NAMES
from mmjudge.space.scorer import PRIMARY, Progress, Scorer, SpaceResult

__all__ = [
    "DEMO_WARNING",
    "PRIMARY",
    "MetricChoice",
    "PageValues",
    "Scorer",
    "SpaceResult",
    "criterion_label",
    "declared_configurations",
    "error_line",
    "metric_choices",
    "not_computed",
    "offered_for",
    "score_page",
    "spec_criteria",
    "task_fields",
]


def task_fields(task: str) -> dict[str, Any]:
    """Which fields the page shows for ``task`` (a box, a question) and what it calls the text."""
    return {
        "box": task in BOX_TASKS,
        "question": task in QUESTION_TASKS,
        "text_label": f"Text to score (the {TEXT_NAMES.get(task, 'text')})",
    }


def offered_for(choices: dict[str, MetricChoice], task: str, chosen: Sequence[str] = ()) -> tuple[list, list]:
    """(the metric labels offered for ``task``, the ``chosen`` ones that stay ticked): a metric whose
    spec does not score the task is not offered there (BLEU has no referring-expression protocol).

    >>> from mmjudge.space import Settings
    >>> choices = {c.label: c for c in metric_choices(Settings())}
    >>> offered_for(choices, "reg", ["HarmonicEval", "BLEU"])
    (['HarmonicEval'], ['HarmonicEval'])
    """
    labels = [label for label, choice in choices.items() if choice.applies_to(task)]
    return labels, [label for label in chosen or () if label in labels]


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
