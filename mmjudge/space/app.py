"""The Space's page: :func:`build_demo` lays out the Gradio Blocks over :mod:`mmjudge.space.handlers`.

Gradio is imported inside the functions here, so ``import mmjudge.space`` works without it. The score
event takes the raw upload payloads (``preprocess=False``) so that an unreadable file becomes one
readable line from :mod:`mmjudge.space.inputs`, not Gradio's generic error; Gradio still checks that
every uploaded path lies in its upload folder before the handler sees it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from mmjudge.space.compare_tab import add_compare_tab
from mmjudge.space.handlers import DEMO_WARNING, PRIMARY, Scorer, criterion_label, score_page, spec_criteria
from mmjudge.space.inputs import BOX_TASKS, QUESTION_TASKS, TASKS, TEXT_NAMES
from mmjudge.space.settings import Settings

TITLE = "mmjudge: why does this text score what it scores?"
CHART_COLUMNS = ("criterion", "score", "sigma", "weight")


def example_rows(folder: Path | None = None) -> list[list[Any]]:
    """Clickable examples: the project's own drawings (:mod:`mmjudge.examples`) saved as PNG files,
    as rows ``[task, image path, text, question, box]``."""
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
        f"**Limits**: images up to {settings.max_pixels / 1e6:g} megapixels (e.g. {side:,} × {side * 3 // 4:,}); "
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


def build_demo(settings: Settings | None = None, scorer: Scorer | None = None):
    """The Space's ``gr.Blocks``, queued with the settings' concurrency and queue size.

    Args:
        settings: default :meth:`Settings.from_env`.
        scorer: a ready :class:`Scorer` (tests pass one with a scripted judge).
    """
    import gradio as gr

    settings = settings or Settings.from_env()
    scorer = scorer or Scorer(settings)
    choices = scorer.choices
    criteria = spec_criteria(choices[PRIMARY].spec) if PRIMARY in choices else []

    with gr.Blocks(title="mmjudge Space") as demo:
        gr.Markdown(
            f"# {TITLE}\n"
            "Upload an image, type the text a vision-language model wrote about it, press **Score**. "
            "HarmonicEval rates it 1–5 on each criterion with a VLM judge, shows how sure the judge is "
            f"(σ) and how much each criterion weighs. Judge: `{settings.judge_label}`."
        )
        if settings.demo:
            gr.Markdown(f"## ⚠️ {settings.demo_warning or DEMO_WARNING}", elem_id="demo-banner")
        with gr.Row():
            with gr.Column(scale=1):
                task = gr.Radio(
                    [(label, key) for key, label in TASKS.items()], value="ic", label="Task", elem_id="task"
                )
                image = gr.Image(
                    label="Image (upload or paste)",
                    sources=["upload", "clipboard"],
                    type="filepath",
                    height=280,
                    elem_id="image",
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
                box_text = gr.Textbox(
                    label="Box x, y, w, h in pixels (optional: overrides the drawn box)",
                    placeholder="140, 80, 80, 80",
                    visible=False,
                    elem_id="box",
                )
                question = gr.Textbox(label="Question", visible=False, elem_id="question")
                text = gr.Textbox(
                    label="Text to score (the caption)",
                    lines=3,
                    elem_id="text",
                    placeholder="A brown dog runs on a sandy beach.",
                )
                references = gr.Textbox(
                    label="Reference texts (optional, one per line; for RefFLEUR, RefCLIP-S, BLEU, ROUGE-L, CIDEr-D)",
                    lines=2,
                    elem_id="references",
                )
                metrics = gr.CheckboxGroup(
                    list(choices),
                    value=[PRIMARY] if PRIMARY in choices else [],
                    label="Metrics",
                    elem_id="metrics",
                )
                explain = gr.Checkbox(
                    label="Explain each criterion (slower: the judge writes one explanation per criterion)",
                    elem_id="explain",
                )
                score = gr.Button("Score", variant="primary", elem_id="score")
                gr.Markdown(limits_text(settings), elem_id="limits")
            with gr.Column(scale=1):
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
        gr.Examples(example_rows(), inputs=[task, image, text, question, box_text], label="Examples (drawn by mmjudge)")

        def on_task(key: str):
            return (
                gr.update(visible=key in BOX_TASKS),
                gr.update(visible=key in BOX_TASKS),
                gr.update(visible=key in QUESTION_TASKS),
                gr.update(label=f"Text to score (the {TEXT_NAMES.get(key, 'text')})"),
            )

        task.change(on_task, task, [editor, box_text, question, text], queue=False)

        def on_image(payload: Any):
            # The editor starts from the uploaded image, so a REG box can be drawn on it directly.
            path = payload.get("path") if isinstance(payload, dict) else None
            if not path:
                return None
            return {"background": path, "layers": [], "composite": path}

        image.change(on_image, image, editor, preprocess=False, queue=False)

        def on_score(
            task_key,
            image_value,
            editor_value,
            text_value,
            question_value,
            box_value,
            refs,
            chosen,
            want_explain,
            progress=gr.Progress(track_tqdm=True),
        ):
            page = score_page(
                scorer,
                task_key,
                image_value,
                text_value,
                question_value,
                refs,
                editor_value,
                box_value,
                chosen,
                bool(want_explain),
                progress,
            )
            if not page.ok:
                blank_acc = [gr.update(label=c) for c in criteria]
                return (
                    page.status,
                    "",
                    _empty_frame(),
                    "",
                    gr.update(value=None, visible=False),
                    *blank_acc,
                    *["" for _ in criteria],
                    "",
                    "",
                    "",
                )
            row = page.result.harmonic or {}
            acc = [gr.update(label=criterion_label(c, row)) for c in criteria]
            texts = [page.explanations.get(c, "") for c in criteria]
            frame = page.frame if page.frame is not None and len(page.frame) else _empty_frame()
            boxed_update = gr.update(value=page.boxed_image, visible=page.boxed_image is not None)
            return (
                page.status,
                page.overall,
                frame,
                page.criteria_table,
                boxed_update,
                *acc,
                *texts,
                page.others,
                page.signatures,
                page.share_json,
            )

        score.click(
            on_score,
            [task, image, editor, text, question, box_text, references, metrics, explain],
            [status, overall, chart, table, boxed, *accordions, *explanations, others, signatures, share],
            preprocess=False,
            api_name="score",
        )
        add_compare_tab(scorer, settings)
    demo.queue(default_concurrency_limit=settings.concurrency, max_size=settings.max_queue)
    return demo


def launch(settings: Settings | None = None, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Build and serve the page (blocks until stopped unless ``prevent_thread_lock=True``)."""
    demo = build_demo(settings)
    return demo.launch(server_name=host, server_port=port, **kwargs)
