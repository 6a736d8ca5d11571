"""HarmonicEval end to end on tiny random VLMs (plumbing, determinism, exact aggregation), and bad input."""

import io

import numpy as np
import pytest
from PIL import Image

import mmjudge
from mmjudge import HarmonicEval
from mmjudge.judges.dummy import DummyJudge
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.metrics.harmonic_eval.scoring import aggregate
from mmjudge.signature import parse
from mmjudge.store import ResultStore

# Random-weight judges put little mass on the digits: expected here, asserted in its own test below.
pytestmark = pytest.mark.filterwarnings("ignore:HarmonicEval. the judge put under")

CRITERIA = ["correctness", "completeness", "clarity", "fluency", "conciseness"]
IMG = Image.new("RGB", (64, 48), (120, 200, 90))

TASK_INPUTS = {
    "ic": dict(predictions=["A green field.", "Grass under a bright sky."], images=[IMG, IMG]),
    "vqa": dict(predictions=["Green.", "It is green."], images=[IMG, IMG], questions=["What colour?", "Which colour?"]),
    "vdu": dict(predictions=["1.1 million."], images=[IMG], questions=["What is the profit?"]),
    "reg": dict(predictions=["the left half"], images=[IMG], boxes=[[0, 0, 32, 48]]),
}


@pytest.fixture(scope="module")
def tiny_he(tiny_qwen_dir):
    return HarmonicEval(model=tiny_qwen_dir, cache=False, batch_size=4, min_mass=0)  # random weights: keep every rating


@pytest.mark.parametrize("task", list(TASK_INPUTS))
def test_all_tasks_end_to_end(tiny_he, task):
    out = tiny_he.compute(task=task, progress=False, **TASK_INPUTS[task])
    n = len(TASK_INPUTS[task]["predictions"])
    assert len(out["overall"]) == n
    scores = np.array([out[c] for c in CRITERIA]).T
    weights = np.array([out[f"{c}_weight"] for c in CRITERIA]).T
    assert np.all((scores >= 1) & (scores <= 5))
    assert weights.sum(axis=1) == pytest.approx(np.ones(n))
    assert out["overall"] == pytest.approx((weights * scores).sum(axis=1).tolist())
    assert out["mean_overall"] == pytest.approx(np.mean(out["overall"]))
    assert "prompts=harmonic_eval@1" in out["signature"] and "gamma=0.75" in out["signature"]
    # A local folder is named by its content fingerprint, never by where it lies.
    assert "judge=transformers:local|revision=local-" in out["signature"] and "/tmp" not in out["signature"]
    assert parse(out["signature"])["dtype"] == "float32"


@pytest.mark.parametrize("family", ["llava", "llava_next", "idefics3"])
def test_other_vlm_families_end_to_end(family, tiny_vlm_dirs):
    he = HarmonicEval(model=tiny_vlm_dirs[family], cache=False, batch_size=4, min_mass=0)
    for task in ("ic", "reg"):
        out = he.compute(task=task, progress=False, **TASK_INPUTS[task])
        weights = np.array([out[f"{c}_weight"] for c in CRITERIA]).T
        assert weights.sum(axis=1) == pytest.approx(np.ones(len(out["overall"])))
        assert all(1 <= x <= 5 for x in out["overall"])


def test_scores_are_the_smoothed_judge_distributions(tiny_he):
    """Recompute one sample by hand: render each criterion's prompt, ask the judge, aggregate."""
    out = tiny_he.compute(task="vqa", progress=False, **TASK_INPUTS["vqa"])
    ps = tiny_he.prompt_set
    reqs = [
        RatingRequest(
            [Turn("user", ps.render(c, "vqa", text="Green.", question="What colour?"))],
            image=IMG if c in ("correctness", "completeness") else None,
            answer_prefix=ps.answer_prefix,
        )
        for c in CRITERIA
    ]
    probs = np.array([r.probs for r in tiny_he.judge.rate(reqs, progress=False)])[None]
    expected = aggregate(probs, gamma=0.75)
    assert [out[c][0] for c in CRITERIA] == pytest.approx(expected.scores[0].tolist(), abs=1e-6)
    assert out["overall"][0] == pytest.approx(float(expected.overall[0]), abs=1e-6)


def test_text_only_criteria_do_not_see_the_image(tiny_qwen_dir):
    seen = []

    class Spy(DummyJudge):
        def _rate_batch(self, requests):
            seen.extend((r.group, r.image is not None) for r in requests)
            return super()._rate_batch(requests)

    HarmonicEval(judge=Spy(), cache=False).compute(progress=False, **TASK_INPUTS["ic"])
    sees = dict(seen)
    assert sees == {"correctness": True, "completeness": True, "clarity": False, "fluency": False, "conciseness": False}
    seen.clear()
    HarmonicEval(judge=Spy(), cache=False, image_criteria=["fluency"], criteria=["fluency", "clarity"]).compute(
        progress=False, **TASK_INPUTS["ic"]
    )
    assert dict(seen) == {"fluency": True, "clarity": False}


def test_reg_draws_the_box_in_red():
    seen = []

    class Spy(DummyJudge):
        def _rate_batch(self, requests):
            seen.extend(r.image for r in requests if r.image is not None)
            return super()._rate_batch(requests)

    HarmonicEval(judge=Spy(), cache=False).compute(task="reg", progress=False, **TASK_INPUTS["reg"])
    assert seen and seen[0].getpixel((0, 20)) == (255, 0, 0)  # left edge of the box
    assert seen[0].getpixel((50, 20)) == IMG.getpixel((50, 20))  # outside the box: untouched


def test_determinism_and_batch_size_invariance(tiny_qwen_dir):
    a = HarmonicEval(model=tiny_qwen_dir, cache=False, batch_size=1, min_mass=0).compute(
        progress=False, **TASK_INPUTS["ic"]
    )
    b = HarmonicEval(model=tiny_qwen_dir, cache=False, batch_size=16, min_mass=0).compute(
        progress=False, **TASK_INPUTS["ic"]
    )
    c = HarmonicEval(model=tiny_qwen_dir, cache=False, batch_size=16, min_mass=0).compute(
        progress=False, **TASK_INPUTS["ic"]
    )
    assert a["overall"] == pytest.approx(b["overall"], abs=1e-5)
    assert b == c


def test_explanations_one_per_criterion(tiny_llava_dir):
    he = HarmonicEval(model=tiny_llava_dir, cache=False, explain=True, max_explanation_tokens=6, min_mass=0)
    out = he.compute(progress=False, **TASK_INPUTS["ic"])
    for c in CRITERIA:
        assert len(out[f"{c}_explanation"]) == 2 and all(isinstance(t, str) for t in out[f"{c}_explanation"])
    again = he.compute(progress=False, **TASK_INPUTS["ic"])
    assert again["correctness_explanation"] == out["correctness_explanation"]  # greedy: reproducible


def test_explanation_turn_follows_the_rated_answer():
    seen = []

    class Spy(DummyJudge):
        def _generate_batch(self, requests):
            seen.extend(requests)
            return super()._generate_batch(requests)

    HarmonicEval(judge=Spy(), cache=False, criteria=["fluency"]).compute(
        predictions=["A dog."], progress=False, explain=True
    )
    [req] = seen
    assert [t.role for t in req.turns] == ["user", "assistant", "user"]
    assert req.turns[1].text.startswith("Score: ") and req.turns[1].text[-1] in "12345"
    assert req.turns[2].text == "Why? Tell me the reason."


def test_options_subset_gamma_and_no_smoothing():
    judge = DummyJudge()
    full = HarmonicEval(judge=judge, cache=False, gamma=1.0).compute(progress=False, **TASK_INPUTS["ic"])
    mean = np.mean([[full[c][i] for c in CRITERIA] for i in range(2)], axis=1)
    assert full["overall"] == pytest.approx(mean.tolist())  # γ = 1: plain average
    sub = HarmonicEval(judge=judge, cache=False, criteria=["fluency", "clarity"]).compute(
        predictions=["A dog."], progress=False
    )
    assert {k for k in sub if k in CRITERIA} == {"fluency", "clarity"}  # no image needed
    argmax = HarmonicEval(judge=judge, cache=False, smoothing=False).compute(progress=False, **TASK_INPUTS["ic"])
    assert all(argmax[c][i] in (1.0, 2.0, 3.0, 4.0, 5.0) for c in CRITERIA for i in range(2))
    assert "smoothing=argmax" in argmax["signature"]


def test_custom_criteria_from_a_prompt_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\nversion = "3"\n[tasks.ic]\ninput = "Caption: {text}"\n'
        '[criteria.humour]\nsees_image = false\ntemplate = "How funny is this, 1 to 5?"\n'
    )
    he = HarmonicEval(judge=DummyJudge(), cache=False, prompts=str(path))
    out = he.compute(predictions=["A dog."], progress=False)
    assert he.criteria == ["humour"] and "prompts=mine@3" in out["signature"]
    assert out["overall"] == out["humour"]


def test_mmjudge_load_is_the_package_entry_point():
    he = mmjudge.load("harmonic_eval", judge="dummy", cache=False, gamma=0.5)
    assert isinstance(he, HarmonicEval) and he.gamma == 0.5
    with pytest.raises(ValueError, match="Did you mean 'harmonic_eval'"):
        mmjudge.load("harmonic_evl")


def test_cache_on_by_default_and_pointable(tmp_path, monkeypatch):
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "default.sqlite"))
    inner = DummyJudge()
    HarmonicEval(judge=inner).compute(progress=False, **TASK_INPUTS["ic"])
    assert len(ResultStore(tmp_path / "default.sqlite")) == 10
    HarmonicEval(judge=inner).compute(progress=False, **TASK_INPUTS["ic"])
    assert inner.calls == 10
    HarmonicEval(judge=inner, cache=tmp_path / "elsewhere.sqlite").compute(progress=False, **TASK_INPUTS["ic"])
    assert len(ResultStore(tmp_path / "elsewhere.sqlite")) == 10


# ------------------------------------------------------------------------------------- bad input
def _png_bytes(size=(16, 16)):
    buf = io.BytesIO()
    Image.new("RGB", size).save(buf, format="PNG")
    return buf.getvalue()


BAD_INPUTS = [
    (dict(predictions=["ok", ""], images=[IMG, IMG]), r"predictions\[1\]: the text is empty"),
    (dict(predictions=["ok", 3], images=[IMG, IMG]), r"predictions\[1\]: expected a string"),
    (dict(predictions="ok", images=[IMG]), "list of strings"),
    (dict(predictions=[], images=[]), "empty"),
    (dict(predictions=["ok", "ok"], images=[IMG]), r"`images` to have one entry per prediction \(2\)"),
    (dict(predictions=["ok"]), "`images` are required"),
    (dict(predictions=["ok", "ok"], images=[IMG, None]), r"images\[1\]: an image is required"),
    (dict(predictions=["ok"], images=["/no/such/file.png"]), r"images\[0\]: image file not found"),
    (dict(predictions=["ok"], images=[b"not an image at all"]), r"images\[0\]: cannot read image"),
    (dict(predictions=["ok"], images=[_png_bytes()[:40]]), r"images\[0\]: cannot read image"),
    (dict(predictions=["ok"], images=[12]), r"images\[0\]: expected a PIL image"),
    (dict(predictions=["ok"], images=[IMG], task="captioning"), "Unknown task 'captioning'"),
    (dict(predictions=["ok"], images=[IMG], task="vqa"), "needs `questions`"),
    (dict(predictions=["ok"], images=[IMG], task="vqa", questions=[""]), r"questions\[0\]: the text is empty"),
    (dict(predictions=["ok"], images=[IMG], task="reg"), "needs `boxes`"),
    (
        dict(predictions=["ok"], images=[IMG], task="reg", boxes=[[40, 10, 30, 10]]),
        r"boxes\[0\]: .* outside the 64x48 image",
    ),
    (dict(predictions=["ok"], images=[IMG], task="reg", boxes=[[1, 2, 3]]), r"boxes\[0\]: expected 4 numbers"),
    (dict(predictions=["ok"], images=[IMG], task="reg", boxes=[None]), r"boxes\[0\]: a bounding box is required"),
]


@pytest.mark.parametrize("kwargs,message", BAD_INPUTS)
def test_bad_input_is_rejected_before_any_judge_call_and_never_cached(tmp_path, kwargs, message):
    inner = DummyJudge()
    he = HarmonicEval(judge=inner, cache=tmp_path / "c.sqlite")
    with pytest.raises(ValueError, match=message):
        he.compute(progress=False, **kwargs)
    assert inner.calls == 0
    assert len(ResultStore(tmp_path / "c.sqlite")) == 0


def test_huge_images_are_refused_as_decompression_bombs():
    he = HarmonicEval(judge=DummyJudge(), cache=False, max_pixels=10_000)
    with pytest.raises(ValueError, match=r"images\[0\]: image is too large"):
        he.compute(predictions=["ok"], images=[_png_bytes((200, 200))], progress=False)
    with pytest.raises(ValueError, match=r"images\[0\]: image is too large"):
        he.compute(predictions=["ok"], images=[Image.new("RGB", (200, 200))], progress=False)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(gamma=0), r"\(0, 1\] range"),
        (dict(gamma=1.01), r"\(0, 1\] range"),
        (dict(criteria=["correctness", "humour"]), "Unknown criterion 'humour'"),
        (dict(criteria=[]), "non-empty list"),
        (dict(task="ocr"), "Unknown task 'ocr'"),
        (dict(prompts="no_such_prompts"), "Unknown prompt set"),
        (dict(box_format="cxcywh"), "box_format"),
    ],
)
def test_bad_options_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HarmonicEval(judge="dummy", cache=False, **kwargs)


def test_low_mass_is_a_status_and_one_warning_line():
    with pytest.warns(UserWarning, match="HarmonicEval: 1 of 1 items got no rating: correctness 1 \\(low_mass\\)"):
        out = HarmonicEval(judge=DummyJudge(mass=0.1), cache=False).compute(
            predictions=["x"], images=[IMG], progress=False
        )
    assert out["correctness_status"] == ["low_mass"] and "0.1 of the judge's probability" in out["correctness_note"][0]
    assert out["failures"] == {c: {"low_mass": 1} for c in CRITERIA} and out["scored"]["overall"] == 0
