"""Toy OpenAI-compatible servers that answer as vLLM, SGLang, llama.cpp, llama-cpp-python, OpenAI or an
unknown server do: their routes, identifying headers, request checks and ``logprobs`` layout, as read in
their sources (paths in docs/api_judges.md). None of them can run here (no GPU, no network), so the
protocol is tested against these.

The toy "model" is a fixed random distribution over a 68-token vocabulary per context (sha256 of the
rendered conversation): after a continued assistant prefix the ratings are anywhere in it (often outside
a top 20), and a fresh answer is scripted as "Your score is 4." so a first-rating read finds position 3
(``script=`` gives another answer, e.g. G-VEval's "$85$").
Every chat answer's full distributions are kept in ``answers`` so tests can check the judge against what
the server itself computed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

VOCAB = [
    "<|end|>",
    "Your",
    " score",
    " is",
    ".",
    "Score",
    ":",
    "1",
    "2",
    "3",
    "4",
    "5",
    " 1",
    " 2",
    " 3",
    " 4",
    " 5",
    "8",
    " 8",
    ",",
    "Hi",
] + [f" w{i}" for i in range(39)]
# Appended (so the tokens above keep their ids and draws): what prompt-only judges write, "$85$" and "0.85".
VOCAB += ["The", " final", "$", "0", "85", "80", "75", "$."]
IDS = {t: i for i, t in enumerate(VOCAB)}
SCRIPT = ["Your", " score", " is", " 4", "."]  # what the toy model writes when not continuing a prefix
KINDS = ("vllm", "vllm-old", "sglang", "llama.cpp", "llama-cpp-python", "openai", "unknown")


def token_str(token: str) -> str:
    """The tokenizer's spelling of a token (byte-level BPE: a leading space is "Ġ")."""
    return "Ġ" + token[1:] if token.startswith(" ") else token


def distribution(context: str, position: int, scripted: bool, script: list[str] | None = None) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(f"{context}|{position}".encode()).digest()[:8], "little")
    logits = np.random.default_rng(seed).normal(0.0, 2.0, len(VOCAB))
    if scripted:
        script = script or SCRIPT
        logits[IDS[script[min(position, len(script) - 1)]]] += 12.0
    e = np.exp(logits - logits.max())
    return e / e.sum()


class ThreadedServer(ThreadingHTTPServer):
    """A threaded server that, like uvicorn, sends without Nagle delays (TCP_NODELAY: the official client keeps
    connections alive, where a small write after the headers would wait for a delayed ACK) and, when closed,
    closes the connections clients keep alive too (a stopped server must stop answering)."""

    request_queue_size = 128
    daemon_threads = True

    def __init__(self, *args, **kwargs):
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def close_all(self) -> None:
        self.shutdown()
        self.server_close()
        with self.connections_lock:
            for connection in list(self.connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self.connections.clear()


class ToyServer:
    """One toy server of ``kind``. ``fail(body)`` may return ``(status, json)``, ``"malformed"`` (a 200 that is
    not JSON), ``("slow", seconds)`` or ``None`` for each chat request (``body`` includes the messages)."""

    def __init__(
        self,
        kind: str = "vllm",
        fail: Callable[[dict], Any] | None = None,
        model: str = "toy-judge",
        script: list[str] | None = None,
    ):
        assert kind in KINDS, kind
        assert all(t in IDS for t in script or []), script
        self.kind, self.fail, self.model, self.script = kind, fail, model, script
        self.answers: list[tuple[dict, list[np.ndarray]]] = []  # (chat body, distribution at each generated position)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request
        self.extra_headers: dict[str, str] = {}  # sent with every answer (rate-limit headers …)
        self.batch_api: Any = None  # a toy_batch_api.BatchAPI serving /v1/files and /v1/batches, when given
        self.lock = threading.Lock()
        toy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, data, raw: bytes | None = None):
                blob = raw if raw is not None else json.dumps(data).encode()
                self.send_response(status)
                if toy.kind == "openai":
                    self.send_header("openai-version", "2020-10-01")
                for name, value in toy.extra_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                self.wfile.write(blob)

            def version_string(self):
                return "uvicorn"  # vLLM, SGLang and llama-cpp-python all run on uvicorn: the header says nothing

            def do_GET(self):
                with toy.lock:
                    toy.requests.append(("GET", self.path))
                if toy.batch_api is not None and toy.batch_api.handles(self.path):
                    self._send(*toy.batch_api.handle("GET", self.path, self.headers, b""))
                    return
                found = toy.get(self.path)
                self._send(*(found if found else (404, {"detail": "Not Found"})))

            def do_POST(self):
                blob = self.rfile.read(int(self.headers["Content-Length"]))
                with toy.lock:
                    toy.requests.append(("POST", self.path))
                if toy.batch_api is not None and toy.batch_api.handles(self.path):
                    self._send(*toy.batch_api.handle("POST", self.path, self.headers, blob))
                    return
                body = json.loads(blob)
                if self.path in ("/v1/chat/completions",):
                    failure = toy.fail(body) if toy.fail else None
                    if isinstance(failure, tuple) and failure[0] == "slow":
                        time.sleep(failure[1])
                        failure = None
                    if failure == "malformed":
                        self._send(200, None, raw=b"<html>502 Bad Gateway</html>")
                        return
                    if failure:
                        self._send(*failure)
                        return
                    self._send(*toy.chat(body))
                elif self.path == "/tokenize" and toy.kind in ("vllm", "vllm-old"):
                    self._send(200, toy.tokenize(body))
                else:
                    self._send(404, {"detail": "Not Found"})

        self.server = ThreadedServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.close_all()

    # ------------------------------------------------------------------------------------ routes
    def get(self, path: str) -> tuple[int, Any] | None:
        owned = {
            "vllm": "vllm",
            "vllm-old": "vllm",
            "sglang": "sglang",
            "llama.cpp": "llamacpp",
            "llama-cpp-python": "me",
            "openai": "openai",
            "unknown": "owner",
        }[self.kind]
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": owned}]}
        if path == "/version" and self.kind in ("vllm", "vllm-old"):  # vllm/entrypoints/openai/api_server.py
            return 200, {"version": "0.12.0" if self.kind == "vllm" else "0.8.5"}
        if path == "/get_server_info" and self.kind == "sglang":  # sglang/srt/entrypoints/http_server.py
            return 200, {"model_path": "/models/toy", "tp_size": 1, "internal_states": [{}], "version": "0.5.4"}
        if path == "/props" and self.kind == "llama.cpp":  # llama.cpp tools/server/server.cpp
            return 200, {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1, "build_info": "b6000"}
        if path == "/openapi.json" and self.kind == "llama-cpp-python":  # llama_cpp/server/app.py
            return 200, {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API", "version": "0.3.36"}}
        return None

    def tokenize(self, body: dict) -> dict:  # vLLM's /tokenize: a prompt that is one vocabulary entry here
        ids = [IDS[body["prompt"]]] if body["prompt"] in IDS else [IDS[" w0"], IDS[" w1"]]
        answer = {"count": len(ids), "max_model_len": 2048, "tokens": ids}
        if body.get("return_token_strs"):
            answer["token_strs"] = [token_str(VOCAB[i]) for i in ids]
        return answer

    def _error(self, message: str) -> tuple[int, dict]:
        return 400, {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}

    def chat(self, body: dict) -> tuple[int, dict]:
        ids_wanted = body.get("logprob_token_ids")
        knows_ids = self.kind == "vllm"  # vLLM after PR #43463
        if self.kind == "openai":  # OpenAI refuses arguments it does not know
            for field in (
                "continue_final_message",
                "add_generation_prompt",
                "logprob_token_ids",
                "return_tokens_as_token_ids",
            ):
                if field in body:
                    return 400, {
                        "error": {
                            "message": f"Unrecognized request argument supplied: {field}",
                            "type": "invalid_request_error",
                        }
                    }
        if self.kind in ("vllm", "vllm-old"):  # ChatCompletionRequest's validators
            if body.get("continue_final_message") and body.get("add_generation_prompt"):
                return self._error("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
            if knows_ids and ids_wanted is not None:
                if not ids_wanted:
                    return self._error("`logprob_token_ids` must not be an empty list.")
                if not body.get("logprobs"):
                    return self._error("when using `logprob_token_ids`, `logprobs` must be set to true.")
            if (body.get("top_logprobs") or 0) > 20:
                return self._error("Requested top logprobs of 21 exceeds maximum of 20")  # --max-logprobs 20
        messages = body["messages"]
        # Only vLLM and SGLang continue a final assistant message; the others (and they without the flag)
        # render it as a finished turn and start a fresh answer.
        continues = bool(body.get("continue_final_message")) and self.kind in ("vllm", "vllm-old", "sglang")
        context = json.dumps({"messages": messages, "continue": continues}, sort_keys=True)
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        scripted = not continues
        dists = [distribution(context, k, scripted, self.script) for k in range(n)]
        sampled = [int(np.argmax(d)) for d in dists]
        as_ids = bool(body.get("return_tokens_as_token_ids")) and self.kind in ("vllm", "vllm-old")

        def spell(i: int) -> str:
            return f"token_id:{i}" if as_ids else VOCAB[i]

        def entry(i: int, d: np.ndarray) -> dict:
            return {"token": spell(i), "logprob": max(float(np.log(d[i])), -9999.0), "bytes": list(spell(i).encode())}

        content = []
        for i, d in zip(sampled, dists):
            item = entry(i, d)
            if knows_ids and ids_wanted:  # serving.py: the sampled token plus exactly the named ids, all listed
                item["top_logprobs"] = [entry(j, d) for j in dict.fromkeys([i, *ids_wanted])]
            else:
                top = int(body.get("top_logprobs") or 0)
                item["top_logprobs"] = [entry(int(j), d) for j in np.argsort(-d)[:top]]
            content.append(item)
        with self.lock:
            self.answers.append((body, dists))
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": "".join(VOCAB[i] for i in sampled)},
            "finish_reason": "length",
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": content}
        return 200, {
            "id": "chatcmpl-toy",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [choice],
            "usage": {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n},
        }

    def rating_requests(self) -> list[tuple[dict, list[np.ndarray]]]:
        """The chat answers that rated something (not the judge's setup requests)."""
        return [(b, d) for b, d in self.answers if any("Rate caption" in str(m.get("content")) for m in b["messages"])]


def expected_raw(dists: list[np.ndarray], position: int, choices=("1", "2", "3", "4", "5")) -> list[float]:
    """Each rating's full-vocabulary probability at ``position``: every vocabulary entry that spells it."""
    d = dists[position]
    return [float(sum(d[i] for i, t in enumerate(VOCAB) if t.strip() == c)) for c in choices]


def close_all(servers) -> None:
    for server in servers:
        with contextlib.suppress(OSError):
            server.close()


__all__ = ["ThreadedServer", "ToyServer", "VOCAB", "IDS", "KINDS", "expected_raw", "distribution", "close_all"]
