"""Judges behind an OpenAI-compatible chat-completions server: OpenAI itself (``model="openai:gpt-4o"``),
Azure OpenAI (``azure_endpoint=``), vLLM, SGLang, llama.cpp's server, or ``mmjudge serve`` (any
``base_url``; several for a fleet). Requests go through the official ``openai`` client
(:mod:`~mmjudge.judges.openai.transport`); what they hold is :mod:`~mmjudge.judges.openai.format`'s; what the
fleet can do is settled when the judge is built (:mod:`~mmjudge.judges.openai.fleet`); answers are read by
:mod:`~mmjudge.judges.openai.reading`; ``mode="batch"`` sends through the Batch API at half the price
(:mod:`~mmjudge.judges.openai.batch`); usage, prices and estimates are :mod:`~mmjudge.judges.openai.cost`'s.

``prefill`` — how the rating position is reached: ``"continue"`` (the server continues the forced answer
prefix: vLLM, SGLang, ``mmjudge serve``), ``"none"`` (the first generated rating is read: OpenAI,
llama.cpp), ``"auto"`` (from the server's kind). ``mass`` — what a rating's probability is: ``"exact"``
(the server lists the rating tokens' full-vocabulary log-probabilities: vLLM's ``logprob_token_ids``,
``mmjudge serve``), ``"top-k"`` (read from ``top_logprobs``: a lower bound), ``"auto"``. Both are part of
cache keys and signatures; the details are in ``docs/api_judges.md``.

A request that still fails after its retries is a result with ``error`` set and no probabilities, never a
number, and is not cached. A server never reached, a rejected key, a wrong model or URL, a model refusing
log-probabilities are errors of the run (one line from the CLI). The API key comes from the environment and
is never written to cache keys, signatures, logs or error messages.

Given a model and a prefill mode, building a judge asks nothing of its server (here, none is running):

>>> judge = OpenAIJudge(model="Qwen/Qwen2.5-VL-7B-Instruct", base_url="http://127.0.0.1:9/v1", prefill="continue")
>>> judge.capabilities.teacher_forcing, judge.capabilities.full_distribution, judge.mass_mode
(True, False, 'top-k')
>>> judge.identity()["endpoint"], judge.identity()["top_logprobs"], judge.max_concurrency
('127.0.0.1:9/v1', 20, 'auto')
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from mmjudge.judges.base import Capabilities
from mmjudge.judges.batched import BatchedJudge, deliver_answers
from mmjudge.judges.openai import fleet
from mmjudge.judges.openai.cost import CostMixin, Usage, load_prices
from mmjudge.judges.openai.format import (
    ChatCall,
    answer_logprobs,
    rating_call,
    split_fields,
)
from mmjudge.judges.openai.generation import GenerationMixin
from mmjudge.judges.openai.reading import listed_choice_tokens, rating_position, rating_result, read_rating
from mmjudge.judges.openai.transport import APIError, Server, build_transport
from mmjudge.judges.requests import RatingRequest, RatingResult
from mmjudge.progress import optional_bar

logger = logging.getLogger(__name__)


class OpenAIJudge(GenerationMixin, CostMixin, BatchedJudge):
    """A judge served over OpenAI-compatible chat completions.

    Args:
        model: ``"openai:NAME"`` or ``"NAME"`` (Azure: the deployment); with a ``base_url`` and no model, the
            server's only model (``GET /v1/models``).
        base_url: the server's ``…/v1`` URL (default OpenAI's); several (a list, or comma-separated) for a
            fleet serving one model: requests go round robin, each retry to the next server.
        prefill: ``"auto"``, ``"continue"`` or ``"none"`` (see the module docs).
        mass: ``"auto"``, ``"exact"`` or ``"top-k"`` (see the module docs).
        top_logprobs: tokens listed per position with ``mass="top-k"`` (OpenAI: at most 20).
        max_tokens: tokens asked for when the rating must be found in free generation (``prefill="none"``).
        max_concurrency: requests in flight at once in this process (over the whole fleet); ``"auto"``
            (default): 64 per vLLM or SGLang server, else 8 (OpenAI's pace then follows its rate-limit headers).
        max_retries: retries of one request on 408/409/429/5xx, timeouts and malformed answers.
        timeout: seconds per HTTP request.
        api_key_env: the environment variable holding the API key (default ``OPENAI_API_KEY``; Azure:
            ``AZURE_OPENAI_API_KEY``, or the client's own ``AZURE_OPENAI_AD_TOKEN``).
        retry_sleep_scale: multiplies every wait between retries (tests set it small).
        mode: ``"sync"`` (default) or ``"batch"``: uncached requests go through the Batch API (half the
            price, answers within 24 h; needs the cache, which keeps the batch ids).
        poll_interval: seconds between two looks at a pending batch (``mode="batch"``).
        azure_endpoint, api_version: Azure OpenAI (else the client's ``AZURE_OPENAI_ENDPOINT`` and
            ``OPENAI_API_VERSION``).
        price_table: a TOML price table replacing the shipped one (``prices.toml``).
        max_cost: US$ this judge may spend; a call whose estimate would pass it sends nothing (``BudgetError``).
    """

    backend = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | Sequence[str] | None = None,
        prefill: str = "auto",
        mass: str = "auto",
        top_logprobs: int = 20,
        max_tokens: int = 16,
        max_concurrency: int | str | None = "auto",
        batch_size: int | None = None,
        max_retries: int = 5,
        timeout: float = 120.0,
        api_key_env: str | None = None,
        retry_sleep_scale: float = 1.0,
        mode: str = "sync",
        poll_interval: float = 60.0,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        price_table: str | None = None,
        max_cost: float | None = None,
    ):
        fleet.check_options(prefill, mass, top_logprobs, max_tokens, max_concurrency, max_retries, mode, poll_interval)
        self.model_name = str(model or "").removeprefix("openai:")
        self.prefill, self.mass, self.mode = prefill, mass, mode
        self.top_logprobs, self.max_tokens = int(top_logprobs), int(max_tokens)
        self.max_concurrency: int | str = "auto" if max_concurrency in (None, "auto") else int(max_concurrency)
        self._batch_size = int(batch_size) if batch_size else None
        self.timeout, self.poll_interval = float(timeout), float(poll_interval)
        self.prices = load_prices(price_table)
        self.max_cost = None if max_cost is None else float(max_cost)
        self.usage = Usage()
        self.store: Any = None  # the cache's store, given by CachedJudge (batch mode keeps its batch ids there)
        self._batch_runner: Any = None
        self._answered = False  # a readable rating answer has come back
        self.transport = build_transport(
            base_url, azure_endpoint, api_version, api_key_env, self.timeout, int(max_retries),
            float(retry_sleep_scale), self.describe, self.usage,
        )  # fmt: skip
        self.endpoint = ",".join(sorted(s.endpoint for s in self.servers))
        self.is_openai = all(s.is_openai for s in self.servers)
        self.tokens = fleet.ChoiceTokens(self.transport, lambda: self.model_name)
        # Settled here, once: capabilities are a value, never an HTTP call when read. With `model` and `prefill`
        # given nothing is asked of the server, so a fully cached run replays without it: `mass="auto"` is then
        # the read every server supports, top-k, unless `mass` is given.
        if self.model_name and prefill != "auto" and mass == "auto":
            mass = "top-k"
        need_kind = (prefill == "auto" or mass == "auto") and not self.is_openai
        self.model_name = fleet.identify_fleet(self.transport, self.model_name, need_kind)
        self.prefill_mode = prefill if prefill != "auto" else self._settle_prefill()
        self.mass_mode = mass if mass != "auto" else self._settle_mass()
        self.capabilities = Capabilities(
            teacher_forcing=self.prefill_mode == "continue",
            full_distribution=False,
            reads_prefix_steps=False,
            can_generate=True,
            exact_choices=self.mass_mode == "exact",
            scores_generation=True,
        )
        kinds = "; ".join(s.info.describe() for s in self.servers if s.info) or "not identified (given)"
        logger.info("%s: %s -> prefill=%s, mass=%s", self.describe(), kinds, self.prefill_mode, self.mass_mode)

    # ---------------------------------------------------------------------------------- who it is
    @property
    def servers(self) -> list[Server]:
        return self.transport.servers

    @property
    def sleep(self):
        """How the judge waits between retries (replaceable in tests)."""
        return self.transport.sleep

    @sleep.setter
    def sleep(self, value) -> None:
        self.transport.sleep = value

    @property
    def batch_size(self) -> int:  # type: ignore[override]
        """Requests per batch handed to the cache as they finish (4 × the requests in flight)."""
        return self._batch_size or 4 * self._concurrency()

    def identity(self) -> dict:
        # Never the API key, nor which server of a fleet answered, nor the mode (a batch answer is the synchronous
        # one, at half the price). The endpoint keeps two servers' answers apart; the prefill and mass modes change
        # what is read; top_logprobs only matters for a top-k read, max_tokens only when the rating is searched for.
        ident = {
            "backend": self.backend,
            "endpoint": self.endpoint,
            "model": self.model_name,
            "prefill": self.prefill_mode,
        }
        if self.mass_mode == "exact":
            ident["mass"] = "exact"
        else:
            ident["top_logprobs"] = self.top_logprobs
        if self.prefill_mode == "none":
            ident["max_tokens"] = self.max_tokens
        return ident

    def signature_fields(self) -> dict[str, Any]:
        # Some servers (llama.cpp without --model_alias) name the model by its local path: keep the file name.
        name = os.path.basename(self.model_name) if os.path.isabs(self.model_name) else self.model_name
        fields: dict[str, Any] = {"judge": f"{self.backend}:{name}", "prefill": self.prefill_mode}
        if self.mass_mode != "exact":  # an exact read does not depend on how many tokens a top-k list holds
            fields["top_logprobs"] = self.top_logprobs
        if self.mode != "sync":
            fields["mode"] = self.mode
        return fields

    def describe(self) -> str:
        return f"{self.backend}:{getattr(self, 'model_name', '') or '?'}"

    # ------------------------------------------------------------------------------ what serves it
    def _settle_prefill(self) -> str:
        """``continue`` when every server of the fleet continues an assistant message, else ``none`` (a fleet
        reads every rating one way). Only a server of no known kind is asked (the counting probe)."""
        every = fleet.every_server(
            self.transport, "continues", lambda s: fleet.probe_prefill(self.transport, s, self.model_name) == "continue"
        )
        return "continue" if every else "none"

    def _settle_mass(self) -> str:
        """``exact`` when every server returns the log-probabilities of chosen token ids, else ``top-k``."""
        probe = lambda s: fleet.probe_choice_logprobs(self.transport, s, self.model_name)  # noqa: E731
        return "exact" if fleet.every_server(self.transport, "choice_logprobs", probe) else "top-k"

    def _concurrency(self) -> int:
        if self.max_concurrency == "auto":
            return fleet.default_concurrency([s.info.kind if s.info else None for s in self.servers])
        return int(self.max_concurrency)

    def choice_token_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """For each choice, the server tokenizer's ids that spell it (asked once, when first needed)."""
        return self.tokens.ids(choices)

    # ------------------------------------------------------------------------------------ answering
    def chat(self, messages: list[dict], **fields: Any) -> dict:
        """One chat completion (temperature 0), usage counted; the fleet's next server answers. Fields OpenAI
        does not define (vLLM's ``continue_final_message`` …) go as the client's ``extra_body``."""
        standard, extra = split_fields({"model": self.model_name, "messages": messages, "temperature": 0, **fields})
        answer = self.transport.chat(standard, extra)
        self.usage.add(answer.get("usage") if isinstance(answer, dict) else None)
        if not isinstance(answer, dict) or not answer.get("choices"):
            raise APIError(f"{self.describe()}: an answer without choices: {self.transport.scrub(str(answer)[:300])}")
        return answer

    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        if not requests:
            return []
        if self.max_cost is not None:
            self.check_budget(self.estimate(requests))
        if self.mode == "batch":
            results = self._batches().rate(requests, progress=progress, on_batch=on_batch)
        else:
            if self.max_concurrency == "auto":
                fleet.identify_quietly(self.transport)  # only speed depends on it: asked when something is sent
            results = self._rate_sync(requests, progress, on_batch)
        failed = [r for r in results if r.error is not None]
        if failed:
            logger.warning(
                "%s: %d of %d ratings failed and carry no score (first: %s); they are not cached, so a "
                "re-run asks only for them.",
                self.describe(), len(failed), len(results), failed[0].error,
            )  # fmt: skip
        return results

    def rating_call(self, request: RatingRequest) -> tuple[ChatCall, dict[int, int] | None]:
        """The call that rates ``request`` and, for an exact read, which choice each named token id spells."""
        id_choices = None
        if self.mass_mode == "exact":  # a user error (a rating that is not one token, no /tokenize) stops the run
            ids = self.choice_token_ids([str(c) for c in request.choices])
            id_choices = {token_id: k for k, group in enumerate(ids) for token_id in group}
        call = rating_call(
            request, self.model_name, self.prefill_mode, sorted(id_choices or ()), self.top_logprobs, self.max_tokens
        )
        return call, id_choices

    def _rate_one(self, request: RatingRequest) -> RatingResult:
        choices = [str(c) for c in request.choices]
        call, id_choices = self.rating_call(request)
        try:
            answer = self.transport.chat(call.fields, call.extra_body)
        except APIError as err:
            if not self.transport.reached:
                raise  # no server ever answered: a wrong URL or a server not started, not a per-item failure
            return self.failed(choices, str(err))
        self.usage.add(answer.get("usage") if isinstance(answer, dict) else None)
        return self.read_answer(answer, choices, id_choices)

    def read_answer(self, answer: Any, choices: Sequence[str], id_choices: dict[int, int] | None) -> RatingResult:
        """The rating distribution in one chat-completions answer (synchronous or from a batch)."""
        if not isinstance(answer, dict) or not answer.get("choices"):
            return self.failed(choices, f"{self.describe()}: an answer without choices: {str(answer)[:300]}")
        content, problem = self._logprobs(answer)
        if content is None:
            return self.failed(choices, problem)
        first, exact = self.prefill_mode == "continue", self.mass_mode == "exact"
        try:
            result = read_rating(content, choices, first_position=first, exact=exact, id_choices=id_choices)
        except (AttributeError, TypeError, ValueError) as err:  # entries that are not {token, logprob} objects
            return self.failed(choices, f"{self.describe()}: a malformed logprobs answer ({type(err).__name__}: {err})")
        if exact and id_choices:
            position = 0 if first else rating_position(content, choices, id_choices)
            if position is not None and listed_choice_tokens(content[position], choices, id_choices) < len(id_choices):
                raise ValueError(
                    f"{self.describe()} ignored logprob_token_ids (mass='exact'): its answer lists fewer rating tokens "
                    "than were named. It needs vLLM with PR #43463 or mmjudge serve; use mass='auto' or 'top-k'."
                )
        self._answered = True
        return result

    def _logprobs(self, answer: dict) -> tuple[Any, str]:
        """``(logprobs.content, "")`` of an answer, or ``(None, why)`` when it has none. When the very first answer
        has none, that is the server's setup, not an item: a ``ValueError``."""
        content = answer_logprobs(answer)
        if content is not None:
            return content, ""
        problem = (
            f"{self.describe()} answered without `logprobs.content`; the server must return log-probabilities "
            "in chat completions (llama.cpp: start it with --logits_all true)."
        )
        if not self._answered:
            raise ValueError(problem)
        return None, problem

    def failed(self, choices: Sequence[str], why: str) -> RatingResult:
        """A rating that failed: no probabilities, the reason (never cached)."""
        self.usage.count_failure()
        logger.info("rating failed: %s", why)
        return rating_result([0.0] * len(choices), "", self.capabilities.exact_mass, error=why)

    def _pool(self) -> Any:
        """The request threads, kept between calls (``max_concurrency`` of them)."""
        from concurrent.futures import ThreadPoolExecutor

        size = self._concurrency()
        if getattr(self, "_executor", None) is None or self._executor_size != size:
            self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="mmjudge-api")
            self._executor_size = size
        return self._executor

    def _map(self, fn, requests: Sequence) -> list:
        return [fn(r) for r in requests] if len(requests) <= 1 else list(self._pool().map(fn, requests))

    def _rate_sync(self, requests: Sequence[RatingRequest], progress: bool, on_batch) -> list[RatingResult]:
        """Every request queued at once, ``max_concurrency`` in flight, no pause between batches; each batch (in
        plan order) handed to ``on_batch`` (the cache) as soon as its answers are in."""
        batches = self.plan(requests)
        pool, out = self._pool(), [None] * len(requests)
        futures = {i: pool.submit(self._rate_one, requests[i]) for batch in batches for i in batch}
        try:
            desc = f"{self.backend} judge rating"
            with optional_bar(progress and len(batches) > 1, total=len(requests), desc=desc, unit="req") as bar:
                for batch in batches:
                    deliver_answers(out, batch, [futures[i].result() for i in batch], bar, on_batch)
        finally:
            for future in futures.values():
                future.cancel()  # a setup error stops the run: what has not started is not sent
        return out

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        return self._map(self._rate_one, requests)

    def attach_store(self, store: Any) -> None:
        """The cache's store (:class:`~mmjudge.judges.cached.CachedJudge` gives it): batch mode keeps its batch
        ids there, so a killed run collects the batches it already submitted."""
        self.store = store

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """Without its cache, batch mode keeps no batch ids either: the store is set aside for the block."""
        store, self.store = self.store, None
        try:
            yield
        finally:
            self.store = store

    def _batches(self) -> Any:
        if self._batch_runner is None:
            from mmjudge.judges.openai.batch import BatchRunner

            self._batch_runner = BatchRunner(self)
        return self._batch_runner
