"""Judges behind an OpenAI-compatible chat-completions server: OpenAI itself (``model="openai:gpt-4o"``),
vLLM, SGLang, llama.cpp's server, or ``mmjudge serve`` (any ``base_url``; several for a fleet).

What the server can do is read from the server, never from its model's skill: when the judge is built it
asks which kind of server answers (:mod:`mmjudge.judges.openai_servers`: a header or an endpoint of each
kind) and uses what that kind is known to support. Two choices follow, both recorded in cache keys and
signatures:

``prefill`` — how the rating position is reached:

* ``"continue"`` — the server continues the assistant's answer prefix (vLLM / SGLang / ``mmjudge serve``:
  ``continue_final_message=true`` + ``add_generation_prompt=false``), so the rating is read right after
  the same forced prefix the local backend uses (``teacher_forcing``); one token is asked.
* ``"none"`` — OpenAI and llama.cpp's servers cannot continue an assistant message: the judge asks for
  ``max_tokens`` (default 16) tokens and reads the distribution at the first generated token that is a
  rating (or, when none is, right after a generated ``"Score:"``).
* ``"auto"`` (default) — from the server's kind; only for a server of no known kind, a counting probe
  decides, and an answer that proves nothing is an error asking for ``prefill=``, never taken as "no".

``mass`` — what each rating's probability is:

* ``"exact"`` — the request names the rating tokens' ids (``logprob_token_ids``: vLLM since PR #43463,
  ``mmjudge serve``) and the server returns their full-vocabulary log-probabilities, so the distribution
  is the local backend's (``mass_exact=True``, signature ``mass=exact``). The ids come from the server's
  ``POST /tokenize`` of ``"3"`` and ``" 3"``, once per rating scale.
* ``"top-k"`` — ratings are read from ``top_logprobs`` (at most 20 on OpenAI): a rating outside the top k
  counts as 0 (OpenAI's −9999 log-prob also reads as 0), so :attr:`RatingResult.mass` is a lower bound
  (``mass_exact=False``).
* ``"auto"`` (default) — ``exact`` where the server has it, else ``top-k`` (``top-k`` without asking when
  ``model`` and ``prefill`` are given).

With ``model`` and ``prefill`` given the judge sends nothing when built, so a fully cached run replays with
the server down; ``mass="auto"`` then means ``top-k`` (the read every server supports): give ``mass="exact"``
for the exact read without asking.

A request that still fails after its retries (HTTP error, timeout, malformed answer) is a result with
``error`` set and no probabilities, never a number; it is not cached, so a re-run asks only for those. A
server that was never reached at all, a rejected key, a wrong model or URL, a model refusing log-probabilities
are errors of the run (one line from the CLI), not per-item data.

The API key comes from the environment (``OPENAI_API_KEY`` or the variable named by ``api_key_env``)
and is never written to cache keys, signatures, logs or error messages.

Reading one answer is :func:`mmjudge.judges.openai_reading.read_rating`. Given a model and a prefill mode,
building a judge asks nothing of its server (here, none is running):

>>> from mmjudge.judges.openai import OpenAIJudge
>>> judge = OpenAIJudge(model="Qwen/Qwen2.5-VL-7B-Instruct", base_url="http://127.0.0.1:9/v1", prefill="continue")
>>> judge.capabilities.teacher_forcing, judge.capabilities.full_distribution, judge.mass_mode
(True, False, 'top-k')
>>> judge.identity()["endpoint"], judge.identity()["top_logprobs"]
('127.0.0.1:9/v1', 20)
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import io
import itertools
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mmjudge import distributed
from mmjudge.errors import ServiceError
from mmjudge.judges.base import (
    Capabilities,
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
    ScoredToken,
)
from mmjudge.judges.batched import BatchedJudge
from mmjudge.judges.openai_reading import (  # noqa: F401  (re-exported: the backend's reading functions)
    LOGPROB_FLOOR,
    TOKEN_ID_PREFIX,
    _prob,
    bare_token,
    listed_choice_tokens,
    rating_position,
    read_rating,
)
from mmjudge.judges.openai_servers import ServerInfo, identify

logger = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
PREFILL_MODES = ("auto", "continue", "none")
RETRY_STATUSES = frozenset({408, 409, 429})  # and every status >= 500
MAX_RETRY_AFTER = 120.0  # seconds; longer server hints are capped (as the official client does)
MASS_MODES = ("auto", "exact", "top-k")
# Consecutive connection failures after which a server counts as down: its requests are tried once, not
# retried, until it answers again (a dead member of a fleet must not cost every request its full backoff).
DOWN_AFTER = 3
# A 4xx whose message names one of these is about the judge's setup (every item would fail alike), not an
# item: "logprob" covers logprobs, top_logprobs and logprob_token_ids. (max_tokens is not here: servers name
# it in context-length errors, which are an item's.)
SETUP_PARAMETERS = ("logprob", "continue_final_message", "add_generation_prompt", "return_tokens_as_token_ids")

# US$ per million tokens (input, output), OpenAI's list prices for the models named here (as of
# 2025); a model not listed gets token counts only. Data, not logic: extend as needed.
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o-mini-2024-07-18": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}


class APIError(ServiceError):
    """The server answered with an error that retrying does not fix (``status``: its HTTP status), or
    retries ran out (``status`` None). A :class:`~mmjudge.errors.ServiceError` (still a ``RuntimeError``),
    so the CLI answers it in one line: the fix is on the user's side (start the server, fix the URL)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def image_data_url(image: Any) -> str:
    """A PIL image as a lossless ``data:image/png;base64,…`` URL."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# Data URLs of recent images, by pixel digest: a metric sends one image in several requests (one per
# criterion), and PNG encoding + base64 of a large image costs more than the rest of the request.
# Small and bounded (a data URL can be megabytes); shared by the request threads, hence the lock.
DATA_URL_CACHE_SIZE = 32
_data_urls: OrderedDict[str, str] = OrderedDict()
_data_urls_lock = threading.Lock()


def request_image_url(request: RatingRequest) -> str:
    """:func:`image_data_url` of the request's image, encoded once per distinct ``image_digest``."""
    digest = request.image_digest
    with _data_urls_lock:
        url = _data_urls.get(digest) if digest else None
        if url is not None:
            _data_urls.move_to_end(digest)
            return url
    url = image_data_url(request.image)
    if digest:
        with _data_urls_lock:
            _data_urls[digest] = url
            while len(_data_urls) > DATA_URL_CACHE_SIZE:
                _data_urls.popitem(last=False)
    return url


def chat_messages(request: RatingRequest, prefix: bool) -> list[dict]:
    """OpenAI chat messages for ``request``: the image (if any) before the first user turn's text,
    and with ``prefix`` the answer prefix as a final assistant message to be continued."""
    messages: list[dict] = []
    for k, turn in enumerate(request.turns):
        if k == 0 and request.image is not None:
            content: Any = [
                {"type": "image_url", "image_url": {"url": request_image_url(request)}},
                {"type": "text", "text": turn.text},
            ]
        else:
            content = turn.text
        messages.append({"role": turn.role, "content": content})
    if prefix:
        messages.append({"role": "assistant", "content": request.answer_prefix})
    return messages


def retry_delay(headers: Mapping[str, str], attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): the server's ``retry-after-ms``, else
    ``Retry-After`` (seconds or an HTTP date), capped at 120 s; else exponential backoff with jitter.

    >>> retry_delay({"retry-after-ms": "250"}, 0), retry_delay({"Retry-After": "3"}, 0)
    (0.25, 3.0)
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


# ------------------------------------------------------------------------------------------ servers
def parse_base_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """The servers' ``…/v1`` URLs: one URL, several comma-separated in one string, or a list (a fleet);
    default OpenAI's. Order is kept and repeats are dropped.

    >>> parse_base_urls("http://10.0.0.1:8000/v1, http://10.0.0.2:8000/v1/")
    ['http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1']
    >>> parse_base_urls(None)
    ['https://api.openai.com/v1']
    >>> parse_base_urls("localhost:8000")
    Traceback (most recent call last):
    ValueError: Expected `base_url` to be an http(s) URL such as http://127.0.0.1:8000/v1 (several: comma-separated or a list), but got 'localhost:8000'.
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


class _Server:
    """One server of the judge's fleet: where it is, what it is, and whether it answers."""

    def __init__(self, url: str):
        self.url = url
        parsed = urllib.parse.urlsplit(url)
        # Where the model is served, without credentials that a URL could carry.
        self.endpoint = str(parsed.hostname) + (f":{parsed.port}" if parsed.port else "") + parsed.path
        # Servers' own routes (/version, /tokenize, …) sit beside /v1, not under it.
        self.root = url.removesuffix("/v1")
        self.is_openai = parsed.hostname == "api.openai.com"
        self.info: ServerInfo | None = ServerInfo("openai", "", "host api.openai.com") if self.is_openai else None
        self.reached = False  # it has answered something (an HTTP error is an answer)
        self.failures = 0  # connection failures in a row

    @property
    def down(self) -> bool:
        return self.failures >= DOWN_AFTER


# ------------------------------------------------------------------------------------------- usage
@dataclass
class Usage:
    """Tokens and requests paid for by this judge (cache hits cost nothing and are not counted; nor are the
    one or two small requests that identify the server when the judge is built)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    failed: int = 0

    def add(self, usage: Mapping[str, Any] | None) -> None:
        self.requests += 1
        if usage:
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)


# ------------------------------------------------------------------------------------------- judge
class OpenAIJudge(BatchedJudge):
    """A judge served over OpenAI-compatible chat completions.

    Args:
        model: ``"openai:NAME"`` or ``"NAME"``; with a ``base_url`` and no model, the server's only
            model (``GET /v1/models``).
        base_url: the server's ``…/v1`` URL (default OpenAI's); several (a list, or comma-separated) for a
            fleet serving one model: requests go round robin, each retry to the next server.
        prefill: ``"auto"``, ``"continue"`` or ``"none"`` (see the module docs).
        mass: ``"auto"``, ``"exact"`` or ``"top-k"`` (see the module docs).
        top_logprobs: tokens listed per position with ``mass="top-k"`` (OpenAI: at most 20; ``mmjudge serve
            --max-logprobs`` allows more).
        max_tokens: tokens asked for when the rating must be found in free generation (``prefill="none"``).
        max_concurrency: requests in flight at once in this process (over the whole fleet).
        max_retries: retries of one request on 408/409/429/5xx, timeouts and malformed answers.
        timeout: seconds per HTTP request.
        api_key_env: the environment variable holding the API key (default ``OPENAI_API_KEY``).
        retry_sleep_scale: multiplies every wait between retries (tests set it small).
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
        max_concurrency: int = 8,
        batch_size: int | None = None,
        max_retries: int = 5,
        timeout: float = 120.0,
        api_key_env: str = "OPENAI_API_KEY",
        retry_sleep_scale: float = 1.0,
    ):
        if prefill not in PREFILL_MODES:
            raise ValueError(f"Expected argument `prefill` to be one of {PREFILL_MODES}, but got {prefill!r}.")
        if mass not in MASS_MODES:
            raise ValueError(f"Expected argument `mass` to be one of {MASS_MODES}, but got {mass!r}.")
        if int(top_logprobs) < 1:
            raise ValueError(f"Expected argument `top_logprobs` to be a positive integer, but got {top_logprobs!r}.")
        if int(max_tokens) < 1 or int(max_concurrency) < 1 or int(max_retries) < 0:
            raise ValueError("Expected `max_tokens` and `max_concurrency` >= 1 and `max_retries` >= 0.")
        self.servers = [_Server(url) for url in parse_base_urls(base_url)]
        self.base_url = self.servers[0].url
        # Cache identity: the fleet's members, sorted, so neither their order nor which one answered matters.
        self.endpoint = ",".join(sorted(s.endpoint for s in self.servers))
        self.is_openai = all(s.is_openai for s in self.servers)
        self._api_key = os.environ.get(api_key_env) or None
        if any(s.is_openai for s in self.servers) and not self._api_key:
            raise ValueError(f"The OpenAI API needs a key: set the environment variable {api_key_env}.")
        self.top_logprobs = int(top_logprobs)
        self.max_tokens = int(max_tokens)
        self.max_concurrency = int(max_concurrency)
        self.batch_size = int(batch_size) if batch_size else 4 * self.max_concurrency
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.retry_sleep_scale = float(retry_sleep_scale)
        self.sleep: Callable[[float], None] = time.sleep  # replaceable in tests
        self.usage = Usage()
        self._lock = threading.Lock()
        # Round robin over the fleet; the process of rank r starts at server r, so processes spread too.
        self._turn = itertools.count(distributed.rank())
        self._choice_ids: dict[str, list[tuple[int, str]]] = {}
        self._choice_lock = threading.Lock()
        self._answered = False  # a readable rating answer has come back
        self.model_name = str(model or "").removeprefix("openai:")
        self.prefill, self.mass = prefill, mass
        # Settled here, once: capabilities are a value, never an HTTP call when read. With `model` and `prefill`
        # given nothing is asked of the server, so a fully cached run replays without it (the contract since
        # prefill= exists): `mass="auto"` is then the read every server supports, top-k, unless `mass` is given.
        quiet = bool(self.model_name) and prefill != "auto"
        if quiet and mass == "auto":
            mass = "top-k"
        self._identify(need_kind=(prefill == "auto" or mass == "auto") and not self.is_openai)
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
        logger.info(
            "%s: %s -> prefill=%s, mass=%s",
            self.describe(),
            "; ".join(s.info.describe() for s in self.servers if s.info) or "not identified (given)",
            self.prefill_mode,
            self.mass_mode,
        )

    def identity(self) -> dict:
        # Never the API key, nor which server of a fleet answered. The endpoint keeps two servers' answers
        # apart; the prefill and mass modes change what is read; top_logprobs only matters for a top-k read,
        # max_tokens only when the rating is searched for.
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
        fields = {"judge": f"{self.backend}:{name}", "prefill": self.prefill_mode}
        if self.mass_mode != "exact":  # an exact read does not depend on how many tokens a top-k list holds
            fields["top_logprobs"] = self.top_logprobs
        return fields

    def describe(self) -> str:
        return f"{self.backend}:{getattr(self, 'model_name', '') or '?'}"

    # ------------------------------------------------------------------------------ what serves it
    def _identify(self, need_kind: bool) -> None:
        """``GET /v1/models`` of each server when the model or the server's kind is needed: the model's name
        (each server's only one, the same across a fleet) and, from the answer and kind-specific routes,
        what each server is (:func:`mmjudge.judges.openai_servers.identify`)."""
        if self.model_name and not need_kind:
            return
        names: list[list[str]] = []
        for server in self.servers:
            listing, headers = self._http("GET", "/models", server=server)
            names.append([str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict) and m.get("id")])
            if need_kind and server.info is None:
                server.info = identify(lambda path, s=server: self._get_json(s, path), headers, listing)
        if not self.model_name:
            where = ", ".join(s.endpoint for s in self.servers)
            if any(len(n) != 1 for n in names):
                served = sorted({x for n in names for x in n})
                raise ValueError(
                    f"The server at {where} serves {len(served)} models ({', '.join(served)}): pass `model=`."
                )
            if len({n[0] for n in names}) > 1:
                raise ValueError(
                    f"The servers {where} serve different models ({', '.join(n[0] for n in names)}); a fleet must serve one."
                )
            self.model_name = names[0][0]

    def _get_json(self, server: _Server, path: str) -> Any:
        """The JSON of ``GET <root><path>`` once, or ``None`` (no such route, not JSON, no answer)."""
        request = urllib.request.Request(server.root + path, method="GET", headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=min(self.timeout, 10.0)) as reply:
                return json.loads(reply.read().decode("utf-8"))
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def _settle_prefill(self) -> str:
        """``continue`` when every server of the fleet continues an assistant message, else ``none`` (a fleet
        reads every rating one way). Only a server of no known kind is asked (:meth:`_probe_prefill`)."""
        every = self._every_server("continues", lambda server: self._probe_prefill(server) == "continue")
        return "continue" if every else "none"

    def _settle_mass(self) -> str:
        """``exact`` when every server returns the log-probabilities of chosen token ids, else ``top-k``."""
        return "exact" if self._every_server("choice_logprobs", self._probe_choice_logprobs) else "top-k"

    def _every_server(self, fact: str, probe: Callable[[_Server], bool]) -> bool:
        """Whether every server of the fleet has ``fact`` (a :class:`ServerInfo` field): what its kind is known
        to do, else what ``probe`` finds. Every server unknown is probed, even once one says no."""
        verdicts = []
        for server in self.servers:
            known = getattr(server.info, fact) if server.info is not None else None
            verdicts.append(known if known is not None else probe(server))
        return all(verdicts)

    def _probe_prefill(self, server: _Server) -> str:
        """For a server of no known kind, the last resort: does it continue a final assistant message? A
        counting sequence continues with " 8" when continued. A refusal of the fields means no; an accepted
        request whose model does not count on proves nothing either way, so it is an error asking for
        ``prefill=``, never read as "no" (a weak model would silently lose the forced prefix)."""
        messages = [
            {"role": "user", "content": "Count from 1 to 20, separated by commas."},
            {"role": "assistant", "content": "1, 2, 3, 4, 5, 6, 7,"},
        ]
        body = {
            "model": self.model_name,
            "messages": messages,
            "temperature": 0,
            "max_tokens": 3,
            "continue_final_message": True,
            "add_generation_prompt": False,
        }
        try:
            answer, _ = self._http("POST", "/chat/completions", body, server=server, client_errors=False)
        except APIError as err:
            if err.status is None:
                raise  # unreachable or failing: that says nothing about continuation
            self._raise_for_credentials(err)
            logger.info(
                "%s at %s: no assistant continuation (%s); reading the first generated rating.",
                self.describe(),
                server.endpoint,
                err,
            )
            return "none"
        choices = answer.get("choices") or [{}]
        text = str((choices[0].get("message") or {}).get("content") or "")
        if text.lstrip().startswith("8"):
            return "continue"
        raise ValueError(
            f"Cannot tell whether the server at {server.endpoint} ({server.info.describe() if server.info else 'unknown'}) "
            f"continues an assistant message: it accepted continue_final_message, but its model answered {text!r} to a "
            "counting prompt, which proves neither. Pass prefill='continue' if the server implements vLLM's "
            "continue_final_message, else prefill='none'."
        )

    def _probe_choice_logprobs(self, server: _Server) -> bool:
        """Does the server list the log-probabilities of the token ids a request names (vLLM's
        ``logprob_token_ids``)? One one-token request naming ids 0 and 1, spelled ``token_id:N``
        (``return_tokens_as_token_ids``): both listed means yes; ignored or refused means no."""
        body = {
            "model": self.model_name,
            "messages": [{"role": "user", "content": "Hi"}],
            "temperature": 0,
            "max_tokens": 1,
            "logprobs": True,
            "logprob_token_ids": [0, 1],
            "return_tokens_as_token_ids": True,
        }
        try:
            answer, _ = self._http("POST", "/chat/completions", body, server=server, client_errors=False)
        except APIError as err:
            if err.status is None:
                raise
            self._raise_for_credentials(err)
            return False
        choices = answer.get("choices") or [{}]
        content = (choices[0].get("logprobs") or {}).get("content") or [{}]
        listed = {str(t.get("token")) for t in content[0].get("top_logprobs") or [] if isinstance(t, dict)}
        return {f"{TOKEN_ID_PREFIX}0", f"{TOKEN_ID_PREFIX}1"} <= listed

    def _raise_for_credentials(self, err: APIError) -> None:
        if err.status in (401, 403, 404):
            raise self._client_error(err.status, str(err), self.servers[0]) from None

    # -------------------------------------------------------------------------------------- HTTP
    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _pick(self) -> _Server:
        """The next server, round robin, passing over servers that are down while another is not."""
        with self._lock:
            start = next(self._turn)
            n = len(self.servers)
            for k in range(n):
                server = self.servers[(start + k) % n]
                if not server.down:
                    return server
            return self.servers[start % n]

    def _mark(self, server: _Server, answered: bool) -> None:
        with self._lock:
            if answered:
                server.reached, server.failures = True, 0
            else:
                server.failures += 1

    def _http(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        server: _Server | None = None,
        root: bool = False,
        client_errors: bool = True,
    ) -> tuple[dict, dict]:
        """One call with retries: ``(decoded JSON answer, its headers)``. ``server``: that server only;
        default: the fleet, each attempt going to the next server. ``root``: a path beside ``/v1``.
        ``client_errors``: map a 4xx that retrying cannot fix to a one-line user error (else an
        :class:`APIError` with its status)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            target = server or self._pick()
            url = (target.root if root else target.url) + path
            request = urllib.request.Request(url, data=data, method=method, headers=self._headers())
            headers: Mapping[str, str] = {}
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                    blob, reply_headers = reply.read(), dict(reply.headers or {})
                self._mark(target, answered=True)
                try:
                    return json.loads(blob.decode("utf-8")), reply_headers
                except ValueError:  # a 200 that is not JSON (a proxy's page, a cut body): retried
                    problem = f"an answer that is not JSON: {self._scrub(blob[:200].decode('utf-8', 'replace'))!r}"
            except urllib.error.HTTPError as err:
                self._mark(target, answered=True)
                text = self._scrub(err.read().decode("utf-8", "replace")[:500])
                status = err.code
                headers = dict(err.headers or {})
                if status not in RETRY_STATUSES and status < 500:
                    if client_errors:
                        raise self._client_error(status, text, target) from None
                    raise APIError(
                        f"{self.describe()} at {target.endpoint}: HTTP {status}: {text.strip()}", status
                    ) from None
                problem = f"HTTP {status}: {text}"
            # OSError: socket timeouts, refused/reset connections (URLError too); HTTPException: a reply
            # cut short (IncompleteRead) or malformed (BadStatusLine), which is not an OSError.
            except (OSError, http.client.HTTPException) as err:
                self._mark(target, answered=False)
                problem = self._scrub(f"{type(err).__name__}: {getattr(err, 'reason', err)}")
            # A server down (refused DOWN_AFTER times in a row) is not waited for: its requests fail fast
            # until it answers again; in a fleet the next attempt goes to another server.
            hopeless = target.down if server is not None else all(s.down for s in self.servers)
            if attempt == self.max_retries or hopeless:
                raise APIError(
                    f"{self.describe()} at {target.endpoint}: giving up after {attempt + 1} attempts; last error: {problem}"
                )
            delay = retry_delay(headers, attempt) * self.retry_sleep_scale
            with self._lock:
                self.usage.retries += 1
            logger.info("%s at %s: %s; retrying in %.2f s", self.describe(), target.endpoint, problem, delay)
            self.sleep(delay)
        raise AssertionError("unreachable")

    def _client_error(self, status: int, text: str, server: _Server) -> Exception:
        """A 4xx that retrying cannot fix: a user error (``ValueError``) when it is about the judge's setup,
        the same for every item (key, URL, model, the parameters it sends); otherwise an :class:`APIError`
        that fails only this item (a prompt too long for the model, an image it cannot read)."""
        where = f"{self.describe()} at {server.endpoint}"
        low = text.lower()
        if status == 400 and "logprobs" in low and "support" in low:
            return ValueError(
                f"{where} refuses log-probabilities (HTTP 400: {text.strip()}). Judging reads the rating "
                "distribution from logprobs: use a model that returns them (e.g. gpt-4o, gpt-4o-mini, gpt-4.1)."
            )
        if status in (401, 403):
            return ValueError(
                f"{where}: the server rejected the API key (HTTP {status}). Check the key's environment variable."
            )
        if status == 404:
            return ValueError(f"{where}: not found (HTTP 404: {text.strip()}). Check `base_url` and the model name.")
        if status in (400, 422) and any(p in low for p in SETUP_PARAMETERS):
            return ValueError(
                f"{where} rejects the request's parameters (HTTP {status}: {text.strip()}). Check the judge's options "
                "(top_logprobs against the server's --max-logprobs; prefill=, mass= against what the server supports)."
            )
        return APIError(f"{where}: HTTP {status}: {text.strip()}", status)

    def chat(self, messages: list[dict], **fields: Any) -> dict:
        """One chat completion (temperature 0), usage counted; the fleet's next server answers."""
        body = {"model": self.model_name, "messages": messages, "temperature": 0, **fields}
        answer, _ = self._http("POST", "/chat/completions", body)
        with self._lock:
            self.usage.add(answer.get("usage") if isinstance(answer, dict) else None)
        if not isinstance(answer, dict) or not answer.get("choices"):
            raise APIError(f"{self.describe()}: an answer without choices: {self._scrub(str(answer)[:300])}")
        return answer

    # ------------------------------------------------------------------------------ rating token ids
    def choice_token_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """For each choice, the server tokenizer's ids that spell it: the single token ``POST /tokenize``
        (vLLM's route, ``mmjudge serve``'s too) gives for ``"3"`` and for ``" 3"`` (with its token string,
        the last token when it spells the choice). Asked once per choice string, when first needed, so a
        cached run asks nothing."""
        out = []
        for choice in (str(c) for c in choices):
            # One thread tokenizes, the others wait for its answer (the request threads all start at once).
            with self._choice_lock:
                known = self._choice_ids.get(choice)
                if known is None:
                    known = self._choice_ids[choice] = self._tokenize_choice(choice)
            out.append([i for i, _ in known])
        owner: dict[int, str] = {}
        for choice, ids in zip(choices, out):
            for token_id in ids:
                if owner.setdefault(token_id, str(choice)) != str(choice):
                    raise ValueError(
                        f"Ratings {owner[token_id]!r} and {choice!r} share token id {token_id} on {self.describe()}."
                    )
        return out

    def _tokenize_choice(self, choice: str) -> list[tuple[int, str]]:
        found: dict[int, str] = {}
        for text in (choice, " " + choice):
            body = {"model": self.model_name, "prompt": text, "add_special_tokens": False, "return_token_strs": True}
            try:
                answer, _ = self._http("POST", "/tokenize", body, root=True, client_errors=False)
            except APIError as err:
                if err.status is None:
                    raise
                raise ValueError(
                    f"{self.describe()} at {self.endpoint}: mass='exact' needs the server's POST /tokenize (vLLM, mmjudge "
                    f"serve), which answered HTTP {err.status}. Use mass='top-k'."
                ) from None
            tokens = [int(t) for t in answer.get("tokens") or []]
            strings = answer.get("token_strs") or []
            if len(tokens) == 1:
                found.setdefault(tokens[0], text)
            elif tokens and len(strings) == len(tokens) and bare_token(str(strings[-1])) == choice.strip():
                found.setdefault(tokens[-1], str(strings[-1]))
        if not found:
            raise ValueError(
                f"The rating {choice!r} is not a single token of {self.describe()}'s tokenizer, so its probability cannot "
                "be read at one position. Use a scale whose ratings are single tokens."
            )
        return sorted(found.items())

    # ------------------------------------------------------------------------------------ answering
    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        results = super().rate(requests, progress=progress, on_batch=on_batch)
        failed = [r for r in results if r.error is not None]
        if failed:
            logger.warning(
                "%s: %d of %d ratings failed and carry no score (first: %s); they are not cached, so a "
                "re-run asks only for them.",
                self.describe(),
                len(failed),
                len(results),
                failed[0].error,
            )
        return results

    def _rate_one(self, request: RatingRequest) -> RatingResult:
        choices = [str(c) for c in request.choices]
        exact = self.mass_mode == "exact"
        if self.prefill_mode == "continue":
            fields: dict[str, Any] = dict(max_tokens=1, continue_final_message=True, add_generation_prompt=False)
            messages = chat_messages(request, prefix=True)
        else:
            fields = dict(max_tokens=self.max_tokens)
            messages = chat_messages(request, prefix=False)
        id_choices: dict[int, int] | None = None
        try:
            if exact:  # a user error (a rating that is not one token, no /tokenize) stops the run: it is every item's
                ids = self.choice_token_ids(choices)
                id_choices = {token_id: k for k, group in enumerate(ids) for token_id in group}
                fields.update(logprobs=True, logprob_token_ids=sorted(id_choices))
            else:
                fields.update(logprobs=True, top_logprobs=self.top_logprobs)
            answer = self.chat(messages, **fields)
        except APIError as err:
            if not any(s.reached for s in self.servers):
                raise  # no server ever answered: a wrong URL or a server not started, not a per-item failure
            return self._failed(choices, str(err))
        try:
            content = (answer["choices"][0].get("logprobs") or {}).get("content")
        except (AttributeError, TypeError):
            content = None
        if not isinstance(content, list):
            problem = (
                f"{self.describe()} answered without `logprobs.content`; the server must return log-probabilities "
                "in chat completions (llama.cpp: start it with --logits_all true)."
            )
            if not self._answered:
                raise ValueError(problem)  # the first answer already lacks them: the server's setup, not an item
            return self._failed(choices, problem)
        first = self.prefill_mode == "continue"
        try:
            result = read_rating(content, choices, first_position=first, exact=exact, id_choices=id_choices)
        except (AttributeError, TypeError, ValueError) as err:  # entries that are not {token, logprob} objects
            return self._failed(
                choices, f"{self.describe()}: a malformed logprobs answer ({type(err).__name__}: {err})"
            )
        if exact and id_choices:
            position = 0 if first else rating_position(content, choices, id_choices)
            if position is not None and listed_choice_tokens(content[position], choices, id_choices) < len(id_choices):
                raise ValueError(
                    f"{self.describe()} ignored logprob_token_ids (mass='exact'): its answer lists fewer rating tokens than "
                    "were named. It needs vLLM with PR #43463 or mmjudge serve; use mass='auto' or 'top-k'."
                )
        self._answered = True
        return result

    def _failed(self, choices: Sequence[str], why: str) -> RatingResult:
        with self._lock:
            self.usage.failed += 1
        logger.info("rating failed: %s", why)
        return RatingResult(raw=[0.0] * len(choices), greedy="", mass_exact=self.capabilities.exact_mass, error=why)

    def _map(self, fn: Callable, requests: Sequence) -> list:
        if len(requests) <= 1 or self.max_concurrency == 1:
            return [fn(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(fn, requests))

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        return self._map(self._rate_one, requests)

    def _generate_one(self, request: GenerationRequest) -> str:
        # A failed generation raises (APIError): a string has no `error` to carry, and an empty explanation
        # must not be cached as if the model had written it.
        prefix = bool(request.answer_prefix) and self.prefill_mode == "continue"
        fields = dict(continue_final_message=True, add_generation_prompt=False) if prefix else {}
        answer = self.chat(chat_messages(request, prefix=prefix), max_tokens=request.max_new_tokens, **fields)
        return str(answer["choices"][0].get("message", {}).get("content") or "").strip()

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return self._map(self._generate_one, requests)

    def _generate_scored_one(self, request: ScoredGenerationRequest) -> ScoredText:
        # A failed request is an answer with `error` (never cached, asked again next run), as for ratings.
        top = min(int(request.top_logprobs), self.top_logprobs)
        try:
            answer = self.chat(
                chat_messages(request, prefix=False),
                max_tokens=request.max_new_tokens,
                logprobs=True,
                top_logprobs=top,
            )
        except APIError as err:
            if not any(s.reached for s in self.servers):
                raise
            with self._lock:
                self.usage.failed += 1
            return ScoredText("", [], error=str(err))
        choice = answer["choices"][0]
        content = (choice.get("logprobs") or {}).get("content") if isinstance(choice, dict) else None
        if not isinstance(content, list):
            problem = (
                f"{self.describe()} answered without `logprobs.content`; the server must return log-probabilities "
                "in chat completions (llama.cpp: start it with --logits_all true)."
            )
            if not self._answered:
                raise ValueError(problem)
            return ScoredText("", [], error=problem)
        tokens = []
        for entry in content:
            listed = entry.get("top_logprobs") or [entry]
            tops = [(str(t.get("token", "")), _prob(t)) for t in listed if isinstance(t, dict)]
            tokens.append(ScoredToken(str(entry.get("token", "")), tops))
        self._answered = True
        return ScoredText("".join(t.token for t in tokens), tokens)

    def _generate_scored_batch(self, requests: Sequence[ScoredGenerationRequest]) -> list[ScoredText]:
        return self._map(self._generate_scored_one, requests)

    # ---------------------------------------------------------------------------------------- cost
    def usage_summary(self) -> str:
        """One line: requests, tokens and (for models with a known price) the cost in US$."""
        u = self.usage
        line = (
            f"{self.describe()}: {u.requests} requests, {u.prompt_tokens} prompt + {u.completion_tokens} "
            f"completion tokens, {u.retries} retries"
        )
        if u.failed:
            line += f", {u.failed} failed (no score, not cached)"
        price = PRICES_PER_MILLION.get(self.model_name)
        if price is not None:
            cost = (u.prompt_tokens * price[0] + u.completion_tokens * price[1]) / 1e6
            line += f", about ${cost:.4f} at list prices"
        return line
