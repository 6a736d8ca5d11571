"""The batching helper of local backends: plan batches, prepare the next one while this one runs, count
progress, hand each finished batch on.

A local backend subclasses :class:`BatchedJudge` and implements :meth:`~BatchedJudge._rate_batch` (and
:meth:`~BatchedJudge._generate_batch` when it generates); it may override :meth:`~BatchedJudge.plan` (how
requests are grouped) and :meth:`~BatchedJudge._prepare_rating` (CPU-side work of one batch: rendering,
tokenising, image preprocessing), which runs in a background thread one batch ahead when ``prefetch`` is on.
Remote backends (``openai``) implement the :class:`~mmjudge.judges.base.Judge` protocol directly.

>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> reqs = [RatingRequest([Turn("user", t)], group=g) for t, g in (("long text", "b"), ("x", "a"), ("yy", "a"))]
>>> plan_batches(reqs, batch_size=2)
[[1, 2], [0]]
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mmjudge.errors import check_batch_size
from mmjudge.judges.base import BatchCallback, Judge, JudgeCapabilityError
from mmjudge.judges.requests import GenerationRequest, RatingRequest, RatingResult, ScoredGenerationRequest, ScoredText
from mmjudge.progress import optional_bar


def plan_batches(requests: Sequence[RatingRequest], batch_size: int) -> list[list[int]]:
    """Indices of ``requests`` in batches of at most ``batch_size``: grouped by (group, has image),
    then sorted by length so a batch pads little. Deterministic for the same input."""
    check_batch_size(batch_size)
    order = sorted(range(len(requests)), key=lambda i: (*_batch_kind(requests[i]), requests[i].length(), i))
    batches: list[list[int]] = []
    for i in order:
        same_kind = batches and _batch_kind(requests[batches[-1][0]]) == _batch_kind(requests[i])
        if same_kind and len(batches[-1]) < batch_size:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def _batch_kind(request: RatingRequest) -> tuple:
    # A batch never mixes text-only and image requests: processors want all or none with images.
    return (request.group, request.image is None)


class BatchedJudge(Judge):
    """Base of local backends. Attributes a subclass sets: ``batch_size`` (requests per batch) and
    ``prefetch`` (prepare batch k+1 in a background thread while batch k runs)."""

    batch_size: int = 8
    prefetch: bool = False

    def plan(self, requests: Sequence[RatingRequest]) -> list[list[int]]:
        """Batches of request indices (a backend may group differently, e.g. to share image prefixes)."""
        return plan_batches(requests, self.batch_size)

    def rate(
        self, requests: Sequence[RatingRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[RatingResult]:
        return self._run(requests, self._prepare_rating, self._rate_batch, progress, on_batch, "rating")

    def generate(
        self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[str]:
        if not self.capabilities.can_generate:
            raise JudgeCapabilityError(f"The {self.backend!r} judge cannot generate text.")
        return self._run(requests, list, self._generate_batch, progress, on_batch, "generating")

    def generate_scored(
        self, requests: Sequence[ScoredGenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[ScoredText]:
        if not self.capabilities.scores_generation:
            return super().generate_scored(requests, progress=progress, on_batch=on_batch)
        return self._run(requests, list, self._generate_scored_batch, progress, on_batch, "generating")

    def _generate_scored_batch(self, requests: Sequence[ScoredGenerationRequest]) -> list[ScoredText]:
        raise JudgeCapabilityError(f"The {self.backend!r} judge cannot list the probabilities of generated tokens.")

    def _prepare_rating(self, requests: Sequence[RatingRequest]) -> Any:
        """CPU-side work for one batch; what it returns is what :meth:`_rate_batch` receives."""
        return list(requests)

    @abstractmethod
    def _rate_batch(self, batch: Any) -> list[RatingResult]:
        """Rate one prepared batch (by default the list of its requests), answers in its order."""

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        raise JudgeCapabilityError(f"The {self.backend!r} judge cannot generate text.")

    def _waited(self, seconds: float) -> None:
        """Called with the seconds the answering thread waited for a batch still being prepared (the model sat
        idle); a backend may count them."""

    def _run(
        self,
        requests: Sequence,
        prepare: Callable,
        answer: Callable,
        progress: bool,
        on_batch: BatchCallback | None,
        label: str,
    ) -> list:
        out: list = [None] * len(requests)
        batches = self.plan(requests) if requests else []
        desc = f"{self.backend} judge {label}"
        with optional_bar(progress and len(batches) > 1, total=len(requests), desc=desc, unit="req") as bar:
            for batch, answers in _answered(batches, requests, prepare, answer, self.prefetch, self._waited):
                if len(answers) != len(batch):
                    raise RuntimeError(
                        f"{type(self).__name__} returned {len(answers)} answers for {len(batch)} requests."
                    )
                # Counted once answered: with prefetch the next batch is already being prepared.
                deliver_answers(out, batch, answers, bar, on_batch)
        return out


def deliver_answers(out: list, batch: list[int], answers: list, bar: Any, on_batch: BatchCallback | None) -> None:
    """One batch's answers put in their places in ``out``, counted on the progress ``bar`` and handed to
    ``on_batch`` (the cache), as every batched backend does once a batch is answered."""
    for i, value in zip(batch, answers):
        out[i] = value
    if bar is not None:
        bar.update(len(batch))
    if on_batch is not None:
        on_batch(batch, answers)


def _answered(
    batches: list[list[int]],
    requests: Sequence,
    prepare: Callable,
    answer: Callable,
    prefetch: bool,
    waited: Callable[[float], None] = lambda seconds: None,
) -> Iterator[tuple[list[int], list]]:
    """Yield ``(batch, answers)``; with ``prefetch``, batch k+1 is prepared in a background thread while
    batch k is answered, and ``waited(seconds)`` hears how long each answer waited for its preparation."""
    if not prefetch:
        for batch in batches:
            yield batch, answer(prepare([requests[i] for i in batch]))
        return
    import time
    from concurrent.futures import ThreadPoolExecutor

    try:  # a label for benchmarks' --profile: the model idle, waiting for preparation
        from torch.profiler import record_function
    except ImportError:  # a backend without torch
        from contextlib import nullcontext as record_function

    def ready(future: Any) -> Any:
        started = time.perf_counter()
        with record_function("mmjudge.judge.wait_for_preparation"):
            prepared = future.result()
        waited(time.perf_counter() - started)
        return prepared

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mmjudge-prepare") as pool:
        pending = None
        for batch in batches:
            future = pool.submit(prepare, [requests[i] for i in batch])
            if pending is not None:
                yield pending[0], answer(ready(pending[1]))
            pending = (batch, future)
        if pending is not None:
            yield pending[0], answer(ready(pending[1]))
