"""Image loading and validation shared by every metric.

Accepts PIL images, file paths, raw bytes and ``datasets``-style dicts (``{"bytes": ..., "path": ...}``);
fails with the offending item named on unreadable, corrupt or oversized (decompression-bomb) images.

>>> from PIL import Image
>>> from mmjudge.images import load_image, draw_box
>>> img = load_image(Image.new("RGB", (64, 48), "white"), where="images[0]")
>>> boxed = draw_box(img, [8, 8, 16, 16], where="boxes[0]")
>>> boxed.getpixel((8, 8))
(255, 0, 0)
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Any, Sequence

from PIL import Image, ImageDraw

# PIL's own default (about 89 megapixels): larger images are refused as possible decompression bombs.
DEFAULT_MAX_PIXELS = 89_478_485
# Qwen2-VL's processor refuses images whose long side is more than 200 times the short side; no
# judge or encoder reads such a strip usefully, so every metric refuses it up front, naming the item.
MAX_ASPECT_RATIO = 200

ImageInput = Any  # PIL.Image.Image | str | os.PathLike | bytes | dict


def load_image(image: ImageInput, where: str = "image", max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode ``image`` fully into an RGB PIL image.

    Raises:
        ValueError: naming ``where`` when the image is missing, unreadable, corrupt, empty or larger
            than ``max_pixels``.
    """
    if image is None:
        raise ValueError(f"{where}: an image is required but got None.")
    if isinstance(image, Image.Image):
        return _checked(image, where, max_pixels)
    if isinstance(image, dict):
        data, path = image.get("bytes"), image.get("path")
        if data is None and path is None:
            raise ValueError(f"{where}: image dict has neither 'bytes' nor 'path'.")
        return load_image(data if data is not None else path, where, max_pixels)
    if isinstance(image, (bytes, bytearray, memoryview)):
        return _open(io.BytesIO(bytes(image)), where, max_pixels)
    if isinstance(image, (str, os.PathLike)):
        path = Path(image).expanduser()
        if not path.is_file():
            raise ValueError(f"{where}: image file not found: {str(path)!r}.")
        return _open(path, where, max_pixels)
    raise ValueError(f"{where}: expected a PIL image, a path, bytes or a dict, but got {type(image).__name__}.")


def load_images(images: Sequence[ImageInput], max_pixels: int = DEFAULT_MAX_PIXELS) -> list[Image.Image]:
    """:func:`load_image` for each item, errors naming it as ``images[i]``."""
    return [load_image(image, where=f"images[{i}]", max_pixels=max_pixels) for i, image in enumerate(images)]


def _open(source, where: str, max_pixels: int) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source) as img:
                _check_size(img.size, where, max_pixels)
                img.load()
                return _checked(img.copy(), where, max_pixels)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ValueError(f"{where}: image is too large (possible decompression bomb).") from None
    except ValueError:
        raise
    except Exception as err:  # PIL raises UnidentifiedImageError, OSError, SyntaxError… on bad files
        raise ValueError(f"{where}: cannot read image ({type(err).__name__}: {err}).") from None


def _check_size(size: tuple[int, int], where: str, max_pixels: int) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise ValueError(f"{where}: image is empty ({width}x{height}).")
    if width * height > max_pixels:
        raise ValueError(
            f"{where}: image is too large ({width}x{height} = {width * height} pixels > {max_pixels}); "
            "possible decompression bomb. Pass a larger `max_pixels` if this is intended."
        )


def _checked(img: Image.Image, where: str, max_pixels: int) -> Image.Image:
    _check_size(img.size, where, max_pixels)
    width, height = img.size
    if max(width, height) > MAX_ASPECT_RATIO * min(width, height):
        raise ValueError(
            f"{where}: aspect ratio {width}x{height} is more extreme than {MAX_ASPECT_RATIO}:1, which the judges' "
            "processors refuse; crop or pad the image."
        )
    return to_rgb(img)


def to_rgb(img: Image.Image) -> Image.Image:
    """``img`` as 8-bit RGB, with high-bit-depth images *scaled*, not clipped: 16-bit integer images
    (``I;16``, ``I``) are divided down to 0-255, floating-point images (``F``) are read as [0, 1] when
    they lie there, else stretched from their minimum to their maximum.

    >>> import numpy as np
    >>> to_rgb(Image.fromarray(np.full((2, 2), 65535, dtype=np.uint16))).getpixel((0, 0))
    (255, 255, 255)
    >>> to_rgb(Image.fromarray(np.full((2, 2), 0.5, dtype=np.float32))).getpixel((0, 0))
    (128, 128, 128)
    """
    if img.mode == "RGB":
        return img
    if img.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        import numpy as np

        values = np.asarray(img, dtype=np.float64)
        if img.mode == "F":
            finite = values[np.isfinite(values)]
            low, high = (0.0, 1.0) if finite.size == 0 or (finite.min() >= 0 and finite.max() <= 1) else (finite.min(), finite.max())
        elif img.mode == "I" and values.size and values.max() > 65535:
            low, high = values.min(), values.max()
        else:
            low, high = 0.0, 65535.0 if img.mode != "I" or (values.size and values.max() > 255) else 255.0
        scaled = np.nan_to_num((values - low) / ((high - low) or 1.0), nan=0.0).clip(0, 1)
        return Image.fromarray(np.round(scaled * 255).astype(np.uint8), "L").convert("RGB")
    return img.convert("RGB")


def check_box(box: Sequence[float], size: tuple[int, int], where: str, box_format: str = "xywh") -> tuple:
    """Validate a bounding box against an image ``size`` and return it as ``(x0, y0, x1, y1)``.

    ``box_format`` is ``"xywh"`` (COCO/RefCOCO: left, top, width, height) or ``"xyxy"``.
    """
    if box is None:
        raise ValueError(f"{where}: a bounding box is required for the REG task but got None.")
    try:
        values = [float(v) for v in box]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected 4 numbers for the bounding box, but got {box!r}.") from None
    if len(values) != 4:
        raise ValueError(f"{where}: expected 4 numbers for the bounding box, but got {len(values)}.")
    if box_format == "xywh":
        x0, y0, w, h = values
        x1, y1 = x0 + w, y0 + h
    elif box_format == "xyxy":
        x0, y0, x1, y1 = values
    else:
        raise ValueError(f"Expected argument `box_format` to be 'xywh' or 'xyxy', but got {box_format!r}.")
    width, height = size
    if all(abs(v) <= 1 for v in values) and min(width, height) > 4:
        raise ValueError(
            f"{where}: bounding box {list(box)} looks normalised (every value <= 1) but boxes are in pixels of the "
            f"{width}x{height} image; multiply x and w by {width}, y and h by {height}."
        )
    if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
        raise ValueError(
            f"{where}: bounding box {list(box)} ({box_format}) is empty or lies outside the {width}x{height} image."
        )
    return x0, y0, x1, y1


def draw_box(
    image: Image.Image, box: Sequence[float], where: str = "box", box_format: str = "xywh", color: str = "red"
) -> Image.Image:
    """A copy of ``image`` with ``box`` outlined (as MMHE's REG task shows the target object)."""
    x0, y0, x1, y1 = check_box(box, image.size, where, box_format)
    out = image.copy()
    width = max(2, round(min(image.size) / 100))
    ImageDraw.Draw(out).rectangle([x0, y0, x1 - 1, y1 - 1], outline=color, width=width)
    return out
