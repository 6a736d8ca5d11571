"""A batch of rating requests as the local judge hands it from the preparing thread to the model: what was
prepared, its CPU tensors pinned for copies that do not wait, and the logits of its parts put back in request
order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmjudge.judges.local import prefix_sharing
from mmjudge.judges.local.prompting import pin_inputs


@dataclass
class PreparedBatch:
    """One batch ready for the model: its requests, the prefix offsets asked for, the positions to read
    (``keep``), a :class:`~mmjudge.judges.local.prefix_sharing.SharedPrefixBatch` for the requests that
    share prefixes (``shared.rows``) and plain ``inputs`` for the others (``plain_rows``)."""

    requests: list
    offsets: list
    keep: int
    inputs: dict | None = None
    shared: prefix_sharing.SharedPrefixBatch | None = None
    plain_rows: list = field(default_factory=list)


def in_request_order(parts: list, count: int) -> Any:
    """One logits tensor (requests, keep, vocab) from ``(rows, logits)`` parts answering different rows."""
    import torch

    first = parts[0][1]
    out = first.new_empty((count, *first.shape[1:]))
    for rows, logits in parts:
        out[torch.tensor(rows, device=logits.device)] = logits
    return out


def pin_batch(batch: PreparedBatch, dtypes: dict | None = None) -> None:
    """Every CPU tensor of ``batch`` in pinned memory (in the preparing thread), so that the answering thread's
    copies to the GPU neither wait for queued work nor block it; ``dtypes``: inputs cast on the way
    (:func:`~mmjudge.judges.local.vision_metadata.pixel_dtypes`)."""
    if batch.inputs is not None:
        batch.inputs = pin_inputs(batch.inputs, dtypes)
    shared = batch.shared
    if shared is not None:
        shared.prefix, shared.suffix_inputs = pin_inputs(shared.prefix, dtypes), pin_inputs(shared.suffix_inputs)
        shared.suffix_ids, shared.suffix_mask = shared.suffix_ids.pin_memory(), shared.suffix_mask.pin_memory()
        shared.row_of, shared.shift = shared.row_of.pin_memory(), shared.shift.pin_memory()
        if shared.mrope is not None:
            shared.mrope = (shared.mrope[0].pin_memory(), shared.mrope[1])
