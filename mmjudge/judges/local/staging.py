"""Moving a prepared batch to the GPU while the previous one is still running.

A HarmonicEval batch of 240 Qwen2-VL requests carries about 1.1 GB of float32 pixel values. Copied from
ordinary (pageable) memory when the batch starts, the copy blocks the launching thread and the GPU waits
for it. Here the preparing thread copies the next batch's tensors from page-locked memory on a CUDA stream
of its own, while the current batch computes, and records an event; the compute stream waits for that event
(on the GPU, not in Python) before it first reads them. Nothing changes in what is computed.

On the CPU (and for any non-CUDA device) :func:`stage` returns the tensors as they are and no event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Staged:
    """Tensors copied (or being copied) to the device, and the event that marks the copy's end."""

    tensors: dict
    ready: Any = None  # torch.cuda.Event, or None where nothing is pending

    def wait(self) -> dict:
        """Make the current stream wait (on the GPU) for the copy, and tell the allocator these tensors are
        used on it; returns the tensors."""
        if self.ready is not None:
            import torch

            stream = torch.cuda.current_stream()
            stream.wait_event(self.ready)
            for value in _tensors(self.tensors):
                value.record_stream(stream)
            self.ready = None
        return self.tensors


_COPY_STREAMS: dict = {}


def stage(tensors: dict, device: Any) -> Staged:
    """``tensors`` (a dict of CPU tensors, nested in dicts and tuples as it likes) copied to ``device`` on a
    side stream from pinned memory; other values are kept as they are.

    >>> import torch
    >>> staged = stage({"input_ids": torch.tensor([[1, 2]]), "note": "kept"}, "cpu")
    >>> staged.wait()["input_ids"].device.type, staged.tensors["note"], staged.ready
    ('cpu', 'kept', None)
    """
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return Staged(tensors)
    stream = _COPY_STREAMS.get(device)
    if stream is None:
        stream = _COPY_STREAMS[device] = torch.cuda.Stream(device=device)

    def move(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.pin_memory().to(device, non_blocking=True)
        if isinstance(value, tuple):
            return tuple(move(v) for v in value)
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        return value

    with torch.cuda.stream(stream):
        moved = {k: move(v) for k, v in tensors.items()}
        ready = torch.cuda.Event()
        ready.record(stream)
    return Staged(moved, ready)


def _tensors(value: Any):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
