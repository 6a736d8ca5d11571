"""Processes started by ``torchrun`` / ``accelerate launch``: who they are, and how they share work.

Nothing here starts processes: a user launches the unchanged command or script under ``torchrun
--nproc_per_node N`` / ``accelerate launch --num_processes N`` (multi-node: ``--nnodes`` /
``--num_machines``; see docs/scaling.md). Two ways of sharing work build on this module:

* **each process its own items** (:func:`own_items`): a streaming run gives every process its shard of
  the input (:mod:`mmjudge.stream`); inside that block judges answer only their own process's requests;
* **each judge call split** (:class:`mmjudge.judges.data_parallel.DataParallelJudge`): every process
  holds the same items (a script calling ``metric.compute(...)`` everywhere) and each judge call's
  requests are cut into contiguous shares (:func:`my_share`); the answers are gathered back in input
  order in every process (:func:`gather_indexed`), so the code after the call runs identically in all
  of them. Only the main process should print or write files (:func:`is_main`).

Outside a launcher (``WORLD_SIZE`` unset or 1) nothing here imports accelerate or torch.distributed.

>>> is_distributed(), is_main(), shares_requests()
(False, True, False)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any


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
    if ours and torch.distributed.is_available():
        # torch.distributed.nn.functional writes the default group into its functions' default arguments when
        # it is first imported. Imported after the group exists (loading a transformers model imports it),
        # it holds the group past destroy_process_group: the group's worker threads then run into interpreter
        # teardown, where one freeing a finished all_gather waits for the GIL and aborts the process
        # ("terminate called without an active exception", exit -6) — 9 launches in 100 here. Imported first,
        # those defaults hold None.
        import torch.distributed.nn.functional
    partial = PartialState(cpu=not torch.cuda.is_available())
    if ours and torch.distributed.is_initialized():
        # The process group is ours: take it down (joining its threads) before the interpreter goes.
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


def rank() -> int:
    """This process's rank (``RANK``), 0 outside a launcher."""
    return int(os.environ.get("RANK", "0")) if is_distributed() else 0


_OWN_ITEMS = threading.local()


@contextlib.contextmanager
def own_items() -> Iterator[None]:
    """Inside this block every process works on items of its own: judge calls are not split between
    processes (:func:`shares_requests` is False) and the cache is read by each process for itself."""
    before = getattr(_OWN_ITEMS, "on", False)
    _OWN_ITEMS.on = True
    try:
        yield
    finally:
        _OWN_ITEMS.on = before


def shares_requests() -> bool:
    """Whether a judge call is split between the launched processes (all of them make the same call)."""
    return is_distributed() and not getattr(_OWN_ITEMS, "on", False)


def my_share(order: Sequence[int]) -> list[int]:
    """This process's contiguous share of ``order`` (uneven, no padding: a process may get none).

    >>> my_share([4, 5, 6])  # outside a launcher: everything
    [4, 5, 6]
    """
    if not is_distributed():
        return list(order)
    with state().split_between_processes(list(order), apply_padding=False) as share:
        return list(share)


def barrier() -> None:
    """Wait until every process reaches this point (nothing outside a launcher)."""
    if is_distributed():
        state().wait_for_everyone()
