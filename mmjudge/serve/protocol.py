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

import base64
import binascii
import io
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mmjudge.judges.requests import GenerationRequest, Turn

DEFAULT_MAX_TOKENS = 16  # when a request names none (the legacy completions default; vLLM's too)


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


def _decode_image(url: str):
    from PIL import Image

    if not url.startswith("data:") or ";base64," not in url:
        raise RequestError("only base64 `data:` image URLs are accepted (this server fetches nothing).", "messages")
    try:
        image = Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1])))
        image.load()
    except (OSError, ValueError, binascii.Error, Image.DecompressionBombError) as err:  # the client's data
        raise RequestError(f"the image could not be decoded ({err}).", "messages") from None
    return image.convert("RGB") if image.mode != "RGB" else image


def parse_messages(messages: Any, continue_final: bool) -> tuple[list[Turn], Any, str]:
    """``(turns, image or None, answer_prefix)`` from OpenAI chat ``messages``."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("`messages` must be a non-empty list.", "messages")
    turns: list[Turn] = []
    image = None
    for k, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise RequestError(f"messages[{k}] must be an object with role system, user or assistant.", "messages")
        content = message.get("content")
        texts: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    texts.append(str(part.get("text", "")))
                elif kind == "image_url":
                    if image is not None or turns or message["role"] != "user":
                        raise RequestError("one image is supported, in the first message (a user turn).", "messages")
                    url = part.get("image_url")
                    image = _decode_image(url.get("url", "") if isinstance(url, dict) else str(url))
                else:
                    raise RequestError(f"messages[{k}]: unsupported content part {kind!r}.", "messages")
        else:
            raise RequestError(f"messages[{k}].content must be a string or a list of parts.", "messages")
        turns.append(Turn(message["role"], "".join(texts)))
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
        raise RequestError(f"{name} must be a positive integer, but got {value!r}.", name)
    if value > limit:
        raise RequestError(
            f"{name} is {value}, above this server's limit of {limit} tokens (mmjudge serve --max-tokens).", name
        )
    return value


def _chosen_ids(value: Any, want_logprobs: bool, vocab_size: int) -> list[int] | None:
    """vLLM's ``logprob_token_ids``: a non-empty list of ids inside the vocabulary, with logprobs=true."""
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
    return value


def _refuse_unsupported(body: dict) -> None:
    """Parameters that would change the answer and that this server does not implement: refused, never
    silently ignored (sampling settings are accepted: decoding is greedy, as documented)."""
    n = body.get("n")
    if n is not None and n != 1:
        raise RequestError(f"n is {n!r}: this server answers one choice per request (n=1).", "n")
    for name in ("stop", "tools", "functions", "response_format", "logit_bias"):
        if body.get(name) not in (None, [], {}):
            raise RequestError(f"`{name}` is not supported by mmjudge serve.", name)


def read_chat_body(body: Any, *, max_tokens_limit: int, max_logprobs: int, vocab_size: int) -> ChatParams:
    """A chat-completions body checked as OpenAI and vLLM check it (every mistake a :class:`RequestError`)."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object.")
    _refuse_unsupported(body)
    continue_final = bool(body.get("continue_final_message", False))
    add_prompt = bool(body.get("add_generation_prompt", not continue_final))
    if continue_final and add_prompt:
        raise RequestError("continue_final_message and add_generation_prompt cannot both be true.")
    max_tokens = _max_tokens(body, max_tokens_limit)
    want_logprobs = bool(body.get("logprobs", False))
    top = body.get("top_logprobs") or 0
    if not _integer(top) or top < 0 or top > max_logprobs:
        raise RequestError(
            f"top_logprobs must be between 0 and {max_logprobs} (this server's --max-logprobs).", "top_logprobs"
        )
    if top and not want_logprobs:
        raise RequestError("top_logprobs needs logprobs=true.", "top_logprobs")
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise RequestError(f"stream must be true or false, but got {stream!r}.", "stream")
    options = body.get("stream_options")
    if options is not None and (not stream or not isinstance(options, dict)):
        raise RequestError("stream_options is an object, and only allowed with stream=true.", "stream_options")
    turns, image, prefix = parse_messages(body.get("messages"), continue_final)
    return ChatParams(
        request=GenerationRequest(turns=turns, image=image, answer_prefix=prefix, max_new_tokens=max_tokens),
        max_tokens=max_tokens,
        logprobs=want_logprobs,
        top_logprobs=top,
        chosen_ids=_chosen_ids(body.get("logprob_token_ids"), want_logprobs, vocab_size),
        as_ids=bool(body.get("return_tokens_as_token_ids", False)),
        stream=stream,
        include_usage=bool((options or {}).get("include_usage", False)),
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
