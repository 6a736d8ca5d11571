"""The transport of the ``openai`` judge: one official ``openai`` client per server of a fleet, a round robin
over them, retries that move to the next server, servers that stop answering passed over, OpenAI's rate
limits respected, and every failure turned into one line. What is sent (the API format) is
:mod:`mmjudge.judges.openai.format`'s; what it means is :mod:`mmjudge.judges.openai`'s.

Each client is built with ``max_retries=0``: the retry loop is this module's, because in a fleet each retry
goes to the next server and a server that refused three connections in a row is passed over, which a
client bound to one server cannot do. The policy is the official client's own (``retry-after-ms``, else
``Retry-After`` capped at 120 s, else exponential backoff with jitter; retried statuses 408, 409, 429, ≥ 500).

>>> retry_delay({"retry-after-ms": "250"}, 0), retry_delay({"Retry-After": "3"}, 0)
(0.25, 3.0)
>>> reset_seconds("6m0s"), reset_seconds("1.5s"), reset_seconds("20ms"), reset_seconds("soon")
(360.0, 1.5, 0.02, None)
"""

from __future__ import annotations

import email.utils
import functools
import itertools
import json
import logging
import os
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mmjudge import distributed
from mmjudge.errors import ServiceError
from mmjudge.judges.openai.servers import ServerInfo

logger = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429})  # and every status >= 500
MAX_RETRY_AFTER = 120.0  # seconds; longer server hints are capped (as the official client does)
# Consecutive connection failures after which a server counts as down: its requests are tried once, not
# retried, until it answers again (a dead member of a fleet must not cost every request its full backoff).
DOWN_AFTER = 3
# A 4xx whose message names one of these is about the judge's setup (every item would fail alike), not an
# item: "logprob" covers logprobs, top_logprobs and logprob_token_ids. (max_tokens is not here: servers name
# it in context-length errors, which are an item's.)
SETUP_PARAMETERS = ("logprob", "continue_final_message", "add_generation_prompt", "return_tokens_as_token_ids")


class APIError(ServiceError):
    """The server answered with an error that retrying does not fix (``status``: its HTTP status), or
    retries ran out (``status`` None). A :class:`~mmjudge.errors.ServiceError` (still a ``RuntimeError``),
    so the CLI answers it in one line: the fix is on the user's side (start the server, fix the URL)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def retry_delay(headers: Mapping[str, str], attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): the server's ``retry-after-ms``, else
    ``Retry-After`` (seconds or an HTTP date), capped at 120 s; else exponential backoff with jitter.

    >>> retry_delay({"retry-after": "600"}, 0), 0.5 <= retry_delay({}, 1) <= 1.0
    (120.0, True)
    """
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return min(max(float(lower["retry-after-ms"]) / 1000.0, 0.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    if "retry-after" in lower:
        value = lower["retry-after"]
        try:
            return min(max(float(value), 0.0), MAX_RETRY_AFTER)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if value else None
            if when is not None:
                return min(max(when.timestamp() - time.time(), 0.0), MAX_RETRY_AFTER)
    delay = min(base * 2**attempt, cap)
    return delay * (1.0 - 0.5 * random.random())  # jitter in [delay/2, delay]


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def reset_seconds(value: str) -> float | None:
    """OpenAI's ``x-ratelimit-reset-*`` durations (``"1s"``, ``"6m0s"``, ``"20ms"``) in seconds, else ``None``."""
    parts = _DURATION.findall(str(value).strip())
    if not parts or "".join(n + u for n, u in parts) != str(value).strip():
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return round(sum(float(n) * scale[u] for n, u in parts), 6)


def parse_base_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """The servers' ``…/v1`` URLs: one URL, several comma-separated in one string, or a list (a fleet);
    default OpenAI's. Order is kept and repeats are dropped.

    >>> parse_base_urls("http://10.0.0.1:8000/v1, http://10.0.0.2:8000/v1/")
    ['http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1']
    >>> parse_base_urls(None)
    ['https://api.openai.com/v1']
    >>> parse_base_urls("localhost:8000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: Expected `base_url` to be an http(s) URL such as http://127.0.0.1:8000/v1 ..., but got 'localhost:8000'.
    """
    if base_url is None or base_url == "":
        items: list[str] = [OPENAI_BASE_URL]
    elif isinstance(base_url, str):
        items = base_url.split(",")
    elif isinstance(base_url, (list, tuple)) and all(isinstance(u, str) for u in base_url):
        items = list(base_url)
    else:
        items = [repr(base_url)]
    urls = [u.strip().rstrip("/") for u in items if u.strip()]
    for url in urls or [str(base_url)]:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                "Expected `base_url` to be an http(s) URL such as http://127.0.0.1:8000/v1 (several: comma-separated "
                f"or a list), but got {url!r}."
            )
    return list(dict.fromkeys(urls))


def http_library() -> Any:
    """The HTTP library the installed ``openai`` client is built on (``httpx``; ``httpx2`` in its 3.x)."""
    import importlib

    import openai

    return importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])


@functools.lru_cache(maxsize=1)
def response_type() -> type:
    """The raw response class of that library: ``cast_to`` it and the client returns the answer unparsed."""
    return http_library().Response


def http_client(timeout: float) -> Any:
    """The client's own HTTP client (its connection pool and limits) with Nagle's algorithm off, as uvicorn does
    on the server side: the library writes a request's headers and body separately, and on a kept-alive
    connection the body would otherwise wait for the server's delayed ACK (up to 40 ms a request, measured)."""
    import socket

    import openai

    library = http_library()
    transport = library.HTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        limits=library.Limits(max_connections=1000, max_keepalive_connections=100),  # the client's defaults
    )
    return openai.DefaultHttpxClient(transport=transport, timeout=timeout)


class Server:
    """One server of the judge's fleet: where it is, its client, what it is, and whether it answers."""

    def __init__(self, url: str, client: Any, azure: bool = False):
        self.url = url
        self.client = client  # openai.OpenAI (or AzureOpenAI) bound to this server, max_retries=0
        parsed = urllib.parse.urlsplit(url)
        # Where the model is served, without credentials that a URL could carry.
        self.endpoint = str(parsed.hostname) + (f":{parsed.port}" if parsed.port else "") + parsed.path
        # Servers' own routes (/version, /tokenize, …) sit beside /v1, not under it.
        self.root = url.removesuffix("/v1")
        self.is_openai = parsed.hostname == "api.openai.com" or azure
        self.info: ServerInfo | None = None
        if azure:
            self.info = ServerInfo("azure", "", "azure_endpoint")
        elif self.is_openai:
            self.info = ServerInfo("openai", "", "host api.openai.com")
        self.reached = False  # it has answered something (an HTTP error is an answer)
        self.failures = 0  # connection failures in a row

    @property
    def down(self) -> bool:
        return self.failures >= DOWN_AFTER


class RateGate:
    """A pause shared by every request of a judge: after a 429, or when OpenAI's ``x-ratelimit-remaining-*``
    headers say the requests or tokens of the current window are spent, no request is sent until the
    window resets (``x-ratelimit-reset-*``) — instead of every thread in flight drawing its own 429."""

    def __init__(self, scale: float = 1.0):
        self.scale = scale  # multiplies every pause (tests set it small, as ``retry_sleep_scale``)
        self.resume_at = 0.0
        self.paused = 0  # how many times a pause was set (tests and logs)
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self.resume_at = max(self.resume_at, time.monotonic() + seconds * self.scale)
            self.paused += 1

    def wait(self) -> None:
        """Wait until the window reopens."""
        left = self.resume_at - time.monotonic()
        if left > 0:
            time.sleep(left)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Read OpenAI's rate-limit headers of an answer; pause when a window is spent."""
        lower = {str(k).lower(): str(v) for k, v in headers.items() if str(k).lower().startswith("x-ratelimit")}
        for kind in ("requests", "tokens"):
            remaining = lower.get(f"x-ratelimit-remaining-{kind}")
            if remaining is None or not remaining.strip().isdigit() or int(remaining) > 0:
                continue
            reset = reset_seconds(lower.get(f"x-ratelimit-reset-{kind}", ""))
            if reset is not None:
                logger.info("rate limit: no %s left in this window; pausing %.2f s", kind, reset)
                self.pause(min(reset, MAX_RETRY_AFTER))


class Transport:
    """A fleet of servers behind one judge: round robin, retries to the next server, down-marking, OpenAI's
    rate limits, errors in one line. ``describe()`` names the judge in messages (its model may be learned
    after the transport is built)."""

    def __init__(
        self,
        servers: list[Server],
        describe: Callable[[], str],
        api_key: str | None,
        max_retries: int,
        retry_sleep_scale: float,
        counters: Any = None,
    ):
        self.servers = servers
        self.describe = describe
        self.api_key = api_key
        self.max_retries = max_retries
        self.retry_sleep_scale = retry_sleep_scale
        self.sleep: Callable[[float], None] = time.sleep  # replaceable in tests
        self.gate = RateGate(retry_sleep_scale)
        # Where retries are counted (the judge's usage: an object with a `retries` attribute).
        self.counters = counters if counters is not None else _Counters()
        self._lock = threading.Lock()
        # Round robin over the fleet; the process of rank r starts at server r, so processes spread too.
        self._turn = itertools.count(distributed.rank())

    # ----------------------------------------------------------------------------------- fleet
    def pick(self) -> Server:
        """The next server, round robin, passing over servers that are down while another is not."""
        with self._lock:
            start = next(self._turn)
            n = len(self.servers)
            for k in range(n):
                server = self.servers[(start + k) % n]
                if not server.down:
                    return server
            return self.servers[start % n]

    def _mark(self, server: Server, answered: bool) -> None:
        with self._lock:
            if answered:
                server.reached, server.failures = True, 0
            else:
                server.failures += 1

    @property
    def reached(self) -> bool:
        """Whether any server of the fleet ever answered."""
        return any(s.reached for s in self.servers)

    def scrub(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text

    # ------------------------------------------------------------------------------------ calls
    def chat(self, fields: dict, extra_body: dict | None = None, server: Server | None = None, **kw: Any) -> dict:
        """One chat completion, with retries; returns the decoded answer. ``fields``: OpenAI's own;
        ``extra_body``: the fields other servers define (vLLM's, SGLang's), in the client's ``extra_body`` slot.

        Sent through the client's request layer (``client.post("/chat/completions", …)``, as its README shows for
        any route: same authentication, base URL or Azure deployment URL, timeouts, error types) rather than the
        typed ``chat.completions.create``, whose parameter transformation costs ~0.5 ms of CPU per request, a
        third of the client's whole cost (measured: ``benchmarks/api_client_throughput.py``)."""
        options = {"extra_json": extra_body} if extra_body else {}

        def send(target: Server) -> tuple[bytes, Mapping[str, str]]:
            reply = target.client.post("/chat/completions", body=fields, options=options, cast_to=response_type())
            return reply.content, reply.headers

        return self.call(send, server=server, **kw)[0]

    def models(self, server: Server, once: bool = False) -> tuple[Any, Mapping[str, str]]:
        """``GET /v1/models``: the decoded listing and the answer's headers (they may say what the server is);
        ``once``: a single attempt."""

        def send(target: Server) -> tuple[bytes, Mapping[str, str]]:
            raw = target.client.models.with_raw_response.list()
            return raw.http_response.content, raw.http_response.headers

        return self.call(send, server=server, once=once)

    def post_root(self, path: str, body: dict, **kw: Any) -> Any:
        """``POST <server root><path>`` (a route beside ``/v1``, e.g. vLLM's ``/tokenize``), with retries."""

        def send(target: Server) -> tuple[bytes, Mapping[str, str]]:
            return target.client.post(target.root + path, body=body, cast_to=str).encode("utf-8"), {}

        return self.call(send, **kw)[0]

    def get_once(self, server: Server, path: str) -> Any:
        """The JSON of ``GET <root><path>`` once, or ``None`` (no such route, not JSON, no answer): how a
        server's kind is asked, where a 404 is an answer."""
        import openai

        try:
            text = server.client.with_options(timeout=10.0).get(server.root + path, cast_to=str)
            return json.loads(text) if isinstance(text, str) else text
        except (openai.APIError, ValueError):
            return None

    def call(
        self,
        send: Callable[[Server], tuple[bytes, Mapping[str, str]]],
        server: Server | None = None,
        client_errors: bool = True,
        once: bool = False,
    ) -> tuple[Any, Mapping[str, str]]:
        """``send(server)`` with retries: ``(decoded JSON answer, its headers)``. ``server``: that server
        only; default: the fleet, each attempt going to the next server. ``client_errors``: map a 4xx that
        retrying cannot fix to a one-line user error (else an :class:`APIError` with its status)."""
        import openai

        last = 0 if once else self.max_retries
        for attempt in range(last + 1):
            target = server or self.pick()
            headers: Mapping[str, str] = {}
            self.gate.wait()
            try:
                blob, headers = send(target)
                self._mark(target, answered=True)
                self.gate.observe(headers)
                try:
                    return json.loads(blob), headers
                except ValueError:  # a 200 that is not JSON (a proxy's page, a cut body): retried
                    problem = f"an answer that is not JSON: {self.scrub(blob[:200].decode('utf-8', 'replace'))!r}"
            except openai.APIStatusError as err:
                self._mark(target, answered=True)
                status, headers = err.status_code, err.response.headers
                text = self.scrub(_status_text(err))
                if status not in RETRY_STATUSES and status < 500:
                    if client_errors:
                        raise self.client_error(status, text, target) from None
                    raise APIError(f"{self.describe()} at {target.endpoint}: HTTP {status}: {text}", status) from None
                problem = f"HTTP {status}: {text}"
            # Timeouts, refused/reset connections, replies cut short: the client's APIConnectionError.
            except openai.APIConnectionError as err:
                self._mark(target, answered=False)
                problem = self.scrub(_connection_problem(err))
            # A server down (refused DOWN_AFTER times in a row) is not waited for: its requests fail fast
            # until it answers again; in a fleet the next attempt goes to another server.
            hopeless = target.down if server is not None else all(s.down for s in self.servers)
            if attempt == last or hopeless:
                where = f"{self.describe()} at {target.endpoint}"
                raise APIError(f"{where}: giving up after {attempt + 1} attempts; last error: {problem}")
            delay = retry_delay(headers, attempt)
            if isinstance(problem, str) and problem.startswith("HTTP 429"):
                self.gate.pause(delay)  # every request waits, not only this one
            with self._lock:
                self.counters.retries += 1
            logger.info("%s at %s: %s; retrying in %.2f s", self.describe(), target.endpoint, problem, delay)
            self.sleep(delay * self.retry_sleep_scale)
        raise AssertionError("unreachable")

    def client_error(self, status: int, text: str, server: Server) -> Exception:
        """A 4xx that retrying cannot fix: a user error (``ValueError``) when it is about the judge's setup,
        the same for every item (key, URL, model, the parameters it sends); otherwise an :class:`APIError`
        that fails only this item (a prompt too long for the model, an image it cannot read)."""
        where = f"{self.describe()} at {server.endpoint}"
        low = text.lower()
        if status == 400 and "logprobs" in low and "support" in low:
            return ValueError(
                f"{where} refuses log-probabilities (HTTP 400: {text}). Judging reads the rating "
                "distribution from logprobs: use a model that returns them (e.g. gpt-4o, gpt-4o-mini, gpt-4.1)."
            )
        if status in (401, 403):
            return ValueError(
                f"{where}: the server rejected the API key (HTTP {status}). Check the key's environment variable."
            )
        if status == 404:
            return ValueError(f"{where}: not found (HTTP 404: {text}). Check `base_url` and the model name.")
        if status in (400, 422) and any(p in low for p in SETUP_PARAMETERS):
            return ValueError(
                f"{where} rejects the request's parameters (HTTP {status}: {text}). Check the judge's options "
                "(top_logprobs against the server's --max-logprobs; prefill=, mass= against what the server supports)."
            )
        return APIError(f"{where}: HTTP {status}: {text}", status)

    def raise_for_credentials(self, err: APIError) -> None:
        if err.status in (401, 403, 404):
            raise self.client_error(err.status, str(err), self.servers[0]) from None


class _Counters:
    retries = 0


def _status_text(err: Any) -> str:
    """The server's own words of an error answer (its body, at most 500 characters)."""
    try:
        text = err.response.text
    except Exception:  # a streamed or closed body: the client's summary is all there is
        text = str(err)
    return str(text)[:500].strip()


def _connection_problem(err: BaseException) -> str:
    """A failed connection in one line, naming the cause the client wraps (``ConnectError: … refused``)."""
    cause = err.__cause__ or err.__context__
    if cause is not None and str(cause):
        return f"{type(err).__name__} ({type(cause).__name__}: {cause})"
    return f"{type(err).__name__}: {err}"


def build_transport(
    base_url: str | Sequence[str] | None,
    azure_endpoint: str | None,
    api_version: str | None,
    api_key_env: str | None,
    timeout: float,
    max_retries: int,
    retry_sleep_scale: float,
    describe: Callable[[], str],
    usage: Any,
) -> Transport:
    """The fleet's servers, each with its own official client (``max_retries=0``: the transport retries)."""
    try:
        import openai
    except ImportError:
        raise ModuleNotFoundError(
            "the openai judge sends through the official client: pip install 'mmjudge[api]' (or pip install openai)",
            name="openai",
        ) from None

    # Azure when its endpoint or API version is given; what is not given the client reads from its own
    # environment variables (AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION, AZURE_OPENAI_AD_TOKEN).
    azure = azure_endpoint is not None or api_version is not None
    env = api_key_env or ("AZURE_OPENAI_API_KEY" if azure else "OPENAI_API_KEY")
    key = os.environ.get(env) or None
    if azure:
        if base_url is not None:
            raise ValueError("Give either `base_url` or `azure_endpoint`, not both.")
        try:
            client = openai.AzureOpenAI(
                azure_endpoint=azure_endpoint,
                api_version=api_version,
                api_key=key,
                timeout=timeout,
                max_retries=0,
                http_client=http_client(timeout),
            )
        except openai.OpenAIError as err:
            raise ValueError(f"Azure OpenAI: {err}") from None
        servers = [Server(str(client.base_url).rstrip("/"), client, azure=True)]
    else:
        urls = parse_base_urls(base_url)
        if any(u.startswith(OPENAI_BASE_URL) for u in urls) and not key:
            raise ValueError(f"The OpenAI API needs a key: set the environment variable {env}.")
        # No key (a local server): the client needs one, so "EMPTY" is sent, as vLLM's docs do (servers started
        # without a key ignore it; one started with a key answers 401, which is one clear line).
        made = {"api_key": key or "EMPTY", "timeout": timeout, "max_retries": 0}
        servers = [Server(u, openai.OpenAI(base_url=u, http_client=http_client(timeout), **made)) for u in urls]
    return Transport(servers, describe, key, max_retries, retry_sleep_scale, counters=usage)
