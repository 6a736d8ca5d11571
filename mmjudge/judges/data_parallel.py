"""Data parallelism as a wrapper: under ``torchrun`` / ``accelerate launch`` each judge call's requests are
split between the processes, and every process gets every answer back, in input order.

How the split works, and why it is safe:

* the wrapped judge's own batch plan (which keeps the requests about one image together) is flattened and
  cut into contiguous, uneven shares (:func:`mmjudge.distributed.my_share`), so no process computes a
  request twice and a process may get none;
* each process answers its share with the wrapped judge and ``(index, answer)`` pairs are gathered in
  every process; the indices put the answers back in input order, and a check that every index appears
  exactly once turns any drop or duplicate into an error instead of a silent shift;
* a persistent cache wrapped around this judge (:mod:`mmjudge.judges.cached`) decides in the main process
  which requests are missing and broadcasts it, so all processes split the same list.

Inside :func:`mmjudge.distributed.own_items` (a streaming run that gives each process its own items) and
outside a launcher, calls pass straight through.

>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> from mmjudge.judges.dummy import DummyJudge
>>> judge = DataParallelJudge(DummyJudge())
>>> len(judge.rate([RatingRequest([Turn("user", "Rate.")])], progress=False)), judge.calls  # one process
(1, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mmjudge import distributed
from mmjudge.judges.base import BatchCallback, Judge, JudgeWrapper, find_layer


def parallel(judge: Judge) -> Judge:
    """``judge`` wrapped in :class:`DataParallelJudge` under a launcher (once: a judge that already
    splits its calls is returned as it is); ``judge`` itself outside a launcher."""
    if not distributed.is_distributed() or find_layer(judge, DataParallelJudge) is not None:
        return judge
    return DataParallelJudge(judge)


class DataParallelJudge(JudgeWrapper):
    """Splits each call of the wrapped judge between the launched processes (see the module)."""

    def rate(self, requests, progress: bool = True, on_batch: BatchCallback | None = None):
        return self._split(requests, self.inner.rate, progress, on_batch)

    def generate(self, requests, progress: bool = True, on_batch: BatchCallback | None = None):
        return self._split(requests, self.inner.generate, progress, on_batch)

    def generate_scored(self, requests, progress: bool = True, on_batch: BatchCallback | None = None):
        return self._split(requests, self.inner.generate_scored, progress, on_batch)

    def _split(self, requests: Sequence, run: Callable, progress: bool, on_batch: BatchCallback | None) -> list:
        if not distributed.shares_requests():
            return run(requests, progress=progress, on_batch=on_batch)
        order = [i for batch in self.inner.plan(requests) for i in batch] if requests else []
        mine = distributed.my_share(order)

        def local_on_batch(batch: Sequence[int], answers: list) -> None:
            if on_batch is not None:
                on_batch([mine[j] for j in batch], answers)

        answers = run([requests[i] for i in mine], progress=progress and distributed.is_main(), on_batch=local_on_batch)
        return distributed.gather_indexed(list(zip(mine, answers)), len(requests))
