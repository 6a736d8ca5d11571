"""A small Gradio 6 widget for any mmjudge metric, built from its declared inputs.

Each ``metrics/<name>/app.py`` (the Space of the evaluate module) calls :func:`launch_widget` in two
lines. evaluate's own ``evaluate.utils.launch_gradio_widget`` cannot serve here: evaluate 0.4.6 still
calls ``gr.inputs.Dataframe``, removed in Gradio 4, and it shows a bare table where our metrics take
images. This widget scores ONE item: a text box for the prediction, an image upload where the metric
takes images, a text box per other declared input (question, box ``x,y,w,h``, references one per
line), a task menu where the metric has tasks; the result is the item's row (every declared output
and the signature) as JSON.

An uploaded image reaches the widget as the file Gradio received, undecoded: the scoring event runs with
``preprocess=False`` (with ``gr.Image``'s own preprocessing on, every ``type``, ``"filepath"`` included, opens
the file with all of PIL's plugins, and any mode other than ``image_mode`` is decoded and converted, bounded
only by PIL's process-wide limit). The widget opens it only as one of
:data:`mmjudge.images.HEADER_FORMATS` and checks its size from the header against
:data:`mmjudge.images.UPLOAD_MAX_PIXELS` (the Space's limit) before a pixel is decoded
(:func:`read_upload`); a refused image is one line on the page.

Options for the metric on a Space (the judge model, ``cache``…) come from the environment variable
``MMJUDGE_WIDGET_OPTIONS`` (a JSON object), e.g. ``{"model": "Qwen/Qwen2.5-VL-3B-Instruct"}``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from mmjudge.images import (
    HEADER_FORMAT_NAMES,
    HEADER_FORMATS,
    UPLOAD_MAX_PIXELS,
    ImageReadError,
    ImageTooLargeError,
    load_image,
    parse_box,
)

__all__ = ["build_widget", "launch_widget", "load_module", "read_upload", "widget_options"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


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


def read_upload(value: Any, field: str = "images", max_pixels: int = UPLOAD_MAX_PIXELS) -> Any:
    """The RGB PIL image of an upload, ``None`` when the field is empty. ``value`` is Gradio's file payload
    (a dict with a ``path``), a path, or a PIL image or array (other callers). The file is opened only as a
    PNG, JPEG, WebP, GIF or BMP and its size checked from the header before it is decoded; then it is turned
    upright by its EXIF orientation, as Gradio's own preprocessing did (and as the browser shows it).

    Raises:
        ValueError: one line naming ``field``: not an image read here (a text file renamed ``.png``, an
            icon), more than ``max_pixels`` pixels, a URL instead of an uploaded file, an empty image.

    >>> from PIL import Image
    >>> read_upload(Image.new("RGBA", (4, 3))).mode, read_upload({"path": None, "url": None})
    ('RGB', None)
    >>> read_upload(Image.new("L", (8000, 6000)), "images")
    Traceback (most recent call last):
    ValueError: images: the image is 8,000 × 6,000 pixels (48.0 megapixels); this widget accepts images
    up to 40 megapixels. Resize it and upload it again.
    """
    if isinstance(value, dict):  # Gradio's payload: only the file it received is read, never its `url`
        value = value.get("path")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and _URL.match(value):  # a client may name one: fetching it is not ours to do
        raise ValueError(f"{field}: expected an uploaded image file, but got a URL; download it and upload the file.")
    try:
        picture = load_image(value, where=field, max_pixels=max_pixels, formats=HEADER_FORMATS)
    except ImageTooLargeError as err:
        limit = f"this widget accepts images up to {max_pixels / 1e6:g} megapixels. Resize it and upload it again."
        if err.size is None:
            many = f"{err.pixels / 1e6:.0f} megapixels" if err.pixels else "too many pixels"
            raise ValueError(f"{field}: the image has {many}; {limit}") from None
        width, height = err.size
        raise ValueError(
            f"{field}: the image is {width:,} × {height:,} pixels ({width * height / 1e6:.1f} megapixels); {limit}"
        ) from None
    except ImageReadError:  # PIL's own message names Gradio's temporary path: leave it out
        raise ValueError(
            f"{field}: the file is not an image that can be read ({HEADER_FORMAT_NAMES}); upload a real image file."
        ) from None
    return _upright(picture)


def _upright(picture: Any) -> Any:
    from PIL import ImageOps

    if picture.getexif().get(274, 1) == 1:  # 274: EXIF orientation; 1 is upright
        return picture
    try:
        return ImageOps.exif_transpose(picture)
    except Exception:  # a broken EXIF block: the pixels as stored, as Gradio did (it only warned)
        return picture


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
        if inp.kind == "image":  # the file, undecoded: the event below runs with preprocess=False
            components.append(gr.Image(type="filepath", image_mode=None, label=label))
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
        try:
            for inp, value in zip(names, values):
                if inp.kind == "image":
                    value = read_upload(value, inp.name)
                elif value is not None:  # raw values (no preprocessing): what Textbox.preprocess would give
                    value = str(value)
                if value is None or (isinstance(value, str) and not value.strip()):
                    continue
                if inp.kind == "references":
                    value = [line.strip() for line in value.splitlines() if line.strip()]
                elif inp.kind == "box":
                    value = parse_box(value, inp.name)
                kwargs[inp.name] = [value]
            if takes_task:
                kwargs["task"] = str(values[len(names)])  # the engine refuses a task it does not have
            result = engine.compute(**kwargs, progress=False)
        except (ValueError, FileNotFoundError) as err:  # a user's mistake: one clear line in the page
            raise gr.Error(str(err)) from None
        return Report.from_result(spec, result).to_records()[0]

    demo = gr.Interface(
        fn=score,
        inputs=components,
        outputs=gr.JSON(label="result"),
        title=title or spec.name,
        description=spec.description,
        flagging_mode="never",
        api_name="score",
    )
    for event in demo.fns.values():  # Gradio would decode every upload before `score` could check it
        if any(isinstance(c, gr.Image) for c in event.inputs):
            event.preprocess = False
    return demo


# The largest upload (one image) the widget's web server takes: the Space's default (mmjudge.space.settings).
MAX_UPLOAD_BYTES = 64 * 2**20


def launch_widget(metric: Any, max_upload_bytes: int = MAX_UPLOAD_BYTES, **launch_kwargs: Any) -> Any:
    """Build and launch the widget (``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT`` are honoured), uploads
    capped at ``max_upload_bytes`` and none left behind (:func:`mmjudge.gradio_compat.launch_page`)."""
    from mmjudge.gradio_compat import launch_page

    return launch_page(build_widget(metric), max_upload_bytes, **launch_kwargs)
