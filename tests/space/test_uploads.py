"""Uploads to every mmjudge page (the Space, the leaderboard) through real HTTP requests to Gradio's upload
route: a body over the page's limit is answered 413 (before it is read, when its length is declared), and
no file of it stays in the upload folder; nor does the partial file of a client that left mid-upload
(issue 41.7: the Space took a 1 GB POST whole and kept it; a client that left kept its partial file)."""

import http.client
import json
import socket
import time
import urllib.parse
from pathlib import Path

import pytest

pytest.importorskip("gradio")

from mmjudge.gradio_compat import upload_limit_line

BOUNDARY = "mmjudge-test-boundary"
PREAMBLE = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="big.bin"\r\n'
    "Content-Type: application/octet-stream\r\n\r\n"
).encode()
CLOSING = f"\r\n--{BOUNDARY}--\r\n".encode()
LARGE = 64 * 1024  # a file this big in the upload folder is an upload's, not the page's own examples


def _address(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlparse(url)
    return parts.hostname, parts.port


def _declared_too_large(url: str, size: int, json_body: bool = False) -> tuple[int, bytes]:
    """Send only the headers (declaring ``size`` bytes of file) and the part's preamble; read the answer.
    ``json_body``: a JSON body to Gradio's queue instead of an upload."""
    with socket.create_connection(_address(url), timeout=20) as s:
        length = len(PREAMBLE) + size + len(CLOSING)
        route, kind = ("queue/join", "application/json") if json_body else ("upload", "multipart/form-data")
        s.sendall(
            f"POST /gradio_api/{route} HTTP/1.1\r\nHost: test\r\nContent-Type: {kind}; boundary={BOUNDARY}"
            f"\r\nContent-Length: {length}\r\n\r\n".encode()
            + PREAMBLE
        )
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < 40:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _post(url: str, size: int, chunked: bool) -> tuple[int, bytes]:
    """POST a ``size``-byte file (streamed in 1 MB pieces, chunked or with its length declared)."""

    def body():
        yield PREAMBLE
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            left -= n
            yield b"x" * n
        yield CLOSING

    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    if not chunked:
        headers["Content-Length"] = str(len(PREAMBLE) + size + len(CLOSING))
    conn = http.client.HTTPConnection(*_address(url), timeout=60)
    try:
        conn.request("POST", "/gradio_api/upload", body=body(), headers=headers, encode_chunked=chunked)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def _post_json(url: str, size: int, chunked: bool) -> tuple[int, bytes]:
    """POST a JSON body of about ``size`` bytes to Gradio's queue (one long string: read whole into memory
    unless refused), streamed in 1 MB pieces, chunked or with its length declared. The session is one no page
    opened: Gradio answers a body it reads, and runs nothing."""
    head, tail = b'{"data": ["', b'"], "fn_index": 999, "session_hash": "abc"}'

    def body():
        yield head
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            left -= n
            yield b"x" * n
        yield tail

    headers = {"Content-Type": "application/json"}
    if not chunked:
        headers["Content-Length"] = str(len(head) + size + len(tail))
    conn = http.client.HTTPConnection(*_address(url), timeout=60)
    try:
        conn.request("POST", "/gradio_api/queue/join", body=body(), headers=headers, encode_chunked=chunked)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def _leave_mid_upload(url: str, declared: int, sent: int) -> None:
    """Declare ``declared`` bytes of file, send ``sent`` of them, and go away."""
    s = socket.create_connection(_address(url), timeout=20)
    length = len(PREAMBLE) + declared + len(CLOSING)
    s.sendall(
        f"POST /gradio_api/upload HTTP/1.1\r\nHost: test\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}"
        f"\r\nContent-Length: {length}\r\n\r\n".encode()
        + PREAMBLE
        + b"y" * sent
    )
    time.sleep(0.5)  # the server has written what arrived to its temporary file
    s.close()


def _large_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.stat().st_size >= LARGE)


def _check_uploads(url: str, cap: int, temp: Path) -> None:
    status, body = _declared_too_large(url, cap + (1 << 20))
    assert (status, body.decode()) == (413, upload_limit_line(cap))
    status, body = _post(url, cap + (1 << 20), chunked=True)
    assert status == 413 and b"maximum allowed size" in body
    # Any body, not only an upload's: a JSON body over the limit was read whole into memory (300 MB: +1.1 GB).
    status, body = _declared_too_large(url, cap + (1 << 20), json_body=True)
    assert (status, body.decode()) == (413, upload_limit_line(cap, upload=False))
    status, body = _post_json(url, cap + (1 << 20), chunked=True)  # Gradio's own answer to the cut body was 400
    assert (status, body.decode()) == (413, upload_limit_line(cap, upload=False))
    status, body = _post_json(url, 1000, chunked=False)  # a body within it reaches Gradio (which answers it)
    assert status != 413, body
    _leave_mid_upload(url, declared=cap - 1000, sent=cap // 2)
    status, body = _post(url, cap // 4, chunked=False)  # an upload within the limit still arrives
    assert status == 200, body
    [kept] = [Path(p) for p in json.loads(body)]
    deadline = time.monotonic() + 10
    while _large_files(temp) != [kept] and time.monotonic() < deadline:
        time.sleep(0.2)  # the server notices the departed client when its read fails
    assert _large_files(temp) == [kept], [(str(p), p.stat().st_size) for p in _large_files(temp)]
    assert kept.stat().st_size == cap // 4


def test_space_upload_limit_and_nothing_left_behind(tmp_path, monkeypatch):
    from mmjudge.space.app import build_demo, serve
    from mmjudge.space.handlers import Scorer
    from mmjudge.space.settings import Settings
    from mmjudge.testing import ScriptedJudge

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    settings = Settings(judge="scripted", max_upload_mb=1)
    script = {c: [0.2] * 5 for c in ("correctness", "completeness", "clarity", "fluency", "conciseness")}
    demo = build_demo(settings, Scorer(settings, judge=ScriptedJudge(script)))
    _, url, _ = serve(demo, settings, prevent_thread_lock=True, quiet=True)
    try:
        assert demo.config["max_file_size"] == 2**20  # what the browser and gradio_client check first
        _check_uploads(url, 2**20, tmp_path / "gradio")
    finally:
        demo.close()


def test_leaderboard_upload_limit_and_nothing_left_behind(tmp_path, monkeypatch):
    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.settings import DEFAULTS

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    demo = build_app(str(tmp_path / "board"), {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20})
    _, url, _ = launch(demo, prevent_thread_lock=True, quiet=True)
    try:
        _check_uploads(url, demo.lb_max_bytes, tmp_path / "gradio")
    finally:
        demo.close()
