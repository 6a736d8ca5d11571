"""A request's image: a base64 ``data:`` URL decoded into one RGB picture, its size checked against this
server's ``--max-image-pixels`` before a single pixel is decoded.

``Image.open`` reads only the header of the formats read here (:data:`FORMATS`), so the size is known
before ``load()`` allocates width x height pixels; the limit is this server's own, compared here, and
PIL's process-wide ``Image.MAX_IMAGE_PIXELS`` is left as it is (other code in the process keeps it; PIL
still refuses, inside ``Image.open``, images above twice that, about 179 M pixels, whatever the limit).
Other formats are refused unopened: PIL's ICO plugin, for one, decodes the icon's embedded PNG inside
``Image.open``, at the size that PNG says (a 337 kB icon claiming 16x16 took 314 MB there), before any
check could run. Of a multi-frame image (GIF, APNG, WebP, MPO) the first frame alone is decoded, at the
size the check read (a GIF frame larger than its screen enlarges that size as the file is opened).

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
import re
from typing import Any

# What OpenAI's chat API takes (PNG, JPEG, WebP, GIF) and BMP: formats whose opening reads the header alone
# and whose first frame decodes at the size it states. A camera's JPEG with several pictures (MPO) opens
# through the JPEG plugin.
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
_NAMES = "PNG, JPEG, WebP, GIF or BMP"
_BOMB = re.compile(r"\((\d+) pixels\)")  # PIL's DecompressionBombError: "Image size (N pixels) exceeds …"


def _plain(err: Exception) -> str:
    """An exception's message without object reprs (``<_io.BytesIO object at 0x…>``), cut short."""
    return re.sub(r"\s*<[^<>]* at 0x[0-9a-fA-F]+>", "", str(err)).strip()[:160] or type(err).__name__


def _too_large(where: str, size: str, max_pixels: int) -> ValueError:
    return ValueError(
        f"the image in {where} {size}, above this server's limit of {max_pixels} (mmjudge serve --max-image-pixels)."
    )


def decode_image(url: Any, where: str, max_pixels: int) -> Any:
    """The RGB picture of a base64 ``data:`` image URL (``where``: the content part it is in, for the
    message); one that is not such a URL, not a :data:`FORMATS` image, or above ``max_pixels`` pixels is a
    ``ValueError`` of one line, the last before any pixel is decoded."""
    from PIL import Image

    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise ValueError("only base64 `data:` image URLs are accepted (this server fetches nothing).")
    try:
        blob = base64.b64decode(url.split(";base64,", 1)[1])
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"the image in {where} is not valid base64 ({_plain(err)}).") from None
    try:
        image = Image.open(io.BytesIO(blob), formats=FORMATS)  # the header only: its size, no pixels
    except Image.UnidentifiedImageError:
        raise ValueError(f"the image in {where} is not a {_NAMES} image (cannot identify image file).") from None
    except Image.DecompressionBombError as err:  # above twice PIL's own limit: only its pixel count is known
        found = _BOMB.search(str(err))
        if found and int(found.group(1)) > max_pixels:
            raise _too_large(where, f"holds {found.group(1)} pixels", max_pixels) from None
        raise ValueError(f"the image in {where} is too large for PIL to open ({_plain(err)}).") from None
    except Exception as err:  # a header PIL recognises but cannot read
        raise ValueError(f"the image in {where} is not a decodable image ({_plain(err)}).") from None
    width, height = image.size
    if width * height > max_pixels:
        raise _too_large(where, f"is {width}x{height} = {width * height} pixels", max_pixels)
    try:
        image.load()  # the first frame, at the size just checked
    except Exception as err:
        raise ValueError(f"the image in {where} is not a decodable image ({_plain(err)}).") from None
    width, height = image.size
    if width * height > max_pixels:  # the formats above never grow as they decode; a PIL change must not slip by
        raise _too_large(where, f"decoded to {width}x{height} = {width * height} pixels", max_pixels)
    return image.convert("RGB") if image.mode != "RGB" else image
