"""A planning pass: a run of a metric in which its judge sends nothing. Every request the cache cannot answer
is noted — counted and priced (:class:`~mmjudge.judges.openai.cost.Estimate`), and in batch mode written as a
Batch API line to a spool file — and answered with a placeholder failure; what the cache holds is answered
from it, so the metric goes on as it would. Front doors run it before the real run: ``--dry-run`` prints the
estimate, ``--max-cost`` checks it, and batch mode submits every noted request at once (one batch round for
the whole input, instead of one per chunk), then the real run finds them all in the cache.

Requests that depend on earlier answers (an explanation asked after a rating) are noted with what the cache
holds at planning time; any the plan could not foresee are sent by the real run (in batch mode, in a batch).

>>> from mmjudge.judges import load_judge
>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> class Metric: judge = load_judge("dummy")
>>> metric = Metric()
>>> plan = plan_run(metric, lambda: metric.judge.rate([RatingRequest([Turn("user", "Rate: a cat.")])]))
>>> plan.estimate.requests, plan.estimate.cached, metric.judge.calls
(1, 0, 0)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.judges.base import Judge, JudgeWrapper, find_layer, innermost
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.openai.cost import Estimate
from mmjudge.judges.requests import (
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
    request_key,
)

PLACEHOLDER = "not sent: a planning pass (dry run, cost check or batch planning)"


class PlanningJudge(JudgeWrapper):
    """Stands in for a metric's judge during a planning pass: answers what the cache holds, notes every other
    request (once per cache key) and answers it with a placeholder failure, sending nothing."""

    def __init__(self, judge: Judge, spool: Any = None):
        super().__init__(judge)
        self.cache = find_layer(judge, CachedJudge)
        self.backend_judge = innermost(judge)
        self.priced = getattr(self.backend_judge, "backend", "") == "openai"
        self.estimate = Estimate()
        self.spool = spool  # batch mode: where the Batch API lines go
        self._seen: set[bytes] = set()  # 16 bytes per distinct request

    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        keys, stored = self._plan(requests, "rate")
        return [
            RatingResult.from_json(stored[k])
            if k in stored
            else RatingResult([0.0] * len(r.choices), error=PLACEHOLDER)
            for k, r in zip(keys, requests)
        ]

    def generate(self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch=None) -> list[str]:
        keys, stored = self._plan(requests, "generate")
        return [str(stored.get(k, "")) for k in keys]

    def generate_scored(
        self, requests: Sequence[ScoredGenerationRequest], progress: bool = True, on_batch=None
    ) -> list[ScoredText]:
        keys, stored = self._plan(requests, "generate_scored")
        return [ScoredText.from_json(stored[k]) if k in stored else ScoredText("", [], error=PLACEHOLDER) for k in keys]

    def _plan(self, requests: Sequence, kind: str) -> tuple[list[str], dict[str, Any]]:
        """Note what the cache does not hold; returns each request's cache key and what the cache holds."""
        identity = self.inner.identity()
        keys = [request_key(identity, kind, r) for r in requests]
        stored = self.cache.store.get_many(keys) if self.cache is not None else {}
        runner = self.backend_judge._batches() if self.spool is not None else None
        for key, request in zip(keys, requests):
            if key in stored:
                self.estimate.cached += 1
                continue
            digest = bytes.fromhex(key[:32])
            if digest in self._seen:
                continue
            self._seen.add(digest)
            if self.priced:
                self.backend_judge.estimate([request], into=self.estimate)
            else:
                self.estimate.requests += 1
            if runner is not None and kind != "generate_scored":  # scored generations are sent synchronously
                entry = runner.rating_entry(key, request) if kind == "rate" else runner.generation_entry(key, request)
                record = {"key": entry.key, "meta": entry.meta, "line": json.loads(entry.line)}
                self.spool.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
        return keys, stored


@dataclass
class Plan:
    """What a planning pass found: the estimate, and in batch mode the spool of Batch API lines."""

    judge: Any  # the backend (an OpenAIJudge, or another judge: then only the request count)
    estimate: Estimate
    spool: Any = None

    def entries(self) -> Iterator[Any]:
        """The spooled Batch API entries, read back one at a time."""
        from mmjudge.judges.openai.batch import Entry

        if self.spool is None:
            return
        self.spool.seek(0)
        for raw in self.spool:
            record = json.loads(raw)
            yield Entry(record["key"], json.dumps(record["line"], separators=(",", ":")).encode(), record["meta"])

    def submit(self, progress: bool = True) -> None:
        """Batch mode: send every noted request through the Batch API and wait; the answers fill the cache."""
        if self.estimate.requests:
            self.judge._batches().run(self.entries(), wanted=None, progress=progress)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def lines(self) -> list[str]:
        """The estimate in a few lines: requests, tokens, and the price in both modes."""
        e, judge = self.estimate, self.judge
        if getattr(judge, "backend", "") != "openai":
            return [f"{e.requests} requests the cache does not hold ({e.cached} it does); a local judge: no price."]
        lines = [
            f"{e.requests} requests to {judge.describe()} the cache does not hold ({e.cached} it does): about "
            f"{e.prompt_tokens:,} prompt tokens ({e.image_tokens:,} of them for images) and at most "
            f"{e.completion_tokens:,} completion tokens"
        ]
        price = judge.price()
        if price is None:
            lines.append(f"no list price for {judge.model_name!r} in {judge.prices.path}: pass price_table=FILE")
        else:
            sync, batch = e.cost(price), e.cost(price, batch=True)
            lines.append(
                f"estimated price: ${sync:.4f} synchronous, ${batch:.4f} with mode=batch "
                f"({judge.prices.describe()}; source: {judge.prices.source.split(' ;')[0]})"
            )
        return lines


def plan_run(metric: Any, run: Callable[[], Any], batch: bool = False) -> Plan:
    """Run ``run()`` (which scores with ``metric``) with ``metric.judge`` replaced by a :class:`PlanningJudge`:
    nothing is sent and nothing is cached; the metric's own warnings about the placeholder failures are
    silenced. ``batch``: spool the Batch API lines too."""
    original = metric.judge
    spool = tempfile.TemporaryFile(dir=os.environ.get("MMJUDGE_TMP")) if batch else None  # noqa: SIM115
    planner = PlanningJudge(original, spool)
    metric.judge = planner
    quiet = logging.getLogger("mmjudge")
    level = quiet.level
    try:
        quiet.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.suppress(StopIteration):
            warnings.simplefilter("ignore")
            run()
    finally:
        metric.judge = original
        quiet.setLevel(level)
    return Plan(planner.backend_judge, planner.estimate, spool)
