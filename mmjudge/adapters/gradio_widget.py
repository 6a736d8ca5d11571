"""A small Gradio 6 widget for any mmjudge metric, built from its declared inputs.

Each ``metrics/<name>/app.py`` (the Space of the evaluate module) calls :func:`launch_widget` in two
lines. evaluate's own ``evaluate.utils.launch_gradio_widget`` cannot serve here: evaluate 0.4.6 still
calls ``gr.inputs.Dataframe``, removed in Gradio 4, and it shows a bare table where our metrics take
images. This widget scores ONE item: a text box for the prediction, an image upload where the metric
takes images, a text box per other declared input (question, box ``x,y,w,h``, references one per
line), a task menu where the metric has tasks; the result is the item's row (every declared output
and the signature) as JSON.

Options for the metric on a Space (the judge model, ``cache``…) come from the environment variable
``MMJUDGE_WIDGET_OPTIONS`` (a JSON object), e.g. ``{"model": "Qwen/Qwen2.5-VL-3B-Instruct"}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mmjudge.images import parse_box

__all__ = ["build_widget", "launch_widget", "load_module", "widget_options"]


def widget_options() -> dict[str, Any]:
    """Metric options from ``MMJUDGE_WIDGET_OPTIONS`` (a JSON object; empty when unset)."""
    raw = os.environ.get("MMJUDGE_WIDGET_OPTIONS", "").strip()
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"MMJUDGE_WIDGET_OPTIONS is not valid JSON ({err}).") from None
    if not isinstance(options, dict):
        raise ValueError('MMJUDGE_WIDGET_OPTIONS must be a JSON object, e.g. {"judge": "dummy"}.')
    return options


def load_module(app_file: str | os.PathLike, config_name: str | None = None):
    """The evaluate module of the folder holding ``app_file`` (``evaluate.load(<folder>)``), with
    :func:`widget_options`."""
    import evaluate

    folder = Path(app_file).resolve().parent
    return evaluate.load(str(folder), config_name, **widget_options())


def _engine(metric: Any) -> Any:
    return getattr(metric, "engine", metric)  # an evaluate shell, or the engine metric itself


def build_widget(metric: Any, title: str | None = None):
    """A ``gradio.Interface`` scoring one item with ``metric`` (an evaluate shell or engine metric)."""
    import gradio as gr

    from mmjudge.report import Report

    engine = _engine(metric)
    spec = engine.spec
    takes_task = "task" in spec.option_names() and len(spec.tasks) > 1
    components, names = [], []
    for inp in spec.inputs:
        need = (
            "required"
            if inp.required
            else ("needed for " + ", ".join(inp.required_for) if inp.required_for else "optional")
        )
        label = f"{inp.name} ({need})"
        if inp.kind == "image":
            components.append(gr.Image(type="pil", label=label))
        elif inp.kind == "references":
            components.append(gr.Textbox(label=label, lines=3, placeholder="one reference per line"))
        elif inp.kind == "box":
            components.append(gr.Textbox(label=label, placeholder="x,y,w,h in pixels"))
        else:
            components.append(gr.Textbox(label=label, lines=2, placeholder=inp.description))
        names.append(inp)
    if takes_task:
        components.append(gr.Dropdown(choices=list(spec.tasks), value=spec.tasks[0], label="task"))

    def score(*values: Any) -> dict:
        kwargs: dict[str, Any] = {}
        for inp, value in zip(names, values):
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            if inp.kind == "references":
                value = [line.strip() for line in value.splitlines() if line.strip()]
            elif inp.kind == "box":
                value = parse_box(value, inp.name)
            kwargs[inp.name] = [value]
        if takes_task:
            kwargs["task"] = values[len(names)]
        try:
            result = engine.compute(**kwargs, progress=False)
        except (ValueError, FileNotFoundError) as err:  # a user's mistake: one clear line in the page
            raise gr.Error(str(err)) from None
        return Report.from_result(spec, result).to_records()[0]

    return gr.Interface(
        fn=score,
        inputs=components,
        outputs=gr.JSON(label="result"),
        title=title or spec.name,
        description=spec.description,
        flagging_mode="never",
        api_name="score",
    )


# The largest upload (one image) the widget's web server takes: the Space's default (mmjudge.space.settings).
MAX_UPLOAD_BYTES = 64 * 2**20


def launch_widget(metric: Any, max_upload_bytes: int = MAX_UPLOAD_BYTES, **launch_kwargs: Any) -> Any:
    """Build and launch the widget (``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT`` are honoured), uploads
    capped at ``max_upload_bytes`` and none left behind (:func:`mmjudge.gradio_compat.launch_page`)."""
    from mmjudge.gradio_compat import launch_page

    return launch_page(build_widget(metric), max_upload_bytes, **launch_kwargs)
