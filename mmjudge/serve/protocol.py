"""The OpenAI chat-completions wire format of ``mmjudge serve``: request bodies checked into
:class:`ChatParams`, errors as OpenAI's error object, answers and Server-Sent-Event chunks as OpenAI
writes them, and :class:`Answer`, which turns generated token ids into content and ``logprobs`` entries.

No model and no HTTP here: :mod:`mmjudge.serve.batching` runs the model, :mod:`mmjudge.serve.server` the server.

>>> params = read_chat_body({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
...                         max_tokens_limit=64, max_logprobs=20, vocab_size=100)
>>> params.max_tokens, params.kind, params.stream
(8, 'generation', False)
>>> try:
...     read_chat_body({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 100000},
...                    max_tokens_limit=64, max_logprobs=20, vocab_size=100)
... except RequestError as err:
...     print(err.status, err.param, err)
400 max_tokens max_tokens is 100000, above this server's limit of 64 tokens (mmjudge serve --max-tokens).
"""

from __future__ import annotations

import json
import math
import reprlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mmjudge.judges.requests import GenerationRequest, Turn
from mmjudge.serve.image_input import decode_image
from mmjudge.serve.settings import DEFAULT_MAX_IMAGE_PIXELS

DEFAULT_MAX_TOKENS = 16  # when a request names none (the legacy completions default; vLLM's too)
MAX_MESSAGES = 2048  # messages in a request: a chat template renders each one (a million empty ones: 19 s)
MAX_NAMED_IDS = 1024  # distinct logprob_token_ids a request may name (each is listed at every position)
_QUOTE = reprlib.Repr()  # what an error message shows of a client's value: short, and never recursing
_QUOTE.maxstring, _QUOTE.maxother, _QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxdict = 40, 40, 2, 4, 4


class RequestError(ValueError):
    """A request answered with an OpenAI-style error object: ``status`` (400 unless said), ``param``
    (the field at fault) and ``kind`` (OpenAI's ``type``)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.param, self.status, self.kind = param, status, kind


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None, code: Any = None) -> dict:
    """OpenAI's error object.

    >>> error_body("no", param="n")
    {'error': {'message': 'no', 'type': 'invalid_request_error', 'param': 'n', 'code': None}}
    """
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def quote(value: Any) -> str:
    """``value`` as an error message quotes it: its repr, cut short (a body may hold megabytes).

    >>> quote("x" * 1000), quote([[[[1]]]]), quote(float("nan"))
    ("'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'", '[[[...]]]', 'nan')
    """
    return _QUOTE.repr(value)


def _decode_image(url: Any, where: str, max_pixels: int):
    try:
        return decode_image(url, where, max_pixels)
    except ValueError as err:
        raise RequestError(str(err), "messages") from None


def _texts_and_image(messages: Any) -> tuple[list[tuple[str, list[str]]], Any, str]:
    """``([(role, texts)], image URL or None, where the image is)``: the messages' structure checked, no image
    decoded yet."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("`messages` must be a non-empty list.", "messages")
    if len(messages) > MAX_MESSAGES:
        raise RequestError(
            f"`messages` holds {len(messages)} messages; this server takes at most {MAX_MESSAGES}.", "messages"
        )
    found: list[tuple[str, list[str]]] = []
    image, where = None, ""
    for k, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in ("system", "user", "assistant"):
            raise RequestError(f"messages[{k}] must be an object with role system, user or assistant.", "messages")
        content = message.get("content")
        if isinstance(content, str):
            found.append((role, [content]))
            continue
        if not isinstance(content, list):
            raise RequestError(f"messages[{k}].content must be a string or a list of parts.", "messages")
        texts: list[str] = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                text = part.get("text", "")
                if not isinstance(text, str):
                    raise RequestError(f"messages[{k}].content[{j}].text must be a string.", "messages")
                texts.append(text)
            elif kind == "image_url":
                if where or found or role != "user":
                    raise RequestError("one image is supported, in the first message (a user turn).", "messages")
                url = part.get("image_url")
                image, where = (url.get("url", "") if isinstance(url, dict) else url), f"messages[{k}].content[{j}]"
            else:
                raise RequestError(f"messages[{k}]: unsupported content part {quote(kind)}.", "messages")
        found.append((role, texts))
    return found, image, where


def parse_messages(
    messages: Any, continue_final: bool, max_chars: int | None = None, max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
) -> tuple[list[Turn], Any, str]:
    """``(turns, image or None, answer_prefix)`` from OpenAI chat ``messages``; more than ``max_chars``
    characters of text are refused before the image is decoded, an image of more than ``max_pixels`` pixels
    before its pixels are."""
    found, url, where = _texts_and_image(messages)
    chars = sum(len(text) for _, texts in found for text in texts)
    if max_chars is not None and chars > max_chars:
        raise RequestError(
            f"the messages hold {chars} characters of text, above this server's limit of {max_chars} "
            "(mmjudge serve --max-prompt-chars).",
            "messages",
        )
    turns = [Turn(role, "".join(texts)) for role, texts in found]
    image = _decode_image(url, where, max_pixels) if where else None
    prefix = ""
    if continue_final:
        if turns[-1].role != "assistant":
            raise RequestError("continue_final_message needs a final assistant message.", "messages")
        prefix = turns.pop().text
    elif turns[-1].role == "assistant":
        raise RequestError(
            "the last message is an assistant message: set continue_final_message=true to continue it.", "messages"
        )
    return turns, image, prefix


@dataclass
class ChatParams:
    """One checked chat-completion request. ``kind`` is how it is batched: ``"rating"`` (one token:
    a single forward pass, what the ``openai`` judge sends for a rating) or ``"generation"``."""

    request: GenerationRequest
    max_tokens: int
    logprobs: bool = False
    top_logprobs: int = 0
    chosen_ids: list[int] | None = None
    as_ids: bool = False
    stream: bool = False
    include_usage: bool = False
    # Filled in the request's own thread (:meth:`~mmjudge.serve.batching.BatchingEngine.prepare`), never the
    # model's: the rendered prompt, its model inputs (CPU tensors, batch of one) and its length in tokens.
    text: str | None = field(default=None, repr=False)
    inputs: dict | None = field(default=None, repr=False)
    prompt_tokens: int = 0

    @property
    def kind(self) -> str:
        return "rating" if self.max_tokens == 1 else "generation"

    @property
    def batch_key(self) -> tuple:
        """Requests batched together share this: their kind, and whether they carry an image (a
        processor takes a batch with images for every prompt or for none)."""
        return (self.kind, self.request.image is not None)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _max_tokens(body: dict, limit: int) -> int:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = body.get(name)
    if value is None:
        return min(DEFAULT_MAX_TOKENS, limit)
    if not _integer(value) or value < 1:
        raise RequestError(f"{name} must be a positive integer, but got {quote(value)}.", name)
    if value > limit:
        raise RequestError(
            f"{name} is {value}, above this server's limit of {limit} tokens (mmjudge serve --max-tokens).", name
        )
    return value


def _chosen_ids(value: Any, want_logprobs: bool, vocab_size: int) -> list[int] | None:
    """vLLM's ``logprob_token_ids``: a non-empty list of ids inside the vocabulary, with logprobs=true; each id
    once (in the order given), at most :data:`MAX_NAMED_IDS` of them (every position lists them all)."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(_integer(i) for i in value):
        raise RequestError("`logprob_token_ids` must be a non-empty list of token ids.", "logprob_token_ids")
    if not want_logprobs:
        raise RequestError("when using `logprob_token_ids`, `logprobs` must be set to true.", "logprob_token_ids")
    outside = [i for i in value if not 0 <= i < vocab_size]
    if outside:
        raise RequestError(
            f"`logprob_token_ids` holds ids outside the vocabulary of {vocab_size} tokens: {outside[:5]}.",
            "logprob_token_ids",
        )
    ids = list(dict.fromkeys(value))
    if len(ids) > MAX_NAMED_IDS:
        raise RequestError(
            f"`logprob_token_ids` names {len(ids)} distinct ids; this server lists at most {MAX_NAMED_IDS}.",
            "logprob_token_ids",
        )
    return ids


# name: (low, high, whether low itself is allowed), as OpenAI (and vLLM for its extras) accept them. Decoding
# is greedy, so in-range values change nothing (accepted and ignored); out-of-range ones are the client's
# mistake, said rather than ignored.
_SAMPLING_RANGES = {
    "temperature": (0.0, 2.0, True),
    "top_p": (0.0, 1.0, True),
    "frequency_penalty": (-2.0, 2.0, True),
    "presence_penalty": (-2.0, 2.0, True),
    "min_p": (0.0, 1.0, True),
    "repetition_penalty": (0.0, math.inf, False),
}


def _check_sampling(body: dict) -> None:
    """Sampling settings refused when out of range or of the wrong type (a NaN temperature is a mistake)."""
    for name, (low, high, low_ok) in _SAMPLING_RANGES.items():
        value = body.get(name)
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not number or value > high or value < low or (value == low and not low_ok):
            rule = f"between {low:g} and {high:g}" if high < math.inf else f"above {low:g}"
            raise RequestError(f"{name} must be a number {rule}, but got {quote(value)}.", name)
    top_k = body.get("top_k")
    if top_k is not None and (not _integer(top_k) or top_k < -1):
        raise RequestError(f"top_k must be an integer, -1 or more, but got {quote(top_k)}.", "top_k")
    seed = body.get("seed")
    if seed is not None and not _integer(seed):
        raise RequestError(f"seed must be an integer, but got {quote(seed)}.", "seed")


def flag(body: dict, name: str, default: bool, where: str | None = None) -> bool:
    """A boolean field: true, false or absent (null), never 1 or "yes" (OpenAI refuses those too).

    >>> flag({"logprobs": True}, "logprobs", False), flag({"logprobs": None}, "logprobs", False)
    (True, False)
    """
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"{where or name} must be true or false, but got {quote(value)}.", where or name)
    return value


def _refuse_unsupported(body: dict) -> None:
    """Parameters that would change the answer and that this server does not implement: refused, never
    silently ignored (sampling settings in range are accepted: decoding is greedy, as documented)."""
    n = body.get("n")
    if n is not None and not _integer(n):
        raise RequestError(f"n must be an integer, but got {quote(n)}.", "n")
    if n is not None and n != 1:
        raise RequestError(f"n is {n}: this server answers one choice per request (n=1).", "n")
    for name in ("stop", "tools", "functions", "response_format", "logit_bias"):
        if body.get(name) not in (None, [], {}):
            raise RequestError(f"`{name}` is not supported by mmjudge serve.", name)
    _check_sampling(body)


def read_chat_body(
    body: Any,
    *,
    max_tokens_limit: int,
    max_logprobs: int,
    vocab_size: int,
    max_prompt_chars: int | None = None,
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> ChatParams:
    """A chat-completions body checked as OpenAI and vLLM check it (every mistake a :class:`RequestError`);
    ``max_prompt_chars``: the most characters of text its messages may hold, refused before the image is
    decoded; ``max_image_pixels``: the most pixels its image may have, refused from the image's header."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object.")
    _refuse_unsupported(body)
    continue_final = flag(body, "continue_final_message", False)
    add_prompt = flag(body, "add_generation_prompt", not continue_final)
    if continue_final and add_prompt:
        raise RequestError("continue_final_message and add_generation_prompt cannot both be true.")
    max_tokens = _max_tokens(body, max_tokens_limit)
    want_logprobs = flag(body, "logprobs", False)
    top = body.get("top_logprobs")
    top = 0 if top is None else top
    if not _integer(top) or top < 0 or top > max_logprobs:
        raise RequestError(
            f"top_logprobs must be between 0 and {max_logprobs} (this server's --max-logprobs), but got {quote(top)}.",
            "top_logprobs",
        )
    if top and not want_logprobs:
        raise RequestError("top_logprobs needs logprobs=true.", "top_logprobs")
    stream = flag(body, "stream", False)
    options = body.get("stream_options")
    if options is not None and (not stream or not isinstance(options, dict)):
        raise RequestError("stream_options is an object, and only allowed with stream=true.", "stream_options")
    include_usage = flag(options or {}, "include_usage", False, "stream_options.include_usage")
    turns, image, prefix = parse_messages(body.get("messages"), continue_final, max_prompt_chars, max_image_pixels)
    return ChatParams(
        request=GenerationRequest(turns=turns, image=image, answer_prefix=prefix, max_new_tokens=max_tokens),
        max_tokens=max_tokens,
        logprobs=want_logprobs,
        top_logprobs=top,
        chosen_ids=_chosen_ids(body.get("logprob_token_ids"), want_logprobs, vocab_size),
        as_ids=flag(body, "return_tokens_as_token_ids", False),
        stream=stream,
        include_usage=include_usage,
    )


# ------------------------------------------------------------------------------------ the answer
@dataclass
class Piece:
    """What one step adds to a streamed answer: text and ``logprobs`` entries."""

    text: str = ""
    entries: list = field(default_factory=list)


@dataclass
class Finished:
    """A finished answer: its content, entries, why it stopped and the token counts."""

    content: str
    entries: list | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    tail: Piece = field(default_factory=Piece)  # streaming: what was held back until the end


class Answer:
    """Token ids in, an OpenAI answer out (called from the model thread, which alone uses the tokenizer).

    A token in ``stop_ids`` (end of turn) ends the answer and is not part of it; so is a special token
    on which the answer ends for another reason (counted in ``completion_tokens``, as before). Streaming
    text is decoded incrementally (a window of recent tokens, so a character split over two tokens
    is sent whole); a special token is held back one step, since it may turn out to be the last one.
    """

    def __init__(self, params: ChatParams, decode: Callable, token_text: Callable[[int], str], special_ids: frozenset):
        self.params, self.decode, self.token_text, self.special_ids = params, decode, token_text, special_ids
        self.ids: list[int] = []
        self.entries: list[dict] = []
        self.count = 0  # generated tokens, end-of-turn included
        self._held: tuple[int, dict | None] | None = None
        self._prefix_at = self._read_at = 0  # the incremental decoding window (streaming)

    def push(self, token_id: int, probs: Any = None) -> Piece | None:
        """Add one generated token (``probs``: its step's full-vocabulary distribution, when logprobs are
        wanted); returns what a stream sends now (``None`` when not streaming)."""
        self.count += 1
        entry = self._entry(token_id, probs) if self.params.logprobs else None
        ready = [self._held] if self._held is not None else []
        self._held = None
        if token_id in self.special_ids:
            self._held = (token_id, entry)
        else:
            ready.append((token_id, entry))
        for ready_id, ready_entry in ready:
            self.ids.append(ready_id)
            if ready_entry is not None:
                self.entries.append(ready_entry)
        if not self.params.stream:
            return None
        return Piece(self._stream_text(), [e for _, e in ready if e is not None])

    def finish(self, reason: str, prompt_tokens: int) -> Finished:
        """Close the answer: ``reason`` is ``"length"`` unless it ended on a special token (``"stop"``)."""
        if self._held is not None:
            self._held, reason = None, "stop"
        tail = Piece(self._stream_text(final=True)) if self.params.stream else Piece()
        content = self.decode(self.ids, skip_special_tokens=True)
        entries = self.entries if self.params.logprobs else None
        return Finished(content, entries, reason, prompt_tokens, self.count, tail)

    def _stream_text(self, final: bool = False) -> str:
        before = self.decode(self.ids[self._prefix_at : self._read_at], skip_special_tokens=True)
        now = self.decode(self.ids[self._prefix_at :], skip_special_tokens=True)
        if len(now) <= len(before) or (now.endswith("\ufffd") and not final):
            return ""  # nothing new yet, or half a character: wait for the next token
        self._prefix_at, self._read_at = self._read_at, len(self.ids)
        return now[len(before) :]

    def _entry(self, token_id: int, probs: Any) -> dict:
        import torch

        if self.params.chosen_ids is not None:  # vLLM's semantics: the sampled token, then exactly the named ids
            listed = list(dict.fromkeys([token_id, *self.params.chosen_ids]))
        elif self.params.top_logprobs:
            listed = torch.topk(probs, min(self.params.top_logprobs, probs.numel())).indices.tolist()
        else:
            listed = []
        entry = self._one(token_id, probs)
        entry["top_logprobs"] = [self._one(int(i), probs) for i in listed]
        return entry

    def _one(self, token_id: int, probs: Any) -> dict:
        token = f"token_id:{token_id}" if self.params.as_ids else self.token_text(token_id)
        p = float(probs[token_id])
        return {"token": token, "logprob": math.log(p) if p > 0 else -9999.0, "bytes": list(token.encode("utf-8"))}


# ------------------------------------------------------------------------------------ the bodies
def completion_body(answer_id: str, model: str, done: Finished) -> dict:
    """A ``chat.completion`` object."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": done.content},
        "logprobs": {"content": done.entries} if done.entries is not None else None,
        "finish_reason": done.finish_reason,
    }
    return {
        "id": answer_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage(done),
    }


def usage(done: Finished) -> dict:
    return {
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens,
        "total_tokens": done.prompt_tokens + done.completion_tokens,
    }


def chunk_event(
    answer_id: str, model: str, delta: dict, entries: list | None = None, finish: str | None = None, **extra: Any
) -> bytes:
    """One Server-Sent Event holding a ``chat.completion.chunk``, as OpenAI streams them."""
    choice = {
        "index": 0,
        "delta": delta,
        "logprobs": {"content": entries} if entries else None,
        "finish_reason": finish,
    }
    chunk = {
        "id": answer_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        **extra,
    }
    return sse(chunk)


def sse(data: Any) -> bytes:
    """``data: <json>`` and the blank line that ends an event.

    >>> sse({"a": 1})
    b'data: {"a": 1}\\n\\n'
    """
    return b"data: " + json.dumps(data).encode("utf-8") + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
