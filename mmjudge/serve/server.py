"""``mmjudge serve``'s HTTP server: the ASGI app (:mod:`.app`) over a :class:`~.engine.ChatEngine`, under uvicorn."""

from __future__ import annotations

import ipaddress
import threading
import time
from typing import Any

from mmjudge.serve.app import create_app
from mmjudge.serve.engine import ChatEngine
from mmjudge.serve.settings import DEFAULT_MAX_TOKENS_LIMIT, DEFAULT_REQUEST_TIMEOUT, MAX_BODY_BYTES, ServeSettings


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

    def __init__(self, engine: ChatEngine, host: str, port: int):
        import uvicorn

        from mmjudge.serve.app import SERVER_NAME
        from mmjudge.serve.connections import guarded_protocol

        self.engine = engine
        settings = engine.settings
        config = uvicorn.Config(
            create_app(engine),
            host=host,
            port=int(port),
            # h11 with a deadline on each request's headers and a cap per client address (connections.py)
            http=guarded_protocol(settings, SERVER_NAME),
            ws="none",  # no WebSocket routes: an upgrade is an ordinary request (and stays counted)
            log_config=None,  # a library leaves the process's logging set-up alone
            log_level="warning",
            access_log=False,
            server_header=False,  # ours is set on every answer (mmjudge-serve/<version>)
            limit_concurrency=settings.max_connections,  # beyond it: 503, before any work
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
    settings: ServeSettings | None = None,
    **limits: Any,
) -> Server:
    """A bound, not yet serving :class:`Server`. ``model_name`` defaults to the judge's model identity (a Hub
    id, or a fingerprint for folders); ``api_key`` ``None`` serves without a key. ``settings`` (a
    :class:`ServeSettings`) replaces the keyword settings; ``limits`` are more of its fields
    (``max_prompt_chars``, ``max_image_pixels``, ``header_timeout``, ``body_timeout``, ``max_connections``,
    ``max_connections_per_client``)."""
    identity = getattr(judge, "model_identity", None)  # name@fingerprint: two local folders stay apart
    name = model_name or (identity.label() if identity is not None else judge.identity().get("model")) or "mmjudge"
    if settings is None:
        settings = ServeSettings(
            api_key, int(max_tokens), int(max_logprobs), float(request_timeout), int(max_body_bytes), **limits
        )
    engine = ChatEngine(judge, name, settings=settings, max_batch_size=max_batch_size, batch_wait=batch_wait)
    try:
        return Server(engine, host, port)
    except BaseException:
        engine.close()
        raise


def serve_in_thread(judge: Any, **kwargs: Any) -> tuple[Server, str]:
    """Start :func:`make_server` in a daemon thread; returns the server and its ``…/v1`` base URL.
    Stop it with ``server.shutdown()``."""
    server = make_server(judge, **kwargs).start()
    return server, server.url
