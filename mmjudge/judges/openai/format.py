"""What the ``openai`` judge sends, apart from how it is sent: a request's chat messages (the image as a
lossless PNG data URL) and the fields of its chat-completions call, split into OpenAI's own fields and the
extras of vLLM and SGLang (``continue_final_message``, ``add_generation_prompt``, ``logprob_token_ids``),
which the official client passes as ``extra_body``. The Batch API's JSONL line holds the same call, with
both merged into one body. Pure functions, no HTTP (the transport is :mod:`mmjudge.judges.openai.transport`).

>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> request = RatingRequest([Turn("user", "Rate it.")], answer_prefix="Score: ")
>>> call = rating_call(request, "m", "continue", None, 20, 16)
>>> call.fields["max_tokens"], call.fields["top_logprobs"], call.extra_body
(1, 20, {'continue_final_message': True, 'add_generation_prompt': False})
>>> call.fields["messages"][-1]
{'role': 'assistant', 'content': 'Score: '}
>>> sorted(batch_line("k1", call))
['body', 'custom_id', 'method', 'url']
"""

from __future__ import annotations

import base64
import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mmjudge.judges.requests import GenerationRequest, RatingRequest

CHAT_PATH = "/v1/chat/completions"


@dataclass
class ChatCall:
    """One chat-completions call: OpenAI's fields (``model``, ``messages``, ``max_tokens``, ``logprobs`` …)
    and the extras other servers define (sent as the client's ``extra_body``)."""

    fields: dict
    extra_body: dict = field(default_factory=dict)

    def body(self) -> dict:
        """Both in one JSON body (what a Batch API line and the server receive)."""
        return {**self.fields, **self.extra_body}


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


def request_image_url(request: RatingRequest | GenerationRequest) -> str:
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


def chat_messages(request: RatingRequest | GenerationRequest, prefix: bool) -> list[dict]:
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


CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}


def rating_call(
    request: RatingRequest,
    model: str,
    prefill: str,
    token_ids: Sequence[int] | None,
    top_logprobs: int,
    max_tokens: int,
) -> ChatCall:
    """The call that rates ``request``. ``prefill="continue"``: the answer prefix is continued and one token
    is asked; ``"none"``: ``max_tokens`` tokens are asked and the rating searched for. ``token_ids``: the
    rating tokens whose log-probabilities the server must list (``logprob_token_ids``, the exact read),
    else the ``top_logprobs`` most probable tokens are listed."""
    continued = prefill == "continue"
    fields: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request, prefix=continued),
        "temperature": 0,
        "max_tokens": 1 if continued else max_tokens,
        "logprobs": True,
    }
    extra: dict[str, Any] = dict(CONTINUE) if continued else {}
    if token_ids:
        extra["logprob_token_ids"] = sorted(token_ids)
    else:
        fields["top_logprobs"] = top_logprobs
    return ChatCall(fields, extra)


def generation_call(request: GenerationRequest, model: str, prefill: str) -> ChatCall:
    """The call that continues ``request`` greedily (explanations), its prefix continued where the server can."""
    prefix = bool(request.answer_prefix) and prefill == "continue"
    fields = {
        "model": model,
        "messages": chat_messages(request, prefix=prefix),
        "temperature": 0,
        "max_tokens": request.max_new_tokens,
    }
    return ChatCall(fields, dict(CONTINUE) if prefix else {})


# OpenAI's own chat-completions parameters (its API reference): everything else a server defines goes as the
# client's `extra_body`.
OPENAI_CHAT_FIELDS = frozenset(
    [
        *("model", "messages", "temperature", "max_tokens", "max_completion_tokens", "logprobs", "top_logprobs"),
        *("n", "stop", "seed", "top_p", "frequency_penalty", "presence_penalty", "logit_bias", "response_format"),
        *("user", "service_tier", "store", "metadata", "reasoning_effort", "modalities", "prediction", "audio"),
        *("parallel_tool_calls", "tools", "tool_choice", "stream", "stream_options"),
    ]
)


def split_fields(body: dict) -> tuple[dict, dict]:
    """A chat body split into OpenAI's fields and the extras of other servers (``extra_body``).

    >>> split_fields({"model": "m", "max_tokens": 1, "continue_final_message": True})
    ({'model': 'm', 'max_tokens': 1}, {'continue_final_message': True})
    """
    standard = {k: v for k, v in body.items() if k in OPENAI_CHAT_FIELDS}
    return standard, {k: v for k, v in body.items() if k not in OPENAI_CHAT_FIELDS}


def batch_line(custom_id: str, call: ChatCall) -> dict:
    """One line of a Batch API input file: the call's merged body under its ``custom_id``."""
    return {"custom_id": custom_id, "method": "POST", "url": CHAT_PATH, "body": call.body()}


def answer_text(answer: Any) -> str:
    """The generated text of a chat-completions answer (``""`` when it has none)."""
    try:
        return str((answer["choices"][0].get("message") or {}).get("content") or "").strip()
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


def answer_logprobs(answer: Any) -> list | None:
    """The ``logprobs.content`` list of a chat-completions answer, or ``None`` when it has none."""
    try:
        content = (answer["choices"][0].get("logprobs") or {}).get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return content if isinstance(content, list) else None
