"""The ``openai`` judge against servers that answer as vLLM, SGLang, llama.cpp, llama-cpp-python and OpenAI
do (``toy_api_servers.py``; none of them runs here): what it identifies and then asks, exact rating
probabilities, failures as data (issue 19), and fleets of servers.

Every expected distribution is the one the toy server itself computed, so each test pins the protocol.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.openai.judge import OpenAIJudge
from mmjudge.judges.openai.transport import DOWN_AFTER, APIError
from mmjudge.judges.requests import RatingRequest, Turn
from toy_api_servers import IDS, VOCAB, ToyServer, close_all, expected_raw

pytestmark = pytest.mark.filterwarnings("ignore:HarmonicEval. the judge put under")

CHOICES = ["1", "2", "3", "4", "5"]
RATING_IDS = sorted(IDS[t] for c in CHOICES for t in (c, " " + c))


@pytest.fixture
def toy():
    made: list[ToyServer] = []

    def make(kind: str = "vllm", **kwargs) -> ToyServer:
        made.append(ToyServer(kind, **kwargs))
        return made[-1]

    yield make
    close_all(made)


def _requests(n: int) -> list[RatingRequest]:
    return [RatingRequest([Turn("user", f"Rate caption {i}.")], answer_prefix="Score: ") for i in range(n)]


def _caption(body: dict) -> int:
    """Which caption a chat body rates (-1: a setup request)."""
    text = " ".join(str(m.get("content")) for m in body["messages"])
    return int(text.split("Rate caption ")[1].split(".")[0]) if "Rate caption " in text else -1


def _top_k_raw(dists, position: int, k: int = 20) -> list[float]:
    d = dists[position]
    top = np.argsort(-d)[:k]
    return [float(sum(d[i] for i in top if VOCAB[i].strip() == c)) for c in CHOICES]


def _judge(url, **kwargs) -> OpenAIJudge:
    kwargs.setdefault("retry_sleep_scale", 0.001)
    kwargs.setdefault("max_concurrency", 1)  # answers in request order, to pair them with the server's
    return OpenAIJudge(base_url=url, **kwargs)


# --------------------------------------------------------------------------- each kind of server
# kind -> (prefill, mass) the judge must settle on with defaults, from what the kind supports.
SETTLED = {
    "vllm": ("continue", "exact"),
    "vllm-old": ("continue", "top-k"),  # before PR #43463: logprob_token_ids is ignored
    "sglang": ("continue", "top-k"),  # token_ids_logprob exists only on its native /generate
    "llama.cpp": ("none", "top-k"),
    "llama-cpp-python": ("none", "top-k"),
    "openai": ("none", "top-k"),
}


@pytest.mark.parametrize("kind", list(SETTLED))
def test_each_server_kind_is_identified_and_read_the_way_it_supports(toy, kind):
    server = toy(kind)
    judge = _judge(server.url)
    assert judge.servers[0].info.kind == kind.removesuffix("-old")
    assert (judge.prefill_mode, judge.mass_mode) == SETTLED[kind]
    assert not any("Count from 1 to 20" in json.dumps(body) for body, _ in server.answers)  # no counting probe
    exact, continues = judge.mass_mode == "exact", judge.prefill_mode == "continue"
    assert judge.capabilities.exact_choices is exact and judge.capabilities.teacher_forcing is continues

    results = judge.rate(_requests(4), progress=False)
    rated = server.rating_requests()
    assert len(rated) == 4
    for result, (body, dists) in zip(results, rated):
        position = 0 if continues else 3  # a fresh answer is "Your score is 4."
        assert result.error is None and result.exact_mass is exact
        if exact:  # the full-vocabulary probability of every token that spells each rating
            assert body["logprob_token_ids"] == RATING_IDS and "top_logprobs" not in body
            np.testing.assert_allclose(result.raw, expected_raw(dists, position), rtol=1e-12, atol=1e-15)
        else:  # a top-20 read: a lower bound
            assert body["top_logprobs"] == 20 and "logprob_token_ids" not in body
            np.testing.assert_allclose(result.raw, _top_k_raw(dists, position), rtol=1e-12, atol=1e-15)
        if continues:
            assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
            assert body["messages"][-1] == {"role": "assistant", "content": "Score: "} and body["max_tokens"] == 1
        else:
            assert "continue_final_message" not in body and body["messages"][-1]["role"] == "user"


def test_exact_differs_from_top_k_where_ratings_fall_outside_the_top_20(toy):
    """Why exact matters: after the prefix the toy's ratings are spread over 60 tokens, so a top-20 read
    loses some (a strictly smaller mass) while the exact read has them all."""
    server = toy("vllm")
    exact = _judge(server.url).rate(_requests(6), progress=False)
    top_k = _judge(server.url, mass="top-k").rate(_requests(6), progress=False)
    assert all(a.mass >= b.mass - 1e-15 for a, b in zip(exact, top_k))
    assert any(a.mass > b.mass + 1e-6 for a, b in zip(exact, top_k))
    assert all(a.exact_mass and not b.exact_mass for a, b in zip(exact, top_k))


def test_rating_ids_come_from_the_servers_tokenize_once_per_rating(toy):
    server = toy("vllm")
    judge = _judge(server.url, max_concurrency=4)
    judge.rate(_requests(8), progress=False)
    tokenized = [p for m, p in server.requests if p == "/tokenize"]
    assert len(tokenized) == 2 * len(CHOICES)  # "3" and " 3" per rating, then remembered
    assert judge.choice_token_ids(CHOICES) == [[IDS[c], IDS[" " + c]] for c in CHOICES]


def test_setup_requests_and_none_when_every_mode_is_given(toy):
    server = toy("vllm")
    _judge(server.url)
    assert server.requests == [("GET", "/v1/models"), ("GET", "/version"), ("POST", "/v1/chat/completions")]
    quiet = toy("vllm")
    _judge(quiet.url, model="toy-judge", prefill="continue", mass="exact")
    assert quiet.requests == []  # a fully cached run replays with the server down
    # model and prefill given: nothing asked either (the contract before `mass` existed), and the mass is
    # the read every server supports
    assert _judge(quiet.url, model="toy-judge", prefill="continue").mass_mode == "top-k" and quiet.requests == []


def test_a_cached_run_replays_with_the_server_down(toy, tmp_path):
    server = toy("vllm")
    options = dict(model="toy-judge", prefill="continue", mass="exact")
    first = CachedJudge(_judge(server.url, **options), tmp_path / "c.sqlite").rate(_requests(4), progress=False)
    server.close()
    replay = CachedJudge(_judge(server.url, **options), tmp_path / "c.sqlite")
    again = replay.rate(_requests(4), progress=False)
    assert replay.hits == 4 and [r.raw for r in again] == [r.raw for r in first]


def test_exact_asked_of_a_server_that_ignores_the_ids_is_one_clear_error(toy):
    server = toy("vllm-old")
    judge = _judge(server.url, model="toy-judge", prefill="continue", mass="exact")
    with pytest.raises(ValueError, match="ignored logprob_token_ids.*mass='auto' or 'top-k'"):
        judge.rate(_requests(1), progress=False)


def test_a_rating_that_is_not_one_token_is_one_clear_error_in_exact_mode(toy):
    judge = _judge(toy("vllm").url)
    request = RatingRequest([Turn("user", "Rate caption 0.")], answer_prefix="Score: ", choices=["1", "10"])
    with pytest.raises(ValueError, match="'10' is not a single token"):
        judge.rate([request], progress=False)


def test_unknown_server_whose_model_cannot_count_is_reported_not_taken_as_no(toy):
    server = toy("unknown")
    with pytest.raises(ValueError, match="Cannot tell whether the server .*unknown.*answered 'Your score is'"):
        _judge(server.url)
    judge = _judge(server.url, prefill="none")  # the user says; the chosen-id probe still decides the mass
    assert judge.mass_mode == "top-k" and judge.servers[0].info.kind == "unknown"


def test_signatures_say_exact_or_lower_bound(toy):
    from mmjudge import HarmonicEval

    kwargs = dict(criteria=["fluency"], image_criteria=[], cache=False)
    out = HarmonicEval(model="openai:toy-judge", base_url=toy("vllm").url, **kwargs).compute(
        predictions=["A dog."], progress=False
    )
    assert "prefill=continue" in out["signature"] and "mass=exact" in out["signature"]
    assert "top_logprobs" not in out["signature"] and "decoding=forced-prefix-1pass" in out["signature"]
    out = HarmonicEval(model="openai:toy-judge", base_url=toy("sglang").url, **kwargs).compute(
        predictions=["A dog."], progress=False
    )
    assert "mass=top-k-lower-bound" in out["signature"] and "top_logprobs=20" in out["signature"]


# ------------------------------------------------------------------------------ failures are data
def test_one_request_in_ten_fails_those_items_are_errors_and_a_rerun_fills_them(toy, tmp_path):
    failing = {"on": True}
    server = toy(
        "vllm",
        fail=lambda body: (
            (500, {"error": {"message": "CUDA error"}}) if failing["on"] and _caption(body) % 10 == 3 else None
        ),
    )
    judge = CachedJudge(_judge(server.url, max_retries=2, max_concurrency=4), tmp_path / "c.sqlite")
    requests = _requests(30)
    first = judge.rate(requests, progress=False)
    assert [i for i, r in enumerate(first) if r.error] == [3, 13, 23]
    for i in (3, 13, 23):
        assert "giving up after 3 attempts" in first[i].error and "HTTP 500" in first[i].error
        assert first[i].raw == [0.0] * 5 and first[i].exact_mass is True
    assert all(r.mass > 0 for i, r in enumerate(first) if i % 10 != 3)
    failing["on"] = False
    asked = len(server.rating_requests())
    second = judge.rate(requests, progress=False)
    assert len(server.rating_requests()) - asked == 3  # only the failed ones: nothing was cached for them
    assert all(r.error is None for r in second) and judge.hits == 27
    assert [r.raw for i, r in enumerate(second) if i % 10 != 3] == [r.raw for i, r in enumerate(first) if i % 10 != 3]


def test_a_metric_run_goes_on_past_failed_ratings(toy):
    from mmjudge import HarmonicEval

    server = toy(
        "vllm", fail=lambda body: (503, {"error": {"message": "overloaded"}}) if "A cat." in json.dumps(body) else None
    )
    he = HarmonicEval(
        model="openai:toy-judge",
        base_url=server.url,
        criteria=["fluency"],
        image_criteria=[],
        cache=False,
        max_retries=0,
        min_mass=0,
    )  # (the toy's made-up answers carry little mass)
    with pytest.warns(UserWarning, match="1 of 2 items got no rating: fluency 1 \\(error\\)"):
        out = he.compute(predictions=["A dog.", "A cat."], progress=False)
    assert any("A cat." in json.dumps(body) for body, _ in server.answers) is False  # it did fail
    # The failed request is no score: NaN with status error and the reason, never a made-up 3.0.
    assert out["fluency_status"] == ["ok", "error"] and "overloaded" in out["fluency_note"][1]
    assert math.isfinite(out["fluency"][0]) and math.isnan(out["fluency"][1]) and math.isnan(out["overall"][1])
    assert out["failures"] == {"fluency": {"error": 1}} and out["scored"]["fluency"] == 1


def test_timeouts_and_malformed_answers_become_errors_of_their_items(toy):
    garbled = {
        "choices": [
            {
                "index": 0,
                "message": {"content": "4"},
                "logprobs": {
                    "content": [{"token": "4", "logprob": "high", "top_logprobs": [{"token": "4", "logprob": "high"}]}]
                },
            }
        ],
        "usage": {},
    }
    server = toy("vllm", fail=lambda body: {1: "malformed", 2: ("slow", 1.0), 3: (200, garbled)}.get(_caption(body)))
    judge = _judge(server.url, max_retries=1, timeout=0.3)
    results = judge.rate(_requests(5), progress=False)
    assert results[0].error is None and results[4].error is None
    assert "not JSON" in results[1].error and "502 Bad Gateway" in results[1].error
    assert "timed out" in results[2].error.lower()
    assert "malformed logprobs answer" in results[3].error
    assert judge.usage.failed == 3


def test_an_item_the_server_refuses_is_an_error_but_a_wrong_setup_stops_the_run(toy):
    too_long = {"object": "error", "message": "This model's maximum context length is 2048 tokens.", "code": 400}
    server = toy("vllm", fail=lambda body: (400, too_long) if _caption(body) == 1 else None)
    results = _judge(server.url).rate(_requests(3), progress=False)
    assert results[1].error is not None and "maximum context length" in results[1].error
    assert results[0].error is None and results[2].error is None
    no_logprobs = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}}], "usage": {}}
    bare = toy("vllm", fail=lambda body: (200, no_logprobs) if _caption(body) >= 0 else None)
    with pytest.raises(ValueError, match="without `logprobs.content`.*--logits_all true"):
        _judge(bare.url).rate(_requests(2), progress=False)  # the first answer already lacks them: setup
    later = toy("vllm", fail=lambda body: (200, no_logprobs) if _caption(body) == 2 else None)
    results = _judge(later.url).rate(_requests(3), progress=False)
    assert "without `logprobs.content`" in results[2].error and results[1].error is None


def test_a_server_never_reached_stops_the_run_in_one_error(toy):
    dead = toy("vllm")
    dead.close()
    judge = _judge(dead.url, model="toy-judge", prefill="continue", mass="top-k", max_retries=1)
    with pytest.raises(APIError, match="giving up after 2 attempts.*(refused|Errno)"):
        judge.rate(_requests(2), progress=False)


# ----------------------------------------------------------------------------------------- fleets
def test_a_fleet_spreads_requests_and_its_cache_ignores_who_answered(toy, tmp_path):
    a, b = toy("vllm"), toy("vllm")
    judge = _judge(f"{a.url}, {b.url}", max_concurrency=4)
    assert judge.endpoint == ",".join(sorted([a.url[7:], b.url[7:]])) and judge.mass_mode == "exact"
    cached = CachedJudge(judge, tmp_path / "c.sqlite")
    results = cached.rate(_requests(20), progress=False)
    by_a, by_b = len(a.rating_requests()), len(b.rating_requests())
    assert by_a + by_b == 20 and min(by_a, by_b) >= 8  # round robin (tokenize calls take turns too)
    answered = {_caption(body): dists for server in (a, b) for body, dists in server.rating_requests()}
    for i, result in enumerate(results):  # the same model on both: the same distribution whoever answered
        np.testing.assert_allclose(result.raw, expected_raw(answered[i], 0), rtol=1e-12, atol=1e-15)
    reordered = CachedJudge(_judge([b.url, a.url]), tmp_path / "c.sqlite")
    assert reordered.identity() == cached.identity()
    reordered.rate(_requests(20), progress=False)
    assert reordered.hits == 20 and len(a.rating_requests()) + len(b.rating_requests()) == 20


def test_a_fleet_member_down_is_passed_over(toy):
    a, b = toy("vllm"), toy("vllm")
    judge = _judge([a.url, b.url], max_retries=3, max_concurrency=2)
    a.close()
    results = judge.rate(_requests(12), progress=False)
    assert all(r.error is None for r in results) and len(b.rating_requests()) == 12
    assert judge.servers[0].down and judge.servers[0].failures <= DOWN_AFTER + 2  # a few tries, then skipped


def test_a_fleet_must_serve_one_model(toy):
    a, b = toy("vllm", model="judge-a"), toy("vllm", model="judge-b")
    with pytest.raises(ValueError, match="serve different models"):
        _judge([a.url, b.url])


def test_a_fleet_reads_every_rating_the_way_its_weakest_member_can(toy):
    judge = _judge([toy("vllm").url, toy("vllm-old").url])
    assert (judge.prefill_mode, judge.mass_mode) == ("continue", "top-k")


# ------------------------------------------------------------------------- concurrency and pacing
def test_requests_in_flight_default_by_server_kind(toy):
    """vLLM and SGLang batch what arrives: 64 requests in flight per server by default (a fleet more); other
    kinds 8. A judge given every mode asks the kind only when it first sends (a cached run asks nothing)."""
    assert _judge(toy("vllm").url, max_concurrency="auto")._concurrency() == 64
    assert _judge([toy("sglang").url, toy("sglang").url], max_concurrency="auto")._concurrency() == 128
    assert _judge(toy("llama.cpp").url, max_concurrency="auto")._concurrency() == 8
    assert _judge(toy("openai").url, max_concurrency="auto")._concurrency() == 8
    flight = {"now": 0, "most": 0}
    lock = __import__("threading").Lock()

    def slow(body):
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        __import__("time").sleep(0.3)
        with lock:
            flight["now"] -= 1
        return None

    server = toy("vllm", fail=lambda body: slow(body) if _caption(body) >= 0 else None)
    quiet = OpenAIJudge(base_url=server.url, model="toy-judge", prefill="continue", mass="top-k")
    assert server.requests == [] and quiet._concurrency() == 8  # not asked yet
    results = quiet.rate(_requests(96), progress=False)
    assert all(r.error is None for r in results) and quiet.servers[0].info.kind == "vllm"
    assert quiet._concurrency() == 64 and flight["most"] > 8  # more than the old default in flight at once


def test_openai_rate_limit_headers_pause_every_request(toy):
    """An answer saying the window's requests are spent (x-ratelimit-remaining-requests: 0) pauses every
    request until x-ratelimit-reset-requests; a 429 pauses them all for its Retry-After."""
    server = toy("openai")
    server.extra_headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}
    judge = _judge(server.url, model="toy-judge", prefill="none", mass="top-k", max_concurrency=4)
    results = judge.rate(_requests(3), progress=False)
    assert all(r.error is None for r in results) and judge.transport.gate.paused == 3
    server.extra_headers = {"x-ratelimit-remaining-requests": "17", "x-ratelimit-reset-requests": "1s"}
    judge.rate(_requests(2), progress=False)
    assert judge.transport.gate.paused == 3  # requests left: no pause
    limited = {"left": 1}

    def once(body):
        if limited["left"]:
            limited["left"] -= 1
            return 429, {"error": {"message": "Rate limit reached", "type": "requests"}}
        return None

    other = toy("openai", fail=once)
    judge = _judge(other.url, model="toy-judge", prefill="none", mass="top-k")
    [result] = judge.rate(_requests(1), progress=False)
    assert result.error is None and judge.usage.retries == 1 and judge.transport.gate.paused == 1


# ------------------------------------------------------------------------------------------ Azure
def test_azure_openai_through_the_clients_own_settings(monkeypatch):
    """Azure OpenAI: the client's deployment URL, api-version and api-key header, the key from the client's
    own AZURE_OPENAI_API_KEY, the endpoint from azure_endpoint or the client's AZURE_OPENAI_ENDPOINT."""
    from http.server import BaseHTTPRequestHandler

    from toy_api_servers import ThreadedServer

    toy_model = ToyServer("openai")  # only its chat answers are used
    seen: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            blob = json.dumps(toy_model.chat(body)[1]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

    server = ThreadedServer(("127.0.0.1", 0), Handler)
    __import__("threading").Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-secret-key")
        judge = OpenAIJudge(model="openai:my-gpt4o", azure_endpoint=endpoint, api_version="2024-10-21")
        assert (judge.servers[0].info.kind, judge.prefill_mode, judge.mass_mode) == ("azure", "none", "top-k")
        [result] = judge.rate(_requests(1), progress=False)
        assert result.error is None and result.mass > 0
        path, headers = seen[-1]
        assert path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
        assert headers["api-key"] == "azure-secret-key" and "authorization" not in headers
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", endpoint)  # the client's own setting
        assert OpenAIJudge(model="my-gpt4o", api_version="2024-10-21").endpoint == judge.endpoint
        monkeypatch.delenv("AZURE_OPENAI_API_KEY")
        with pytest.raises(ValueError, match="Azure OpenAI: Missing credentials"):
            OpenAIJudge(model="my-gpt4o", azure_endpoint=endpoint, api_version="2024-10-21")
    finally:
        server.close_all()
        toy_model.close()
