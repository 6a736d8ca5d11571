"""The Space's page: :func:`build_demo` lays out the Gradio Blocks over :mod:`mmjudge.space.handlers`
(layout and wiring only; every event's work is a handler's).

Gradio is imported inside the functions here, so ``import mmjudge.space`` works without it. Every event
that takes an image takes the raw upload payloads (``preprocess=False``): Gradio then decodes nothing
(its ``image_mode`` conversion, EXIF transpose and the editor's flattening would decode any upload before
a check, bounded only by PIL's process-wide limit), :mod:`mmjudge.space.inputs` checks the size from the
header first, and an unreadable file becomes one readable line, not Gradio's generic error. Gradio still
checks that every uploaded path lies in its upload folder before the handler sees it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.images import HEADER_FORMAT_NAMES
from mmjudge.space.compare_tab import add_compare_tab
from mmjudge.space.handlers import (
    DEMO_WARNING,
    PRIMARY,
    Scorer,
    criterion_label,
    offered_for,
    score_page,
    spec_criteria,
    task_fields,
)
from mmjudge.space.inputs import BOX_TASKS, QUESTION_TASKS, TASKS
from mmjudge.space.settings import Settings

TITLE = "mmjudge: why does this text score what it scores?"
CHART_COLUMNS = ("criterion", "score", "sigma", "weight")


def example_rows(folder: Path | None = None) -> list[list[Any]]:
    """Clickable examples: the project's own drawings (:mod:`mmjudge.examples`) saved as PNG files,
    as rows ``[task, image path, text, question, box]`` (:func:`examples_by_task` shows them per task)."""
    from mmjudge.examples import load_examples

    folder = Path(folder or Path(tempfile.gettempdir()) / "mmjudge-space-examples")
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, ex in enumerate(load_examples()):
        path = folder / f"example_{k}_{ex['task']}.png"
        if not path.is_file():
            ex["image"].save(path)
        box = ", ".join(f"{v:g}" for v in ex["box"]) if ex.get("box") else ""
        rows.append([ex["task"], str(path), ex["text"], ex.get("question", ""), box])
    return rows


def limits_text(settings: Settings) -> str:
    """What the page accepts, stated in the user's terms (the same numbers the checks use)."""
    side = int((settings.max_pixels * 4 / 3) ** 0.5)  # a 4:3 picture at the limit
    return (
        f"**Limits**: images up to {settings.max_pixels / 1e6:g} megapixels (e.g. {side:,} × {side * 3 // 4:,}; "
        f"{HEADER_FORMAT_NAMES}) "
        f"and {settings.max_upload_mb:,} MB per file; "
        f"texts, questions and references up to {settings.max_chars:,} characters each, at most "
        f"{settings.max_references} references. Requests scored at once: {settings.concurrency}; waiting in line "
        f"at most: {settings.max_queue}; beyond that the page answers that the Space is busy: try again in a minute. "
        "Scores that need a corpus (CIDEr-D weighs words by how rare they are across the references of many "
        "items) cannot be computed for the one item scored here: they are shown as *not computed*, with why, "
        "never as 0."
    )


def _empty_frame():
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype="str" if c == "criterion" else "float") for c in CHART_COLUMNS})


@dataclass
class Fields:
    """The page's input components (left column)."""

    task: Any
    image: Any
    editor: Any
    box: Any
    question: Any
    text: Any
    references: Any
    metrics: Any
    explain: Any
    score: Any

    @property
    def scored(self) -> list:
        """What the Score event reads, in :func:`score_page`'s order."""
        return [
            self.task,
            self.image,
            self.editor,
            self.text,
            self.question,
            self.box,
            self.references,
            self.metrics,
            self.explain,
        ]


@dataclass
class Results:
    """The page's result components (right column)."""

    status: Any
    overall: Any
    chart: Any
    table: Any
    boxed: Any
    others: Any
    signatures: Any
    share: Any
    accordions: list = field(default_factory=list)
    explanations: list = field(default_factory=list)

    @property
    def all(self) -> list:
        return [
            self.status,
            self.overall,
            self.chart,
            self.table,
            self.boxed,
            *self.accordions,
            *self.explanations,
            self.others,
            self.signatures,
            self.share,
        ]


def input_column(settings: Settings, scorer: Scorer) -> Fields:
    """Task, image (or the REG editor and box), text, question, references, metrics, Score."""
    import gradio as gr

    first = "ic"
    offered, ticked = offered_for(scorer.choices, first, [PRIMARY])
    task = gr.Radio([(label, key) for key, label in TASKS.items()], value=first, label="Task", elem_id="task")
    image = gr.Image(
        label="Image (upload or paste)", sources=["upload", "clipboard"], type="filepath", height=280, elem_id="image"
    )
    editor = gr.ImageEditor(
        label="Referring expression: draw over the object (the box is the bounding box of what you draw)",
        sources=["upload", "clipboard"],
        type="pil",
        visible=False,
        elem_id="editor",
        brush=gr.Brush(colors=["#ff0000"], color_mode="fixed"),
        height=320,
    )
    box = gr.Textbox(
        label="Box x, y, w, h in pixels (optional: overrides the drawn box)",
        placeholder="140, 80, 80, 80",
        visible=False,
        elem_id="box",
    )
    question = gr.Textbox(label="Question", visible=False, elem_id="question")
    text = gr.Textbox(
        label=task_fields(first)["text_label"],
        lines=3,
        elem_id="text",
        placeholder="A brown dog runs on a sandy beach.",
    )
    references = gr.Textbox(
        label="Reference texts (optional, one per line; for RefFLEUR, RefCLIP-S, BLEU, ROUGE-L, CIDEr-D)",
        lines=2,
        elem_id="references",
    )
    metrics = gr.CheckboxGroup(offered, value=ticked, label="Metrics (those that score this task)", elem_id="metrics")
    explain = gr.Checkbox(
        label="Explain the scores (slower: the judge writes one explanation per criterion)", elem_id="explain"
    )
    score = gr.Button("Score", variant="primary", elem_id="score")
    gr.Markdown(limits_text(settings), elem_id="limits")
    return Fields(task, image, editor, box, question, text, references, metrics, explain, score)


def result_column(criteria: list[str]) -> Results:
    """Status, overall, per-criterion chart and table, the REG box, explanations, other metrics, share."""
    import gradio as gr

    # latex_delimiters=[]: these show what visitors typed (escaped) and what the judge wrote.
    status = gr.Markdown(
        "Pick a task, give an image and a text, press **Score**.", latex_delimiters=[], elem_id="status"
    )
    overall = gr.Markdown(latex_delimiters=[], elem_id="overall")
    chart = gr.BarPlot(
        _empty_frame(),
        x="criterion",
        y="score",
        y_lim=[1, 5],
        sort=criteria or None,
        title="HarmonicEval per criterion (1–5)",
        y_title="score",
        elem_id="chart",
    )
    table = gr.Markdown(latex_delimiters=[], elem_id="criteria")
    boxed = gr.Image(label="The box the judge sees", visible=False, interactive=False, elem_id="boxed")
    gr.Markdown("### Explanations")
    accordions, explanations = [], []
    for c in criteria:
        with gr.Accordion(c, open=False, elem_id=f"explain-{c}") as acc:
            explanations.append(gr.Markdown(latex_delimiters=[]))
        accordions.append(acc)
    gr.Markdown("### Other metrics")
    others = gr.Markdown(latex_delimiters=[], elem_id="others")
    with gr.Accordion("Share this result", open=False, elem_id="share"):
        signatures = gr.Textbox(
            label="Signature (what was run, to reproduce the numbers)",
            lines=2,
            interactive=False,
            buttons=["copy"],
            elem_id="signature",
        )
        share = gr.Code(label="Scores (JSON)", language="json", interactive=False, elem_id="share-json")
    return Results(status, overall, chart, table, boxed, others, signatures, share, accordions, explanations)


def examples_by_task(fields: Fields, rows: list[list[Any]]) -> None:
    """One block of clickable examples per task, its header naming that task's text ("the answer", "the
    referring expression") and showing only the fields the task has."""
    import gradio as gr

    for key, label in TASKS.items():
        mine = [r for r in rows if r[0] == key]
        if not mine:
            continue
        columns = [0, 1, 2] + ([3] if key in QUESTION_TASKS else []) + ([4] if key in BOX_TASKS else [])
        inputs = [fields.task, fields.image, fields.text, fields.question, fields.box]
        headers = ["Task", "Image", task_fields(key)["text_label"], "Question", "Box x, y, w, h"]
        examples = gr.Examples(
            [[r[c] for c in columns] for r in mine],
            inputs=[inputs[c] for c in columns],
            label=f"Examples: {label} (drawn by mmjudge)",
            elem_id=f"examples-{key}",
        )
        examples.dataset.headers = [headers[c] for c in columns]


def wire(fields: Fields, results: Results, scorer: Scorer, criteria: list[str]) -> None:
    """The page's events: the task shows its fields and metrics; an image opens in the editor; Score."""
    import gradio as gr

    def on_task(key: str, chosen: list):
        shown = task_fields(key)
        offered, ticked = offered_for(scorer.choices, key, chosen)
        return (
            gr.update(visible=shown["box"]),
            gr.update(visible=shown["box"]),
            gr.update(visible=shown["question"]),
            gr.update(label=shown["text_label"]),
            gr.update(choices=offered, value=ticked),
        )

    fields.task.change(
        on_task,
        [fields.task, fields.metrics],
        [fields.editor, fields.box, fields.question, fields.text, fields.metrics],
        queue=False,
    )
    fields.image.change(on_image, fields.image, fields.editor, preprocess=False, queue=False)

    def on_score(
        task, image, editor, text, question, box, refs, chosen, explain, progress=gr.Progress(track_tqdm=True)
    ):
        values = (task, image, editor, text, question, box, refs, chosen, explain)
        return page_outputs(scorer, criteria, values, progress)

    fields.score.click(on_score, fields.scored, results.all, preprocess=False, api_name="score")


def on_image(payload: Any):
    """The editor starts from the uploaded image, so a REG box can be drawn on it directly."""
    path = payload.get("path") if isinstance(payload, dict) else None
    if not path:
        return None
    return {"background": path, "layers": [], "composite": path}


def page_outputs(scorer: Scorer, criteria: list[str], values: tuple, progress: Any = None) -> tuple:
    """Everything the Score event sets, in :attr:`Results.all`'s order."""
    import gradio as gr

    task, image, editor, text, question, box, refs, chosen, want_explain = values
    page = score_page(scorer, task, image, text, question, refs, editor, box, chosen, bool(want_explain), progress)
    if not page.ok:
        blank = [gr.update(label=c) for c in criteria]
        hidden = gr.update(value=None, visible=False)
        return (page.status, "", _empty_frame(), "", hidden, *blank, *["" for _ in criteria], "", "", "")
    row = page.result.harmonic or {}
    labels = [gr.update(label=criterion_label(c, row)) for c in criteria]
    texts = [page.explanations.get(c, "") for c in criteria]
    frame = page.frame if page.frame is not None and len(page.frame) else _empty_frame()
    boxed = gr.update(value=page.boxed_image, visible=page.boxed_image is not None)
    return (
        page.status,
        page.overall,
        frame,
        page.criteria_table,
        boxed,
        *labels,
        *texts,
        page.others,
        page.signatures,
        page.share_json,
    )


def build_demo(settings: Settings | None = None, scorer: Scorer | None = None):
    """The Space's ``gr.Blocks``, queued with the settings' concurrency and queue size.

    Args:
        settings: default :meth:`Settings.from_env`.
        scorer: a ready :class:`Scorer` (tests pass one with a scripted judge).
    """
    import gradio as gr

    settings = settings or Settings.from_env()
    scorer = scorer or Scorer(settings)
    criteria = spec_criteria(scorer.choices[PRIMARY].spec) if PRIMARY in scorer.choices else []
    with gr.Blocks(title="mmjudge Space") as demo:
        gr.Markdown(
            f"# {TITLE}\n"
            "Upload an image, type the text a vision-language model wrote about it, press **Score**. "
            "HarmonicEval rates it 1–5 on each criterion with a VLM judge, shows how sure the judge is "
            f"(σ) and how much each criterion weighs. Judge: `{settings.judge_label}`."
        )
        if settings.demo:
            gr.Markdown(f"## ⚠️ {settings.demo_warning or DEMO_WARNING}", elem_id="demo-banner")
        with gr.Tab("Score a text", elem_id="score-tab"):
            with gr.Row():
                with gr.Column(scale=1):
                    fields = input_column(settings, scorer)
                with gr.Column(scale=1):
                    results = result_column(criteria)
            examples_by_task(fields, example_rows())
        add_compare_tab(scorer, settings)  # head to head: two texts, both orders (its event is /compare)
        wire(fields, results, scorer, criteria)
    demo.queue(default_concurrency_limit=settings.concurrency, max_size=settings.max_queue)
    return demo


def launch(settings: Settings | None = None, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Build and serve the page (blocks until stopped unless ``prevent_thread_lock=True``)."""
    settings = settings or Settings.from_env()
    return serve(build_demo(settings), settings, host=host, port=port, **kwargs)


def serve(demo: Any, settings: Settings, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Serve a built page with the settings' upload cap (a larger body is answered 413; a partial upload
    of a client that left is removed: :func:`mmjudge.gradio_compat.launch_page`)."""
    from mmjudge.gradio_compat import launch_page

    return launch_page(demo, settings.max_upload_bytes, server_name=host, server_port=port, **kwargs)
