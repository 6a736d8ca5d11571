"""The persistent judge cache: a :class:`~mmjudge.judges.base.JudgeWrapper` that answers each request once
per cache file (:mod:`mmjudge.store`).

Keys are sha256 hashes of (judge identity: backend, model id + revision, settings that change outputs;
request kind; full prompt; image pixels; choices / decoding settings). Answers are stored batch by batch
as the judge produces them, so an interrupted run resumes where it stopped. Only answers the judge
actually gave are stored: invalid input is rejected before any judge call, and a request that failed
(``RatingResult.error``) is never stored, so a re-run asks it again.

>>> import tempfile, os
>>> from mmjudge.judges import load_judge
>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> inner = load_judge("dummy")
>>> judge = CachedJudge(inner, os.path.join(tempfile.mkdtemp(), "cache.sqlite"))
>>> req = [RatingRequest(turns=[Turn("user", "Rate: a cat.")])]
>>> first = judge.rate(req, progress=False); again = judge.rate(req, progress=False)
>>> inner.calls, first[0].raw == again[0].raw, judge.hits
(1, True, 1)
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mmjudge import distributed
from mmjudge.judges.base import BatchCallback, Judge, JudgeWrapper, innermost
from mmjudge.judges.requests import (
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
    request_key,
)
from mmjudge.paths import default_cache_path
from mmjudge.store import ResultStore, cached_map


class CachedJudge(JudgeWrapper):
    """Wraps ``judge`` so each answer is computed once per cache file.

    Args:
        judge: any :class:`~mmjudge.judges.base.Judge`.
        path: the SQLite file; default :func:`mmjudge.paths.default_cache_path`.
    """

    def __init__(self, judge: Judge, path: str | os.PathLike | None = None):
        super().__init__(judge)
        self.store = ResultStore(path or default_cache_path())
        self.hits = 0
        self._stepped_aside = False
        # A backend that keeps records of its own in the cache file (the openai judge's Batch API batches).
        backend = innermost(judge)
        attach = getattr(backend, "attach_store", None)
        if callable(attach):
            attach(self.store)

    def rate(
        self, requests: Sequence[RatingRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[RatingResult]:
        return self._cached(
            requests, "rate", RatingResult.from_json, RatingResult.to_json, self.inner.rate, progress, on_batch
        )

    def generate(
        self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[str]:
        return self._cached(requests, "generate", str, str, self.inner.generate, progress, on_batch)

    def generate_scored(
        self, requests: Sequence[ScoredGenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[ScoredText]:
        return self._cached(
            requests,
            "generate_scored",
            ScoredText.from_json,
            ScoredText.to_json,
            self.inner.generate_scored,
            progress,
            on_batch,
        )

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """While the block runs, requests go straight to the judge inside (nothing read from or written to the
        store; the backend sets aside what it keeps there too); afterwards the cache is in use again.

        >>> import os, tempfile
        >>> from mmjudge.judges import load_judge
        >>> from mmjudge.judges.requests import RatingRequest, Turn
        >>> judge = CachedJudge(load_judge("dummy"), os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        >>> ask = [RatingRequest([Turn("user", "Rate: a dog.")])]
        >>> _ = judge.rate(ask, progress=False)
        >>> with judge.uncached():
        ...     _ = judge.rate(ask, progress=False)
        >>> _ = judge.rate(ask, progress=False)
        >>> judge.calls, judge.hits   # asked twice (first time, stepped aside), answered once from the store
        (2, 1)
        """
        was = self._stepped_aside
        self._stepped_aside = True
        try:
            with self.inner.uncached():
                yield
        finally:
            self._stepped_aside = was

    def _cached(
        self,
        requests: Sequence,
        kind: str,
        decode: Callable,
        encode: Callable,
        compute: Callable,
        progress: bool,
        on_batch: BatchCallback | None,
    ) -> list:
        if self._stepped_aside:
            return compute(list(requests), progress=progress, on_batch=on_batch)
        identity = self.inner.identity()
        keys = [request_key(identity, kind, r) for r in requests]

        def lookup(unique: list[str]) -> dict[str, Any]:
            if distributed.shares_requests():
                # All processes must agree on what is missing (the data-parallel judge inside splits exactly
                # that between them), even while another process is already writing this call's answers:
                # the main one reads and decides, the others receive its answer.
                stored = distributed.broadcast_from_main(self.store.get_many(unique) if distributed.is_main() else None)
            else:
                stored = self.store.get_many(unique)
            return {k: decode(v) for k, v in stored.items()}

        def save(rows: list[tuple[str, Any]]) -> None:
            kept = []
            for key, answer in rows:
                if isinstance(answer, RatingResult | ScoredText) and answer.error is not None:
                    continue  # a failed request is asked again next time
                if isinstance(answer, RatingResult) and not all(math.isfinite(x) for x in answer.raw):
                    raise RuntimeError(f"The judge returned non-finite probabilities ({answer.raw}).")
                kept.append((key, encode(answer)))
            self.store.put_many(kept)

        def run(todo: list[int], keep: Callable[[Sequence[int], list], None]) -> list:
            def stored(batch: Sequence[int], answers: list) -> None:
                keep(batch, answers)
                if on_batch is not None:
                    on_batch([todo[j] for j in batch], answers)

            return compute([requests[i] for i in todo], progress=progress, on_batch=stored)

        out, hits = cached_map(keys, run, lookup, save)
        self.hits += hits
        return out
