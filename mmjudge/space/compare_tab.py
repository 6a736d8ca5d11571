"""The Space's "Compare two texts" tab: two texts about one image, which is better on each criterion.

:func:`compare_page` checks the fields (as the scoring page does: :func:`mmjudge.space.inputs.build_item`),
runs HarmonicEval's head-to-head judge (:meth:`HarmonicEval.pairwise`, on the Space's one judge: both
orders, P(A is better) per criterion) and formats what the tab shows: a per-criterion table (preference,
verdict, tie, the judge's slot bias, or why there is none), the judge's explanations, the signature. It
never raises: a mistake is one readable line. :func:`add_compare_tab` lays the tab out inside the page's
``gr.Blocks`` (one call from :func:`mmjudge.space.app.build_demo`); its event is also the API endpoint
``/compare``. Everything a visitor typed or the judge wrote goes through :func:`mmjudge.report.markdown_text`.

>>> from mmjudge.space import Settings
>>> from mmjudge.space.handlers import Scorer
>>> from PIL import Image
>>> page = compare_page(Scorer(Settings(judge="dummy")), "ic", Image.new("RGB", (32, 32)), "A dog.", "")
>>> page.status
'**Error:** Text B: empty. Type the caption to compare with Text A.'
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from mmjudge.report import json_safe, markdown_text
from mmjudge.space.handlers import PRIMARY, Progress, Scorer, error_line

VERDICTS = {"a": "**A**", "b": "**B**", "tie": "tie"}


@dataclass
class CompareValues:
    """What the tab shows (strings, Markdown escaped where it repeats user or judge text)."""

    status: str
    table: str = ""
    explanations: str = ""
    signature: str = ""
    share_json: str = ""
    row: dict[str, Any] = field(default_factory=dict)


def _number(value: Any, digits: int = 3, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def compare_table(row: dict, criteria: list[str]) -> str:
    """The per-criterion Markdown table of one comparison row."""
    lines = ["| | P(A better) | verdict | tie | slot bias |", "|---|---:|:---:|---:|---:|"]
    for name in ["overall", *criteria]:
        status = row.get(f"{name}_status")
        if status not in (None, "ok"):
            note = markdown_text(row.get(f"{name}_note") or "")
            lines.append(f"| {name} | — | {markdown_text(status)}: {note} | | |")
            continue
        verdict = row.get("verdict" if name == "overall" else f"{name}_verdict")
        cells = [
            _number(row.get(name)),
            VERDICTS.get(verdict, "—"),
            _number(row.get(f"{name}_tie")) if name != "overall" else "",
            _number(row.get(f"{name}_position_bias"), signed=True) if name != "overall" else "",
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare_page(
    scorer: Scorer,
    task: str,
    image: Any,
    text_a: str | None,
    text_b: str | None,
    question: str | None = None,
    editor: Any = None,
    box_text: str | None = None,
    explain: bool = False,
    progress: Progress | None = None,
) -> CompareValues:
    """Check the fields, compare the two texts, format the tab. Never raises."""
    from mmjudge.space.inputs import TEXT_NAMES, build_item, check_text

    s = scorer.settings
    try:
        name = TEXT_NAMES.get(str(task), "text")
        first = check_text(text_a, "Text A", s.max_chars, f"the first {name} to compare")
        second = check_text(text_b, "Text B", s.max_chars, f"the {name} to compare with Text A")
        item = build_item(
            task, image, first, question, None, editor, box_text, s.max_chars, s.max_references, s.max_pixels
        )
        item["text_a"], item["text_b"] = item.pop("text"), second
        if progress is not None:
            progress(0.0, desc="comparing: both orders, every criterion")
        pairwise = scorer.metric(PRIMARY).pairwise()
        options = {"explain": True} if explain else {}
        [result] = list(pairwise.stream([item], task=item["task"], **options))
    except Exception as err:
        if not isinstance(err, ValueError):
            logging.getLogger("mmjudge.space").exception("comparing failed")
        return CompareValues(status=error_line(err))
    row = {"text_a": item["text_a"], "text_b": item["text_b"], **result.values}
    criteria = list(pairwise.criteria)
    overall = row.get("overall")
    if overall is not None and math.isfinite(overall):
        lead = {"a": "Text A is better", "b": "Text B is better", "tie": "A tie"}[row["verdict"]]
        status = f"{lead}: P(A better) = {overall:.3f}, both orders judged, every criterion."
    else:
        status = "No overall preference: the judge gave no answer on some criterion (see the table)."
    explained = [f"**{c}**: {markdown_text(row[f'{c}_explanation'])}" for c in criteria if row.get(f"{c}_explanation")]
    signature = str(pairwise.signature)
    return CompareValues(
        status=status,
        table=compare_table(row, criteria),
        explanations="\n\n".join(explained),
        signature=signature,
        share_json=json.dumps({**json_safe(row), "signature": signature}, indent=1, ensure_ascii=False),
        row=row,
    )


def add_compare_tab(scorer: Scorer, settings: Any) -> None:
    """The "Compare two texts" tab, inside the caller's ``gr.Blocks`` (its event is the ``/compare`` API)."""
    import gradio as gr

    from mmjudge.space.inputs import TASKS

    with gr.Tab("Compare two texts", elem_id="compare-tab"):
        gr.Markdown(
            "Two texts about the same image: which is better on each criterion? The judge is asked in both "
            "orders (A first, then B first), so its preference for a slot cancels; the table shows P(A better) "
            "per criterion, the verdict, the judge's tie probability and its slot bias."
        )
        with gr.Row():
            with gr.Column(scale=1):
                task = gr.Radio(
                    [(label, key) for key, label in TASKS.items()], value="ic", label="Task", elem_id="c-task"
                )
                image = gr.Image(
                    label="Image", sources=["upload", "clipboard"], type="filepath", height=240, elem_id="c-image"
                )
                box = gr.Textbox(label="Box x, y, w, h in pixels (referring expressions)", elem_id="c-box")
                question = gr.Textbox(label="Question (VQA, document VQA)", elem_id="c-question")
                text_a = gr.Textbox(label="Text A", lines=3, elem_id="c-text-a")
                text_b = gr.Textbox(label="Text B", lines=3, elem_id="c-text-b")
                explain = gr.Checkbox(label="Explain each criterion (slower)", elem_id="c-explain")
                go = gr.Button("Compare", variant="primary", elem_id="c-compare")
            with gr.Column(scale=1):
                status = gr.Markdown(
                    "Give an image and two texts, press **Compare**.", latex_delimiters=[], elem_id="c-status"
                )
                table = gr.Markdown(latex_delimiters=[], elem_id="c-table")
                gr.Markdown("### Explanations")
                explanations = gr.Markdown(latex_delimiters=[], elem_id="c-explanations")
                with gr.Accordion("Share this comparison", open=False):
                    signature = gr.Textbox(label="Signature", lines=2, interactive=False, elem_id="c-signature")
                    share = gr.Code(label="Result (JSON)", language="json", interactive=False, elem_id="c-json")

        def on_compare(
            task_key,
            image_value,
            text_a_value,
            text_b_value,
            question_value,
            box_value,
            want_explain,
            progress=gr.Progress(track_tqdm=True),
        ):
            page = compare_page(
                scorer,
                task_key,
                image_value,
                text_a_value,
                text_b_value,
                question_value,
                None,
                box_value,
                bool(want_explain),
                progress,
            )
            return page.status, page.table, page.explanations, page.signature, page.share_json

        go.click(
            on_compare,
            [task, image, text_a, text_b, question, box, explain],
            [status, table, explanations, signature, share],
            preprocess=False,
            api_name="compare",
        )
