"""Data parallelism through accelerate: every judge call splits its requests across the processes that
``torchrun`` or ``accelerate launch`` started, and every process gets every answer back, in input order.

Nothing here starts processes: a user launches the unchanged command or script under ``torchrun
--nproc_per_node N`` / ``accelerate launch --num_processes N`` (multi-node: ``--num_machines``; see
docs/scaling.md). The split happens at the judge level (:meth:`mmjudge.judges.base.Judge._run`), so every
metric and every front door benefits, and the metric code after the judge call runs identically in all
processes (which is what makes the output identical to a single process). Only the main process should
print or write files (:func:`is_main`).

How the split works, and why it is safe:

* the judge's own batch plan (which keeps the requests about one image together) is flattened and cut
  into contiguous, uneven shares with ``PartialState.split_between_processes`` without padding, so no
  process computes a request twice and a process may get none;
* each process returns ``(index, answer)`` pairs and ``gather_object`` (which wants lists) concatenates
  them on every process; the indices put the answers back in input order, and a check that every index
  appears exactly once turns any drop or duplicate into an error instead of a silent shift;
* the SQLite cache (:mod:`mmjudge.cache`) is one file in WAL mode that all processes write their own
  batches into; which requests are missing is decided by the main process and broadcast, so all
  processes agree on the split even while others are writing.

Outside a launcher (``WORLD_SIZE`` unset or 1) nothing here imports accelerate or torch.distributed.

>>> is_distributed(), is_main()
(False, True)
"""

from __future__ import annotations

import atexit
import os
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence


def world_size() -> int:
    """Processes started by the launcher (``WORLD_SIZE``), 1 outside a launcher."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def is_distributed() -> bool:
    """True under ``torchrun`` / ``accelerate launch`` with more than one process."""
    return world_size() > 1


@lru_cache(maxsize=1)
def state() -> Any:
    """The accelerate ``PartialState`` (initialises the process group once). On a machine without CUDA,
    ``cpu=True`` selects the gloo backend (a plain ``PartialState()`` there would not split the work)."""
    import torch
    from accelerate import PartialState

    ours = not (torch.distributed.is_available() and torch.distributed.is_initialized())
    partial = PartialState(cpu=not torch.cuda.is_available())
    if ours and torch.distributed.is_initialized():
        # The process group is ours: take it down before the interpreter does. Left to interpreter teardown,
        # a process sometimes aborted after its work was done ("terminate called without an active
        # exception", exit code -6: a native thread destroyed while still running), failing the launch.
        atexit.register(_destroy_process_group)
    return partial


def _destroy_process_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def is_main() -> bool:
    """True in the process that prints and writes files (rank 0), and outside a launcher."""
    if not is_distributed():
        return True
    return int(os.environ.get("RANK", "0")) == 0


def broadcast_from_main(value: Any) -> Any:
    """The main process's ``value`` in every process (a picklable object)."""
    if not is_distributed():
        return value
    from accelerate.utils import broadcast_object_list

    state()
    return broadcast_object_list([value], from_process=0)[0]


def gather_indexed(pairs: list, total: int) -> list:
    """Every process's ``(index, answer)`` pairs, gathered into one list of ``total`` answers in index
    order, in every process. Raises if an index is missing or appears twice."""
    from accelerate.utils import gather_object

    state()
    gathered = gather_object(list(pairs))
    out: list = [None] * total
    seen = [False] * total
    for index, answer in gathered:
        if seen[index]:
            raise RuntimeError(f"Request #{index} was answered by two processes.")
        seen[index] = True
        out[index] = answer
    missing = [i for i, s in enumerate(seen) if not s]
    if missing:
        raise RuntimeError(f"{len(missing)} requests were answered by no process (first: #{missing[0]}).")
    return out


def run_split(judge: Any, requests: Sequence, batch_fn: Callable, progress: bool, on_batch: Optional[Callable],
              label: str, prepare: Optional[Callable] = None) -> list:  # fmt: skip
    """Answer this process's share of ``requests`` with ``judge._run_local`` and gather all answers."""
    order = [i for batch in judge._plan(requests) for i in batch] if requests else []
    with state().split_between_processes(order, apply_padding=False) as share:
        mine = list(share)

    def local_on_batch(batch: Sequence[int], answers: list) -> None:
        if on_batch is not None:
            on_batch([mine[j] for j in batch], answers)

    answers = judge._run_local([requests[i] for i in mine], batch_fn, progress and is_main(),
                               local_on_batch, label, prepare)  # fmt: skip
    return gather_indexed(list(zip(mine, answers)), len(requests))
