"""Local OpenAI-compatible servers as test peers: a free port, waiting for a server to answer, and
llama-cpp-python's server over a GGUF file (the ``llama_server`` fixture in tests/conftest.py starts it once
per test module)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

LLAMA_MODEL_ALIAS = "smollm2-135m-instruct-q4_1"

# `python -m llama_cpp.server` with llama.cpp's "extra buffer types" (weight repacking) off: on these
# VMs the CPU reports AMX, and the AMX matmul (ggml_backend_amx_mul_mat) segfaults in the first decode
# (seen with llama-cpp-python 0.3.36). The server has no flag for it, so the model defaults are patched.
# Both sides of every comparison read the same server, so this changes nothing the tests assert.
_LLAMA_SERVER = """
import runpy, sys
import llama_cpp
import llama_cpp.llama
defaults = llama_cpp.llama_model_default_params
def no_extra_bufts():
    params = defaults()
    params.use_extra_bufts = False
    return params
llama_cpp.llama.llama_cpp.llama_model_default_params = no_extra_bufts
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
runpy.run_module("llama_cpp.server", run_name="__main__")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read().decode()[-3000:] if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"no answer from {url} within {seconds} s")


@contextlib.contextmanager
def llama_cpp_server(gguf: Path, log: Path) -> Iterator[str]:
    """llama-cpp-python's server over ``gguf`` on a free loopback port, answering a first chat request;
    yields its ``/v1`` URL and stops it on exit. Its log goes to ``log``."""
    port = free_port()
    args = [
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--logits_all",
        "true",
        "--model_alias",
        LLAMA_MODEL_ALIAS,
    ]
    cmd = [sys.executable, "-c", _LLAMA_SERVER, *args]
    with open(log, "wb") as sink:  # a file, not a pipe: its verbose log would fill a pipe and block it
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_for(url, proc, 180)
        body = {"model": LLAMA_MODEL_ALIAS, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
        try:
            req = urllib.request.Request(
                url + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            urllib.request.urlopen(req, timeout=120).read()
        except OSError:
            proc.wait(timeout=10)
            pytest.fail(
                f"llama.cpp's server died on its first chat request (exit code {proc.returncode}; -11 is a "
                "segfault inside llama_decode: a broken llama-cpp-python build). Log tail: "
                + log.read_text(errors="replace")[-1500:]
            )
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def post_chat(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        url + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as reply:
        return json.loads(reply.read())


def reset_prefix(url: str, model: str) -> None:
    """llama-cpp-python keeps the previous request's tokens and evaluates only what differs; the logits
    of a suffix evaluated on top of a kept prefix differ from a fresh evaluation at the 1e-2 level (Q4
    kernels depend on the batch shape). A short unrelated request before each compared request makes
    both evaluate the same suffix on the same kept prefix (the shared system prompt)."""
    post_chat(
        url, {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1, "temperature": 0}
    )
