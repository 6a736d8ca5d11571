"""The chunk engine: items gathered into bounded chunks, each chunk's distinct images decoded once, in threads,
while the chunk before it is scored.

:func:`chunks` closes a chunk at ``size`` items or once its images, sized from their headers
(:func:`decoded_size`), would hold :data:`MAX_CHUNK_IMAGE_BYTES` decoded (for a metric that scores items in
groups, at the next multiple of its group size after that); :class:`ChunkImages` decodes a
chunk's distinct images (by path, else by object) and hashes their pixels in a thread pool, failing only
the items of an unreadable image (or stopping the stream, with ``on_error="raise"``). At most two chunks
of images are alive: the one being scored and the next one decoding.

>>> from PIL import Image
>>> decoded_size(Image.new("RGB", (40, 30)))
3600
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from mmjudge.metrics.spec import InputSpec, Item

# Items per chunk, and decoded image bytes after which a chunk closes early (2000x1500 RGB images are
# 9 MB each: a chunk of them stays near this bound, not 256 x 9 MB). Two chunks' images are alive at most
# (the one being scored, the next one decoding): 512 MB together.
DEFAULT_CHUNK_SIZE = 256
MAX_CHUNK_IMAGE_BYTES = 256 * 2**20
# Header sizes remembered by path across chunks (see ChunkImages.measure).
MAX_REMEMBERED_SIZES = 100_000


def _image_key(image: Any) -> Any:
    """What makes two inputs the same image within a chunk: the path of a file, else the object itself
    (whose id the chunk's items keep valid: they hold the object until it is decoded)."""
    if isinstance(image, (str, os.PathLike)):
        return ("path", os.fspath(image))
    if isinstance(image, Mapping) and image.get("path") and image.get("bytes") is None:
        return ("path", str(image["path"]))
    return ("object", id(image))


def set_digests(items: list[Item], decoded: dict[int, str]) -> None:
    """Each item's pixel digest, computed once per distinct image object: ``decoded`` holds the digests
    hashed while decoding (by image id); an image ``_prepare_item`` replaced (a REG box drawn) is hashed here."""
    from mmjudge.images import image_digest

    seen = dict(decoded)
    for item in items:
        if item.image is not None:
            key = id(item.image)
            if key not in seen:
                seen[key] = image_digest(item.image)
            item.digest = seen[key]


def chunks(items: Iterable[Any], size: int | None, images: ChunkImages, multiple: int = 1) -> Iterator[list]:
    """Lists of at most ``size`` items (``None``: one list of all), closed early once their images (sized from
    their headers) would hold :data:`MAX_CHUNK_IMAGE_BYTES` decoded, each with its images decoded
    (:class:`ChunkImages`). The next list's images decode in the background while the caller scores this
    one, so the decoding threads and the judge work at the same time; at most these two lists' images are
    alive. With ``multiple``, a list closes only once the items handed out so far are a multiple of it (so
    it may pass ``size`` or the image bound by up to ``multiple - 1`` items): a metric that scores items in
    groups of that many never sees a group split between two lists."""
    ahead = None  # (list, its decoding): closed, not yet handed out
    for chunk in _closed_chunks(items, size, images, multiple):
        decoding = images.start(chunk)
        if ahead is not None:
            done, ahead = ahead, (chunk, decoding)
            yield images.finish(*done)
            del done  # the caller has released it: keep only the list decoding now
        else:
            ahead = (chunk, decoding)
    if ahead is not None:
        yield images.finish(*ahead)


def _closed_chunks(items: Iterable[Any], size: int | None, images: ChunkImages, multiple: int = 1) -> Iterator[list]:
    """Lists of items, undecoded (see :func:`chunks`).

    >>> with ChunkImages(None, "raise", None, None) as images:
    ...     by_3 = [len(c) for c in _closed_chunks(range(10), 3, images)]
    ...     by_3_in_fours = [len(c) for c in _closed_chunks(range(10), 3, images, 4)]
    >>> by_3, by_3_in_fours
    ([3, 3, 3, 1], [4, 4, 2])
    """
    chunk: list = []
    image_bytes = 0
    for count, item in enumerate(items, 1):
        chunk.append(item)
        image_bytes += images.measure(item)
        full = (size is not None and len(chunk) >= size) or image_bytes >= MAX_CHUNK_IMAGE_BYTES
        if full and count % multiple == 0:
            yield chunk
            chunk, image_bytes = [], 0
            images.forget()
    if chunk:
        yield chunk


class ChunkImages:
    """The images of the chunks of one stream: each distinct image (by path, else by object) decoded once per
    chunk, the distinct ones in parallel threads (PIL releases the GIL while it decodes), and a bad one
    failing only its items (``on_error="record"``) or stopping the stream at the first item in order that
    has it (``"raise"``). Before decoding, :meth:`measure` sizes an item's image from its header, so a chunk
    closes before its pixels pass the bound."""

    def __init__(self, spec: InputSpec | None, on_error: str, max_pixels: int | None, max_aspect_ratio: float | None):
        self.spec, self.on_error = spec, on_error
        self.limits = {
            "max_aspect_ratio": max_aspect_ratio,
            **({} if max_pixels is None else {"max_pixels": max_pixels}),
        }
        self._seen: set = set()
        # Header sizes by path across chunks: datasets repeat images (COCO: five captions each), and reading a
        # header opens the file. Bounded; an image object is measured each time (its id may be reused).
        self._sizes: dict[Any, int] = {}
        self._pool: Any = None

    def __enter__(self) -> ChunkImages:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.shutdown()

    def measure(self, item: Any) -> int:
        """Bytes the item's image will hold decoded (0 for none, one already counted in this chunk, or one
        whose header cannot be read: decoding reports that)."""
        if not isinstance(item, Item) or item.image is None:
            return 0
        key = _image_key(item.image)
        if key in self._seen:
            return 0
        self._seen.add(key)
        if key[0] != "path":
            return decoded_size(item.image)
        size = self._sizes.get(key)
        if size is None:
            if len(self._sizes) >= MAX_REMEMBERED_SIZES:
                self._sizes.clear()
            size = self._sizes[key] = decoded_size(item.image)
        return size

    def forget(self) -> None:
        self._seen = set()

    def start(self, chunk: list) -> dict:
        """Begin decoding the chunk's distinct images (in threads when there are several and more than one
        core); :meth:`finish` waits for them."""
        first: dict[Any, int] = {}  # image key -> position of the first item that has it
        for position, item in enumerate(chunk):
            if isinstance(item, Item) and item.image is not None:
                first.setdefault(_image_key(item.image), position)
        cores = os.cpu_count() or 1
        if len(first) > 1 and cores > 1:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(cores, thread_name_prefix="mmjudge-decode")
            # One task per core over every k-th image, not one per image: a submit and its result cost this
            # (the scoring) thread ~10 µs each.
            positions = list(first.values())
            tasks = min(len(positions), cores)
            futures = [
                self._pool.submit(self._decode_several, [chunk[p] for p in positions[g::tasks]]) for g in range(tasks)
            ]
            return {
                key: (position, (futures[k % tasks], k // tasks)) for k, (key, position) in enumerate(first.items())
            }
        return {key: (position, None) for key, position in first.items()}

    def finish(self, chunk: list, decoding: dict) -> list:
        """The chunk with its images decoded: each item's image and digest set, or the item failed (or the
        stream stopped, with ``on_error="raise"``) where its image could not be read."""
        decoded = {
            key: self._decode_one(chunk[position]) if pending is None else pending[0].result()[pending[1]]
            for key, (position, pending) in decoding.items()
        }
        # Where the first item with each image is, read before any item is replaced by its failed result below
        # (two items sharing one unreadable image: the first is already an ItemResult when the second is met).
        first_where = {key: chunk[position].where(self.spec) for key, (position, _) in decoding.items()}
        for position, item in enumerate(chunk):
            if not isinstance(item, Item) or item.image is None:
                continue
            key = _image_key(item.image)
            answer = decoded[key]
            if isinstance(answer, ValueError):
                # The message names the first item with this image; each item's own row names itself.
                message = str(answer).replace(first_where[key], item.where(self.spec), 1)
                if self.on_error == "raise":
                    raise ValueError(message)
                chunk[position] = item.failed(message)
                continue
            item.image, item.digest = answer
        return chunk

    def _decode_several(self, items: list[Item]) -> list[Any]:
        return [self._decode_one(item) for item in items]

    def _decode_one(self, item: Item) -> Any:
        """``(decoded image, pixel digest)``, or the ValueError saying why it cannot be read (hashed in the
        decoding thread too: hashlib releases the GIL, as PIL does while it decodes)."""
        from mmjudge.images import image_digest, load_image

        try:
            image = load_image(item.image, item.where(self.spec), **self.limits)
        except ValueError as err:
            return err
        return image, image_digest(image)


def decoded_size(image: Any) -> int:
    """Bytes of ``image`` once decoded, from what is known without decoding it (0 when unknown)."""
    import io

    from PIL import Image

    try:
        if isinstance(image, Image.Image):
            return image.width * image.height * len(image.getbands())
        if hasattr(image, "__array_interface__"):
            return int(getattr(image, "nbytes", 0))
        if isinstance(image, Mapping):
            image = image.get("bytes") if image.get("bytes") is not None else image.get("path")
        if isinstance(image, (bytes, bytearray, memoryview)):
            image = io.BytesIO(bytes(image))
        elif isinstance(image, (str, os.PathLike)):
            image = os.path.expanduser(os.fspath(image))
        elif isinstance(getattr(image, "path", None), (str, os.PathLike)):
            image = os.path.expanduser(os.fspath(image.path))
        else:
            return 0
        if isinstance(image, str):
            from mmjudge.paths import open_regular_file

            # Regular files only (opening a FIFO waits for a writer: the run would hang); decoding says why.
            with open_regular_file(image) as handle, Image.open(handle) as header:
                return header.width * header.height * max(3, len(header.getbands()))
        with Image.open(image) as header:  # reads the header only
            return header.width * header.height * max(3, len(header.getbands()))
    except Exception:
        return 0
