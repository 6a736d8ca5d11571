"""Batching helpers every model loop shares: length-sorted batches, padded id tensors, a progress bar over
batches. One copy, used by the local judge, VELA, BERTScore and BARTScore.

>>> length_sorted_batches([5, 1, 3, 2], batch_size=2)
[[1, 3], [2, 0]]
>>> ids, mask = pad_rows([[7, 8], [9]], pad=0, side="left")
>>> ids.tolist(), mask.tolist()
([[7, 8], [0, 9]], [[1, 1], [0, 1]])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mmjudge.errors import check_batch_size


def length_sorted_batches(lengths: Sequence[int], batch_size: int, longest_first: bool = False) -> list[list[int]]:
    """Indices ``0..n-1`` in batches of at most ``batch_size``, ordered by length (ties by index), so a
    batch pads little. Deterministic for the same input.

    Raises:
        ValueError: ``batch_size`` below 1.
    """
    check_batch_size(batch_size)
    sign = -1 if longest_first else 1
    order = sorted(range(len(lengths)), key=lambda i: (sign * lengths[i], i))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def pad_rows(rows: Sequence[Sequence[int]], pad: int, side: str = "left"):
    """``(ids, attention_mask)`` long tensors of shape ``(len(rows), longest)``. ``side="left"`` (decoders:
    the last position is the last real token of every row) or ``"right"`` (encoders)."""
    import torch

    if side not in ("left", "right"):
        raise ValueError(f"Expected argument `side` to be 'left' or 'right', but got {side!r}.")
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, row in enumerate(rows):
        if not len(row):
            continue
        span = slice(width - len(row), width) if side == "left" else slice(0, len(row))
        ids[k, span] = torch.as_tensor(list(row), dtype=torch.long)
        mask[k, span] = 1
    return ids, mask


def progress_batches(batches: list[list[int]], total: int, enabled: bool, desc: str) -> Iterator[list[int]]:
    """Yield batches of indices while a bar counts their items (shown for more than one batch)."""
    if not enabled or len(batches) <= 1:
        yield from batches
        return
    from mmjudge.progress import progress_bar

    with progress_bar(total=total, desc=desc, unit="req") as bar:
        for batch in batches:
            yield batch
            bar.update(len(batch))
