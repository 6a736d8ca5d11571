"""Judges behind an OpenAI-compatible chat-completions server: OpenAI itself (``model="openai:gpt-4o"``),
vLLM, SGLang, llama.cpp's server, or ``mmjudge serve`` (any ``base_url``).

Ratings are read from ``choices[0].logprobs.content[i].top_logprobs`` (at most ``top_logprobs``
tokens per position; OpenAI allows 20). Two ways to reach the rating position (``prefill``):

* ``"continue"`` — the server continues the assistant's answer prefix (vLLM / SGLang / ``mmjudge
  serve``: ``continue_final_message=true`` + ``add_generation_prompt=false``), so the rating is read
  right after the same forced prefix the local backend uses (``teacher_forcing``); one token is asked.
* ``"none"`` — OpenAI and llama.cpp's server cannot continue an assistant message: the judge asks for
  ``max_tokens`` (default 16) tokens and reads the distribution at the first generated token that is a
  rating (or, when none is, right after a generated ``"Score:"``).
* ``"auto"`` (default) — one small probe request decides between the two (recorded in cache keys and
  signatures).

Either way only the top-k tokens are seen: a rating outside them counts as 0 (OpenAI's −9999 log-prob
also reads as 0), so :attr:`RatingResult.mass` is a lower bound (``mass_exact=False``).

The API key comes from the environment (``OPENAI_API_KEY`` or the variable named by ``api_key_env``)
and is never written to cache keys, signatures, logs or error messages.

>>> from mmjudge.judges.openai import read_rating
>>> content = [{"token": "Score", "top_logprobs": [{"token": "Score", "logprob": 0.0}]},
...            {"token": ":", "top_logprobs": [{"token": ":", "logprob": 0.0}]},
...            {"token": " 4", "top_logprobs": [{"token": " 4", "logprob": -0.2231435513},
...                                             {"token": "5", "logprob": -1.6094379124},
...                                             {"token": "1", "logprob": -9999.0}]}]
>>> r = read_rating(content, ["1", "2", "3", "4", "5"], first_position=False)
>>> [round(x, 6) for x in r.raw], r.greedy, r.mass_exact
([0.0, 0.0, 0.0, 0.8, 0.2], ' 4', False)
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import io
import json
import logging
import math
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from mmjudge.errors import ServiceError
from mmjudge.judges.base import Capabilities, GenerationRequest, RatingRequest, RatingResult
from mmjudge.judges.batched import BatchedJudge

logger = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
PREFILL_MODES = ("auto", "continue", "none")
RETRY_STATUSES = frozenset({408, 409, 429})  # and every status >= 500
MAX_RETRY_AFTER = 120.0  # seconds; longer server hints are capped (as the official client does)
LOGPROB_FLOOR = -9999.0  # OpenAI's "not in the top k" value

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

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------------------ parsing
def _prob(entry: Mapping[str, Any]) -> float:
    logprob = float(entry.get("logprob", LOGPROB_FLOOR))
    return 0.0 if logprob <= LOGPROB_FLOOR or not math.isfinite(logprob) else math.exp(logprob)


def _choice_of(token: str, choices: Sequence[str]) -> Optional[int]:
    bare = str(token).strip()
    for i, choice in enumerate(choices):
        if bare == str(choice).strip():
            return i
    return None


def rating_position(content: Sequence[Mapping[str, Any]], choices: Sequence[str]) -> Optional[int]:
    """Index of the generated position to read: the first whose token is a whole rating; else the
    position right after a generated ``"Score:"``; else ``None`` (the rating is absent, or split over
    several tokens so no single position holds it).

    >>> toks = lambda *t: [{"token": x, "top_logprobs": []} for x in t]
    >>> rating_position(toks("Your", " evaluation", " score", " is", " 5", "."), ["1", "2", "3", "4", "5"])
    4
    >>> rating_position(toks("Score", ":", " ", "1", "0"), ["10", "20"])
    2
    >>> rating_position(toks("I", " cannot"), ["1", "2"]) is None
    True
    """
    for i, entry in enumerate(content):
        if _choice_of(entry.get("token", ""), choices) is not None:
            return i
    text = ""
    for i, entry in enumerate(content):
        if text.rstrip().lower().endswith("score:"):
            return i
        text += str(entry.get("token", ""))
    return None


def read_rating(content: Sequence[Mapping[str, Any]], choices: Sequence[str], first_position: bool) -> RatingResult:
    """The rating distribution in one chat-completions ``logprobs.content`` list.

    ``first_position``: read position 0 (the server continued the forced prefix); otherwise the
    position :func:`rating_position` finds. Each rating's probability sums every top-k token that
    spells it (``"4"``, ``" 4"``); ratings outside the top k are 0 (a lower bound of the mass). With
    no position to read, every rating is 0 and ``greedy`` holds the generated text."""
    choices = [str(c) for c in choices]
    position = (0 if content else None) if first_position else rating_position(content, choices)
    if position is None:
        return RatingResult(raw=[0.0] * len(choices), greedy="".join(str(e.get("token", "")) for e in content),
                            mass_exact=False)  # fmt: skip
    entry = content[position]
    raw = [0.0] * len(choices)
    tops = entry.get("top_logprobs") or [{"token": entry.get("token", ""), "logprob": entry.get("logprob", LOGPROB_FLOOR)}]
    seen: set[str] = set()
    for top in tops:
        token = str(top.get("token", ""))
        if token in seen:  # a server listing one token twice must not count it twice
            continue
        seen.add(token)
        k = _choice_of(token, choices)
        if k is not None:
            raw[k] += _prob(top)
    return RatingResult(raw=raw, greedy=str(entry.get("token", "")), mass_exact=False)


def image_data_url(image: Any) -> str:
    """A PIL image as a lossless ``data:image/png;base64,…`` URL."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# Data URLs of recent images, by pixel digest: a metric sends one image in several requests (one per
# criterion), and PNG encoding + base64 of a large image costs more than the rest of the request.
# Small and bounded (a data URL can be megabytes); shared by the request threads, hence the lock.
DATA_URL_CACHE_SIZE = 32
_data_urls: "OrderedDict[str, str]" = OrderedDict()
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


# ------------------------------------------------------------------------------------------- usage
@dataclass
class Usage:
    """Tokens and requests paid for by this judge (cache hits cost nothing and are not counted)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0

    def add(self, usage: Optional[Mapping[str, Any]]) -> None:
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
        base_url: the server's ``…/v1`` URL (default OpenAI's).
        prefill: ``"auto"``, ``"continue"`` or ``"none"`` (see the module docs).
        top_logprobs: tokens listed per position (OpenAI: at most 20; ``mmjudge serve --max-logprobs``
            allows more).
        max_tokens: tokens asked for when the rating must be found in free generation (``prefill="none"``).
        max_concurrency: requests in flight at once.
        max_retries: retries of one request on 408/409/429/5xx and timeouts.
        timeout: seconds per HTTP request.
        api_key_env: the environment variable holding the API key (default ``OPENAI_API_KEY``).
        retry_sleep_scale: multiplies every wait between retries (tests set it small).
    """

    backend = "openai"

    def __init__(
        self,
        model: Optional[str] = None,
        base_url: Optional[str] = None,
        prefill: str = "auto",
        top_logprobs: int = 20,
        max_tokens: int = 16,
        max_concurrency: int = 8,
        batch_size: Optional[int] = None,
        max_retries: int = 5,
        timeout: float = 120.0,
        api_key_env: str = "OPENAI_API_KEY",
        retry_sleep_scale: float = 1.0,
    ):
        if prefill not in PREFILL_MODES:
            raise ValueError(f"Expected argument `prefill` to be one of {PREFILL_MODES}, but got {prefill!r}.")
        if int(top_logprobs) < 1:
            raise ValueError(f"Expected argument `top_logprobs` to be a positive integer, but got {top_logprobs!r}.")
        if int(max_tokens) < 1 or int(max_concurrency) < 1 or int(max_retries) < 0:
            raise ValueError("Expected `max_tokens` and `max_concurrency` >= 1 and `max_retries` >= 0.")
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"Expected `base_url` to be an http(s) URL such as http://127.0.0.1:8000/v1, but got {base_url!r}.")
        # Cache identity: where the model is served, without credentials that a URL could carry.
        self.endpoint = parsed.hostname + (f":{parsed.port}" if parsed.port else "") + parsed.path
        self.is_openai = parsed.hostname == "api.openai.com"
        self._api_key = os.environ.get(api_key_env) or None
        if self.is_openai and not self._api_key:
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
        self._usage_lock = threading.Lock()
        name = str(model) if model else ""
        name = name.removeprefix("openai:")
        self.model_name = name or self._only_model()
        self.prefill = prefill
        # Settled here, once: capabilities are a value, never an HTTP call when read. With an explicit
        # `prefill` (and `model`) nothing is asked of the server, so a fully cached run replays without it.
        self.prefill_mode = prefill if prefill != "auto" else self._probe_prefill()
        self.capabilities = Capabilities(teacher_forcing=self.prefill_mode == "continue", full_distribution=False,
                                         reads_prefix_steps=False, can_generate=True)  # fmt: skip

    def identity(self) -> dict:
        # Never the API key. The endpoint keeps two servers' answers apart; top_logprobs and the
        # prefill mode change what is read; max_tokens only matters when the rating is searched for.
        ident = {
            "backend": self.backend,
            "endpoint": self.endpoint,
            "model": self.model_name,
            "prefill": self.prefill_mode,
            "top_logprobs": self.top_logprobs,
        }
        if self.prefill_mode == "none":
            ident["max_tokens"] = self.max_tokens
        return ident

    def signature_fields(self) -> dict[str, Any]:
        # Some servers (llama.cpp without --model_alias) name the model by its local path: keep the file name.
        name = os.path.basename(self.model_name) if os.path.isabs(self.model_name) else self.model_name
        return {"judge": f"{self.backend}:{name}", "prefill": self.prefill_mode, "top_logprobs": self.top_logprobs}

    def describe(self) -> str:
        return f"{self.backend}:{getattr(self, 'model_name', '') or '?'}"

    # -------------------------------------------------------------------------------------- HTTP
    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _http(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        """One call with retries; returns the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        url = self.base_url + path
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=self._headers())
            headers: Mapping[str, str] = {}
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                    return json.loads(reply.read().decode("utf-8"))
            except urllib.error.HTTPError as err:
                text = self._scrub(err.read().decode("utf-8", "replace")[:500])
                status = err.code
                headers = dict(err.headers or {})
                if status not in RETRY_STATUSES and status < 500:
                    raise self._client_error(status, text) from None
                problem = f"HTTP {status}: {text}"
            # OSError: socket timeouts, refused/reset connections (URLError too); HTTPException: a reply
            # cut short (IncompleteRead) or malformed (BadStatusLine), which is not an OSError.
            except (OSError, http.client.HTTPException) as err:
                problem = self._scrub(f"{type(err).__name__}: {getattr(err, 'reason', err)}")
            if attempt == self.max_retries:
                raise APIError(f"{self.describe()} at {self.endpoint}: giving up after {attempt + 1} attempts; last error: {problem}")
            delay = retry_delay(headers, attempt) * self.retry_sleep_scale
            with self._usage_lock:
                self.usage.retries += 1
            logger.info("%s: %s; retrying in %.2f s", self.describe(), problem, delay)
            self.sleep(delay)
        raise AssertionError("unreachable")

    def _client_error(self, status: int, text: str) -> Exception:
        where = f"{self.describe()} at {self.endpoint}"
        if status == 400 and "logprobs" in text.lower():
            return ValueError(
                f"{where} refuses log-probabilities (HTTP 400: {text.strip()}). Judging reads the rating "
                "distribution from logprobs: use a model that returns them (e.g. gpt-4o, gpt-4o-mini, gpt-4.1)."
            )
        if status in (401, 403):
            return ValueError(f"{where}: the server rejected the API key (HTTP {status}). Check the key's environment variable.")
        if status == 404:
            return ValueError(f"{where}: not found (HTTP 404: {text.strip()}). Check `base_url` and the model name.")
        return APIError(f"{where}: HTTP {status}: {text.strip()}", status)

    def _only_model(self) -> str:
        listing = self._http("GET", "/models")
        names = [m.get("id") for m in listing.get("data", []) if m.get("id")]
        if len(names) != 1:
            raise ValueError(f"The server at {self.endpoint} serves {len(names)} models ({', '.join(names)}): pass `model=`.")
        return str(names[0])

    def chat(self, messages: list[dict], **fields: Any) -> dict:
        """One chat completion (temperature 0), usage counted."""
        body = {"model": self.model_name, "messages": messages, "temperature": 0, **fields}
        answer = self._http("POST", "/chat/completions", body)
        with self._usage_lock:
            self.usage.add(answer.get("usage"))
        if not answer.get("choices"):
            raise APIError(f"{self.describe()} at {self.endpoint}: an answer without choices: {str(answer)[:300]}")
        return answer

    def _probe_prefill(self) -> str:
        """Does the server continue a final assistant message? Asked once: a counting sequence whose
        continuation is " 8" when continued and a fresh answer otherwise."""
        if self.is_openai:
            return "none"
        messages = [
            {"role": "user", "content": "Count from 1 to 20, separated by commas."},
            {"role": "assistant", "content": "1, 2, 3, 4, 5, 6, 7,"},
        ]
        try:
            answer = self.chat(messages, max_tokens=3, continue_final_message=True, add_generation_prompt=False)
        except (ValueError, APIError) as err:
            if isinstance(err, APIError) and err.status is None:
                raise  # the server is unreachable or failing: that says nothing about continuation
            logger.info("%s: no assistant continuation (%s); reading the first generated rating.", self.describe(), err)
            return "none"
        text = str(answer["choices"][0].get("message", {}).get("content") or "")
        mode = "continue" if text.lstrip().startswith("8") else "none"
        logger.info("%s: prefill probe answered %r -> prefill=%s", self.describe(), text, mode)
        return mode

    # ------------------------------------------------------------------------------------ answering
    def _rate_one(self, request: RatingRequest) -> RatingResult:
        if self.prefill_mode == "continue":
            fields = dict(max_tokens=1, continue_final_message=True, add_generation_prompt=False)
            messages = chat_messages(request, prefix=True)
        else:
            fields = dict(max_tokens=self.max_tokens)
            messages = chat_messages(request, prefix=False)
        answer = self.chat(messages, logprobs=True, top_logprobs=self.top_logprobs, **fields)
        logprobs = answer["choices"][0].get("logprobs") or {}
        content = logprobs.get("content")
        if content is None:
            raise ValueError(
                f"{self.describe()} at {self.endpoint} answered without `logprobs.content`; the server must return "
                "log-probabilities in chat completions (llama.cpp: start it with --logits_all true)."
            )
        return read_rating(content, request.choices, first_position=self.prefill_mode == "continue")

    def _map(self, fn: Callable, requests: Sequence) -> list:
        if len(requests) <= 1 or self.max_concurrency == 1:
            return [fn(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(fn, requests))

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        return self._map(self._rate_one, requests)

    def _generate_one(self, request: GenerationRequest) -> str:
        prefix = bool(request.answer_prefix) and self.prefill_mode == "continue"
        fields = dict(continue_final_message=True, add_generation_prompt=False) if prefix else {}
        answer = self.chat(chat_messages(request, prefix=prefix), max_tokens=request.max_new_tokens, **fields)
        return str(answer["choices"][0].get("message", {}).get("content") or "").strip()

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return self._map(self._generate_one, requests)

    # ---------------------------------------------------------------------------------------- cost
    def usage_summary(self) -> str:
        """One line: requests, tokens and (for models with a known price) the cost in US$."""
        u = self.usage
        line = (
            f"{self.describe()}: {u.requests} requests, {u.prompt_tokens} prompt + {u.completion_tokens} "
            f"completion tokens, {u.retries} retries"
        )
        price = PRICES_PER_MILLION.get(self.model_name)
        if price is not None:
            cost = (u.prompt_tokens * price[0] + u.completion_tokens * price[1]) / 1e6
            line += f", about ${cost:.4f} at list prices"
        return line
