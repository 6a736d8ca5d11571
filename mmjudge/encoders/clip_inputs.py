"""CLIP's inputs, prepared on every core and fed to the device a few batches ahead of it.

Why: a CLIP ViT-B/32 embeds a batch of 64 images in about a millisecond on an H100/H200, while resizing
them (bicubic, PIL) takes a core 2-3 ms per image and a CLIP BPE tokenises ~100 words in ~0.5 ms. Done one
batch at a time on the scoring thread, the GPU waits for the CPU most of the time. Here:

* the images are resized and cropped in one thread pool as large as the machine (:func:`cpu_pool`; PIL
  releases the GIL while it resizes), one task per core over every k-th image, straight into a uint8 batch
  buffer — pinned memory on CUDA, so its copy to the device does not block the launching thread;
* pixels cross as uint8 (a quarter of float32's bytes) and are normalised on the device through a 3 × 256
  lookup table (:func:`normalise_table`) computed on the CPU with the very arithmetic of
  :func:`preprocess_images` — every value equals the CPU path's bit for bit, whatever the device's own
  float division would round;
* texts are tokenised once per call (the truncated ids and whether each was cut), padded per batch here;
* :func:`pipelined` launches batch k+1 before it reads batch k back, so the device always has work queued.

:func:`preprocess_images` is the sequential reference (float32 on the CPU); :func:`pixels_from_uint8`
gives the same tensor, values and memory layout both, from :func:`resize_crop`'s uint8 pixels.

>>> from PIL import Image
>>> table = normalise_table((0.5,) * 3, (0.5,) * 3)
>>> table.shape, float(table[0, 0]), float(table[2, 255])
(torch.Size([3, 256]), -1.0, 1.0)
>>> image = Image.new("RGB", (64, 32), (10, 20, 30))
>>> reference = preprocess_images([image], 16, (0.5,) * 3, (0.5,) * 3)
>>> bool((pixels_from_uint8(uint8_batch([image], 16), table) == reference).all())
True
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from PIL import Image

_POOL: Any = None
_POOL_LOCK = threading.Lock()


def cpu_pool() -> Any:
    """One thread pool for CPU-side input work, as many threads as the machine has cores (created once,
    shared by every encoder: two encoders in one process do not double the threads)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(max(1, os.cpu_count() or 1), thread_name_prefix="mmjudge-inputs")
        return _POOL


def resize_crop(image: Image.Image, size: int) -> np.ndarray:
    """OpenAI CLIP's geometry as uint8 pixels ``(size, size, 3)``: bicubic resize of the short side to ``size``
    (the long side truncated to an integer), centre crop.

    >>> resize_crop(Image.new("RGB", (64, 32), "white"), 16).shape
    (16, 16, 3)
    """
    width, height = image.size
    short, long = min(width, height), max(width, height)
    new_long = int(size * long / short)  # the short side becomes `size`, the long side is truncated
    new_size = (size, new_long) if width <= height else (new_long, size)
    resized = image.convert("RGB").resize(new_size, Image.BICUBIC)
    left = int(round((resized.width - size) / 2.0))
    top = int(round((resized.height - size) / 2.0))
    return np.asarray(resized.crop((left, top, left + size, top + size)))


def preprocess_images(images: Sequence[Image.Image], size: int, mean: Sequence[float], std: Sequence[float]):
    """A float32 tensor ``(n, 3, size, size)``: :func:`resize_crop`, scale to [0, 1], normalise — all on the
    CPU, the images resized in :func:`cpu_pool` (same pixels as one after the other).

    >>> preprocess_images([Image.new("RGB", (64, 32), "white")], 16, (0.5,) * 3, (0.5,) * 3).shape
    torch.Size([1, 3, 16, 16])
    """
    import torch

    if len(images) > 1 and (os.cpu_count() or 1) > 1:
        arrays = list(cpu_pool().map(lambda image: resize_crop(image, size), images))
    else:
        arrays = [resize_crop(image, size) for image in images]
    scaled = [a.astype(np.float32) / 255.0 for a in arrays]
    pixels = torch.from_numpy(np.stack(scaled)).permute(0, 3, 1, 2)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
    return (pixels - mean_t) / std_t


def normalise_table(mean: Sequence[float], std: Sequence[float]):
    """``(3, 256)`` float32: what :func:`preprocess_images` makes of each uint8 value in each channel,
    computed by the same operations (so a lookup equals that path exactly)."""
    import torch

    scaled = np.arange(256, dtype=np.uint8).astype(np.float32) / 255.0
    values = torch.from_numpy(np.stack([scaled] * 3)).view(1, 3, 256, 1)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
    return ((values - mean_t) / std_t).view(3, 256)


def uint8_batch(images: Sequence[Image.Image], size: int, pin: bool = False) -> Any:
    """``(n, size, size, 3)`` uint8 tensor of :func:`resize_crop` pixels, in pinned memory with ``pin``,
    filled one image after the other (:class:`ImageBatch` fills it on every core)."""
    batch = ImageBatch(images, size, pin, parallel=False)
    return batch.result()


class ImageBatch:
    """One batch of images being resized into a uint8 buffer, each image a task in :func:`cpu_pool` (or
    inline with ``parallel=False``); :meth:`result` waits for them and returns the buffer."""

    def __init__(self, images: Sequence[Image.Image], size: int, pin: bool, parallel: bool = True):
        import torch

        self.buffer = torch.empty((len(images), size, size, 3), dtype=torch.uint8, pin_memory=pin)
        target = self.buffer.numpy()  # a view: the tasks write straight into (pinned) memory

        def fill(first: int, step: int) -> None:
            for k in range(first, len(images), step):
                target[k] = resize_crop(images[k], size)

        cores = os.cpu_count() or 1
        if parallel and len(images) > 1 and cores > 1:
            # One task per core, each every `tasks`-th image (sizes mixed evenly), not one per image: a
            # submit and its result cost the launching thread ~10 µs each, paid per task.
            tasks = min(len(images), cores)
            pool = cpu_pool()
            self.pending = [pool.submit(fill, first, tasks) for first in range(tasks)]
        else:
            fill(0, 1)
            self.pending = []

    def result(self) -> Any:
        for future in self.pending:
            future.result()
        return self.buffer


def pixels_from_uint8(pixels: Any, table: Any) -> Any:
    """Normalised float32 pixels ``(n, 3, size, size)`` from uint8 ``(n, size, size, 3)`` by looking each value
    up in ``table`` (:func:`normalise_table`, on the pixels' device). The memory layout is
    :func:`preprocess_images`'s too (channels innermost), so a model sees the same strides either way."""
    import torch

    offsets = torch.arange(3, device=pixels.device) * 256
    return table.reshape(-1)[pixels.long() + offsets].permute(0, 3, 1, 2)


def token_rows(tokenizer: Any, texts: Sequence[str], max_length: int) -> tuple[list[list[int]], list[int]]:
    """``(ids, cut)``: each text's ids as ``tokenizer(texts, truncation=True, max_length=...)`` gives them
    (special tokens added, cut to ``max_length``), and the positions of the texts that were cut — one
    tokenisation (a fast tokenizer reports what it cut as overflowing rows)."""
    if getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(
            list(texts), truncation=True, max_length=max_length, return_overflowing_tokens=True, verbose=False
        )
        ids: list = [None] * len(texts)
        cut: list[int] = []
        # Each text's own (truncated) row comes first, then the rows of what was cut from it.
        for row, owner in zip(encoded["input_ids"], encoded["overflow_to_sample_mapping"]):
            if ids[owner] is None:
                ids[owner] = list(row)
            elif not cut or cut[-1] != owner:
                cut.append(owner)
        return ids, cut
    full = tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]
    cut = [k for k, row in enumerate(full) if len(row) > max_length]
    if not cut:
        return [list(row) for row in full], cut
    return [list(row) for row in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]], cut


def padded_text_batch(rows: Sequence[Sequence[int]], pad: int, eos: int | None, side: str, pin: bool = False):
    """``(input_ids, attention_mask)`` long tensors of ``rows`` padded to the longest on ``side``, as
    ``tokenizer(..., padding=True, return_tensors="pt")`` pads them; a row with no padding ends with ``eos``
    (the text tower pools at the end-of-text token, which truncation must keep)."""
    import torch

    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for k, row in enumerate(rows):
        span = slice(width - len(row), width) if side == "left" else slice(0, len(row))
        ids[k, span] = row
        mask[k, span] = 1
        if eos is not None and len(row) == width:
            ids[k, -1] = eos
    out_ids, out_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    if pin:
        out_ids, out_mask = out_ids.pin_memory(), out_mask.pin_memory()
    return out_ids, out_mask


def pipelined(
    batches: Iterable[Any],
    start: Callable[[Any], Any],
    launch: Callable[[Any], Any],
    read: Callable[[Any], Any],
    depth: int = 3,
) -> Iterator[Any]:
    """``read(launch(start(batch).result()))`` for each batch, in order, overlapped: ``start`` begins a
    batch's CPU work (returning something with ``result()``) up to ``depth`` batches ahead, ``launch`` queues
    its device work without waiting, and batch k is read back only once batch k+1 is launched."""
    ahead: deque = deque()
    source = iter(batches)
    exhausted = False

    def fill() -> None:
        nonlocal exhausted
        while not exhausted and len(ahead) < depth:
            batch = next(source, None)
            if batch is None:
                exhausted = True
                return
            ahead.append(start(batch))

    fill()
    launched = None
    while ahead:
        inputs = ahead.popleft().result()
        fill()
        current = launch(inputs)
        if launched is not None:
            yield read(launched)
        launched = current
    if launched is not None:
        yield read(launched)
