"""Image loading and validation shared by every metric and front door.

Accepts PIL images, file paths, ``http(s)://`` URLs, raw bytes, arrays, ``datasets``-style dicts
(``{"bytes": ..., "path": ...}``) and objects with a ``path`` (Gradio file payloads); fails with the offending
item named on unreadable, corrupt or oversized (decompression-bomb) images. Only regular files are read
(a FIFO, device or socket is that item's error, never a hang), at most :data:`MAX_FILE_BYTES`; a URL is
fetched with a bounded size (:data:`MAX_URL_BYTES`) and time (:data:`URL_TIMEOUT`), and without network
access it is one line saying so. :func:`parse_box` reads a typed bounding box.

Every image's size is checked from its header, before ``load()`` allocates its pixels. Front doors that take
images from anyone (``mmjudge serve``, the Space, the metrics' widget) also restrict the formats to
:data:`HEADER_FORMATS` (:func:`open_header`, ``load_image(..., formats=HEADER_FORMATS)``), whose opening reads
the header alone.
Warnings filters are never touched here: ``warnings.catch_warnings`` swaps the process-wide filter list, so
threads decoding at once (a served page, the chunk engine) would change each other's filters.

>>> from PIL import Image
>>> from mmjudge.images import load_image, draw_box
>>> img = load_image(Image.new("RGB", (64, 48), "white"), where="images[0]")
>>> boxed = draw_box(img, [8, 8, 16, 16], where="boxes[0]")
>>> boxed.getpixel((8, 8))
(255, 0, 0)
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from PIL import Image, ImageDraw

# PIL's own default (about 89 megapixels): larger images are refused as possible decompression bombs.
DEFAULT_MAX_PIXELS = 89_478_485
# The largest image a public page takes from an upload (the Space, the metrics' Gradio widget): a Space has
# less memory than PIL's own limit assumes, and 40 megapixels is a large camera's photo.
UPLOAD_MAX_PIXELS = 40_000_000
# Qwen2-VL's processor refuses images whose long side is more than 200 times the short side: the
# metrics judged by such a model (HarmonicEval, FLEUR) pass this as `max_aspect_ratio`; the encoders
# (CLIPScore, VELA) centre-crop and read any shape, so by default there is no limit.
MAX_ASPECT_RATIO = 200
# The most bytes read from an image file: above an uncompressed RGBA image at the default pixel limit
# (89 Mpx x 4 = 358 MB), so no real image is refused, and a file that keeps growing is not read forever.
MAX_FILE_BYTES = 512 * 2**20
# An image URL: at most this many bytes, and this many seconds in all (connecting, then reading).
MAX_URL_BYTES = 64 * 2**20
URL_TIMEOUT = 30.0
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")

# What OpenAI's chat API takes (PNG, JPEG, WebP, GIF) and BMP: formats whose opening reads the header alone
# and whose first frame decodes at the size it states (a camera's JPEG with several pictures, MPO, opens
# through the JPEG plugin). Others are not opened at all where images come from anyone: PIL's ICO plugin, for
# one, decodes the icon's embedded PNG inside `Image.open`, at the size that PNG says (a 337 kB icon claiming
# 16x16 took 314 MB there), before any check could run.
HEADER_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
HEADER_FORMAT_NAMES = "PNG, JPEG, WebP, GIF or BMP"
_BOMB = re.compile(r"\((\d+) pixels\)")  # PIL's DecompressionBombError/Warning: "Image size (N pixels) exceeds …"

ImageInput = Any  # PIL.Image.Image | str | os.PathLike | bytes | dict | array | object with .path


def image_digest(image: Image.Image) -> str:
    """sha256 of an image's decoded pixels (mode and size included): the same picture gives the same
    digest whatever file or format it came from; the judge cache and the CLIP cache key images by it.

    >>> image_digest(Image.new("RGB", (2, 2), "red"))[:12]
    'db94ed653dbb'
    """
    h = hashlib.sha256()
    h.update(f"{image.mode}|{image.size}|".encode())
    h.update(image.tobytes())
    return h.hexdigest()


class ImageReadError(ValueError):
    """The file or bytes are not an image Pillow can decode (corrupt, truncated, another format)."""


class ImageTooLargeError(ValueError):
    """An image refused for its pixel count before it was decoded: ``size`` (width, height) when its header
    was read, else ``pixels`` as PIL's own decompression-bomb refusal states it (``None`` if it does not), so
    a front door can say it in its own terms."""

    def __init__(self, message: str, size: tuple[int, int] | None = None, pixels: int | None = None):
        super().__init__(message)
        self.size = size
        self.pixels = size[0] * size[1] if size else pixels


def error_text(err: BaseException) -> str:
    """An exception's message without object reprs (``<_io.BytesIO object at 0x…>``), cut short.

    >>> error_text(OSError("cannot identify image file <_io.BytesIO object at 0x7f00>"))
    'cannot identify image file'
    """
    return re.sub(r"\s*<[^<>]* at 0x[0-9a-fA-F]+>", "", str(err)).strip()[:160] or type(err).__name__


def _bomb(err: Exception) -> ImageTooLargeError:
    found = _BOMB.search(str(err))
    return ImageTooLargeError(error_text(err), pixels=int(found.group(1)) if found else None)


def open_header(source: str | os.PathLike | IO[bytes]) -> Image.Image:
    """``source`` opened as one of :data:`HEADER_FORMATS`, its header read and no pixel decoded: ``size``,
    ``mode`` and ``format`` are known, ``load()`` decodes (close it, or use it in a ``with``).

    Raises:
        ImageReadError: not one of those formats, or a header PIL cannot read (one line, no object reprs).
        ImageTooLargeError: PIL refused it for its pixel count (above twice ``Image.MAX_IMAGE_PIXELS``, or
            above it where a warnings filter turns PIL's warning into an error); ``pixels`` says how many.

    >>> blob = io.BytesIO()
    >>> Image.new("L", (40, 30)).save(blob, "PNG")
    >>> with open_header(blob) as img:
    ...     print(img.format, img.size)
    PNG (40, 30)
    >>> blob = io.BytesIO()
    >>> Image.new("L", (16, 16)).save(blob, "ICO")
    >>> open_header(blob)
    Traceback (most recent call last):
    mmjudge.images.ImageReadError: not a PNG, JPEG, WebP, GIF or BMP image (cannot identify image file)
    """
    try:
        return Image.open(source, formats=HEADER_FORMATS)
    except Image.UnidentifiedImageError:
        raise ImageReadError(f"not a {HEADER_FORMAT_NAMES} image (cannot identify image file)") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise _bomb(err) from None
    except Exception as err:  # a header PIL recognises but cannot read
        raise ImageReadError(f"not a decodable image ({error_text(err)})") from None


def load_image(
    image: ImageInput,
    where: str = "image",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_aspect_ratio: float | None = None,
    mode: str | None = "RGB",
    formats: Sequence[str] | None = None,
) -> Image.Image:
    """Decode ``image`` fully into a PIL image: 8-bit RGB (:func:`to_rgb`) by default, ``mode`` (e.g.
    ``"RGBA"``) when given, as decoded when ``mode`` is None. A file or bytes is checked from its header
    before its pixels are decoded; ``formats`` (e.g. :data:`HEADER_FORMATS`) restricts what PIL may open.

    Raises:
        ImageReadError: naming ``where`` when the data is not a readable image (or not one of ``formats``).
        ImageTooLargeError: naming ``where`` when the image has more than ``max_pixels`` pixels.
        ValueError: naming ``where`` when the image is missing, empty or (with ``max_aspect_ratio``) longer
            than that many times its width.
    """
    if image is None:
        raise ValueError(f"{where}: an image is required but got None.")
    limits = (where, max_pixels, max_aspect_ratio, mode, formats)
    if isinstance(image, Image.Image):
        return _checked(image, *limits[:4])
    if isinstance(image, dict):
        data, path = image.get("bytes"), image.get("path")
        if data is None and path is None:
            raise ValueError(f"{where}: image dict has neither 'bytes' nor 'path'.")
        return load_image(data if data is not None else path, *limits)
    if isinstance(image, (bytes, bytearray, memoryview)):
        return _open(io.BytesIO(bytes(image)), *limits)
    if isinstance(image, str) and _SCHEME.match(image):
        return _open(io.BytesIO(fetch_url(image, where)), *limits)
    if isinstance(image, (str, os.PathLike)):
        return _open_file(Path(image).expanduser(), *limits)
    if hasattr(image, "__array_interface__"):  # numpy arrays (Gradio's image components)
        try:
            return _checked(Image.fromarray(image), *limits[:4])
        except (TypeError, KeyError) as err:
            raise ImageReadError(f"{where}: cannot read the array as an image ({err}).") from None
    if isinstance(getattr(image, "path", None), (str, os.PathLike)):  # Gradio file payloads (FileData)
        return load_image(image.path, *limits)
    raise ValueError(
        f"{where}: expected a PIL image, a path, bytes, an array or a dict, but got {type(image).__name__}."
    )


def load_images(
    images: Sequence[ImageInput], max_pixels: int = DEFAULT_MAX_PIXELS, max_aspect_ratio: float | None = None
) -> list[Image.Image]:
    """:func:`load_image` for each item, errors naming it as ``images[i]``."""
    return [load_image(image, f"images[{i}]", max_pixels, max_aspect_ratio) for i, image in enumerate(images)]


def fetch_url(url: str, where: str = "image", max_bytes: int = MAX_URL_BYTES, timeout: float = URL_TIMEOUT) -> bytes:
    """The bytes at an ``http(s)://`` ``url``: at most ``max_bytes``, within ``timeout`` seconds in all,
    following redirects only to http(s).

    Raises:
        ValueError: naming ``where``: another scheme, an HTTP error, too large or too slow, or no network
            (one line saying that image URLs need network access).

    >>> fetch_url("ftp://host/a.png", "images[0]")
    Traceback (most recent call last):
    ValueError: images[0]: 'ftp://host/a.png': only http(s) image URLs are fetched; download it and give its path.
    """
    import time
    import urllib.error
    import urllib.request

    from mmjudge._version import __version__

    scheme = (_SCHEME.match(url) or [None, ""])[1].lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"{where}: {url!r}: only http(s) image URLs are fetched; download it and give its path.")

    class HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            if not newurl.lower().startswith(("http://", "https://")):
                raise ValueError(f"{where}: {url!r} redirects to {newurl!r}, which is not an http(s) URL.")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    opener = urllib.request.build_opener(HttpOnlyRedirects)
    request = urllib.request.Request(url, headers={"User-Agent": f"mmjudge/{__version__}"})
    deadline = time.monotonic() + timeout
    too_large = f"{where}: {url!r} is larger than {max_bytes:,} bytes; download it and give its path."
    try:
        with opener.open(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise ValueError(too_large)
            chunks, total = [], 0
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise ValueError(too_large)
                if time.monotonic() > deadline:
                    raise ValueError(
                        f"{where}: {url!r} took more than {timeout:g} s to download; download it and give its path."
                    )
                chunks.append(chunk)
    except urllib.error.HTTPError as err:
        raise ValueError(f"{where}: {url!r} answered HTTP {err.code} ({err.reason}).") from None
    except (urllib.error.URLError, OSError) as err:  # no route, refused, DNS, timeout: no network for it
        reason = getattr(err, "reason", None) or err
        raise ValueError(
            f"{where}: cannot fetch {url!r} ({reason}); image URLs need network access to their host — "
            "download the image and give its path instead."
        ) from None
    return b"".join(chunks)


def _open_file(path: Path, where: str, *limits: Any) -> Image.Image:
    """A regular image file, read at most :data:`MAX_FILE_BYTES` (see :func:`mmjudge.paths.open_regular_file`)."""
    from mmjudge.paths import open_regular_file

    try:
        handle = open_regular_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise ValueError(f"{where}: image file not found: {str(path)!r}.") from None
    except IsADirectoryError:
        raise ValueError(f"{where}: {str(path)!r} is a folder, not an image file.") from None
    except ValueError as err:  # a FIFO, device or socket, or a file too large: only regular files are read
        raise ValueError(f"{where}: {err}; only regular image files are read.") from None
    except OSError as err:
        raise ValueError(f"{where}: cannot open image file {str(path)!r} ({err.strerror or err}).") from None
    with handle:
        return _open(handle, where, *limits)


def _open(
    source,
    where: str,
    max_pixels: int,
    max_aspect_ratio: float | None,
    mode: str | None,
    formats: Sequence[str] | None = None,
) -> Image.Image:
    # PIL warns (DecompressionBombWarning) above its own limit and refuses above twice it; the size check
    # below is ours, from the header. A caller's larger `max_pixels` is honoured up to PIL's refusal.
    try:
        with Image.open(source, formats=formats) as img:
            _check_size(img.size, where, max_pixels)
            img.load()
            return _checked(img.copy(), where, max_pixels, max_aspect_ratio, mode)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        bomb = _bomb(err)
        raise ImageTooLargeError(
            f"{where}: image is too large (possible decompression bomb).", pixels=bomb.pixels
        ) from None
    except ValueError:
        raise
    except Exception as err:  # PIL raises UnidentifiedImageError, OSError, SyntaxError… on bad files
        raise ImageReadError(f"{where}: cannot read image ({type(err).__name__}: {err}).") from None


def _check_size(size: tuple[int, int], where: str, max_pixels: int) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise ValueError(f"{where}: image is empty ({width}x{height}).")
    if width * height > max_pixels:
        raise ImageTooLargeError(
            f"{where}: image is too large ({width}x{height} = {width * height} pixels > {max_pixels}); "
            "possible decompression bomb. Pass a larger `max_pixels` if this is intended.",
            size=(width, height),
        )


def _checked(
    img: Image.Image, where: str, max_pixels: int, max_aspect_ratio: float | None = None, mode: str | None = "RGB"
) -> Image.Image:
    _check_size(img.size, where, max_pixels)
    width, height = img.size
    if max_aspect_ratio is not None and max(width, height) > max_aspect_ratio * min(width, height):
        raise ValueError(
            f"{where}: aspect ratio {width}x{height} is more extreme than {max_aspect_ratio:g}:1, which the judges' "
            "processors refuse; crop or pad the image."
        )
    if mode is None:
        return img
    return to_rgb(img) if mode == "RGB" else img.convert(mode)


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
            low, high = (
                (0.0, 1.0)
                if finite.size == 0 or (finite.min() >= 0 and finite.max() <= 1)
                else (finite.min(), finite.max())
            )
        elif img.mode == "I" and values.size and values.max() > 65535:
            low, high = values.min(), values.max()
        else:
            low, high = 0.0, 65535.0 if img.mode != "I" or (values.size and values.max() > 255) else 255.0
        scaled = np.nan_to_num((values - low) / ((high - low) or 1.0), nan=0.0).clip(0, 1)
        return Image.fromarray(np.round(scaled * 255).astype(np.uint8), "L").convert("RGB")
    return img.convert("RGB")


def parse_box(text: str, where: str = "box", example: str = "10, 20, 100, 50") -> list[float]:
    """A typed bounding box ``x, y, w, h``: four finite, non-negative numbers separated by commas,
    spaces or ``;``, optionally in brackets (the CLI's ``--box``, the widget's and the Space's field).

    >>> parse_box("10,20,30,40"), parse_box("[1 2; 3 4]")
    ([10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0, 4.0])
    >>> parse_box("a,b,c,d", "--box", "10,20,100,50")
    Traceback (most recent call last):
    ValueError: --box: expected four numbers x, y, w, h in pixels (e.g. 10,20,100,50), but got 'a,b,c,d'.
    """
    raw = str(text).strip()
    fix = f"{where}: expected four numbers x, y, w, h in pixels (e.g. {example}), but got {raw[:60]!r}"
    parts = [p for p in re.split(r"[,;\s]+", raw.strip("[]() ")) if p]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{fix}.") from None
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{fix}.")
    if any(v < 0 for v in values):
        raise ValueError(f"{fix}: coordinates cannot be negative.")
    return values


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
