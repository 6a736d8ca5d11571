"""A request's image: a base64 ``data:`` URL decoded into one RGB picture, its size checked against this
server's ``--max-image-pixels`` before a single pixel is decoded.

The header is read by :func:`mmjudge.images.open_header` (the engine's one header check, the Space's too),
which opens only :data:`~mmjudge.images.HEADER_FORMATS`, so the size is known before ``load()`` allocates
width x height pixels; the limit is this server's own, compared here, and PIL's process-wide
``Image.MAX_IMAGE_PIXELS`` is left as it is (other code in the process keeps it; PIL still refuses, inside
``Image.open``, images above twice that, about 179 M pixels, whatever the limit). Other formats are refused
unopened (PIL's ICO plugin decodes the icon's embedded PNG inside ``Image.open``). Of a multi-frame image
(GIF, APNG, WebP, MPO) the first frame alone is decoded, at the size the check read (a GIF frame larger than
its screen enlarges that size as the file is opened).

>>> import base64, io
>>> from PIL import Image
>>> def data_url(image):
...     blob = io.BytesIO()
...     image.save(blob, "PNG")
...     return "data:image/png;base64," + base64.b64encode(blob.getvalue()).decode()
>>> decode_image(data_url(Image.new("L", (40, 30))), "messages[0].content[1]", max_pixels=1200).mode
'RGB'
>>> decode_image(data_url(Image.new("L", (40, 31))), "messages[0].content[1]", max_pixels=1200)
Traceback (most recent call last):
ValueError: the image in messages[0].content[1] is 40x31 = 1240 pixels, above this server's limit of 1200
(mmjudge serve --max-image-pixels).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any


def _too_large(where: str, size: str, max_pixels: int) -> ValueError:
    return ValueError(
        f"the image in {where} {size}, above this server's limit of {max_pixels} (mmjudge serve --max-image-pixels)."
    )


def decode_image(url: Any, where: str, max_pixels: int) -> Any:
    """The RGB picture of a base64 ``data:`` image URL (``where``: the content part it is in, for the
    message); one that is not such a URL, not a :data:`~mmjudge.images.HEADER_FORMATS` image, or above
    ``max_pixels`` pixels is a ``ValueError`` of one line, the last before any pixel is decoded."""
    from mmjudge.images import ImageReadError, ImageTooLargeError, error_text, open_header  # PIL, when needed

    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise ValueError("only base64 `data:` image URLs are accepted (this server fetches nothing).")
    try:
        blob = base64.b64decode(url.split(";base64,", 1)[1])
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"the image in {where} is not valid base64 ({error_text(err)}).") from None
    try:
        image = open_header(io.BytesIO(blob))  # the header only: its size, no pixels
    except ImageTooLargeError as err:  # above PIL's own limit: only its pixel count is known
        if err.pixels is not None and err.pixels > max_pixels:
            raise _too_large(where, f"holds {err.pixels} pixels", max_pixels) from None
        raise ValueError(f"the image in {where} is too large for PIL to open ({err}).") from None
    except ImageReadError as err:
        raise ValueError(f"the image in {where} is {err}.") from None
    width, height = image.size
    if width * height > max_pixels:
        raise _too_large(where, f"is {width}x{height} = {width * height} pixels", max_pixels)
    try:
        image.load()  # the first frame, at the size just checked
    except Exception as err:
        raise ValueError(f"the image in {where} is not a decodable image ({error_text(err)}).") from None
    width, height = image.size
    if width * height > max_pixels:  # the formats above never grow as they decode; a PIL change must not slip by
        raise _too_large(where, f"decoded to {width}x{height} = {width * height} pixels", max_pixels)
    return image.convert("RGB") if image.mode != "RGB" else image
