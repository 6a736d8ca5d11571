"""The HTTP side of ``mmjudge serve``: an ASGI app (Starlette) over a :class:`~mmjudge.serve.engine.ChatEngine`.

:class:`_Front` wraps every request: the ``Server`` header, the API key (constant-time compare), the
declared body size (413). Chat completions are answered by :class:`_Answer`, which listens for the
client's disconnect the whole time and cancels the request's generation when it comes.

>>> key_matches("Bearer s3cret", "s3cret"), key_matches("Bearer s3cre", "s3cret"), key_matches(None, "k")
(True, False, False)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from mmjudge._version import __version__
from mmjudge.serve.batching import Failure, Started
from mmjudge.serve.protocol import (
    SSE_DONE,
    ChatParams,
    Finished,
    Piece,
    RequestError,
    chunk_event,
    completion_body,
    error_body,
    sse,
    usage,
)

if TYPE_CHECKING:
    from mmjudge.serve.engine import ChatEngine
    from mmjudge.serve.settings import ServeSettings

logger = logging.getLogger(__name__)
SERVER_NAME = f"mmjudge-serve/{__version__}"  # the Server header: how clients recognise this server
OPEN_PATHS = frozenset({"/health", ""})  # answered without the API key (liveness probes), trailing "/" stripped
_GRACE = 30.0  # beyond a request's timeout, how long the HTTP side waits for a model step to end


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def key_matches(header: str | None, key: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <key>``, compared in constant time (digests of
    equal length, so neither the content nor the length of the key leaks through timing). ``header`` is
    the header as sent, its bytes read as Latin-1 (as ASGI servers hand them over); ``key`` is compared as
    UTF-8."""
    scheme, _, given = (header or "").strip().partition(" ")
    digest = hashlib.sha256(given.strip().encode("latin-1", "replace")).digest()
    return hmac.compare_digest(digest, hashlib.sha256(key.encode("utf-8")).digest()) and scheme.lower() == "bearer"


async def _send_json(send, status: int, data: Any, headers: tuple = ()) -> None:
    blob = json.dumps(data).encode("utf-8")
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(blob)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": blob})


class _Front:
    """Around the app: the ``Server`` header on every answer, the API key, and the declared body size."""

    def __init__(self, app, settings: ServeSettings):
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_named(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"server"]
                message = {**message, "headers": [*headers, (b"server", SERVER_NAME.encode())]}
            await send(message)

        key = self.settings.api_key
        if key is not None and scope["path"].rstrip("/") not in OPEN_PATHS:
            header = _header(scope, b"authorization")
            if not key_matches(header, key):
                message = (
                    "Incorrect API key provided."
                    if header
                    else "You didn't provide an API key: send it as the header `Authorization: Bearer <key>`."
                )
                body = error_body(message, code="invalid_api_key")
                await _send_json(send_named, 401, body, ((b"www-authenticate", b"Bearer"),))
                return
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.settings.max_body_bytes:
            await _send_json(send_named, 413, _too_large(int(declared), self.settings.max_body_bytes))
            return
        await self.app(scope, receive, send_named)


def _too_large(size: int | None, limit: int) -> dict:
    told = f"{size} bytes" if size is not None else "larger than that"
    return error_body(f"the request body is {told}; this server accepts at most {limit} bytes ({limit / 2**20:g} MiB).")


async def _read_json(request, settings: ServeSettings) -> Any:
    """The body as JSON: at most ``max_body_bytes``, whole within ``body_timeout`` of the headers."""
    import anyio
    from starlette.requests import ClientDisconnect

    chunks, size, limit = [], 0, settings.max_body_bytes
    try:
        with anyio.fail_after(settings.body_timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise RequestError(_too_large(None, limit)["error"]["message"], status=413)
                chunks.append(chunk)
    except TimeoutError:
        message = f"the request body did not arrive within {settings.body_timeout:g} s (mmjudge serve --body-timeout)."
        raise RequestError(message, status=408) from None
    except ClientDisconnect:  # gone mid-body: the answer goes nowhere, and no traceback is logged
        raise RequestError("the client disconnected before its body arrived.") from None
    if not size:
        raise RequestError("a JSON body is required.")
    blob = b"".join(chunks)
    try:
        return await asyncio.to_thread(json.loads, blob.decode("utf-8"))
    except RecursionError:  # json's parser recurses once per level of nesting
        raise RequestError("the body is nested too deeply to read.") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
        raise RequestError(f"the body is not valid JSON ({str(err)[:200]}).") from None


class _Answer:
    """The ASGI answer to one chat completion: waits for the job's events, sends JSON or Server-Sent
    Events, and cancels the job as soon as the client disconnects."""

    def __init__(self, engine: ChatEngine, params: ChatParams):
        self.engine, self.params = engine, params
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.events: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def deliver(event) -> None:  # from the model thread
            with contextlib.suppress(RuntimeError):  # a closed loop: the server is gone, nobody listens
                loop.call_soon_threadsafe(self.events.put_nowait, event)

        self.job = engine.submit(params, deliver)

    async def __call__(self, scope, receive, send) -> None:
        import anyio

        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                self.job.cancel()
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                with anyio.move_on_after(self.job.timeout + _GRACE) as timer:
                    await (self._stream(send) if self.params.stream else self._whole(send))
                if timer.cancelled_caught:
                    await self._late(send)
            except OSError:  # the client went away while we were writing
                pass
            finally:
                self.job.cancel()  # stops the model for a request still running; nothing otherwise
                group.cancel_scope.cancel()

    async def _late(self, send) -> None:
        failure = Failure(504, f"no answer within the request timeout of {self.job.timeout:g} s.")
        if self._started:
            await send({"type": "http.response.body", "body": sse(error_body(failure.message, failure.kind))})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _send_json(send, failure.status, error_body(failure.message, failure.kind))

    _started = False

    async def _whole(self, send) -> None:
        while True:
            event = await self.events.get()
            if isinstance(event, Finished):
                await _send_json(send, 200, completion_body(self.id, self.engine.model_name, event))
                return
            if isinstance(event, Failure):
                await _send_json(send, event.status, error_body(event.message, event.kind))
                return

    async def _stream(self, send) -> None:
        event = await self.events.get()
        while not isinstance(event, Started | Failure):
            event = await self.events.get()
        if isinstance(event, Failure):
            await _send_json(send, event.status, error_body(event.message, event.kind))
            return
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        self._started = True
        await send(self._body(self._chunk({"role": "assistant", "content": ""})))
        while True:
            event = await self.events.get()
            if isinstance(event, Piece):
                await send(self._body(self._chunk({"content": event.text}, event.entries)))
            elif isinstance(event, Finished):
                await self._finish(send, event)
                return
            elif isinstance(event, Failure):
                await send(self._body(sse(error_body(event.message, event.kind)), more=False))
                return

    async def _finish(self, send, done: Finished) -> None:
        if done.tail.text:
            await send(self._body(self._chunk({"content": done.tail.text})))
        await send(self._body(self._chunk({}, finish=done.finish_reason)))
        if self.params.include_usage:
            last = {"id": self.id, "object": "chat.completion.chunk", "created": int(time.time())}
            last.update(model=self.engine.model_name, choices=[], usage=usage(done))
            await send(self._body(sse(last)))
        await send(self._body(SSE_DONE, more=False))

    def _chunk(self, delta: dict, entries: list | None = None, finish: str | None = None) -> bytes:
        extra = {"usage": None} if self.params.include_usage else {}
        return chunk_event(self.id, self.engine.model_name, delta, entries, finish, **extra)

    @staticmethod
    def _body(blob: bytes, more: bool = True) -> dict:
        return {"type": "http.response.body", "body": blob, "more_body": more}


def create_app(engine: ChatEngine):
    """The ASGI app serving ``engine`` under its settings (``engine.settings``)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    settings = engine.settings

    async def health(request):
        return JSONResponse({"status": "ok"})

    async def models(request):
        return JSONResponse(engine.models())

    async def server_info(request):
        return JSONResponse(engine.server_info())

    async def tokenize(request):
        try:
            body = await _read_json(request, settings)
            return JSONResponse(await run_in_threadpool(engine.tokenize, body))
        except RequestError as err:
            return _error_response(err)

    async def chat_completions(request):
        try:
            body = await _read_json(request, settings)
            # In a thread: decoding an image and tokenising would stall every other client (the model thread
            # never tokenises: a huge prompt costs its own request only).
            params = await run_in_threadpool(engine.read, body)
        except RequestError as err:
            return _error_response(err)
        except Exception as err:  # a processor that fails on this request: it alone fails, in one line
            logger.exception("preparing a request failed")
            failed = RequestError(f"{type(err).__name__}: {str(err)[:300]}", status=500, kind="server_error")
            return _error_response(failed)
        return _Answer(engine, params)

    async def http_error(request, exc: HTTPException):
        kind = "not_found" if exc.status_code == 404 else "invalid_request_error"
        message = f"no route {request.method} {request.url.path}" if exc.status_code in (404, 405) else exc.detail
        return JSONResponse(error_body(message, kind), status_code=exc.status_code)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/models", models, methods=["GET"]),
        Route("/server_info", server_info, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/v1/tokenize", tokenize, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.router.redirect_slashes = False  # a redirect would drop the POST body; routes match with or without "/"
    return _Front(_StripSlash(app), settings)


class _StripSlash:
    """``/v1/models/`` answers as ``/v1/models`` (the old server did), without a redirect."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and len(scope["path"]) > 1 and scope["path"].endswith("/"):
            scope = {**scope, "path": scope["path"].rstrip("/") or "/"}
        await self.app(scope, receive, send)


def _error_response(err: RequestError):
    from starlette.responses import JSONResponse

    # A body too slow to arrive: the connection is closed. (After a 413 the client may go on sending the body
    # it started, so that it reads the answer; the connection's header deadline closes it then.)
    headers = {"connection": "close"} if err.status == 408 else None
    return JSONResponse(error_body(str(err), err.kind, err.param), status_code=err.status, headers=headers)
