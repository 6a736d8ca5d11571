"""Dynamic batching for ``mmjudge serve``: concurrent requests share forward passes of one local judge.

Requests wait in one queue, already rendered and tokenised in their own threads (:mod:`.inputs`): the
model thread never tokenises a prompt, it only pads and stacks. It takes the oldest, gathers for
``batch_wait`` seconds (a few milliseconds) whatever else arrives, and runs one batch of up to
``max_batch_size`` requests of the oldest one's kind
(:attr:`~mmjudge.serve.protocol.ChatParams.batch_key`: one-token ratings apart from longer generations,
requests with an image apart from text-only ones) through ``model.generate``.
Between two tokens it reads every row's step: the token, its distribution (only for rows that asked
for logprobs), and whether the row is over: end of turn, its own ``max_tokens``, its client gone
(:meth:`Job.cancel`) or its deadline passed. A finished row is answered at once, while the others go
on; the batch ends with its last row. So a client that hangs up costs at most the one token in
flight, and no request holds the model past its deadline by more than one step.

Answers equal the one-request-at-a-time path to float rounding (left-padded batches): greedy decoding,
raw full-vocabulary probabilities, as :meth:`TransformersJudge.generate_trace` reads them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from mmjudge.serve.inputs import RendererPool, collate, prepare
from mmjudge.serve.protocol import Answer, ChatParams, Finished, Piece, RequestError

logger = logging.getLogger(__name__)


@dataclass
class Started:
    """The request entered a batch (a stream may now begin)."""

    prompt_tokens: int


@dataclass
class Failure:
    """The request gets no answer: an HTTP ``status``, a ``message`` and OpenAI's error ``kind``."""

    status: int
    message: str
    kind: str = "server_error"


Event = Started | Piece | Finished | Failure


@dataclass
class Job:
    """One request on its way through the model. ``deliver`` receives its events (from the model thread:
    it must be thread-safe); ``timeout`` is seconds from arrival until the answer must be over."""

    params: ChatParams
    deliver: Callable[[Event], None]
    timeout: float
    created: float = field(default_factory=time.monotonic)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def deadline(self) -> float:
        return self.created + self.timeout

    def cancel(self) -> None:
        """The client is gone: the model stops working for it at its next token (or never starts)."""
        self.cancelled.set()


@dataclass
class ServeStats:
    """What the model thread did (``GET /server_info`` shows it)."""

    requests: int = 0
    batches: int = 0
    largest_batch: int = 0
    tokens: int = 0
    cancelled: int = 0  # clients that hung up before their answer was over
    tokens_after_cancel: int = 0  # tokens generated for a request after its client was known to be gone
    timed_out: int = 0  # answers cut at their deadline (finish_reason "length")
    expired_in_queue: int = 0  # requests whose deadline passed before they reached the model (503)
    failed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class _Row:
    """One request inside a running batch."""

    def __init__(self, job: Job, answer: Answer, prompt_tokens: int):
        self.job, self.answer, self.prompt_tokens = job, answer, prompt_tokens
        self.done = False

    def finish(self, reason: str) -> None:
        self.done = True
        self.job.deliver(self.answer.finish(reason, self.prompt_tokens))


class BatchingEngine:
    """Runs chat-completion :class:`Job` s on ``judge`` (a :class:`~mmjudge.judges.transformers.TransformersJudge`)
    in a model thread of its own; :meth:`submit` from any thread, :meth:`close` to stop."""

    def __init__(self, judge: Any, max_batch_size: int = 16, batch_wait: float = 0.005):
        if isinstance(max_batch_size, bool) or int(max_batch_size) < 1 or float(batch_wait) < 0:
            raise ValueError("Expected a max_batch_size >= 1 and a batch_wait >= 0 seconds.")
        self.judge = judge
        self.max_batch_size = int(max_batch_size)
        self.batch_wait = float(batch_wait)
        self.tokenizer = judge.tokenizer
        # The judge's own lock: fast tokenizers are not thread-safe, and /tokenize uses this one too.
        self.tokenizer_lock = getattr(judge, "_tokenizer_lock", None) or threading.RLock()
        self.stop_ids = _end_of_turn_ids(judge.model, self.tokenizer)
        self.special_ids = frozenset(getattr(self.tokenizer, "all_special_ids", None) or ()) | self.stop_ids
        self.vocab_size = len(self.tokenizer)
        self.max_model_len = context_length(judge.model, self.tokenizer)
        # Request threads tokenise with copies of their own: the model thread never waits for a prompt.
        self.renderers = RendererPool(judge.prompts, lock=self.tokenizer_lock)
        self.stats = ServeStats()
        self._running: list[Job] = []
        self._token_texts: dict[int, str] = {}
        self._pending: deque[Job] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mmjudge-serve-model", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------ the queue
    def submit(self, job: Job) -> None:
        with self._wake:
            if self._closed:
                job.deliver(Failure(503, "the server is shutting down."))
                return
            self._pending.append(job)
            self._wake.notify()

    def close(self, timeout: float = 30) -> None:
        """Stop taking work, answer what waits with 503, and let the batch in flight end."""
        with self._wake:
            self._closed = True
            waiting, self._pending = list(self._pending), deque()
            self._wake.notify()
        for job in waiting:
            job.deliver(Failure(503, "the server is shutting down."))
        for job in [*waiting, *self._running]:  # the batch in flight ends at its next token
            job.cancel()
        self._thread.join(timeout)

    def _run(self) -> None:
        import torch

        torch.set_grad_enabled(False)  # this thread only runs inference (the setting is per thread)
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            if batch:
                self._answer(batch)

    def _next_batch(self) -> list[Job] | None:
        """The next batch (``[]`` when every request taken was already over); ``None`` once closed."""
        with self._wake:
            while not self._pending and not self._closed:
                self._wake.wait()
            if self._closed:
                return None
            # Gather: until the oldest request has waited batch_wait, unless a full batch is already here.
            while not self._closed:
                key = self._pending[0].params.batch_key
                alike = sum(1 for job in self._pending if job.params.batch_key == key)
                left = self._pending[0].created + self.batch_wait - time.monotonic()
                if alike >= self.max_batch_size or left <= 0:
                    break
                self._wake.wait(left)
            if self._closed:
                return None
            key = self._pending[0].params.batch_key
            chosen = [job for job in self._pending if job.params.batch_key == key][: self.max_batch_size]
            for job in chosen:
                self._pending.remove(job)
        return [job for job in chosen if self._still_wanted(job)]

    def _still_wanted(self, job: Job) -> bool:
        if job.cancelled.is_set():
            self.stats.cancelled += 1
            return False
        waited = time.monotonic() - job.created
        if waited >= job.timeout:
            self.stats.expired_in_queue += 1
            job.deliver(
                Failure(
                    503,
                    f"the request waited {waited:.1f} s for the model, past this server's request timeout of "
                    f"{job.timeout:g} s (mmjudge serve --request-timeout): it is busy, retry later.",
                )
            )
            return False
        return True

    # ------------------------------------------------------------------------------ the model
    def _answer(self, jobs: list[Job]) -> None:
        import torch

        self.stats.batches += 1
        self.stats.requests += len(jobs)
        self.stats.largest_batch = max(self.stats.largest_batch, len(jobs))
        rows: list[_Row] = []
        self._running = jobs
        try:
            rows, inputs = self._start_rows(jobs)
            if rows:
                self._generate(rows, inputs)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(jobs) > 1 and not any(row.answer.count for row in rows):  # nothing sent yet: halve, retry
                self.max_batch_size = max(1, len(jobs) // 2)
                logger.warning(
                    "Out of GPU memory with %d requests in a batch; now at most %d.", len(jobs), len(jobs) // 2
                )
                for part in (jobs[: len(jobs) // 2], jobs[len(jobs) // 2 :]):
                    self._answer(part)
                return
            self._fail([row for row in rows if not row.done] or jobs, Failure(503, "the model ran out of GPU memory."))
        except Exception as err:  # a server answers: the batch's requests fail, the server stays up
            logger.exception("a batch of %d requests failed", len(jobs))
            self._fail([row for row in rows if not row.done] or jobs, Failure(500, f"{type(err).__name__}: {err}"))
        finally:
            self._running = []

    def _fail(self, targets: list, failure: Failure) -> None:
        for target in targets:
            job = target.job if isinstance(target, _Row) else target
            if isinstance(target, _Row):
                target.done = True
            self.stats.failed += 1
            job.deliver(failure)

    def prepare(self, params: ChatParams) -> ChatParams:
        """Render and tokenise a request in the calling thread (a request's own, never the model's), refusing
        with a :class:`RequestError` what the model cannot take: an image for a text-only model, or a prompt
        that with its ``max_tokens`` exceeds the model's context (so no forward pass runs past it, whatever
        the body held)."""
        with self.renderers.borrow() as renderer:
            prepare(params, renderer, self.max_model_len)
        return params

    def _start_rows(self, jobs: list[Job]) -> tuple[list[_Row], dict]:
        """The batch's inputs from its requests' own (:meth:`prepare`, done before they were queued): padded
        and stacked, or, where a processor pads image tensors its own way, the batch encoded at once."""
        kept = []
        for job in jobs:
            if job.params.inputs is None:  # queued unprepared (a caller of submit, not the server)
                try:
                    self.prepare(job.params)
                except RequestError as err:
                    self._refuse(job, str(err))
                    continue
            kept.append(job)
        if not kept:
            return [], {}
        inputs = collate([job.params.inputs for job in kept], self.tokenizer.pad_token_id)
        if inputs is None:
            with self.tokenizer_lock:  # each prompt already fits the context: bounded work
                inputs = self.judge.prompts.encode([job.params.request for job in kept], [j.params.text for j in kept])
        rows = []
        for job in kept:  # (their own inputs stay: an out-of-memory retry stacks them again)
            answer = Answer(job.params, self.tokenizer.decode, self._token_text, self.special_ids)
            rows.append(_Row(job, answer, job.params.prompt_tokens))
            job.deliver(Started(job.params.prompt_tokens))
        return rows, inputs

    def _refuse(self, job: Job, message: str) -> None:
        self.stats.failed += 1
        job.deliver(Failure(400, message, "invalid_request_error"))

    def _generate(self, rows: list[_Row], inputs: dict) -> None:
        from transformers import StoppingCriteriaList

        from mmjudge.judges.local.prompting import to_device

        model = self.judge.model
        latest: dict[str, Any] = {}
        me = threading.get_ident()

        def keep_logits(module, args, output) -> None:  # the raw logits of each step, before any processor
            if threading.get_ident() == me:
                latest["logits"] = output.logits[:, -1]

        hook = model.register_forward_hook(keep_logits)
        try:
            model.generate(
                **to_device(inputs, model.device),
                max_new_tokens=max(row.job.params.max_tokens for row in rows),
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
                stopping_criteria=StoppingCriteriaList([_EachStep(self, rows, latest)]),
            )
        finally:
            hook.remove()
        for row in rows:  # generate stopped on its own (its length limit)
            if not row.done:
                row.finish("length")

    def _token_text(self, token_id: int) -> str:
        text = self._token_texts.get(token_id)
        if text is None:
            text = self._token_texts[token_id] = self.tokenizer.decode([token_id])
        return text

    def tokenize(self, prompt: str, add_special_tokens: bool, token_strs: bool) -> tuple[list, list | None]:
        """vLLM's ``/tokenize``, in the calling thread with a tokenizer copy (never the model thread's)."""
        with self.renderers.borrow() as renderer:
            ids = renderer.tokenizer.encode(prompt, add_special_tokens=add_special_tokens)
            return ids, (renderer.tokenizer.convert_ids_to_tokens(ids) if token_strs else None)


class _EachStep:
    """Called by ``generate`` after every token (a stopping criterion): hands each row its token, and says
    which rows are over."""

    def __init__(self, engine: BatchingEngine, rows: list[_Row], latest: dict):
        self.engine, self.rows, self.latest = engine, rows, latest

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        engine, stats = self.engine, self.engine.stats
        tokens = input_ids[:, -1].tolist()
        wanted = [k for k, row in enumerate(self.rows) if not row.done and row.job.params.logprobs]
        probs = torch.softmax(self.latest["logits"][wanted].float(), dim=-1).cpu() if wanted else None
        now = time.monotonic()
        with engine.tokenizer_lock:
            for k, row in enumerate(self.rows):
                if row.done:
                    continue
                stats.tokens += 1
                if row.job.cancelled.is_set():  # gone: this token was the last one made for it
                    stats.cancelled += 1
                    stats.tokens_after_cancel += 1
                    row.done = True
                    continue
                piece = row.answer.push(tokens[k], probs[wanted.index(k)] if k in wanted else None)
                if piece is not None and (piece.text or piece.entries):
                    row.job.deliver(piece)
                if tokens[k] in engine.stop_ids:
                    row.finish("stop")
                elif row.answer.count >= row.job.params.max_tokens:
                    row.finish("length")
                elif now >= row.job.deadline:
                    stats.timed_out += 1
                    row.finish("length")
        self.latest.clear()  # the step's logits go when generate drops them (the prefill's are large)
        return torch.tensor([row.done for row in self.rows], dtype=torch.bool, device=input_ids.device)


def _end_of_turn_ids(model: Any, tokenizer: Any) -> frozenset:
    """The ids ``generate`` stops on: the generation config's end-of-sequence ids, else the tokenizer's."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = eos if isinstance(eos, (list, tuple)) else [eos]
    return frozenset(int(i) for i in ids if i is not None)


def context_length(model: Any, tokenizer: Any) -> int | None:
    """The most tokens (prompt + answer) the model takes: its text config's ``max_position_embeddings``,
    else the tokenizer's ``model_max_length`` when that is a real number; ``None`` when neither says.

    >>> from types import SimpleNamespace as Fake
    >>> unlimited = Fake(model_max_length=10**30)  # what tokenizers without a limit say
    >>> context_length(Fake(config=Fake(max_position_embeddings=2048)), unlimited), context_length(Fake(), unlimited)
    (2048, None)
    """
    config = getattr(model, "config", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for value in (getattr(text, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)):
        if isinstance(value, int) and 0 < value < 10**7:  # tokenizers without a limit say 1e30
            return value
    return None
