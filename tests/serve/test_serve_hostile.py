"""`mmjudge serve` against the hostile clients of issue 41: connections that never finish their headers
or their body, many connections from one address, prompts too large to tokenise, bodies nested too deep
to parse, out-of-range sampling settings, values of the wrong type, images that are not images, and
error messages that would echo megabytes back.

Slow-client tests use deadlines of about a second and assert what happened (a 408, a 429, a closed
socket), never how fast: their socket timeouts are generous and only a hang reaches them. Tiny
random-weight models prove plumbing, never judging quality.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import io
import json
import logging
import queue
import select
import socket
import threading
import time

import pytest

pytest.importorskip("uvicorn")

from mmjudge.judges import load_judge
from mmjudge.judges.local.prompting import PromptRenderer
from mmjudge.serve.batching import Failure
from mmjudge.serve.engine import ChatEngine
from mmjudge.serve.protocol import Finished, RequestError, read_chat_body
from mmjudge.serve.server import serve_in_thread
from mmjudge.serve.settings import ServeSettings

KEY = "hostile-key-0123"
ASK = [{"role": "user", "content": "Why?"}]
AUTH = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
HANG = 120  # seconds: a socket timeout only a hang reaches


@pytest.fixture(scope="module")
def local(tiny_lm_dir):
    return load_judge("transformers", model=tiny_lm_dir, device="cpu")


@pytest.fixture(scope="module")
def served(local):
    server, url = serve_in_thread(local, api_key=KEY, max_tokens=64, max_prompt_chars=2000)
    yield server, url
    server.shutdown()


def _port(url: str) -> int:
    return int(url.split("//")[1].split("/")[0].split(":")[1])


def _post(url: str, body, headers: dict | None = None, path: str = "/v1/chat/completions") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", _port(url), timeout=HANG)
    blob = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=blob, headers=AUTH if headers is None else headers)
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    return reply.status, json.loads(data)


def _error(url: str, body, path: str = "/v1/chat/completions") -> tuple[int, str, str | None]:
    status, data = _post(url, body, path=path)
    return status, data["error"]["message"], data["error"]["param"]


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A raw connection to the server from ``source`` (any 127.x address reaches 127.0.0.1 on Linux)."""
    conn = socket.socket()
    conn.settimeout(HANG)
    conn.bind((source, 0))
    conn.connect(("127.0.0.1", port))
    return conn


def _until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    seen = b""
    while True:
        try:
            data = conn.recv(65536)
        except ConnectionResetError:
            return seen
        if not data:
            return seen
        seen += data


def _status(reply: bytes) -> int | None:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None


def _json_of(reply: bytes) -> dict:
    return json.loads(reply.split(b"\r\n\r\n", 1)[1])


# ------------------------------------------------------------------------- hole 4: slow clients
def test_one_address_holds_at_most_its_cap_of_connections_so_others_are_served(local):
    """520 connections sending a header byte a second used to take every slot: everyone else got 503.
    Here 10 slow connections from 127.0.0.2 against a server of 8 slots, at most 4 per address: 6 are
    refused at once with 429, the 4 others wait, and a client from 127.0.0.1 is answered meanwhile."""
    server, url = serve_in_thread(
        local, api_key=KEY, max_connections=8, max_connections_per_client=4, header_timeout=60
    )
    port = _port(url)
    slow = []
    try:
        for _ in range(10):
            conn = _connect(port, "127.0.0.2")
            conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHo")  # and nothing more (the deadline is 60 s)
            slow.append(conn)
        status, answer = _post(url, {"messages": ASK, "max_tokens": 2})
        assert status == 200 and answer["usage"]["completion_tokens"] == 2
        refused, waiting = [], list(slow)
        while len(refused) < 6:  # the refused ones are answered and closed at once; a hang ends it
            ready, _, _ = select.select(waiting, [], [], HANG)
            assert ready, "no more connection was refused"
            for conn in ready:
                refused.append(_until_closed(conn))
                waiting.remove(conn)
        assert [_status(reply) for reply in refused] == [429] * 6
        assert select.select(waiting, [], [], 0.5)[0] == []  # the 4 others: nothing sent, still open
        message = _json_of(refused[0])["error"]["message"]
        assert message == (
            "too many connections from 127.0.0.2: this server allows 4 at once from one address "
            "(mmjudge serve --max-connections-per-client)."
        )
    finally:
        for conn in slow:
            conn.close()
        server.shutdown()


def test_headers_and_bodies_must_arrive_within_their_deadlines(local):
    server, url = serve_in_thread(local, api_key=KEY, header_timeout=1.0, body_timeout=1.0)
    port = _port(url)
    try:
        started = time.monotonic()  # before the connections open: the server's deadlines start later
        partial, dribbler, idle = _connect(port), _connect(port), _connect(port)
        partial.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        dribbler.sendall(b"P")
        stop = threading.Event()

        def dribble() -> None:  # a byte every 0.2 s: alive, never done
            with contextlib.suppress(OSError):
                for byte in b"OST /v1/chat/completions HTTP/1.1\r\nHost: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx":
                    if stop.wait(0.2):
                        return
                    dribbler.sendall(bytes([byte]))

        threading.Thread(target=dribble, daemon=True).start()
        replies = [_until_closed(conn) for conn in (partial, dribbler, idle)]
        stop.set()
        assert time.monotonic() - started >= 0.99  # nobody was cut before the deadline
        assert [_status(r) for r in replies] == [408, 408, None] and replies[2] == b""  # an idle one just closes
        assert _json_of(replies[0])["error"]["message"] == (
            "the request headers did not arrive within 1 s (mmjudge serve --header-timeout)."
        )

        # A kept-alive connection: its next request's headers have the same deadline.
        again = _connect(port)
        body = json.dumps({"messages": ASK, "max_tokens": 1}).encode()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        again.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body + b"GET /v1/mod")
        assert _until_closed(again).count(b"HTTP/1.1 ") == 2  # its answer, then the 408

        # The body: headers in time, then 5 of the 100 bytes promised.
        late = _connect(port)
        late.sendall(f"{head}Content-Length: 100\r\n\r\n".encode() + b'{"mes')
        reply = _until_closed(late)
        assert _status(reply) == 408 and _json_of(reply)["error"]["message"] == (
            "the request body did not arrive within 1 s (mmjudge serve --body-timeout)."
        )
        status, answer = _post(url, {"messages": ASK, "max_tokens": 2})  # still serving
        assert status == 200 and answer["usage"]["completion_tokens"] == 2
    finally:
        server.shutdown()


def test_the_key_is_checked_before_the_body_is_read_or_parsed(served):
    port = _port(served[1])
    conn = _connect(port)  # a 60 MB body announced and never sent: refused from the headers alone
    conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n")
    reply = conn.recv(65536)  # the status line comes in the first segment
    conn.close()
    assert _status(reply) == 401
    status, data = _post(served[1], b"[" * 100_000, headers={"Authorization": "Bearer wrong"})
    assert status == 401 and data["error"]["code"] == "invalid_api_key"  # not parsed: not a 400


# ------------------------------------------------------------------------- hole 5: huge prompts
def test_a_prompt_over_the_character_limit_is_refused_before_any_work(served):
    half = {"role": "user", "content": "x" * 1000}
    status, message, param = _error(served[1], {"messages": [half, {"role": "assistant", "content": "y" * 1001}]})
    assert (status, param) == (400, "messages")
    assert message == (
        "the messages hold 2001 characters of text, above this server's limit of 2000 "
        "(mmjudge serve --max-prompt-chars)."
    )
    # Refused by size, not by the model's context after tokenising (10,000 characters are > 2048 tokens).
    status, message, _ = _error(served[1], {"messages": [{"role": "user", "content": "word " * 2000}]})
    assert status == 400 and "10000 characters" in message and "context" not in message
    status, message, param = _error(served[1], {"prompt": "z" * 2001}, path="/tokenize")
    assert (status, param) == (400, "prompt") and "2001 characters" in message
    many = [{"role": "user", "content": ""}] * 2049  # each one rendered by the chat template: bounded too
    status, message, param = _error(served[1], {"messages": many})
    assert (status, param) == (
        400,
        "messages",
    ) and message == "`messages` holds 2049 messages; this server takes at most 2048."
    status, answer = _post(served[1], {"messages": [{"role": "user", "content": "x" * 2000}], "max_tokens": 1})
    assert status == 200 and answer["usage"]["completion_tokens"] == 1  # at the limit: served


def test_a_prompt_being_tokenised_holds_up_no_other_request(local, monkeypatch):
    """Tokenising happens in the request's own thread, never on the model thread: while one prompt's
    tokenisation is stuck, a 2-token request is answered."""
    release, entered = threading.Event(), threading.Event()
    encode = PromptRenderer.encode

    def stuck_on_slow(self, requests, texts=None):
        if any("SLOW" in turn.text for request in requests for turn in request.turns):
            entered.set()
            release.wait(HANG)
        return encode(self, requests, texts)

    monkeypatch.setattr(PromptRenderer, "encode", stuck_on_slow)
    engine = ChatEngine(local, "tiny")
    slow_box: queue.Queue = queue.Queue()

    def slow_client() -> None:  # what the HTTP side does in a worker thread
        with contextlib.suppress(OSError):
            params = engine.read({"messages": [{"role": "user", "content": "SLOW"}], "max_tokens": 2})
            engine.submit(params, slow_box.put)

    worker = threading.Thread(target=slow_client, daemon=True)
    try:
        worker.start()
        assert entered.wait(HANG)
        fast: queue.Queue = queue.Queue()
        engine.submit(engine.read({"messages": ASK, "max_tokens": 2}), fast.put)
        event = fast.get(timeout=60)
        while not isinstance(event, Finished | Failure):
            event = fast.get(timeout=60)
        assert isinstance(event, Finished) and event.completion_tokens == 2
        assert not release.is_set() and worker.is_alive()  # answered while the other was still tokenising
        release.set()
        worker.join(HANG)
        event = slow_box.get(timeout=HANG)
        while not isinstance(event, Finished | Failure):
            event = slow_box.get(timeout=HANG)
        assert isinstance(event, Finished) and event.completion_tokens == 2
    finally:
        release.set()
        engine.close()


def test_a_prompt_past_the_context_is_refused_before_it_reaches_the_model(local):
    engine = ChatEngine(local, "tiny", settings=ServeSettings(max_tokens=4000))
    try:
        with pytest.raises(RequestError, match="maximum context length is 2048 tokens") as caught:
            engine.read({"messages": ASK, "max_tokens": 2040})
        assert caught.value.status == 400 and engine.batcher.stats.requests == 0
        # Queued unprepared (a caller of submit, not the server): checked alike before any forward pass.
        body = {"messages": ASK, "max_tokens": 2040}
        unprepared = read_chat_body(body, max_tokens_limit=4000, max_logprobs=5, vocab_size=engine.batcher.vocab_size)
        events: queue.Queue = queue.Queue()
        engine.submit(unprepared, events.put)
        refused = events.get(timeout=HANG)
        assert isinstance(refused, Failure) and refused.status == 400 and "maximum context length" in refused.message
        assert engine.batcher.stats.tokens == 0
    finally:
        engine.close()


# ------------------------------------------------------------------------- hole 6 and the weak ones
def test_bodies_nested_too_deep_are_one_line_400s(served, caplog):
    caplog.set_level(logging.ERROR)
    status, message, _ = _error(served[1], b"[" * 100_000)
    assert status == 400 and message == "the body is nested too deeply to read."
    deep = "[" * 900 + "]" * 900  # parses, but is no value any field takes
    body = f'{{"messages": [{{"role": "user", "content": "Why?"}}], "max_tokens": {deep}}}'.encode()
    status, message, param = _error(served[1], body)
    assert (status, param) == (400, "max_tokens") and len(message) < 200
    status, message, _ = _error(served[1], b'{"prompt": ' + b"[" * 100_000, path="/tokenize")
    assert status == 400 and "nested too deeply" in message
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize(
    "field, value",
    [
        ("temperature", "NaN"),
        ("temperature", "-1"),
        ("temperature", "2.5"),
        ("temperature", '"hot"'),
        ("temperature", "Infinity"),
        ("top_p", "1.5"),
        ("top_p", "-0.1"),
        ("frequency_penalty", "3"),
        ("presence_penalty", "-2.5"),
        ("top_k", "-2"),
        ("top_k", "1.5"),
        ("min_p", "2"),
        ("repetition_penalty", "0"),
        ("seed", '"x"'),
        ("logprobs", "1"),
        ("continue_final_message", '"no"'),
        ("add_generation_prompt", "1"),
        ("return_tokens_as_token_ids", "0"),
        ("top_logprobs", '"3"'),
        ("n", "1.0"),
    ],
)
def test_out_of_range_or_mistyped_settings_are_refused_naming_the_field(served, field, value):
    body = f'{{"messages": [{{"role": "user", "content": "Why?"}}], "max_tokens": 2, "{field}": {value}}}'
    status, message, param = _error(served[1], body.encode())
    assert (status, param) == (400, field) and message.startswith(field)


def test_in_range_sampling_settings_are_accepted_and_decoding_stays_greedy(served):
    plain = _post(served[1], {"messages": ASK, "max_tokens": 4})[1]
    sampling = dict(temperature=0.7, top_p=0.9, frequency_penalty=0.5, presence_penalty=-0.5, seed=3, top_k=5)
    sampling.update(min_p=0.1, repetition_penalty=1.1, logprobs=False, temperature_unused=None)
    status, answer = _post(served[1], {"messages": ASK, "max_tokens": 4, **sampling})
    assert status == 200 and answer["choices"][0]["message"] == plain["choices"][0]["message"]
    status, answer = _post(served[1], {"messages": ASK, "max_tokens": 4, "temperature": 0, "top_k": -1})
    assert status == 200


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")  # PIL warns above its own 89 M
def test_an_image_that_is_not_one_is_one_clear_line(served):
    from PIL import Image

    def body(url: str) -> dict:
        parts = [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": url}}]
        return {"messages": [{"role": "user", "content": parts}]}

    bad = "data:image/png;base64," + base64.b64encode(b"not an image at all").decode()
    status, message, param = _error(served[1], body(bad))
    assert (status, param) == (400, "messages")
    assert message == (
        "the image in messages[0].content[1] is not a PNG, JPEG, WebP, GIF or BMP image (cannot identify image file)."
    )
    status, message, _ = _error(served[1], body("data:image/png;base64,abc"))
    assert status == 400 and message.startswith("the image in messages[0].content[1] is not valid base64")
    blob = io.BytesIO()  # 10000 x 10000 pixels in 12 kB: refused from its header (default --max-image-pixels)
    Image.new("1", (10_000, 10_000)).save(blob, "PNG")
    status, message, _ = _error(served[1], body("data:image/png;base64," + base64.b64encode(blob.getvalue()).decode()))
    assert status == 400 and message == (
        "the image in messages[0].content[1] is 10000x10000 = 100000000 pixels, above this server's limit of "
        "36000000 (mmjudge serve --max-image-pixels)."
    )
    blob = io.BytesIO()  # PIL reads the header, then finds the pixels truncated
    Image.new("RGB", (64, 64), "red").save(blob, "JPEG")
    status, message, _ = _error(
        served[1], body("data:image/jpeg;base64," + base64.b64encode(blob.getvalue()[:300]).decode())
    )
    assert status == 400 and message.startswith("the image in messages[0].content[1] is not a decodable image (")
    status, message, _ = _error(served[1], body(5))  # not even a string
    assert status == 400 and message.startswith("only base64 `data:` image URLs")


def test_error_messages_never_echo_huge_input(served):
    huge = "x" * 100_000
    for body, field in (
        ({"messages": ASK, "n": huge}, "n"),
        ({"messages": ASK, "max_tokens": huge}, "max_tokens"),
        ({"messages": ASK, "stream": huge}, "stream"),
        ({"messages": [{"role": "user", "content": [{"type": huge}]}]}, "messages"),
        ({"messages": [{"role": huge, "content": "x"}]}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": [huge]}]}]}, "messages"),
    ):
        status, message, param = _error(served[1], body)
        assert (status, param) == (400, field) and len(message) < 300, message[:300]


# ------------------------------------------------------------------------- the model thread only stacks
@pytest.mark.parametrize("family", ["text", "qwen2_vl", "llava", "llava_next", "idefics3"])
def test_inputs_made_one_request_at_a_time_stack_into_the_batch_encoding(family, tiny_lm_dir, tiny_family_dir):
    """What the model thread runs equals the processor's own batch encoding (left padding): stacked from
    the requests' own inputs where they stack, else (image tensors a processor pads its own way) encoded
    whole as before."""
    from PIL import Image

    from mmjudge.judges.requests import GenerationRequest, Turn
    from mmjudge.serve.inputs import collate, prepare
    from mmjudge.serve.protocol import ChatParams

    judge = load_judge("transformers", model=tiny_lm_dir if family == "text" else tiny_family_dir(family), device="cpu")
    turns = [[Turn("user", "Rate it.")], [Turn("system", "Be brief."), Turn("user", "A dog runs on the beach.")]]
    batches = [[GenerationRequest(t) for t in turns]]
    if family != "text":
        images = [Image.new("RGB", (40, 30), "red"), Image.new("RGB", (64, 48), "blue")]
        batches.append([GenerationRequest(t, image=image) for t, image in zip(turns, images)])
    stacked = []
    for requests in batches:
        params = [ChatParams(request=r, max_tokens=2) for r in requests]
        for p in params:
            prepare(p, judge.prompts, 10**6)
        batch = collate([p.inputs for p in params], judge.tokenizer.pad_token_id)
        whole = judge.prompts.encode(requests, [p.text for p in params])
        assert [p.prompt_tokens for p in params] == whole["attention_mask"].sum(dim=1).tolist()
        stacked.append(batch is not None)
        if batch is not None:
            assert sorted(batch) == sorted(whole)
            for key, value in whole.items():
                assert batch[key].dtype == value.dtype and batch[key].equal(value), key
    # Text always stacks; images where the processor gives each one a tensor of one shape (LLaVA-NeXT: as many
    # tiles as the image's aspect asks, so these two fall back to the batch encoding).
    assert stacked == {"text": [True], "llava_next": [True, False]}.get(family, [True, True])
