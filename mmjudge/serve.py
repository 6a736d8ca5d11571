"""An OpenAI-compatible chat-completions server over the engine's local ``transformers`` judge.

For models no serving engine supports, and as a test peer of the ``openai`` judge backend: greedy
answers with the model's raw full-vocabulary probabilities, so a rating read through it equals the local
backend's. An ASGI app (Starlette) under uvicorn, as llama-cpp-python's and vLLM's servers are;
concurrent requests are batched through the model (:mod:`mmjudge.serve_batching`).

Endpoints (every answer carries the header ``Server: mmjudge-serve/<version>``, which is how the
``openai`` judge recognises this server; with an API key, all but ``/health`` need
``Authorization: Bearer <key>``, else 401):

* ``GET /v1/models`` — the one served model (``owned_by: "mmjudge"``); ``GET /health`` — ``{"status": "ok"}``.
* ``GET /server_info`` — what this server is, supports and has done (``stats``).
* ``POST /v1/chat/completions`` — ``messages`` (text, and one image as a ``data:`` URL in the first user
  turn; remote URLs are refused), ``max_tokens`` / ``max_completion_tokens`` (default 16, at most
  ``--max-tokens``: 400 above it), ``logprobs``, ``top_logprobs`` (up to ``--max-logprobs``),
  ``stream`` (Server-Sent Events as OpenAI sends them, ``stream_options.include_usage``), vLLM's
  ``continue_final_message`` + ``add_generation_prompt=false``, ``logprob_token_ids`` (each generated
  position's ``top_logprobs`` holds the sampled token plus exactly those ids) and
  ``return_tokens_as_token_ids``. Decoding is greedy (sampling settings are accepted and ignored);
  log-probabilities are the model's raw ones. ``n`` > 1, ``stop``, ``tools``, ``response_format`` and
  ``logit_bias`` are refused (400), never silently ignored.
* ``POST /tokenize`` (also ``/v1/tokenize``) — vLLM's: ``prompt``, ``add_special_tokens`` (default true),
  ``return_token_strs`` -> ``tokens``, ``count``, ``max_model_len`` (the context this server enforces, -1
  when the model states none) and ``token_strs``.

Limits: a body above 64 MiB is refused with 413; a prompt that with its ``max_tokens`` exceeds the
model's context with 400; an answer is cut (``finish_reason: "length"``) when its request has run
``--request-timeout`` seconds, and a request that waited that long for the model gets 503; a client
that hangs up stops its generation at the next token. The ``model`` field is not checked (one model is
served).
"""

from __future__ import annotations

import ipaddress
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from mmjudge._version import __version__
from mmjudge.serve_batching import BatchingEngine, Failure, Job
from mmjudge.serve_http import SERVER_NAME, create_app
from mmjudge.serve_protocol import ChatParams, Finished, RequestError, completion_body, read_chat_body

logger = logging.getLogger(__name__)

__all__ = ["SERVER_NAME", "ChatEngine", "ServeSettings", "Server", "make_server", "serve_in_thread", "is_loopback"]

MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TOKENS_LIMIT = 1024
DEFAULT_REQUEST_TIMEOUT = 300.0
API_KEY_ENV = "MMJUDGE_API_KEY"


@dataclass
class ServeSettings:
    """What a server allows: ``api_key`` (``None``: no key), ``max_tokens`` (the largest a request may ask
    for), ``request_timeout`` (seconds), ``max_body_bytes`` and ``max_logprobs``. Checked on creation
    (``ValueError``); ``options=True``: the errors name ``mmjudge serve``'s options (``--max-tokens``).

    >>> ServeSettings(max_tokens=0, options=True)
    Traceback (most recent call last):
    ValueError: --max-tokens must be a positive integer, but got 0.
    """

    api_key: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS_LIMIT
    max_logprobs: int = 20
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_body_bytes: int = MAX_BODY_BYTES
    options: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError(f"The API key is empty: give a non-empty --api-key (or {API_KEY_ENV}).")
        for name in ("max_tokens", "max_logprobs", "max_body_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self._refuse(name, "a positive integer", value)
        if not self.request_timeout > 0:
            self._refuse("request_timeout", "above 0 seconds", self.request_timeout)

    def _refuse(self, name: str, rule: str, value: Any) -> None:
        if self.options:
            raise ValueError(f"--{name.replace('_', '-')} must be {rule}, but got {value!r}.")
        raise ValueError(f"Expected {name} to be {rule}, but got {value!r}.")


class ChatEngine:
    """The model side of the server: checks bodies against :class:`ServeSettings` and answers them
    through a :class:`~mmjudge.serve_batching.BatchingEngine` (thread-safe)."""

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
        return read_chat_body(
            body,
            max_tokens_limit=self.settings.max_tokens,
            max_logprobs=self.settings.max_logprobs,
            vocab_size=self.batcher.vocab_size,
        )

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
        ids, strings = self.batcher.tokenize(
            body["prompt"], bool(body.get("add_special_tokens", True)), bool(body.get("return_token_strs"))
        )
        # The limit the model thread enforces (prompt + max_tokens), -1 when the model says none.
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
            "max_batch_size": self.batcher.max_batch_size,
            "continue_final_message": True,
            "logprob_token_ids": True,
            "tokenize": True,
            "stream": True,
            "stats": self.batcher.stats.as_dict(),
        }

    def close(self) -> None:
        self.batcher.close()


# ------------------------------------------------------------------------------------------ the server
def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


class Server:
    """``mmjudge serve``'s HTTP server (uvicorn), bound on creation: ``server_address`` is
    ``(host, port)`` (``port=0`` picked a free one), ``url`` its ``…/v1`` base URL. :meth:`serve_forever`
    runs it in this thread (Ctrl-C or SIGTERM stops it), :meth:`start` in a daemon thread;
    :meth:`shutdown` stops it and the model thread."""

    def __init__(self, engine: ChatEngine, host: str, port: int, limit_concurrency: int = 512):
        import uvicorn

        self.engine = engine
        config = uvicorn.Config(
            create_app(engine),
            host=host,
            port=int(port),
            log_config=None,  # a library leaves the process's logging set-up alone
            log_level="warning",
            access_log=False,
            server_header=False,  # ours is set on every answer (mmjudge-serve/<version>)
            limit_concurrency=limit_concurrency,  # beyond it: 503, before any work
            lifespan="off",
            timeout_graceful_shutdown=5,
        )
        self._socket = config.bind_socket()
        self.server_address = self._socket.getsockname()[:2]
        shown = f"[{self.server_address[0]}]" if ":" in self.server_address[0] else self.server_address[0]
        self.url = f"http://{shown}:{self.server_address[1]}/v1"
        self._uvicorn = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        try:
            self._uvicorn.run(sockets=[self._socket])
        finally:
            self.server_close()

    def start(self, wait: float = 30) -> Server:
        self._thread = threading.Thread(target=self.serve_forever, name="mmjudge-serve-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + wait
        while not self._uvicorn.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._uvicorn.started:
            raise RuntimeError(f"mmjudge serve did not start within {wait:g} s.")
        return self

    def shutdown(self) -> None:
        self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(30)
        self.server_close()

    def server_close(self) -> None:
        self.engine.close()
        self._socket.close()


def make_server(
    judge: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    model_name: str | None = None,
    max_logprobs: int = 20,
    *,
    api_key: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS_LIMIT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    max_batch_size: int = 16,
    batch_wait: float = 0.005,
    max_body_bytes: int = MAX_BODY_BYTES,
    limit_concurrency: int = 512,
) -> Server:
    """A bound, not yet serving :class:`Server`. ``model_name`` defaults to the judge's model identity (a Hub
    id, or a fingerprint for folders); ``api_key`` ``None`` serves without a key."""
    identity = getattr(judge, "model_identity", None)  # name@fingerprint: two local folders stay apart
    name = model_name or (identity.label() if identity is not None else judge.identity().get("model")) or "mmjudge"
    settings = ServeSettings(api_key, int(max_tokens), int(max_logprobs), float(request_timeout), int(max_body_bytes))
    engine = ChatEngine(judge, name, settings=settings, max_batch_size=max_batch_size, batch_wait=batch_wait)
    try:
        return Server(engine, host, port, limit_concurrency)
    except BaseException:
        engine.close()
        raise


def serve_in_thread(judge: Any, **kwargs: Any) -> tuple[Server, str]:
    """Start :func:`make_server` in a daemon thread; returns the server and its ``…/v1`` base URL.
    Stop it with ``server.shutdown()``."""
    server = make_server(judge, **kwargs).start()
    return server, server.url
