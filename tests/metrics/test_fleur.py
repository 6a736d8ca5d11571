"""FLEUR / RefFLEUR: smoothing arithmetic, fast path = literal reference on scripted tiny LLaVAs,
fallback to generation, batch invariance, bad inputs, evaluate.load and the CLI."""

import json
import math
import os
import subprocess
import sys
import warnings

import pytest
from PIL import Image

import mmjudge
from fleur_reference import reference_scores
from mmjudge.judges.batched import BatchedJudge
from mmjudge.judges.requests import GenerationRequest, RatingResult, Turn
from mmjudge.metrics.fleur import FLEUR, FLEUR_PROMPT, REFFLEUR_PROMPT, parse_score, smooth_decimals, smooth_one
from mmjudge.testing import tiny_answering_llava

IMAGES = [Image.new("RGB", (40, 30), c) for c in ("red", "blue", "green")]
TEXTS = ["A dog runs.", "Two people ride bikes down a street.", "A cat sits on a mat."]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return {a: tiny_answering_llava(tmp_path_factory.mktemp("m"), a) for a in (" 0.85", " 1.0", "0.7", " so 0.42")}


def one_hot(d):
    return [1.0 if i == d else 0.0 for i in range(10)]


def test_smoothing_arithmetic_exact():
    assert smooth_decimals(one_hot(8), one_hot(5)) == pytest.approx(0.85)
    assert smooth_decimals([0.1] * 10) == pytest.approx(0.45)  # Σ d/10 · 0.1
    assert smooth_decimals([0.0] * 10, [0.5] * 2 + [0.0] * 8) == pytest.approx(0.005)
    assert smooth_one([0.3, 0.5] + [0.0] * 8) == pytest.approx(0.9 * 0.3 + 0.5)
    with pytest.raises(ValueError, match="10 digit probabilities"):
        smooth_decimals([0.5, 0.5])


def test_parse_score():
    assert parse_score(" 0.85").group(0) == "0.85"
    assert parse_score("The score is 0.7.").group("d2") is None
    assert parse_score("1.0").group("one") == "1"
    assert parse_score("2.5 or 10.5") is None


class FakeJudge(BatchedJudge):
    """Answers each teacher-forced step with chosen digit distributions (prints " 0.73")."""

    backend = "fake"

    def __init__(self):
        self.batch_size = 4
        self.p_lead = [0.7, 0.2] + [0.0] * 8
        self.p1 = [0.0] * 6 + [0.2, 0.5, 0.3, 0.0]
        self.p2 = [0.1] * 10

    def identity(self):
        return {"backend": "fake"}

    def _rate_batch(self, requests):
        steps = {"": (self.p_lead, " 0"), " 0": ([0.0] * 10, "."), " 0.": (self.p1, "7"), " 0.7": (self.p2, "3")}
        return [RatingResult(raw=list(steps[r.answer_prefix][0]), greedy=steps[r.answer_prefix][1]) for r in requests]


def test_fast_path_arithmetic_on_chosen_distributions():
    fleur = FLEUR(judge=FakeJudge(), cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fleur.compute(predictions=TEXTS[:2], images=IMAGES[:2], progress=False)
    expected = (6 * 0.2 + 7 * 0.5 + 8 * 0.3) / 10 + 4.5 * 0.1 / 10  # first decimal + second decimal
    assert out["score"] == pytest.approx([expected, expected])
    assert out["raw_score"] == [0.73, 0.73] and out["method"] == ["fast", "fast"]


@pytest.mark.parametrize("answer", [" 0.85", " 1.0", "0.7"])
def test_fast_path_equals_literal_reference(models, answer):
    fleur = FLEUR(model=models[answer], cache=False, max_new_tokens=8)
    assert fleur.conversation == "llava_v1"
    out = fleur.compute(predictions=TEXTS, images=IMAGES, progress=False)
    requests = [
        GenerationRequest([Turn("user", fleur.prompt(t))], image=i, max_new_tokens=8, conversation="llava_v1")
        for t, i in zip(TEXTS, IMAGES)
    ]
    reference = reference_scores(fleur.judge, requests)
    assert out["method"] == ["fast"] * 3
    assert out["raw_score"] == [float(answer)] * 3 == [r["raw_score"] for r in reference]
    assert out["score"] == pytest.approx([r["score"] for r in reference], abs=1e-5)
    assert len({round(s, 7) for s in out["score"]}) == 3  # the image and caption matter


@pytest.mark.parametrize("answer,passes", [("0.7", 2), (" 1.0", 2), (" 0.85", 3)])
def test_fast_path_forward_passes_per_sample(models, answer, passes):
    """Positions inside the expected prefix are read from one pass: "0.7" needs the pass over "0." (lead,
    dot, first decimal) and one for the second decimal. This tokenizer writes " 0" / " 1" as one token,
    which the first guess "0." cannot follow past the leading digit: " 1.0" then needs one pass over
    " 1." (dot and the "0"), " 0.85" one over " 0." and one for the second decimal."""
    fleur = FLEUR(model=models[answer], cache=False, max_new_tokens=8)
    before = fleur.judge.stats.requests  # rating requests the model actually ran (a forward pass each)
    out = fleur.compute(predictions=TEXTS, images=IMAGES, progress=False)
    assert out["method"] == ["fast"] * len(TEXTS)
    assert fleur.judge.stats.requests - before == passes * len(TEXTS)


def test_deviating_judge_falls_back_to_generation(models):
    fleur = FLEUR(model=models[" so 0.42"], cache=False, max_new_tokens=8)
    out = fleur.compute(predictions=TEXTS[:2], images=IMAGES[:2], progress=False)
    assert out["method"] == ["generate", "generate"] and out["raw_score"] == [0.42, 0.42]
    requests = [
        GenerationRequest([Turn("user", fleur.prompt(t))], image=i, max_new_tokens=8, conversation="llava_v1")
        for t, i in zip(TEXTS[:2], IMAGES[:2])
    ]
    # Not bit-equal: the judge's generate() strips the reply, so the fallback teacher-forces "so 0." where
    # the model emitted " so 0." (other context tokens); the digit positions and arithmetic are the same.
    assert out["score"] == pytest.approx([r["score"] for r in reference_scores(fleur.judge, requests)], abs=1e-3)
    assert fleur.compute(predictions=TEXTS[:1], images=IMAGES[:1], progress=False)["score"][0] == pytest.approx(
        out["score"][0]
    )


def test_batch_size_invariance_determinism_and_cache(models, tmp_path):
    runs = []
    for batch_size in (1, 3):
        fleur = FLEUR(model=models[" 0.85"], cache=tmp_path / f"c{batch_size}.sqlite", batch_size=batch_size)
        runs.append(fleur.compute(predictions=TEXTS, images=IMAGES, progress=False)["score"])
        again = fleur.compute(predictions=TEXTS, images=IMAGES, progress=False)["score"]
        assert again == runs[-1] and fleur.judge.hits > 0
    assert runs[0] == pytest.approx(runs[1], abs=1e-5)


def test_reffleur_prompt_explanation_and_signature(models):
    fleur = FLEUR(model=models[" 0.85"], config_name="reffleur", cache=False, max_explanation_tokens=6)
    out = fleur.compute(
        predictions=TEXTS[:1], images=IMAGES[:1], references=[["a dog", "a puppy"]], explain=True, progress=False
    )
    assert out["explanation"] == ["0.85"]  # the scripted model answers everything with its score
    assert "Reference Captions: a dog\na puppy\n\nCandidate Caption: A dog runs." in fleur.prompt(
        "A dog runs.", ["a dog", "a puppy"]
    )
    assert fleur.prompt("x").startswith("Your task is to evaluate and rate the candidate caption")
    assert FLEUR_PROMPT.endswith("Caption: {candidate}\n\nScore(Choose a rating from 0.0 to 1.0):")
    assert "Reference Captions: {references}\n\nCandidate Caption: {candidate}" in REFFLEUR_PROMPT
    assert "metric=fleur|config=reffleur" in out["signature"] and "conversation=llava_v1" in out["signature"]


def test_bad_inputs_fail_before_model_calls():
    fleur = FLEUR(judge="dummy", config_name="reffleur", cache=False)
    with pytest.raises(ValueError, match="needs `references`"):
        fleur.compute(predictions=["a"], images=IMAGES[:1])
    with pytest.raises(ValueError, match=r"references\[0\]\[1\]: the text is empty"):
        fleur.compute(predictions=["a"], images=IMAGES[:1], references=[["ok", " "]])
    with pytest.raises(ValueError, match=r"predictions\[1\]: the text is empty"):
        fleur.compute(predictions=["a", ""], images=IMAGES[:2], references=[["r"], ["r"]])
    with pytest.raises(ValueError, match=r"images\[0\]: cannot read image"):
        fleur.compute(predictions=["a"], images=[b"not an image"], references=[["r"]])
    with pytest.raises(ValueError, match="config_name"):
        FLEUR(judge="dummy", config_name="fleur2", cache=False)
    assert fleur.judge.calls == 0


@pytest.mark.parametrize("bad", [5, float("nan")])
def test_non_list_references_name_the_item(bad):
    fleur = FLEUR(judge="dummy", config_name="reffleur", cache=False)
    with pytest.raises(ValueError, match=r"^references\[0\]: expected a list of reference strings"):
        fleur.compute(predictions=["a"], images=IMAGES[:1], references=[bad], progress=False)
    assert fleur.judge.calls == 0
    # a lone string is a one-reference list, as for VELA and the baselines (it used to be refused here)
    assert fleur.check_item({"text": "a", "image": IMAGES[0], "references": "a red square"}, 0).references == [
        "a red square"
    ]


@pytest.mark.slow
def test_registry_and_evaluate_and_cli(models, tmp_path, offline_env):
    assert isinstance(mmjudge.load("fleur", "reffleur", judge="dummy", cache=False), FLEUR)
    env = offline_env
    code = (
        "import mmjudge, evaluate, sys\nfrom PIL import Image\n"
        "for name in ('fleur', 'metrics/fleur'):\n"
        "    m = evaluate.load(name, config_name='reffleur', model=sys.argv[1], cache=False, max_new_tokens=8)\n"
        "    out = m.compute(predictions=['a dog'], images=[Image.new('RGB', (40, 30), 'red')],\n"
        "                    references=[['a puppy']])\n"
        "    print(name, out['raw_score'][0], out['method'][0])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, models[" 0.85"]],
        env=env,
        cwd=os.getcwd(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "fleur 0.85 fast" in result.stdout and "metrics/fleur 0.85 fast" in result.stdout
    image = tmp_path / "x.png"
    IMAGES[0].save(image)
    output = tmp_path / "out.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge.cli",
            "score",
            "--metric",
            "fleur",
            "--config",
            "reffleur",
            "--model",
            models[" 0.85"],
            "--text",
            "a dog",
            "--image",
            str(image),
            "--references",
            "a puppy",
            "a dog",
            "--output",
            str(output),
            "--no-cache",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads(output.read_text().splitlines()[0])
    assert row["raw_score"] == 0.85 and 0 <= row["score"] <= 1 and not math.isnan(row["score"])
