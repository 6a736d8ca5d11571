"""What a person types, uploads and draws in the Space, checked and turned into one item dict.

Every mistake raises :class:`SpaceInputError` (a ``ValueError``) with one line naming the field and
the fix; the page shows that line. Values come as Gradio sends them with preprocessing off (file
payload dicts with a ``path``), or as PIL images, arrays and paths (tests, other callers).

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

from typing import Any, Optional, Sequence

from PIL import Image

from mmjudge.images import ImageReadError, check_box, load_image
from mmjudge.images import parse_box as parse_image_box

# The paper's four tasks, as the page names them (keys are HarmonicEval's task names).
TASKS = {
    "ic": "Image captioning",
    "vqa": "Visual question answering",
    "vdu": "Document VQA",
    "reg": "Referring expression",
}
QUESTION_TASKS = ("vqa", "vdu")
TEXT_NAMES = {"ic": "caption", "vqa": "answer", "vdu": "answer", "reg": "referring expression"}


UNREADABLE = ("the file is not an image that can be read (PNG, JPEG, WebP, GIF, BMP, TIFF). "
              "Upload a real image file; renaming another file to .png does not make it one.")


class SpaceInputError(ValueError):
    """A user mistake in the page, as one readable line."""


def check_task(task: str) -> str:
    """A task key (``ic``, ``vqa``, ``vdu``, ``reg``) from a key or its label."""
    for key, label in TASKS.items():
        if task in (key, label):
            return key
    raise SpaceInputError(f"Task: unknown task {task!r}. Pick one of: {', '.join(TASKS.values())}.")


def check_text(value: Optional[str], field: str, max_chars: int, what: str = "the text to score") -> str:
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


def read_image(value: Any, field: str = "Image", max_pixels: int = 40_000_000) -> Optional[Image.Image]:
    """An RGB PIL image from an upload (payload dict, path, PIL image, array), ``None`` when empty.

    Raises:
        SpaceInputError: the file is not an image Pillow can read (e.g. a text file renamed ``.png``),
            or is too large.
    """
    if _is_empty(value):
        return None
    try:
        return load_image(value, where=field, max_pixels=max_pixels)
    except ImageReadError:  # PIL's own message names a temporary path: leave it out
        raise SpaceInputError(f"{field}: {UNREADABLE}") from None
    except ValueError as err:
        raise SpaceInputError(str(err)) from None


def box_from_editor(value: Any, max_pixels: int = 40_000_000) -> Optional[list[int]]:
    """The box drawn in a ``gr.ImageEditor``: the bounding box ``[x, y, w, h]`` (pixels of the
    background) of everything painted on its layers (alpha > 0); ``None`` when nothing is drawn.

    Raises:
        SpaceInputError: a layer is not a readable image, or is too large.
    """
    if not isinstance(value, dict):
        return None
    boxes = []
    for k, layer in enumerate(value.get("layers") or []):
        if _is_empty(layer):
            continue
        try:
            layer = load_image(layer, where=f"Box: drawn layer {k + 1}", max_pixels=max_pixels, mode=None)
        except ImageReadError:
            raise SpaceInputError(f"Box: drawn layer {k + 1}: {UNREADABLE} Or type the box as x, y, w, h.") from None
        except ValueError as err:
            raise SpaceInputError(str(err)) from None
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


def parse_box(text: Optional[str]) -> Optional[list[float]]:
    """Typed box numbers ``x, y, w, h`` (:func:`mmjudge.images.parse_box`); ``None`` when the field is empty."""
    raw = (text or "").strip()
    if not raw:
        return None
    try:
        return parse_image_box(raw, "Box", "140, 80, 80, 80")
    except ValueError as err:
        raise SpaceInputError(str(err)) from None


def read_references(text: Optional[str], max_chars: int, max_references: int) -> list[str]:
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
    text: Optional[str],
    question: Optional[str] = None,
    references: Optional[str] = None,
    editor: Any = None,
    box_text: Optional[str] = None,
    max_chars: int = 5000,
    max_references: int = 20,
    max_pixels: int = 40_000_000,
) -> dict:
    """One item dict (``task``, ``image``, ``text``, ``question``, ``box``, ``references``) from the
    page's fields, every field checked. For REG the image is the editor's background when one was
    given there, and the box is the typed one, else the drawn one."""
    task = check_task(task)
    picture = None
    if task == "reg" and isinstance(editor, dict):
        picture = read_image(editor.get("background"), "Image", max_pixels)
    if picture is None:
        picture = read_image(image, "Image", max_pixels)
    if picture is None:
        raise SpaceInputError("Image: missing. Upload or paste an image (or click an example).")
    item: dict[str, Any] = {"id": "input", "task": task, "image": picture}
    item["text"] = check_text(text, "Text", max_chars, f"the {TEXT_NAMES[task]} to score")
    if task in QUESTION_TASKS:
        item["question"] = check_text(question, "Question", max_chars, "the question the answer responds to")
    if task == "reg":
        box: Optional[Sequence[float]] = parse_box(box_text)
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
