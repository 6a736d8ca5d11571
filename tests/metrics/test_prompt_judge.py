"""Prompt-only judges (G-VEval, GPT-FLEUR, VELA's GPT-4o rows) over the judge backends: the readings taken
literally from the authors' procedures, end to end against the toy OpenAI-compatible servers (every expected
score recomputed from the distributions the server itself drew), a local ``transformers`` model, the judge
cache, failures as data, and llama.cpp's real server (slow). The numbers of a toy or random-weight judge mean
nothing; the plumbing is what is checked.
"""

from __future__ import annotations

import json
import math
import urllib.request

import numpy as np
import pytest
from PIL import Image

from llama_cpp_server import reset_prefix
from mmjudge.judges.requests import ScoredGenerationRequest, ScoredText, ScoredToken, Turn
from mmjudge.metrics.fleur.smoothing import smooth_decimals, smooth_one
from mmjudge.metrics.prompt_judge import PROMPT_CONFIGS, PromptJudge, read_after_marker, read_fleur_decimal
from toy_api_servers import VOCAB, ToyServer, close_all

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
G_VEVAL_SCRIPT = ["The", " final", " score", " is", "$", "85", "$."]


@pytest.fixture
def toy():
    made: list[ToyServer] = []

    def make(kind: str = "openai", **kwargs) -> ToyServer:
        made.append(ToyServer(kind, **kwargs))
        return made[-1]

    yield make
    close_all(made)


def answer(*tokens: tuple[str, list[tuple[str, float]]]) -> ScoredText:
    return ScoredText("".join(t for t, _ in tokens), [ScoredToken(t, top) for t, top in tokens])


# --- the readings ---------------------------------------------------------------------------------------
def test_g_veval_reading_is_its_codes():
    """scorer.py: the token after the FIRST token holding '$'; exact integer spellings 0-100 only; renormalised."""
    text = answer(
        ("Costs $", [("Costs $", 1.0)]),  # the first '$' wins, even inside the reasoning
        ("7", [("7", 0.5), ("07", 0.2), (" 8", 0.2), ("101", 0.1)]),
        (". Final: $", [(". Final: $", 1.0)]),
        ("90", [("90", 1.0)]),
    )
    r = read_after_marker(text, "$", 0, 100, normalise=True)
    assert (r.score, r.printed) == (7.0, 7.0)  # "07", " 8" and "101" are not G-VEval's spellings of 0..100
    assert math.isnan(read_after_marker(answer(("no marker", [])), "$", 0, 100).score)
    none_listed = read_after_marker(answer(("$", []), ("x", [("x", 1.0)])), "$", 0, 100)
    assert math.isnan(none_listed.score) and "no integer 0-100 listed" in none_listed.note


def test_fleur_reading_on_split_digits_is_fleurs_smoothing():
    """A tokenizer that writes "0.85" as 0 . 8 5 (LLaVA's): exactly FLEUR's smooth_decimals of the two digit
    distributions; "1.0": FLEUR's 0.9 p(0) + p(1)."""
    rng = np.random.default_rng(3)
    d1, d2 = rng.dirichlet(np.ones(12))[:10], rng.dirichlet(np.ones(12))[:10]
    text = answer(
        ("0", [("0", 0.95)]),
        (".", [(".", 1.0)]),
        ("8", [(str(d), float(p)) for d, p in enumerate(d1)]),
        ("5", [(str(d), float(p)) for d, p in enumerate(d2)]),
    )
    assert read_fleur_decimal(text).score == pytest.approx(smooth_decimals(list(d1), list(d2)), abs=1e-12)
    lead = rng.dirichlet(np.ones(11))[:10]
    one = answer(("1", [(str(d), float(p)) for d, p in enumerate(lead)]), (".", [(".", 1.0)]), ("0", [("0", 1.0)]))
    assert read_fleur_decimal(one).score == pytest.approx(smooth_one(list(lead)), abs=1e-12)
    # GPT-4o writes "85" as one token: its listed alternatives are read as two-digit decimals.
    gpt = answer(("0", [("0", 1.0)]), (".", [(".", 1.0)]), ("85", [("85", 0.5), ("9", 0.25), ("80", 0.125)]))
    assert read_fleur_decimal(gpt).score == pytest.approx(0.5 * 0.85 + 0.25 * 0.9 + 0.125 * 0.8)


# --- against the toy servers ----------------------------------------------------------------------------
def _position_after(dists, script, marker="$"):
    sampled = [VOCAB[int(np.argmax(d))] for d in dists]
    assert sampled[: len(script)] == script
    return next(k for k, t in enumerate(sampled) if marker in t) + 1


def test_g_veval_against_an_openai_like_server_reads_what_the_server_drew(toy):
    server = toy("openai", script=G_VEVAL_SCRIPT)
    metric = PromptJudge(
        "g_veval", judge="openai", model="toy-judge", base_url=server.url, cache=False, max_concurrency=1
    )
    images = [Image.new("RGB", (8, 8), (k * 60, 0, 0)) for k in range(3)]
    out = metric.compute(predictions=[f"caption {k}" for k in range(3)], images=images, progress=False)
    assert len(server.answers) == 3
    for k, (body, dists) in enumerate(server.answers):
        assert body["top_logprobs"] == 5 and body["logprobs"] is True  # G-VEval's top_logprobs=5
        assert body["messages"][0]["content"][0]["type"] == "image_url"  # the image goes with the prompt
        d = dists[_position_after(dists, G_VEVAL_SCRIPT)]
        top = np.argsort(-d)[:5]
        values = {int(VOCAB[i]): d[i] for i in top if VOCAB[i].isdigit() and str(int(VOCAB[i])) == VOCAB[i]}
        expected = sum(v * p for v, p in values.items()) / sum(values.values())
        assert out["score"][k] == pytest.approx(expected, abs=1e-9) and out["score_status"][k] == "ok"
    assert out["score_printed"] == [85.0] * 3 and out["score_response"][0].startswith("The final score is$85$.")
    assert "prompt=g_veval@1" in str(out["signature"]) and "listed=5" in str(out["signature"])


def test_gpt_fleur_on_a_llama_cpp_like_server_smooths_the_listed_decimals(toy):
    server = toy("llama.cpp", script=["0", ".", "85"])
    metric = PromptJudge("gpt_fleur", judge="openai", model="toy-judge", base_url=server.url, cache=False)
    out = metric.compute(predictions=["a dog"], images=[Image.new("RGB", (8, 8))], progress=False)
    (body, dists) = server.answers[-1]
    assert (
        body["top_logprobs"] == 20
        and "Score(Choose a rating from 0.0 to 1.0):" in body["messages"][0]["content"][1]["text"]
    )
    d = dists[2]  # the token after "0" and "."
    top = np.argsort(-d)[:20]
    expected = sum(d[i] * int(VOCAB[i]) / 10 ** len(VOCAB[i]) for i in top if VOCAB[i].isdigit())
    assert out["score"][0] == pytest.approx(expected, abs=1e-12) and out["score_printed"] == [0.85]


def test_vela_stand_in_asks_each_perspective_and_averages_them(toy):
    server = toy("llama.cpp", script=["0", ".", "8"])
    metric = PromptJudge(
        "vela_gpt4o_refs", judge="openai", model="toy-judge", base_url=server.url, cache=False, max_concurrency=1
    )
    out = metric.compute(
        predictions=["a long caption"],
        images=[Image.new("RGB", (8, 8))],
        references=[["ref one", "ref two"]],
        progress=False,
    )
    prompts = [b["messages"][0]["content"][1]["text"] for b, _ in server.answers]
    # One request per perspective (the judge orders its batches its own way).
    assert sorted(p.split("\n\n")[1].split(":")[0] for p in prompts) == ["Descriptiveness", "Fluency", "Relevance"]
    assert "Reference captions:\nref one\nref two" in prompts[0]
    crits = ("descriptiveness", "relevance", "fluency")
    assert out["overall"][0] == pytest.approx(np.mean([out[c][0] for c in crits]))
    assert PromptJudge.spec_for("vela_gpt4o").primary == "overall" and PROMPT_CONFIGS["vela_gpt4o"].data["stand_in"]


def test_answers_are_cached_and_a_failed_request_is_asked_again(toy, tmp_path):
    failing = {"on": True}

    def fail(body):
        text = json.dumps(body["messages"])
        return (500, {"error": {"message": "overloaded"}}) if failing["on"] and "caption 1" in text else None

    server = toy("openai", script=G_VEVAL_SCRIPT, fail=fail)
    cache = tmp_path / "judge.sqlite"
    make = lambda: PromptJudge(  # noqa: E731
        "g_veval_ref_only",
        judge="openai",
        model="toy-judge",
        base_url=server.url,
        cache=str(cache),
        max_retries=0,
        retry_sleep_scale=0.001,
    )
    refs = [["a ref"], ["b ref"]]
    first = make().compute(predictions=["caption 0", "caption 1"], references=refs, progress=False)
    assert first["score_status"] == ["ok", "error"] and "overloaded" in first["score_note"][1]
    assert math.isnan(first["score"][1])
    failing["on"] = False
    asked = len(server.answers)
    again = make().compute(predictions=["caption 0", "caption 1"], references=refs, progress=False)
    assert len(server.answers) == asked + 1  # only the failed one; the other came from the cache
    assert again["score"][0] == first["score"][0] and again["score_status"] == ["ok", "ok"]


def test_a_judge_that_cannot_list_its_tokens_is_one_clear_error():
    from mmjudge.judges.base import JudgeCapabilityError

    with pytest.raises(JudgeCapabilityError, match="prompt_judge 'g_veval' needs a judge with scores_generation"):
        PromptJudge("g_veval", judge="dummy", can_generate=False, cache=False)
    with pytest.raises(JudgeCapabilityError, match="prompt_judge 'g_veval' shows the judge the image, and the judge"):
        PromptJudge("g_veval", judge="dummy", sees_images=False, cache=False)  # a reference-free config: image only


@pytest.mark.parametrize("key", ["max_new_tokens", "top_logprobs"])
@pytest.mark.parametrize("value", [0, 2.9, True])
def test_token_limits_are_whole_numbers_of_at_least_one(key, value):
    """0 is not "the family's default" and 2.9 is not 2: each is one clear line, before any judge is built."""
    with pytest.raises(ValueError, match=rf"^Expected argument `{key}` to be a positive integer, but got {value!r}\.$"):
        PromptJudge("g_veval", judge="dummy", cache=False, **{key: value})


# --- a local model ---------------------------------------------------------------------------------------
def test_a_local_model_lists_its_generated_tokens_and_their_probabilities(tiny_lm_dir):
    from mmjudge.judges import load_judge

    judge = load_judge("transformers", model=tiny_lm_dir, device="cpu")
    request = ScoredGenerationRequest([Turn("user", "Rate: a dog.")], max_new_tokens=6, top_logprobs=4)
    [scored] = judge.generate_scored([request], progress=False)
    trace = judge.generate_trace(request)
    assert scored.text == trace.texts[-1] and "".join(t.token for t in scored.tokens) == scored.text
    for token, probs in zip(scored.tokens, trace.probs):
        assert len(token.top) == 4 and [p for _, p in token.top] == sorted((p for _, p in token.top), reverse=True)
        assert token.top[0][1] == pytest.approx(float(probs.max()))  # greedy: the listed first is the argmax


# --- llama.cpp's real server (slow) ----------------------------------------------------------------------
@pytest.mark.slow
def test_g_veval_on_llama_cpps_server_reads_what_the_server_returned(llama_server):
    """SmolLM2-135M through llama-cpp-python: the metric's score equals G-VEval's reading of the server's own
    JSON answer to the same request (its answer may hold no score at all: then no_rating, with the text)."""
    metric = PromptJudge(
        "g_veval_ref_only", judge="openai", base_url=llama_server, cache=False, max_new_tokens=96, max_concurrency=1
    )
    caption, refs = "A brown dog runs on the beach.", ["A dog running on sand.", "A dog at the sea."]
    reset_prefix(llama_server, metric.judge.model_name)  # both requests evaluated on the same kept prefix
    out = metric.compute(predictions=[caption], references=[refs], progress=False)
    reset_prefix(llama_server, metric.judge.model_name)
    body = {
        "model": metric.judge.model_name,
        "messages": [{"role": "user", "content": metric.prompt(caption, refs)}],
        "temperature": 0,
        "max_tokens": 96,
        "logprobs": True,
        "top_logprobs": 5,
    }
    req = urllib.request.Request(
        llama_server + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as reply:
        content = json.loads(reply.read())["choices"][0]["logprobs"]["content"]
    raw = ScoredText(
        "".join(e["token"] for e in content),
        [ScoredToken(e["token"], [(t["token"], math.exp(t["logprob"])) for t in e["top_logprobs"]]) for e in content],
    )
    expected = read_after_marker(raw, "$", 0, 100)
    assert out["score_response"][0] == raw.text
    assert out["score_status"][0] == ("ok" if math.isfinite(expected.score) else "no_rating")
    if math.isfinite(expected.score):
        assert 0 <= out["score"][0] <= 100 and out["score"][0] == pytest.approx(expected.score, abs=1e-3)
