"""Image files that are tiny on disk and huge once decoded, written without decoding anything: a one-colour
PNG whose rows are compressed one at a time (PIL would hold the whole image to write it), and an icon whose
directory claims 16 x 16 while its one entry is a large PNG (PIL's ICO plugin decodes that PNG inside
``Image.open``)."""

from __future__ import annotations

import struct
import zlib


def png_bytes(size: tuple[int, int], rgba: bool = True) -> bytes:
    """A PNG of one colour: transparent black RGBA, or 1-bit black."""
    width, height = size
    row = b"\x00" * (1 + (width * 4 if rgba else (width + 7) // 8))
    pack = zlib.compressobj(9)
    data = b"".join(pack.compress(row) for _ in range(height)) + pack.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8 if rgba else 1, 6 if rgba else 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def icon_bytes(size: tuple[int, int]) -> bytes:
    """An icon whose directory claims 16 x 16 and whose one entry is a 1-bit PNG of ``size``."""
    png = png_bytes(size, rgba=False)
    return struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", 16, 16, 0, 0, 1, 32, len(png), 22) + png
