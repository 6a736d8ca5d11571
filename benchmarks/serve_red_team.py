"""Hostile and awkward clients against `mmjudge serve` (issue 29 point 1, issue 41): one row per probe.

    python benchmarks/serve_red_team.py [--model DIR] [--out table.md]

Each probe starts its own `mmjudge serve` (a subprocess on a tiny random-weight text model, CPU, one
torch thread) on 127.0.0.1, so what one probe leaves running cannot slow the next. With a server that
has `--api-key`, it runs with a key and the well-behaved requests carry it; the hostile ones do what their
row says. Times are wall-clock seconds on this machine (a busy shared CPU): read them as orders of
magnitude (seconds vs minutes, answered vs not), never as speed figures. The tiny model proves plumbing
only, never judging quality.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

KEY = "red-team-key"
GOOD = {"messages": [{"role": "user", "content": "Say something."}], "max_tokens": 4}


class Server:
    """A `mmjudge serve` subprocess; ``extra`` are more command-line flags."""

    def __init__(self, model: str, extra: tuple = (), key: bool = True, host: str = "127.0.0.1"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        help_text = _cli("serve", "--help").stdout
        self.keyed = key and "--api-key" in help_text
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        env.pop("MMJUDGE_API_KEY", None)
        flags = ["--model", model, "--host", host, "--port", str(self.port), "--device", "cpu", *extra]
        if self.keyed:
            flags += ["--api-key", KEY]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (read back and closed with the server)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mmjudge.cli", "serve", *flags], env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.headers = {"Content-Type": "application/json"}
        if self.keyed:
            self.headers["Authorization"] = f"Bearer {KEY}"

    def wait(self, seconds: float = 120) -> bool:
        """True once it answers; False when it exited first."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                self.get("/health", timeout=2)
                return True
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"no answer on port {self.port} within {seconds} s")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def get(self, path: str, timeout: float = 10) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("GET", path, headers=self.headers)
        reply = conn.getresponse()
        return reply.status, reply.read()

    def post(self, body, headers: dict | None = None, timeout: float = 60) -> tuple[int, bytes, float]:
        """``(status, body, seconds)``; a client timeout raises."""
        started = time.time()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        blob = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", "/v1/chat/completions", body=blob, headers=headers or self.headers)
        reply = conn.getresponse()
        data = reply.read()
        conn.close()
        return reply.status, data, time.time() - started

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmjudge.cli", *args], capture_output=True, text=True, check=False)


def _message(blob: bytes) -> str:
    try:
        return json.loads(blob)["error"]["message"][:110]
    except (ValueError, KeyError, TypeError):
        return blob[:110].decode(errors="replace")


def _good_latency(server: Server, limit: float) -> str:
    try:
        status, _, seconds = server.post(GOOD, timeout=limit)
        return f"{status} after {seconds:.1f} s"
    except OSError:
        return f"no answer within {limit:.0f} s"


def probe_keys(server: Server) -> str:
    wrong = {"Content-Type": "application/json", "Authorization": "Bearer wrong"}
    none = {"Content-Type": "application/json"}
    s1, _, _ = server.post(GOOD, headers=wrong)
    s2, _, _ = server.post(GOOD, headers=none)
    return f"wrong key: {s1}; no key: {s2}"


def probe_huge_max_tokens(server: Server) -> str:
    body = {**GOOD, "max_tokens": 100_000}
    try:
        status, blob, seconds = server.post(body, timeout=10)
        first = f"{status} after {seconds:.1f} s ({_message(blob)})" if status != 200 else f"200 after {seconds:.1f} s"
    except OSError:
        first = "client gave up at 10 s"
    return f"{first}; then a good request: {_good_latency(server, 60)}"


def probe_disconnect(server: Server) -> str:
    """A client asks for 2000 tokens (the tiny model's context is 2048) and hangs up after 1 s; then a good
    request."""
    body = json.dumps({**GOOD, "max_tokens": 2000}).encode()
    conn = socket.create_connection(("127.0.0.1", server.port))
    head = "".join(f"{k}: {v}\r\n" for k, v in server.headers.items())
    conn.sendall(
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
    )
    time.sleep(1)
    conn.close()
    return f"good request after the hang-up: {_good_latency(server, 60)}"


def probe_concurrency(server: Server) -> str:
    body = {**GOOD, "max_tokens": 16}
    server.post(body)  # warm
    _, _, alone = server.post(body)
    times: list[float] = []

    def one():
        times.append(server.post(body, timeout=300)[2])

    started = time.time()
    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - started
    return f"one alone {alone:.2f} s; 8 at once {wall:.2f} s in all ({wall / alone:.1f}x one)"


def probe_big_body(server: Server) -> str:
    blob = b'{"messages": "' + b"x" * (70 * 2**20) + b'"}'
    try:
        status, reply, _ = server.post(blob, timeout=60)
        return f"{status}: {_message(reply)}"
    except OSError as err:
        return f"connection error: {err}"


def probe_chunked(server: Server) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body=iter([json.dumps(GOOD).encode()]), headers=server.headers)
    reply = conn.getresponse()
    return f"{reply.status}: {_message(reply.read())}"


def probe_slow_headers(server: Server) -> str:
    """520 connections from 127.0.0.2 (any 127.x reaches 127.0.0.1 on Linux) each sending one header byte a
    second; then a good request from 127.0.0.1."""
    conns, stop = [], threading.Event()
    for _ in range(520):
        try:
            conn = socket.socket()
            conn.bind(("127.0.0.2", 0))
            conn.connect(("127.0.0.1", server.port))
            conns.append(conn)
        except OSError:
            break

    def dribble() -> None:
        for k in range(60):
            for conn in conns:
                with contextlib.suppress(OSError):  # closed by the server
                    conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x"[k : k + 1] or b"x")
            if stop.wait(1.0):
                return

    threading.Thread(target=dribble, daemon=True).start()
    time.sleep(2)
    good = _good_latency(server, 60)
    refused = held = 0
    for conn in conns:
        conn.settimeout(0.2)
        try:
            data = conn.recv(64)
            refused += data.startswith(b"HTTP/1.1 429")
        except TimeoutError:
            held += 1
        except OSError:
            pass
    stop.set()
    for conn in conns:
        conn.close()
    return f"{len(conns)} opened, {refused} refused (429), {held} held; a good request: {good}"


def probe_huge_prompt(server: Server) -> str:
    """A 60 MB prompt (under the 64 MiB body cap) and, 1 s later, a 2-token request."""
    body = {"messages": [{"role": "user", "content": "hello world " * 5_000_000}], "max_tokens": 2}
    out: dict = {}

    def big() -> None:
        try:
            status, blob, seconds = server.post(body, timeout=600)
            out["big"] = f"{status} after {seconds:.1f} s ({_message(blob)[:70]})"
        except OSError as err:
            out["big"] = f"no answer ({err})"

    thread = threading.Thread(target=big)
    thread.start()
    time.sleep(1)
    small = _good_latency(server, 600)
    thread.join()
    return f"the 2-token request: {small}; the 60 MB prompt: {out['big']}"


def probe_big_prompt_under_limit(server: Server) -> str:
    """A 900,000-character prompt (under the default --max-prompt-chars) and a 2-token request meanwhile."""
    body = {"messages": [{"role": "user", "content": "hello world " * 75_000}], "max_tokens": 2}
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("big", server.post(body, timeout=600)))
    thread.start()
    time.sleep(0.3)
    small = _good_latency(server, 600)
    thread.join()
    status, blob, seconds = out["big"]
    return f"the 2-token request: {small}; the big prompt: {status} after {seconds:.1f} s ({_message(blob)[:60]})"


def probe_nesting(server: Server) -> str:
    status, blob, _ = server.post(b"[" * 100_000)
    return f"{status}: {_message(blob)}"


def probe_bad_values(server: Server) -> str:
    out = []
    for label, extra in (
        ("temperature NaN", b'"temperature": NaN'),
        ("temperature -1", b'"temperature": -1'),
        ("logprobs 1", b'"logprobs": 1'),
    ):
        status, blob, _ = server.post(json.dumps(GOOD).encode()[:-1] + b", " + extra + b"}")
        out.append(f"{label}: {status}" + (f" ({_message(blob)[:60]})" if status != 200 else ""))
    return "; ".join(out)


def probe_ten_mb_prompt(server: Server) -> str:
    body = {"messages": [{"role": "user", "content": "word " * 2_000_000}], "max_tokens": 2}
    status, blob, seconds = server.post(body, timeout=600)
    return f"{status} after {seconds:.1f} s: {_message(blob)}"


def probe_not_an_image(server: Server) -> str:
    url = "data:image/png;base64," + base64.b64encode(b"not an image at all").decode()
    parts = [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": url}}]
    status, blob, _ = server.post({"messages": [{"role": "user", "content": parts}]})
    return f"{status}: {_message(blob)}"


def probe_slow_body(server: Server) -> str:
    """Headers in time, then 5 of the 100 body bytes promised, and nothing more (the client waits 90 s)."""
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=90)
    head = "".join(f"{k}: {v}\r\n" for k, v in server.headers.items())
    started = time.time()
    conn.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{head}Content-Length: 100\r\n\r\n{{"mes'.encode())
    try:
        data = chunk = conn.recv(4096)
        while chunk:  # the answer may come in pieces: read until the server closes
            chunk = conn.recv(4096)
            data += chunk
        reply = data.split(b"\r\n\r\n", 1)[-1]
        return f"{data[9:12].decode()} after {time.time() - started:.1f} s: {_message(reply)}"
    except TimeoutError:
        return "no answer within 90 s"
    finally:
        conn.close()


def _client(server: Server, key: str | None = None):
    import openai

    return openai.OpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1",
        api_key=key or (KEY if server.keyed else "none"),
        max_retries=0,
        timeout=30,
    )


def probe_openai_stream(server: Server) -> str:
    client = _client(server)
    try:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=GOOD["messages"], max_tokens=4, stream=True, logprobs=True, top_logprobs=2
            )
        )
    except Exception as err:  # a probe reports whatever happened
        return f"{type(err).__name__}: {str(err)[:100]}"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    entries = sum(len(c.choices[0].logprobs.content or []) for c in chunks if c.choices and c.choices[0].logprobs)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    return f"{len(chunks)} chunks, {len(text)} characters, {entries} logprob entries, finish {finish}"


def probe_openai_errors(server: Server) -> str:
    out = []
    for label, key, extra in (("wrong key", "wrong", {}), ("max_tokens=100000", None, {"max_tokens": 100_000})):
        try:
            _client(server, key).with_options(timeout=10).chat.completions.create(
                model="m", messages=GOOD["messages"], **{"max_tokens": 4, **extra}
            )
            out.append(f"{label}: answered")
        except Exception as err:  # a probe reports whatever happened
            out.append(f"{label}: {type(err).__name__}")
    return "; ".join(out)


def probe_open_host(model: str) -> str:
    server = Server(model, key=False, host="0.0.0.0")
    try:
        up = server.wait(120)
        if up:
            return "starts and serves every address, no key"
        lines = [line for line in server.output().splitlines() if line.strip()]
        return f"refuses to start (exit {server.proc.returncode}): {lines[-1][:120] if lines else ''}"
    finally:
        server.close()


# (row, probe, flags for a server that has them): the hang-up probe lets 2000 tokens through.
PROBES: list[tuple[str, Callable[[Server], str], tuple]] = [
    ("Authorization: wrong / missing", probe_keys, ()),
    ("max_tokens=100000 (client gives up at 10 s)", probe_huge_max_tokens, ()),
    ("client hangs up 1 s into 2000 tokens", probe_disconnect, ("--max-tokens", "2000")),
    ("8 concurrent requests of 16 tokens", probe_concurrency, ()),
    ("70 MB body", probe_big_body, ()),
    ("chunked body, no Content-Length", probe_chunked, ()),
    ("official openai client, stream=True + logprobs", probe_openai_stream, ()),
    ("official openai client: wrong key / max_tokens=100000", probe_openai_errors, ()),
    ("520 connections sending a header byte a second, then a good request", probe_slow_headers, ()),
    ("60 MB prompt, then a 2-token request", probe_huge_prompt, ()),
    ("900,000-character prompt, then a 2-token request", probe_big_prompt_under_limit, ()),
    ("10 MB prompt", probe_ten_mb_prompt, ()),
    ("100,000 nested `[`", probe_nesting, ()),
    ("temperature NaN / -1, logprobs 1", probe_bad_values, ()),
    ("an image that is not one", probe_not_an_image, ()),
    ("headers, then 5 of 100 body bytes (body deadline 5 s)", probe_slow_body, ("--body-timeout", "5")),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="model folder (default: a tiny random text model)")
    parser.add_argument("--out", help="also write the Markdown table here")
    parser.add_argument("--only", help="run only the probes whose row contains this text")
    args = parser.parse_args()
    model = args.model
    if model is None:
        from mmjudge.tiny_models.text import tiny_text_lm

        model = tiny_text_lm(tempfile.mkdtemp())
    rows = [] if args.only else [("--host 0.0.0.0 and no key", probe_open_host(model))]
    help_text = _cli("serve", "--help").stdout
    for label, probe, flags in PROBES:
        if args.only and args.only not in label:
            continue
        # (flag, value) pairs the server under test has: the same probes run against older versions
        known = [x for pair in zip(flags[::2], flags[1::2]) if pair[0] in help_text for x in pair]
        server = Server(model, tuple(known))
        try:
            server.wait()
            rows.append((label, probe(server)))
        except Exception as err:  # a probe reports whatever happened
            rows.append((label, f"probe failed: {type(err).__name__}: {err}"))
        finally:
            server.close()
        print(f"| {rows[-1][0]} | {rows[-1][1]} |", flush=True)
    table = "| probe | what happened |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    print(table)
    if args.out:
        Path(args.out).write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
