"""The model side of ``mmjudge serve``: request bodies checked against the :class:`~.settings.ServeSettings`
and answered through the batching engine (:mod:`.batching`); no HTTP here (:mod:`.app` is the HTTP side).
"""

from __future__ import annotations

import queue
import uuid
from typing import Any

from mmjudge._version import __version__
from mmjudge.serve.batching import BatchingEngine, Failure, Job
from mmjudge.serve.protocol import ChatParams, Finished, RequestError, completion_body, flag, read_chat_body
from mmjudge.serve.settings import ServeSettings


class ChatEngine:
    """The model side of the server: checks bodies against :class:`ServeSettings` and answers them
    through a :class:`~mmjudge.serve.batching.BatchingEngine` (thread-safe)."""

    def __init__(
        self,
        judge: Any,
        model_name: str,
        max_logprobs: int = 20,
        settings: ServeSettings | None = None,
        max_batch_size: int = 16,
        batch_wait: float = 0.005,
    ):
        self.judge = judge
        self.model_name = model_name
        self.settings = settings or ServeSettings(max_logprobs=int(max_logprobs))
        self.batcher = BatchingEngine(judge, max_batch_size=max_batch_size, batch_wait=batch_wait)

    def read(self, body: Any) -> ChatParams:
        """A body checked, rendered and tokenised in the calling thread (the HTTP side calls it in a worker
        thread: never on the event loop, never on the model thread); a refusal is a :class:`RequestError`."""
        settings = self.settings
        params = read_chat_body(
            body,
            max_tokens_limit=settings.max_tokens,
            max_logprobs=settings.max_logprobs,
            vocab_size=self.batcher.vocab_size,
            max_prompt_chars=settings.max_prompt_chars,
            max_image_pixels=settings.max_image_pixels,
        )
        return self.batcher.prepare(params)

    def submit(self, params: ChatParams, deliver) -> Job:
        job = Job(params, deliver, self.settings.request_timeout)
        self.batcher.submit(job)
        return job

    def complete(self, body: Any) -> dict:
        """Answer a (non-streaming) chat-completions body in this thread; a failure is a :class:`RequestError`."""
        params = self.read(body)
        if params.stream:
            raise RequestError("complete() answers stream=false bodies; the HTTP server streams.", "stream")
        events: queue.Queue = queue.Queue()
        self.submit(params, events.put)
        while True:
            event = events.get()
            if isinstance(event, Finished):
                return completion_body(f"chatcmpl-{uuid.uuid4().hex}", self.model_name, event)
            if isinstance(event, Failure):
                raise RequestError(event.message, status=event.status, kind=event.kind)

    def models(self) -> dict:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "mmjudge"}]}

    def tokenize(self, body: Any) -> dict:
        """vLLM's ``POST /tokenize`` for a ``prompt`` string."""
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            raise RequestError("`prompt` must be a string (this server tokenizes text prompts only).", "prompt")
        prompt, limit = body["prompt"], self.settings.max_prompt_chars
        if len(prompt) > limit:
            raise RequestError(
                f"the prompt holds {len(prompt)} characters, above this server's limit of {limit} "
                "(mmjudge serve --max-prompt-chars).",
                "prompt",
            )
        special = flag(body, "add_special_tokens", True)
        ids, strings = self.batcher.tokenize(prompt, special, flag(body, "return_token_strs", False))
        # The limit enforced before a request is queued (prompt + max_tokens), -1 when the model says none.
        limit = self.batcher.max_model_len
        answer: dict[str, Any] = {
            "count": len(ids),
            "max_model_len": -1 if limit is None else int(limit),
            "tokens": ids,
        }
        if strings is not None:
            answer["token_strs"] = strings
        return answer

    def server_info(self) -> dict:
        return {
            "server": "mmjudge",
            "version": __version__,
            "model": self.model_name,
            "max_logprobs": self.settings.max_logprobs,
            "max_tokens": self.settings.max_tokens,
            "request_timeout": self.settings.request_timeout,
            "max_prompt_chars": self.settings.max_prompt_chars,
            "max_image_pixels": self.settings.max_image_pixels,
            "max_batch_size": self.batcher.max_batch_size,
            "continue_final_message": True,
            "logprob_token_ids": True,
            "tokenize": True,
            "stream": True,
            "stats": self.batcher.stats.as_dict(),
        }

    def close(self) -> None:
        self.batcher.close()
