"""An OpenAI-compatible chat-completions endpoint over the engine's local ``transformers`` judge.

For models no serving engine supports, and as a test peer of the ``openai`` judge backend: its answers
come from :meth:`TransformersJudge.generate_trace` (greedy, full-vocabulary softmax at each step), so
a rating read through it equals the local backend's. Stdlib only (``http.server``); one request at a
time reaches the model (a lock), HTTP handling is threaded.

Endpoints:

* ``GET /v1/models`` — the one served model (``owned_by: "mmjudge"``).
* ``GET /server_info`` — what this server is and supports; every answer also carries the header
  ``Server: mmjudge-serve/<version>``, which is how the ``openai`` judge recognises it.
* ``POST /v1/chat/completions`` — ``messages`` (text, and images as ``data:`` URLs in the first user
  turn; remote URLs are refused), ``max_tokens`` / ``max_completion_tokens`` (default 16),
  ``logprobs``, ``top_logprobs`` (up to ``max_logprobs``, default 20), and vLLM's
  ``continue_final_message`` + ``add_generation_prompt=false`` to continue a final assistant message.
  vLLM's ``logprob_token_ids`` (same semantics: non-empty, needs ``logprobs=true``; each generated
  position's ``top_logprobs`` then holds the sampled token plus exactly those ids, with full-vocabulary
  log-probabilities, and ``top_logprobs`` is ignored) and ``return_tokens_as_token_ids`` (tokens spelled
  ``token_id:N``). Decoding is always greedy (``temperature`` is accepted and ignored); log-probabilities
  are the model's raw ones (before any temperature), as vLLM's default.
* ``POST /tokenize`` (also ``/v1/tokenize``) — vLLM's: ``prompt``, ``add_special_tokens`` (default true),
  ``return_token_strs`` -> ``tokens``, ``count``, ``max_model_len`` and ``token_strs``.

Token strings in ``logprobs`` are the tokenizer's decoding of each single token (so ``" 4"`` and
``"4"`` stay distinct, as in OpenAI's answers); ``usage.prompt_tokens`` counts the tokens the model
was given, image tokens that the processor inserts included.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mmjudge._version import __version__
from mmjudge.judges.base import GenerationRequest, Turn

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 16
SERVER_NAME = f"mmjudge-serve/{__version__}"  # the Server header: how clients recognise this server
MAX_BODY_BYTES = 64 * 1024 * 1024


class RequestError(ValueError):
    """A bad request: answered with HTTP 400 and an OpenAI-style error object."""


def _decode_image(url: str):
    from PIL import Image

    if not url.startswith("data:") or ";base64," not in url:
        raise RequestError("only base64 `data:` image URLs are accepted (this server fetches nothing).")
    try:
        image = Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1])))
        image.load()
    except (OSError, ValueError) as err:  # undecodable base64 or image data: the client's error
        raise RequestError(f"the image could not be decoded ({err}).") from None
    return image.convert("RGB") if image.mode != "RGB" else image


def parse_messages(messages: Any, continue_final: bool) -> tuple[list[Turn], Any, str]:
    """``(turns, image or None, answer_prefix)`` from OpenAI chat ``messages``."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("`messages` must be a non-empty list.")
    turns: list[Turn] = []
    image = None
    for k, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise RequestError(f"messages[{k}] must be an object with role system, user or assistant.")
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
                        raise RequestError("one image is supported, in the first message (a user turn).")
                    url = part.get("image_url")
                    image = _decode_image(url.get("url", "") if isinstance(url, dict) else str(url))
                else:
                    raise RequestError(f"messages[{k}]: unsupported content part {kind!r}.")
        else:
            raise RequestError(f"messages[{k}].content must be a string or a list of parts.")
        turns.append(Turn(message["role"], "".join(texts)))
    prefix = ""
    if continue_final:
        if turns[-1].role != "assistant":
            raise RequestError("continue_final_message needs a final assistant message.")
        prefix = turns.pop().text
    elif turns[-1].role == "assistant":
        raise RequestError("the last message is an assistant message: set continue_final_message=true to continue it.")
    return turns, image, prefix


class ChatEngine:
    """Answers chat-completion bodies with a local judge (thread-safe: one model call at a time)."""

    def __init__(self, judge: Any, model_name: str, max_logprobs: int = 20):
        self.judge = judge
        self.model_name = model_name
        self.max_logprobs = int(max_logprobs)
        self.lock = threading.Lock()

    def models(self) -> dict:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "mmjudge"}]}

    def complete(self, body: dict) -> dict:
        import torch

        if not isinstance(body, dict):
            raise RequestError("the body must be a JSON object.")
        continue_final = bool(body.get("continue_final_message", False))
        add_prompt = bool(body.get("add_generation_prompt", not continue_final))
        if continue_final and add_prompt:
            raise RequestError("continue_final_message and add_generation_prompt cannot both be true.")
        turns, image, prefix = parse_messages(body.get("messages"), continue_final)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens")) or DEFAULT_MAX_TOKENS
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise RequestError("max_tokens must be a positive integer.")
        want_logprobs = bool(body.get("logprobs", False))
        top = body.get("top_logprobs") or 0
        if not isinstance(top, int) or top < 0 or top > self.max_logprobs:
            raise RequestError(
                f"top_logprobs must be between 0 and {self.max_logprobs} (this server's --max-logprobs)."
            )
        if top and not want_logprobs:
            raise RequestError("top_logprobs needs logprobs=true.")
        chosen = self._chosen_ids(body.get("logprob_token_ids"), want_logprobs)
        as_ids = bool(body.get("return_tokens_as_token_ids", False))
        request = GenerationRequest(turns=turns, image=image, answer_prefix=prefix, max_new_tokens=max_tokens)
        with self.lock:
            trace = self.judge.generate_trace(request)
        prompt_tokens = trace.prompt_tokens
        tokenizer = self.judge.tokenizer
        eos = set(getattr(tokenizer, "all_special_ids", []) or [])
        ids = list(trace.token_ids)
        finish = "length"
        if ids and ids[-1] in eos:  # the end-of-turn token ends the answer; it is not part of it
            ids, finish = ids[:-1], "stop"
        content = tokenizer.decode(ids, skip_special_tokens=True)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish,
        }
        if want_logprobs:
            entries = []
            for token_id, probs in zip(ids, trace.probs):
                entry = self._entry(token_id, probs, as_ids)
                if chosen is not None:  # vLLM's semantics: the sampled token, then exactly the named ids
                    listed = list(dict.fromkeys([token_id, *chosen]))
                elif top:
                    listed = torch.topk(probs, min(top, probs.numel())).indices.tolist()
                else:
                    listed = []
                entry["top_logprobs"] = [self._entry(int(i), probs, as_ids) for i in listed]
                entries.append(entry)
            choice["logprobs"] = {"content": entries}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(trace.token_ids),
                "total_tokens": prompt_tokens + len(trace.token_ids),
            },
        }

    def _chosen_ids(self, value: Any, want_logprobs: bool) -> list[int] | None:
        """``logprob_token_ids`` checked as vLLM checks it (a non-empty list that needs logprobs=true), and
        each id inside the vocabulary."""
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in value)
        ):
            raise RequestError("`logprob_token_ids` must be a non-empty list of token ids.")
        if not want_logprobs:
            raise RequestError("when using `logprob_token_ids`, `logprobs` must be set to true.")
        size = len(self.judge.tokenizer)
        outside = [i for i in value if not 0 <= i < size]
        if outside:
            raise RequestError(f"`logprob_token_ids` holds ids outside the vocabulary of {size} tokens: {outside[:5]}.")
        return value

    def _entry(self, token_id: int, probs, as_id: bool = False) -> dict:
        token = f"token_id:{token_id}" if as_id else self.judge.tokenizer.decode([token_id])
        p = float(probs[token_id])
        return {"token": token, "logprob": math.log(p) if p > 0 else -9999.0, "bytes": list(token.encode("utf-8"))}

    def tokenize(self, body: dict) -> dict:
        """vLLM's ``POST /tokenize`` for a ``prompt`` string."""
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            raise RequestError("`prompt` must be a string (this server tokenizes text prompts only).")
        tokenizer = self.judge.tokenizer
        with self.lock:  # tokenizers are not thread-safe
            ids = tokenizer.encode(body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True)))
            strings = tokenizer.convert_ids_to_tokens(ids) if body.get("return_token_strs") else None
        answer: dict[str, Any] = {
            "count": len(ids),
            "max_model_len": int(getattr(tokenizer, "model_max_length", -1) or -1),
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
            "max_logprobs": self.max_logprobs,
            "continue_final_message": True,
            "logprob_token_ids": True,
            "tokenize": True,
        }


def _handler(engine: ChatEngine) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def version_string(self) -> str:  # the Server header of every answer
            return SERVER_NAME

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet by default: through logging
            logger.debug("%s " + fmt, self.address_string(), *args)

        def _send(self, status: int, data: dict) -> None:
            blob = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

        def do_GET(self) -> None:  # http.server's naming
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, engine.models())
            elif self.path.rstrip("/") == "/server_info":
                self._send(200, engine.server_info())
            elif self.path.rstrip("/") in ("/health", ""):
                self._send(200, {"status": "ok"})
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:
            path = self.path.rstrip("/")
            if path in ("/v1/chat/completions", "/chat/completions"):
                answer = engine.complete
            elif path in ("/tokenize", "/v1/tokenize"):
                answer = engine.tokenize
            else:
                self._error(404, f"no route {self.path}", "not_found")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY_BYTES:
                self._error(400, "a JSON body (with Content-Length) is required.", "invalid_request_error")
                return
            try:
                body = json.loads(self.rfile.read(length).decode("utf-8"))
                self._send(200, answer(body))
            # RequestError, JSONDecodeError and UnicodeDecodeError are ValueErrors, as is the judge refusing
            # the request (e.g. an image for a text-only model): all the client's to fix.
            except ValueError as err:
                self._error(400, str(err), "invalid_request_error")
            except Exception as err:  # a server answers, it does not die
                logger.exception("chat completion failed")
                self._error(500, f"{type(err).__name__}: {err}", "server_error")

    Handler.engine = engine
    return Handler


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a client with more requests in flight would see
    # refused or delayed connections.
    request_queue_size = 128


def make_server(
    judge: Any, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None, max_logprobs: int = 20
) -> ThreadingHTTPServer:
    """A ready (not yet serving) HTTP server; ``port=0`` picks a free port (``server.server_address``).
    ``model_name`` defaults to the judge's model identity (a Hub id, or a fingerprint for folders)."""
    identity = getattr(judge, "model_identity", None)  # name@fingerprint: two local folders stay apart
    name = model_name or (identity.label() if identity is not None else judge.identity().get("model")) or "mmjudge"
    server = _Server((host, int(port)), _handler(ChatEngine(judge, name, max_logprobs)))
    server.daemon_threads = True
    return server


def serve_in_thread(judge: Any, **kwargs: Any) -> tuple[ThreadingHTTPServer, str]:
    """Start :func:`make_server` in a daemon thread; returns the server and its ``…/v1`` base URL.
    Stop it with ``server.shutdown()``."""
    server = make_server(judge, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/v1"
