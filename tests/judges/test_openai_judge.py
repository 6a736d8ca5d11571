"""The OpenAI-compatible judge backend: parsing, retries, cache, secrets, and two real peers
(``mmjudge serve`` over tiny random models, llama.cpp's server over the real SmolLM2-135M GGUF).

Random-weight models prove the protocol and the plumbing, never judging quality. Every server listens
on 127.0.0.1 only and every wait is bounded.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from PIL import Image

from llama_cpp_server import free_port, post_chat, reset_prefix, wait_for
from mmjudge.judges import load_judge
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.openai.format import chat_messages
from mmjudge.judges.openai.judge import OpenAIJudge
from mmjudge.judges.openai.reading import rating_position, read_rating
from mmjudge.judges.openai.transport import APIError
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.prompts import load_prompt_set
from repo_paths import ROOT
from toy_api_servers import ThreadedServer

pytestmark = pytest.mark.filterwarnings("ignore:HarmonicEval. the judge put under")

CHOICES = ["1", "2", "3", "4", "5"]
SECRET = "sk-test-THIS-MUST-NOT-LEAK-0123456789"


# ----------------------------------------------------------------------------------- a stub server
def _entry(token, logprob, top=()):
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}


def _answer(content_entries, text="Score: 4", usage=(10, 3)):
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": {"content": content_entries},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
    }


GOOD = _answer(
    [
        _entry("Score", 0.0),
        _entry(":", 0.0),
        _entry(" 4", math.log(0.6), [(" 4", math.log(0.6)), ("4", math.log(0.1)), (" 3", math.log(0.2))]),
    ]
)


class Stub:
    """A scripted OpenAI-compatible server: ``failures`` are answered first, one per request
    (``(status, headers, body)`` or ``("slow", seconds)``), then ``answer(body)``."""

    def __init__(self, failures=(), answer=None, delay=0.0):
        self.failures = list(failures)
        self.answer = answer or (lambda body: GOOD)
        self.delay = delay
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, data, headers=None):
                blob = json.dumps(data).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                self.wfile.write(blob)

            def do_GET(self):
                self._send(200, {"data": [{"id": "stub-model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.bodies.append(body)
                    stub.headers.append(dict(self.headers))
                    failure = stub.failures.pop(0) if stub.failures else None
                if failure and failure[0] == "slow":
                    time.sleep(failure[1])
                    failure = None
                if failure:
                    status, headers, data = failure
                    self._send(status, data, headers)
                    return
                time.sleep(stub.delay)
                self._send(200, stub.answer(body))

        self.server = ThreadedServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.close_all()


@pytest.fixture
def stub_factory():
    made = []

    def make(**kwargs):
        made.append(Stub(**kwargs))
        return made[-1]

    yield make
    for stub in made:
        stub.close()


def _judge(url, **kwargs):
    # Both modes given: the judge sends nothing but ratings (no server identification), so the stub's
    # request counts below are the ratings' own.
    kwargs.setdefault("prefill", "none")
    kwargs.setdefault("mass", "top-k")
    kwargs.setdefault("retry_sleep_scale", 0.001)
    judge = OpenAIJudge(base_url=url, **kwargs)
    judge.slept = []
    judge.sleep = lambda s: (judge.slept.append(s), time.sleep(s))
    return judge


def _request(i=0, image=None):
    return RatingRequest([Turn("user", f"Rate caption {i}.")], image=image, answer_prefix="Score: ")


# ---------------------------------------------------------------------------------------- parsing
def test_rating_found_late_reads_that_position_and_sums_variants():
    content = [_entry(t, -0.1, [(t, -0.1)]) for t in ["Your", " evaluation", " score", " is"]]
    content.append(
        _entry(
            " 5", math.log(0.5), [(" 5", math.log(0.5)), ("5", math.log(0.25)), (" 4", math.log(0.125)), (" is", -2.0)]
        )
    )
    r = read_rating(content, CHOICES, first_position=False)
    assert rating_position(content, CHOICES) == 4
    assert r.raw == pytest.approx([0, 0, 0, 0.125, 0.75], abs=1e-12)
    assert r.greedy == " 5" and r.exact_mass is False
    assert r.probs == pytest.approx([0, 0, 0, 0.125 / 0.875, 0.75 / 0.875], abs=1e-12)


def test_minus_9999_counts_as_zero_and_mass_is_a_lower_bound():
    content = [_entry("3", math.log(0.4), [("3", math.log(0.4)), ("2", -9999.0), ("1", -9999.0), ("x", math.log(0.5))])]
    r = read_rating(content, CHOICES, first_position=True)
    assert r.raw == [0.0, 0.0, pytest.approx(0.4), 0.0, 0.0]
    assert r.mass == pytest.approx(0.4) and not r.exact_mass


def test_rating_absent_or_split_reads_after_score_or_gives_zero_mass():
    # "10" on a 10/20 scale split into "1" + "0": no single token is a rating; read right after "Score:".
    split = [
        _entry("Score", 0.0),
        _entry(":", 0.0),
        _entry(" 1", -0.1, [(" 1", -0.1), (" 10", math.log(0.05))]),
        _entry("0", 0.0),
    ]
    r = read_rating(split, ["10", "20"], first_position=False)
    assert rating_position(split, ["10", "20"]) == 2
    assert r.raw == pytest.approx([0.05, 0.0]) and r.greedy == " 1"
    absent = [_entry("I", 0.0, [("I", 0.0)]), _entry(" cannot", 0.0, [(" cannot", 0.0)])]
    r = read_rating(absent, CHOICES, first_position=False)
    assert r.raw == [0.0] * 5 and r.mass == 0.0 and r.greedy == "I cannot"
    assert all(math.isnan(p) for p in r.probs)  # no rating: no distribution (a uniform one would be a made-up 3.0)


def test_duplicate_top_entries_count_once():
    content = [_entry("4", math.log(0.3), [("4", math.log(0.3)), ("4", math.log(0.3))])]
    assert read_rating(content, CHOICES, first_position=True).raw[3] == pytest.approx(0.3)


def test_messages_carry_the_image_as_png_data_url_and_the_prefix_to_continue():
    image = Image.new("RGB", (8, 6), (1, 2, 3))
    messages = chat_messages(_request(0, image), prefix=True)
    assert messages[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert messages[0]["content"][1] == {"type": "text", "text": "Rate caption 0."}
    assert messages[-1] == {"role": "assistant", "content": "Score: "}


def test_one_image_is_png_encoded_once_for_all_its_requests(monkeypatch):
    import base64
    import io

    from mmjudge.judges.openai import format as backend

    encoded = []
    original = backend.image_data_url
    monkeypatch.setattr(backend, "image_data_url", lambda image: encoded.append(image.size) or original(image))
    first, other = Image.new("RGB", (9, 7), (4, 5, 6)), Image.new("RGB", (9, 7), (6, 5, 4))
    urls = [
        chat_messages(_request(i, image), prefix=False)[0]["content"][0]["image_url"]["url"]
        for i, image in enumerate([first, first.copy(), other, first])
    ]
    assert len(encoded) == 2  # one per distinct image (same pixels = same image)
    assert urls[0] == urls[1] == urls[3] != urls[2]
    decoded = Image.open(io.BytesIO(base64.b64decode(urls[2].split(",", 1)[1])))
    assert decoded.tobytes() == other.tobytes()
    for k in range(backend.DATA_URL_CACHE_SIZE + 5):  # bounded
        backend.request_image_url(_request(k, Image.new("RGB", (3, 3), (k, 0, 0))))
    assert len(backend._data_urls) == backend.DATA_URL_CACHE_SIZE


# ---------------------------------------------------------------------------------- HTTP behaviour
def test_request_body_and_first_rating_distribution(stub_factory):
    stub = stub_factory()
    judge = _judge(stub.url, top_logprobs=20, max_tokens=16)
    [r] = judge.rate([_request()], progress=False)
    body = stub.bodies[0]
    assert body["model"] == "stub-model" and body["temperature"] == 0
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 16
    assert "continue_final_message" not in body and body["messages"][-1]["role"] == "user"
    assert r.raw == pytest.approx([0, 0, 0.2, 0.7, 0])
    assert judge.capabilities.teacher_forcing is False and judge.capabilities.full_distribution is False


def test_retries_429_and_500_honouring_retry_after_ms_then_retry_after(stub_factory):
    stub = stub_factory(
        failures=[
            (429, {"retry-after-ms": "1500"}, {"error": {"message": "slow down"}}),
            (503, {"Retry-After": "2"}, {"error": {"message": "busy"}}),
            (500, {}, {"error": {"message": "oops"}}),
        ]
    )
    judge = _judge(stub.url, max_concurrency=1)
    [r] = judge.rate([_request()], progress=False)
    assert len(stub.bodies) == 4 and r.raw[3] == pytest.approx(0.7)
    assert judge.slept[0] == pytest.approx(1.5 * 0.001) and judge.slept[1] == pytest.approx(2 * 0.001)
    assert 0.5 * 0.5 * 0.001 <= judge.slept[2] <= 2 * 0.5 * 0.001 * 2  # exponential backoff, jittered
    assert judge.usage.retries == 3 and judge.usage.requests == 1


def test_slow_answer_times_out_and_is_retried(stub_factory):
    stub = stub_factory(failures=[("slow", 1.0)])
    judge = _judge(stub.url, timeout=0.3, max_concurrency=1)
    [r] = judge.rate([_request()], progress=False)
    assert len(stub.bodies) == 2 and r.raw[3] == pytest.approx(0.7) and judge.usage.retries == 1


def test_gives_up_after_max_retries_with_the_last_error(stub_factory):
    """Retries spent, a rating is a failure with its reason and no probabilities (issue 19: a judge's
    failure is never a score); a bare chat call still raises."""
    stub = stub_factory(failures=[(500, {}, {"error": {"message": "down"}})] * 6)
    judge = _judge(stub.url, max_retries=2)
    [r] = judge.rate([_request()], progress=False)
    assert r.error is not None and "giving up after 3 attempts" in r.error and "HTTP 500" in r.error
    assert r.raw == [0.0] * 5 and r.mass == 0.0 and r.exact_mass is False
    assert len(stub.bodies) == 3 and judge.usage.failed == 1 and "1 failed" in judge.usage_summary()
    with pytest.raises(APIError, match="giving up after 3 attempts.*HTTP 500"):
        judge.chat([{"role": "user", "content": "hi"}])


def test_model_refusing_logprobs_is_one_clear_error(stub_factory):
    message = {
        "error": {"message": "This model does not support the 'logprobs' parameter.", "type": "invalid_request_error"}
    }
    stub = stub_factory(failures=[(400, {}, message)])
    judge = _judge(stub.url)
    with pytest.raises(ValueError, match=r"refuses log-probabilities \(HTTP 400.*use a model that returns them"):
        judge.rate([_request()], progress=False)
    assert len(stub.bodies) == 1  # a 400 is not retried


def test_api_key_is_sent_but_never_in_cache_signature_or_errors(stub_factory, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MY_KEY", SECRET)
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}"}}
    stub = stub_factory(failures=[(401, {}, echo)])
    judge = _judge(stub.url, api_key_env="MY_KEY")
    with pytest.raises(ValueError) as err:
        judge.rate([_request()], progress=False)
    assert SECRET not in str(err.value) and "rejected the API key" in str(err.value)
    stub.failures = [(500, {}, echo)]
    cached = CachedJudge(_judge(stub.url, api_key_env="MY_KEY", max_retries=0), tmp_path / "c.sqlite")
    with caplog.at_level("INFO"):
        [failed] = cached.rate([_request(1)], progress=False)  # a failed rating: its reason, scrubbed
    assert failed.error is not None and SECRET not in failed.error and "***" in failed.error
    assert caplog.records and all(SECRET not in r.getMessage() for r in caplog.records)
    cached.rate([_request(2)], progress=False)
    assert {k.lower(): v for k, v in stub.headers[-1].items()}["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in json.dumps(cached.identity()) and SECRET not in json.dumps(cached.signature_fields())
    con = sqlite3.connect(tmp_path / "c.sqlite")
    assert SECRET not in json.dumps(con.execute("SELECT * FROM results").fetchall())
    assert cached.inner.signature_fields() == {"judge": "openai:stub-model", "prefill": "none", "top_logprobs": 20}


def test_openai_without_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="set the environment variable OPENAI_API_KEY"):
        load_judge("openai", model="openai:gpt-4o-2024-08-06")


def test_prefill_auto_probe(stub_factory):
    def continuing(body):
        if body.get("continue_final_message"):
            return _answer([], text=" 8, 9")
        return GOOD

    judge = _judge(stub_factory(answer=continuing).url, prefill="auto")
    assert judge.prefill_mode == "continue" and judge.capabilities.teacher_forcing
    refusing = stub_factory(
        failures=[(400, {}, {"error": {"message": "Unrecognized request argument: continue_final_message"}})]
    )
    judge = _judge(refusing.url, prefill="auto")
    assert judge.prefill_mode == "none" and not judge.capabilities.teacher_forcing
    # Accepted, but the model does not count on: that proves neither (a weak model behind a server that
    # does continue answers the same), so it is reported, never read as "no" (issue 19).
    restarting = stub_factory(answer=lambda body: _answer([], text="1, 2, 3"))
    with pytest.raises(
        ValueError, match=r"Cannot tell whether the server .* continues an assistant message.*prefill='continue'"
    ):
        _judge(restarting.url, prefill="auto")
    failing = stub_factory(failures=[(503, {}, {"error": {"message": "down"}})] * 3)
    with pytest.raises(APIError, match="giving up after 3 attempts"):  # a failing server is not "no prefill"
        _judge(failing.url, prefill="auto", max_retries=2)


def test_usage_and_cost_summary(stub_factory, monkeypatch):
    stub = stub_factory()
    judge = _judge(stub.url, max_concurrency=3)
    judge.rate([_request(i) for i in range(5)], progress=False)
    assert len(stub.bodies) == 5
    assert judge.usage_summary() == "openai:stub-model: 5 requests, 50 prompt + 15 completion tokens, 0 retries"
    judge.model_name = "gpt-4o-2024-08-06"  # priced: 2.50 / 10.00 US$ per million tokens
    assert judge.usage_summary().endswith("about $0.0003 at list prices")


_KILLED_RUN = """
import sys
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.judges import load_judge
options = dict(prefill="none", mass="top-k", max_concurrency=1, batch_size=2)
judge = CachedJudge(load_judge("openai", base_url=sys.argv[1], **options), sys.argv[2])
requests = [RatingRequest([Turn("user", f"Rate caption {i}.")]) for i in range(20)]
judge.rate(requests, progress=False)
print("done")
"""


def test_cache_is_reused_after_a_killed_run(stub_factory, tmp_path):
    stub = stub_factory(delay=0.05)
    cache = tmp_path / "cache.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-c", _KILLED_RUN, stub.url, str(cache)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while len(stub.bodies) < 9 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    first = len(stub.bodies)
    stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 0 < stored < 20 and stored <= first
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.stdout.strip() == "done", out.stderr[-2000:]
    assert len(stub.bodies) - first == 20 - stored  # the rerun asked only for what was not stored


# --------------------------------------------------------------------------- mmjudge serve as peer
@pytest.fixture(scope="module")
def tiny_text_server(tmp_path_factory):
    from mmjudge.serve.server import serve_in_thread
    from mmjudge.testing import tiny_text_lm

    local = load_judge("transformers", model=tiny_text_lm(tmp_path_factory.mktemp("tlm")), device="cpu")
    server, url = serve_in_thread(local, max_logprobs=100_000)
    yield local, url
    server.shutdown()


@pytest.fixture(scope="module")
def tiny_vlm_server(tmp_path_factory):
    from mmjudge.serve.server import serve_in_thread
    from mmjudge.testing import tiny_vlm

    local = load_judge("transformers", model=tiny_vlm(tmp_path_factory.mktemp("tvlm"), "llava"), device="cpu")
    server, url = serve_in_thread(local, max_logprobs=100_000)
    yield local, url
    server.shutdown()


def _compare(a, b, names, tol=1e-5):
    for name in names:
        np.testing.assert_allclose(
            np.array(b[name], dtype=float), np.array(a[name], dtype=float), atol=tol, err_msg=name
        )


def test_serve_text_model_equals_local_backend_through_harmonic_eval(tiny_text_server):
    from mmjudge import HarmonicEval

    local, url = tiny_text_server
    # The whole vocabulary as top_logprobs: every token variant of every rating comes back, so the
    # served raw probabilities are the exact ones (with top 20 a random model's ratings may fall out).
    vocab = len(local.tokenizer)
    texts = ["A dog runs on the beach.", "Two cats sleep on a red sofa in the sun.", "A man."]
    kwargs = dict(criteria=["fluency", "conciseness"], image_criteria=[], cache=False, min_mass=0)  # random weights
    expected = HarmonicEval(judge=local, **kwargs).compute(predictions=texts, progress=False)
    api = HarmonicEval(judge="openai", base_url=url, prefill="continue", mass="top-k", top_logprobs=vocab, **kwargs)
    got = api.compute(predictions=texts, progress=False)
    _compare(expected, got, ["overall", "fluency", "fluency_mass", "conciseness", "conciseness_mass"])
    assert "judge=openai:local@" in got["signature"] and "prefill=continue" in got["signature"]
    assert "mass=top-k-lower-bound" in got["signature"] and "decoding=forced-prefix-1pass" in got["signature"]


def test_serve_vlm_with_image_equals_local_backend(tiny_vlm_server):
    local, url = tiny_vlm_server
    api = OpenAIJudge(base_url=url, prefill="continue", mass="top-k", top_logprobs=len(local.tokenizer))
    image = Image.new("RGB", (48, 40), (180, 40, 20))
    image.paste((10, 200, 30), (0, 0, 20, 20))
    requests = [_request(i, image if i % 2 == 0 else None) for i in range(4)]
    a, b = local.rate(requests, progress=False), api.rate(requests, progress=False)
    np.testing.assert_allclose([r.raw for r in b], [r.raw for r in a], atol=1e-5)
    assert [r.greedy for r in b] == [r.greedy for r in a]
    assert all(r.exact_mass is False for r in b) and api.usage.requests == 4


def test_serve_generates_and_rejects_bad_requests(tiny_text_server):
    local, url = tiny_text_server
    api = OpenAIJudge(base_url=url, prefill="continue")
    from mmjudge.judges.requests import GenerationRequest

    request = GenerationRequest([Turn("user", "Why?")], max_new_tokens=5)
    assert api.generate([request], progress=False) == local.generate([request], progress=False)
    with pytest.raises(ValueError, match="top_logprobs must be between 0 and 100000"):
        OpenAIJudge(base_url=url, prefill="continue", mass="top-k", top_logprobs=100_001).rate(
            [_request()], progress=False
        )
    # About the request's setup (every item would fail alike): a user error, not an item's failure.
    with pytest.raises(ValueError, match="rejects the request's parameters.*HTTP 400.*cannot both be true"):
        api.chat([{"role": "user", "content": "x"}], continue_final_message=True, add_generation_prompt=True)
    assert local.describe().startswith("transformers:local@")


@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "text"])
def test_serve_under_defaults_equals_local_backend(family, request):
    """Issue 19: `mmjudge serve` + the openai backend with no options at all (it scored 3.0 for every item:
    the counting probe failed on a random model, then no rating was found) equals the local backend to
    1e-5: the judge recognises the server, continues the forced prefix, and reads each rating's exact
    full-vocabulary probability through `logprob_token_ids` although the server lists only 20 tokens."""
    from mmjudge import HarmonicEval
    from mmjudge.serve.server import serve_in_thread

    folder = request.getfixturevalue(
        {"qwen2_vl": "tiny_qwen_dir", "llava": "tiny_llava_dir", "text": "tiny_lm_dir"}[family]
    )
    local = load_judge("transformers", model=folder, device="cpu")
    server, url = serve_in_thread(local)  # default --max-logprobs 20
    try:
        image = Image.new("RGB", (48, 40), (180, 40, 20))
        image.paste((10, 200, 30), (0, 0, 20, 20))
        texts = ["A dog runs on the beach.", "Two cats sleep on a red sofa in the sun."]
        if family == "text":
            kwargs, inputs = (
                dict(criteria=["clarity", "fluency", "conciseness"], image_criteria=[]),
                dict(predictions=texts),
            )
        else:
            kwargs, inputs = {}, dict(predictions=texts, images=[image, image])
        expected = HarmonicEval(judge=local, cache=False, **kwargs).compute(progress=False, **inputs)
        api = HarmonicEval(model="openai:" + folder, base_url=url, cache=False, **kwargs)
        got = api.compute(progress=False, **inputs)
        names = ["overall"] + [f"{c}{s}" for c in api.criteria for s in ("", "_mass")]
        _compare(expected, got, names)
        assert all(m > 0 for c in api.criteria for m in got[f"{c}_mass"])  # ratings were read, not a 0-mass fallback
        assert "prefill=continue" in got["signature"] and "mass=exact" in got["signature"]

        # The restricted-token read itself: the raw probabilities of the local full-vocabulary softmax.
        judge = api.judge
        assert (judge.servers[0].info.kind, judge.prefill_mode, judge.mass_mode) == ("mmjudge", "continue", "exact")
        requests = [_request(i, image if family != "text" and i % 2 == 0 else None) for i in range(4)]
        a, b = local.rate(requests, progress=False), judge.rate(requests, progress=False)
        np.testing.assert_allclose([r.raw for r in b], [r.raw for r in a], atol=1e-5)
        assert [r.greedy for r in b] == [r.greedy for r in a] and all(r.exact_mass for r in b)
        assert judge.choice_token_ids(CHOICES) == [sorted(ids) for ids in local.choice_token_ids(CHOICES)]
    finally:
        server.shutdown()


def test_serve_honours_logprob_token_ids_as_vllm_does(tiny_text_server):
    local, url = tiny_text_server
    judge = OpenAIJudge(base_url=url, prefill="continue", mass="top-k")
    messages = [{"role": "user", "content": "Rate it."}, {"role": "assistant", "content": "Score: "}]
    flags = dict(continue_final_message=True, add_generation_prompt=False, max_tokens=2, logprobs=True)
    answer = judge.chat(messages, logprob_token_ids=[5, 7], top_logprobs=3, **flags)
    for entry in answer["choices"][0]["logprobs"]["content"]:  # the sampled token, then exactly 5 and 7
        listed = [t["token"] for t in entry["top_logprobs"]]
        sampled = entry["token"]
        assert listed == list(dict.fromkeys([sampled, local.tokenizer.decode([5]), local.tokenizer.decode([7])]))
    spelled = judge.chat(messages, logprob_token_ids=[5], return_tokens_as_token_ids=True, **flags)
    assert all(
        t["token"].startswith("token_id:")
        for e in spelled["choices"][0]["logprobs"]["content"]
        for t in e["top_logprobs"]
    )
    for bad, message in (([], "non-empty list"), ([10**9], "outside the vocabulary")):
        with pytest.raises(ValueError, match=f"rejects the request's parameters.*{message}"):
            judge.chat(messages, logprob_token_ids=bad, **flags)
    with pytest.raises(ValueError, match="`logprobs` must be set to true"):
        judge.chat(messages, logprob_token_ids=[5], continue_final_message=True, add_generation_prompt=False)
    tokens = judge.transport.post_root(
        "/tokenize", {"prompt": " 3", "add_special_tokens": False, "return_token_strs": True}
    )
    assert tokens["tokens"] == local.tokenizer.encode(" 3", add_special_tokens=False) and tokens["count"] == len(
        tokens["tokens"]
    )
    assert tokens["token_strs"] == local.tokenizer.convert_ids_to_tokens(tokens["tokens"])


@pytest.mark.slow
def test_mmjudge_serve_command(tmp_path, tiny_text_server):
    from mmjudge.testing import tiny_text_lm

    folder = tiny_text_lm(tmp_path / "lm")  # same seed as the module's server: same weights, same name
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "mmjudge.cli",
        "serve",
        "--model",
        folder,
        "--port",
        str(port),
        "--max-logprobs",
        "1000",
        "--device",
        "cpu",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        wait_for(url, proc, 120)
        local, _ = tiny_text_server
        api = OpenAIJudge(base_url=url, prefill="continue", top_logprobs=1000)  # capabilities are settled when built
        assert api.model_name == local.model_identity.label()
        requests = [_request(i) for i in range(3)]
        np.testing.assert_allclose(
            [r.raw for r in api.rate(requests, progress=False)],
            [r.raw for r in local.rate(requests, progress=False)],
            atol=1e-5,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ------------------------------------------------------------------------- llama.cpp's server as peer
# (started by the llama_server fixture, tests/conftest.py)
def _raw_distribution(url: str, model: str, prompt: str) -> list[float]:
    """Read straight from the server's JSON, independently of the backend: the first generated token
    that is a digit 1-5, its top 20 entries, renormalised over the five ratings."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 16,
        "logprobs": True,
        "top_logprobs": 20,
    }
    content = post_chat(url, body)["choices"][0]["logprobs"]["content"]
    position = next(i for i, e in enumerate(content) if e["token"].strip() in CHOICES)
    mass = dict.fromkeys(CHOICES, 0.0)
    for top in content[position]["top_logprobs"]:
        if top["token"].strip() in CHOICES:
            mass[top["token"].strip()] += math.exp(top["logprob"]) if top["logprob"] > -9999 else 0.0
    total = sum(mass.values())
    return [mass[c] / total for c in CHOICES]


@pytest.mark.slow
def test_llama_cpp_server_distributions_equal_the_raw_responses(llama_server):
    from mmjudge import HarmonicEval

    prompts = load_prompt_set("harmonic_eval")
    captions = [
        "A dog runs along the sandy beach.",
        "beach the along runs dog A.",
        "Two children play beside a red car.",
    ]
    judge = OpenAIJudge(base_url=llama_server, prefill="auto", max_concurrency=1)
    assert judge.prefill_mode == "none"  # llama.cpp's server cannot continue an assistant message
    # ... which the judge knows from the server (GET /openapi.json), not from asking the model to count.
    assert judge.servers[0].info.kind == "llama-cpp-python" and judge.servers[0].info.version  # e.g. 0.3.36
    assert judge.mass_mode == "top-k"
    for caption in captions:
        prompt = prompts.render("fluency", "ic", text=caption, question=None)
        reset_prefix(llama_server, judge.model_name)
        expected = _raw_distribution(llama_server, judge.model_name, prompt)
        reset_prefix(llama_server, judge.model_name)
        [got] = judge.rate([RatingRequest([Turn("user", prompt)], answer_prefix=prompts.answer_prefix)], progress=False)
        assert got.mass > 0 and not got.exact_mass
        np.testing.assert_allclose(got.probs, expected, atol=1e-6)
    he = HarmonicEval(judge=judge, criteria=["fluency"], cache=False)
    out = he.compute(predictions=captions, progress=False)
    assert "decoding=first-rating-token" in out["signature"] and "mass=top-k-lower-bound" in out["signature"]
    assert all(1.0 <= s <= 5.0 for s in out["fluency"])


def test_cli_score_prints_usage_and_model_prefix_selects_the_backend(stub_factory, capsys):
    from mmjudge import HarmonicEval
    from mmjudge.cli import main

    stub = stub_factory()
    he = HarmonicEval(model="openai:stub-model", base_url=stub.url, prefill="none", criteria=["fluency"], cache=False)
    assert type(he.judge).__name__ == "OpenAIJudge" and he.judge.model_name == "stub-model"
    code = main(
        [
            "score",
            "--judge",
            "openai",
            "--set",
            f"base_url={stub.url}",
            "--set",
            "prefill=none",
            "--text",
            "A dog runs.",
            "--criteria",
            "fluency",
            "--no-cache",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "usage: openai:stub-model: 1 requests, 10 prompt + 3 completion tokens, 0 retries" in out
    assert "judge=openai:stub-model" in out and "prefill=none" in out
    # the expected rating of GOOD's distribution (0.2 on 3, 0.7 on 4, renormalised)
    assert f"fluency          {(3 * 0.2 + 4 * 0.7) / 0.9:.3f}" in out  # 3.778


def test_cli_with_no_server_is_one_line_not_a_traceback(capsys):
    """A server that is not running (connection refused) is the user's to fix: one line, exit 2."""
    from mmjudge.cli import main

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = main(
        [
            "score",
            "--judge",
            "openai",
            "--set",
            f"base_url=http://127.0.0.1:{port}/v1",
            "--set",
            "max_retries=1",
            "--set",
            "retry_sleep_scale=0",
            "--set",
            "model=m",
            "--text",
            "A dog runs.",
            "--criteria",
            "fluency",
            "--no-cache",
        ]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("mmjudge score: error: openai:m at 127.0.0.1:"), err
    assert "giving up after 2 attempts" in lines[0] and "refused" in lines[0].lower(), lines[0]


def test_a_reply_cut_short_is_retried_then_reported(stub_factory):
    """A reply cut short (the connection closed mid-body) is retried, then reported as the item's error."""
    import socket as sockets

    listener = sockets.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"choi')
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        judge = _judge(f"http://127.0.0.1:{port}/v1", model="m", max_retries=2)
        with pytest.raises(APIError, match="giving up after 3 attempts.*(RemoteProtocolError|incomplete|closed|reset)"):
            judge.chat([{"role": "user", "content": "hi"}])
        assert judge.usage.retries == 2
    finally:
        listener.close()


def test_serve_usage_counts_the_image_tokens_of_the_prompt(tiny_vlm_server):
    """usage.prompt_tokens is what the model was given: the processor's image placeholder expansion too."""
    from mmjudge.judges.openai.format import image_data_url
    from mmjudge.judges.requests import GenerationRequest
    from mmjudge.serve.engine import ChatEngine

    local, _ = tiny_vlm_server
    image = Image.new("RGB", (40, 30), (10, 200, 30))
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_data_url(image)}},
                    {"type": "text", "text": "Describe it."},
                ],
            }
        ],
        "max_tokens": 2,
    }
    usage = ChatEngine(local, "tiny").complete(body)["usage"]
    request = GenerationRequest([Turn("user", "Describe it.")], image=image, max_new_tokens=2)
    expected = int(local.prompts.encode([request])["input_ids"].shape[1])
    text_only = len(local.tokenizer(local.render(request), add_special_tokens=False)["input_ids"])
    assert usage["prompt_tokens"] == expected > text_only
    assert usage["total_tokens"] == expected + usage["completion_tokens"]


def test_a_metric_result_reports_the_api_judges_usage(stub_factory):
    """Every result of a metric on an API judge carries the judge's usage and cost (issue 31): requests,
    tokens, and the model's list price applied (None for a model the price table does not know)."""
    from mmjudge import HarmonicEval

    stub = stub_factory()
    he = HarmonicEval(judge=_judge(stub.url), cache=False, criteria=["fluency", "clarity"], min_mass=0)
    out = he.compute(predictions=["a dog runs", "two cats"], progress=False)
    usage = out["usage"]
    assert usage["mode"] == "sync" and usage["requests"] == 4  # 2 texts x 2 criteria
    assert usage["prompt_tokens"] > 0 and usage["cost_usd"] is None  # the stub's model has no list price
    he.spec.check_result(out, 2)  # "usage" is a declared result key
    dummy = HarmonicEval(judge="dummy", cache=False, criteria=["fluency"]).compute(
        predictions=["a dog"], progress=False
    )
    assert "usage" not in dummy  # a local judge costs nothing it could report
