"""HarmonicEval's declaration: its inputs and, per criterion, its score and diagnostics (tasks and what each
needs come from the prompt set). Apart from the metric so that the head-to-head metric
(:mod:`.pairwise`), which the rating metric builds, declares its inputs from it without importing the metric.

>>> from mmjudge.prompts import load_prompt_set
>>> spec = harmonic_eval_spec(load_prompt_set("harmonic_eval"), ["fluency"])
>>> spec.primary, [i.name for i in spec.inputs], [o.name for o in spec.outputs][:3]
('overall', ['predictions', 'images', 'questions', 'boxes'], ['overall', 'fluency', 'fluency_sigma'])
"""

from __future__ import annotations

from collections.abc import Sequence

from mmjudge.metrics.spec import EXPLAIN, PREDICTIONS, PROGRESS, TASK, InputSpec, MetricSpec, OutputSpec
from mmjudge.prompts import PromptSet


def harmonic_eval_spec(
    prompt_set: PromptSet, criteria: Sequence[str], image_criteria: Sequence[str] = ()
) -> MetricSpec:
    """The declaration of HarmonicEval with these criteria (``image_criteria``: those that see the image);
    tasks and what each needs come from the prompt set."""
    question_tasks = prompt_set.tasks_needing("question")
    box_tasks = prompt_set.tasks_needing("box")
    outputs = [OutputSpec("overall", "score", "harmonic-weighted mean of the criterion scores", True, (1.0, 5.0))]
    for c in criteria:
        outputs += [
            OutputSpec(c, "score", f"{c}: expected 1-5 rating under the judge's distribution", True, (1.0, 5.0)),
            OutputSpec(
                f"{c}_sigma", "diagnostic", f"{c}: standard deviation of the rating distribution", None, aggregates=()
            ),
            OutputSpec(f"{c}_weight", "diagnostic", f"{c}: harmonic weight in the overall score", None, (0.0, 1.0), ()),
            OutputSpec(
                f"{c}_mass", "diagnostic", f"{c}: probability the judge put on the rating scale", None, (0.0, 1.0), ()
            ),
            OutputSpec(
                f"{c}_status",
                "text",
                f"{c}: ok, or why there is no score (no_rating, low_mass, error; needs_image: not asked, the judge "
                "cannot see images)",
                None,
                aggregates=(),
            ),
            OutputSpec(
                f"{c}_note",
                "text",
                f"{c}: what the judge said instead of a rating, or why the request failed",
                None,
                aggregates=(),
            ),
            OutputSpec(f"{c}_explanation", "text", f"{c}: the judge's explanation", None, aggregates=(), optional=True),
        ]
    seeing = sorted(image_criteria)
    inputs = (
        PREDICTIONS,
        InputSpec(
            "images",
            "image",
            bool(seeing),
            "image",
            "the image each prediction is about (criteria that look at it, and REG)",
            box_tasks,
            missing=f"`images` are required: criteria {seeing} look at the image." if seeing else "",
        ),
        InputSpec("questions", "question", False, "question", "the question, for VQA and document VQA", question_tasks),
        InputSpec("boxes", "box", False, "box", "the target box for REG (x, y, w, h in pixels)", box_tasks),
    )
    return MetricSpec(
        "harmonic_eval",
        "harmonic_eval",
        inputs,
        tuple(outputs),
        "overall",
        "per-criterion 1-5 ratings by a VLM judge, harmonic-weighted",
        tuple(prompt_set.tasks),
        label="HarmonicEval",
        judged=True,
        options=(TASK, EXPLAIN, PROGRESS),
    )
