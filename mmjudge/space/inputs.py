"""What a person types, uploads and draws in the Space, checked and turned into one item dict.

Every mistake raises :class:`SpaceInputError` (a ``ValueError``) with one line naming the field and
the fix; the page shows that line. Values come as Gradio sends them with preprocessing off (file
payload dicts with a ``path``: Gradio itself decodes nothing), or as PIL images, arrays and paths (tests,
other callers). An uploaded file is opened only as one of :data:`mmjudge.images.HEADER_FORMATS` and its
size is checked from its header before a pixel is decoded (:func:`mmjudge.images.load_image`); warnings
filters are left alone (they are process-wide, and the page serves requests on threads).

>>> from PIL import Image
>>> layer = Image.new("RGBA", (64, 48), (0, 0, 0, 0))
>>> layer.paste((255, 0, 0, 255), (10, 5, 30, 25))  # a filled rectangle drawn from (10, 5) to (29, 24)
>>> box_from_editor({"background": Image.new("RGB", (64, 48)), "layers": [layer], "composite": None})
[10, 5, 20, 20]
>>> parse_box(" 140, 80 80,80 ")
[140.0, 80.0, 80.0, 80.0]
>>> check_text("", "Text", 100)
Traceback (most recent call last):
...
mmjudge.space.inputs.SpaceInputError: Text: empty. Type the text to score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PIL import Image

from mmjudge.images import (
    HEADER_FORMAT_NAMES,
    HEADER_FORMATS,
    ImageReadError,
    ImageTooLargeError,
    check_box,
    load_image,
)
from mmjudge.images import parse_box as parse_image_box
from mmjudge.prompts import load_prompt_set
from mmjudge.space.settings import DEFAULT_MAX_CHARS, DEFAULT_MAX_PIXELS, DEFAULT_MAX_REFERENCES

# The tasks the page offers, as HarmonicEval's prompt set declares them (key -> label on the page, what
# the judged text is called, which tasks need a question or a box): read, never typed again here.
PROMPTS = load_prompt_set("harmonic_eval")
TASKS = {t: info.label for t, info in PROMPTS.task_info.items()}
QUESTION_TASKS = PROMPTS.tasks_needing("question")
BOX_TASKS = PROMPTS.tasks_needing("box")
TEXT_NAMES = {t: info.text_name for t, info in PROMPTS.task_info.items()}


UNREADABLE = (
    f"the file is not an image that can be read ({HEADER_FORMAT_NAMES}). "
    "Upload a real image file; renaming another file to .png does not make it one."
)


class SpaceInputError(ValueError):
    """A user mistake in the page, as one readable line."""


def check_task(task: str) -> str:
    """A task key (``ic``, ``vqa``, ``vdu``, ``reg``: the prompt set's) from a key or its label."""
    for key, label in TASKS.items():
        if task in (key, label):
            return key
    raise SpaceInputError(f"Task: unknown task {task!r}. Pick one of: {', '.join(TASKS.values())}.")


def check_text(value: str | None, field: str, max_chars: int, what: str = "the text to score") -> str:
    """``value`` stripped; empty or longer than ``max_chars`` is an error naming ``field``."""
    text = (value or "").strip()
    if not text:
        raise SpaceInputError(f"{field}: empty. Type {what}.")
    if len(text) > max_chars:
        raise SpaceInputError(
            f"{field}: {len(text):,} characters is longer than this Space accepts ({max_chars:,}). Shorten it."
        )
    return text


def _is_empty(value: Any) -> bool:
    """An image field left empty (Gradio sends None, "" or a payload without a file)."""
    if isinstance(value, dict):
        return value.get("path") in (None, "") and value.get("bytes") is None
    return value is None or (isinstance(value, str) and not value) or getattr(value, "path", False) is None


def read_image(value: Any, field: str = "Image", max_pixels: int = 40_000_000) -> Image.Image | None:
    """An RGB PIL image from an upload (payload dict, path, PIL image, array), ``None`` when empty. EXIF
    orientation is not applied: the judge sees the pixels as the file stores them, as ``mmjudge score`` and
    ``compute`` do for the same file.

    Raises:
        SpaceInputError: the file is not an image read here (e.g. a text file renamed ``.png``, an icon),
            or has more than ``max_pixels`` pixels (said from its header, nothing decoded).
    """
    return _read(value, field, max_pixels)


def _read(value: Any, field: str, max_pixels: int, mode: str | None = "RGB", fix: str = "") -> Image.Image | None:
    if _is_empty(value):
        return None
    try:
        return load_image(value, where=field, max_pixels=max_pixels, mode=mode, formats=HEADER_FORMATS)
    except ImageTooLargeError as err:
        raise SpaceInputError(too_large_line(field, err, max_pixels)) from None
    except ImageReadError:  # PIL's own message names a temporary path: leave it out
        raise SpaceInputError(f"{field}: {UNREADABLE}{fix}") from None
    except ValueError as err:
        raise SpaceInputError(str(err)) from None


def too_large_line(field: str, err: ImageTooLargeError, max_pixels: int) -> str:
    """An image over the Space's size limit in the user's terms: what it is, what the page accepts, what
    size to resize to (only the pixel count where PIL refused to read even the header's size).

    >>> print(too_large_line("Image", ImageTooLargeError("", size=(7000, 6000)), 40_000_000))
    Image: the image is 7,000 × 6,000 pixels (42.0 megapixels); this Space
    accepts images up to 40 megapixels. Resize it, e.g. to 6,831 × 5,855, and upload it again.
    >>> print(too_large_line("Image", ImageTooLargeError("", pixels=400_000_000), 40_000_000))
    Image: the image has 400 megapixels; this Space accepts images up to 40 megapixels. Resize it and upload it again.
    """
    limit = f"this Space accepts images up to {max_pixels / 1e6:g} megapixels"
    if err.size is None:
        many = f"{err.pixels / 1e6:.0f} megapixels" if err.pixels else "too many pixels"
        return f"{field}: the image has {many}; {limit}. Resize it and upload it again."
    width, height = err.size
    scale = math.sqrt(max_pixels / (width * height))
    return (
        f"{field}: the image is {width:,} × {height:,} pixels ({width * height / 1e6:.1f} megapixels); "
        f"{limit}. Resize it, e.g. to {int(width * scale):,} × {int(height * scale):,}, and upload it again."
    )


def box_from_editor(value: Any, max_pixels: int = 40_000_000) -> list[int] | None:
    """The box drawn in a ``gr.ImageEditor``: the bounding box ``[x, y, w, h]`` (pixels of the
    background) of everything painted on its layers (alpha > 0); ``None`` when nothing is drawn.

    Raises:
        SpaceInputError: a layer is not a readable image, or is too large.
    """
    if not isinstance(value, dict):
        return None
    boxes = []
    for k, drawn in enumerate(value.get("layers") or []):
        layer = _read(drawn, f"Box: drawn layer {k + 1}", max_pixels, None, " Or type the box as x, y, w, h.")
        if layer is None:
            continue
        if layer.mode != "RGBA":
            # Without alpha a layer is opaque: painted pixels are those that are not black.
            alpha = layer.convert("L")
        else:
            alpha = layer.getchannel("A")
        bbox = alpha.getbbox()
        if bbox is not None:
            boxes.append(bbox)
    if not boxes:
        return None
    x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    x1, y1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
    return [x0, y0, x1 - x0, y1 - y0]


def parse_box(text: str | None) -> list[float] | None:
    """Typed box numbers ``x, y, w, h`` (:func:`mmjudge.images.parse_box`); ``None`` when the field is empty."""
    raw = (text or "").strip()
    if not raw:
        return None
    try:
        return parse_image_box(raw, "Box", "140, 80, 80, 80")
    except ValueError as err:
        raise SpaceInputError(str(err)) from None


def read_references(text: str | None, max_chars: int, max_references: int) -> list[str]:
    """Reference texts, one per line (blank lines ignored)."""
    refs = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if len(refs) > max_references:
        raise SpaceInputError(f"References: {len(refs)} lines; this Space accepts at most {max_references}.")
    for i, ref in enumerate(refs, 1):
        if len(ref) > max_chars:
            raise SpaceInputError(f"References: line {i} has {len(ref):,} characters (at most {max_chars:,}).")
    return refs


def build_item(
    task: str,
    image: Any,
    text: str | None,
    question: str | None = None,
    references: str | None = None,
    editor: Any = None,
    box_text: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_references: int = DEFAULT_MAX_REFERENCES,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> dict:
    """One item dict (``task``, ``image``, ``text``, ``question``, ``box``, ``references``) from the
    page's fields, every field checked. For REG the image is the editor's background when one was
    given there, and the box is the typed one, else the drawn one."""
    task = check_task(task)
    picture = None
    if task in BOX_TASKS and isinstance(editor, dict):
        picture = read_image(editor.get("background"), "Image", max_pixels)
    if picture is None:
        picture = read_image(image, "Image", max_pixels)
    if picture is None:
        raise SpaceInputError("Image: missing. Upload or paste an image (or click an example).")
    item: dict[str, Any] = {"id": "input", "task": task, "image": picture}
    item["text"] = check_text(text, "Text", max_chars, f"the {TEXT_NAMES[task]} to score")
    if task in QUESTION_TASKS:
        item["question"] = check_text(question, "Question", max_chars, "the question the answer responds to")
    if task in BOX_TASKS:
        box: Sequence[float] | None = parse_box(box_text)
        if box is None:
            box = box_from_editor(editor, max_pixels)
        if box is None:
            raise SpaceInputError("Box: missing. Draw the box on the image (Referring expression) or type x, y, w, h.")
        try:
            check_box(box, picture.size, "Box")
        except ValueError as err:
            raise SpaceInputError(str(err)) from None
        item["box"] = list(box)
    refs = read_references(references, max_chars, max_references)
    if refs:
        item["references"] = refs
    return item
