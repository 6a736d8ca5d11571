"""The judge interface, the transformers backend on tiny random models, and the SQLite cache."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from mmjudge.judges import load_judge
from mmjudge.judges.batched import plan_batches
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.dummy import DummyJudge
from mmjudge.judges.requests import GenerationRequest, RatingRequest, Turn
from mmjudge.judges.transformers import rating_token_ids
from mmjudge.store import ResultStore


def _requests(n, image=None, group=""):
    return [
        RatingRequest([Turn("user", f"Rate item {i} " + "x" * (i % 7))], image=image, group=group) for i in range(n)
    ]


# ------------------------------------------------------------------------------------ batching
def test_plan_batches_groups_sorts_and_covers_every_request():
    img = Image.new("RGB", (8, 8))
    reqs = _requests(5, group="a") + _requests(4, image=img, group="a") + _requests(3, group="b")
    batches = plan_batches(reqs, batch_size=2)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(reqs)))
    assert all(len(b) <= 2 for b in batches)
    for b in batches:  # never mixes groups, nor image and text-only requests
        assert len({(reqs[i].group, reqs[i].image is None) for i in b}) == 1
    assert plan_batches(reqs, 2) == batches  # deterministic
    with pytest.raises(ValueError, match="batch_size"):
        plan_batches(reqs, 0)


def test_results_come_back_in_request_order():
    judge = DummyJudge(batch_size=3)
    reqs = _requests(10)
    one_by_one = [judge.rate([r], progress=False)[0].raw for r in reqs]
    assert [r.raw for r in judge.rate(reqs, progress=False)] == one_by_one


# ------------------------------------------------------------------------- rating token mapping
def test_rating_tokens_are_found_with_their_variants(tiny_lm_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm_dir)
    ids = rating_token_ids(tok, ["1", "2", "3", "4", "5"])
    for digit, variants in zip("12345", ids):
        assert variants, digit
        assert all(tok.decode([i]).strip() == digit for i in variants)
    spaced = tok.encode(" 3", add_special_tokens=False)[-1]
    assert tok.decode([spaced]).strip() == "3" and spaced in ids[2]  # "Ġ3"-style variant merged in


def test_a_rating_without_a_single_token_fails_loudly(tiny_lm_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_lm_dir)
    with pytest.raises(ValueError, match="not a single token"):
        rating_token_ids(tok, ["1", "zqxwvj"])


# ------------------------------------------------------------------- transformers backend, tiny
@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "llava_next", "idefics3"])
def test_transformers_judge_probabilities_match_a_direct_forward_pass(family, tiny_vlm_dirs):
    import torch

    judge = load_judge("transformers", model=tiny_vlm_dirs[family], batch_size=4)
    img = Image.new("RGB", (60, 40), (200, 30, 30))
    reqs = [
        RatingRequest([Turn("user", f"Rate caption {i}: a red square.")], image=img, answer_prefix="Score: ")
        for i in range(3)
    ]
    got = judge.rate(reqs, progress=False)
    # Independent re-computation: one request at a time, full softmax, summed variants.
    ids = rating_token_ids(judge.tokenizer, ["1", "2", "3", "4", "5"])
    for req, res in zip(reqs, got):
        inputs = judge.processor(text=[judge.render(req)], images=[img], return_tensors="pt")
        with torch.no_grad():
            probs = torch.softmax(judge.model(**inputs).logits[0, -1].float(), -1)
        expected = [float(probs[i].sum()) for i in ids]
        assert res.raw == pytest.approx(expected, abs=1e-5)
        assert res.greedy == judge.tokenizer.decode([int(probs.argmax())])
    assert judge.render(reqs[0]).endswith("Score: ")


def test_transformers_judge_is_batch_size_invariant_and_deterministic(tiny_qwen_dir):
    img = Image.new("RGB", (50, 70), (10, 200, 30))
    reqs = [
        RatingRequest([Turn("user", "Rate: " + "a green tree " * (i + 1))], image=img if i % 2 else None)
        for i in range(6)
    ]
    one = load_judge("transformers", model=tiny_qwen_dir, batch_size=1).rate(reqs, progress=False)
    many = load_judge("transformers", model=tiny_qwen_dir, batch_size=8).rate(reqs, progress=False)
    again = load_judge("transformers", model=tiny_qwen_dir, batch_size=8).rate(reqs, progress=False)
    assert np.allclose([r.raw for r in one], [r.raw for r in many], atol=1e-5)
    assert [r.raw for r in many] == [r.raw for r in again]


def test_text_only_requests_work_with_a_plain_causal_lm(tiny_lm_dir):
    judge = load_judge("transformers", model=tiny_lm_dir)
    assert judge.processor is None
    [res] = judge.rate([RatingRequest([Turn("user", "Rate: a dog.")])], progress=False)
    assert len(res.raw) == 5 and 0 < res.mass <= 1
    with pytest.raises(ValueError, match="text-only model"):
        judge.rate([RatingRequest([Turn("user", "x")], image=Image.new("RGB", (8, 8)))], progress=False)
    [text] = judge.generate([GenerationRequest([Turn("user", "Why?")], max_new_tokens=5)], progress=False)
    assert isinstance(text, str)


def test_identity_tracks_local_weights(tiny_lm_dir, tmp_path):
    from mmjudge.testing import tiny_text_lm

    a = load_judge("transformers", model=tiny_lm_dir).identity()
    same = load_judge("transformers", model=tiny_text_lm(tmp_path / "same", seed=0)).identity()
    other = load_judge("transformers", model=tiny_text_lm(tmp_path / "other", seed=1)).identity()
    assert a["revision"] == same["revision"]  # same config, same seed: same fingerprint
    assert a["revision"] != other["revision"]
    assert "batch_size" not in a  # speed knobs never split the cache


# ----------------------------------------------------------------------------------------- cache
def test_cache_hits_skip_the_judge(tmp_path):
    inner = DummyJudge()
    judge = CachedJudge(inner, tmp_path / "c.sqlite")
    reqs = _requests(6)
    first = judge.rate(reqs, progress=False)
    assert inner.calls == 6
    second = CachedJudge(DummyJudge(), tmp_path / "c.sqlite").rate(reqs, progress=False)
    assert [r.raw for r in first] == [r.raw for r in second]
    assert judge.rate(reqs + reqs[:2], progress=False)[-1].raw == first[1].raw
    assert inner.calls == 6


def test_cache_key_depends_on_prompt_image_choices_and_judge(tmp_path):
    path = tmp_path / "c.sqlite"
    judge = CachedJudge(DummyJudge(), path)
    base = RatingRequest([Turn("user", "x")], image=Image.new("RGB", (8, 8), "red"))
    variants = [
        base,
        RatingRequest([Turn("user", "y")], image=base.image),
        RatingRequest([Turn("user", "x")], image=Image.new("RGB", (8, 8), "blue")),
        RatingRequest([Turn("user", "x")], image=base.image, choices=("1", "2", "3")),
        RatingRequest([Turn("user", "x")], image=base.image, answer_prefix="Score: "),
    ]
    judge.rate(variants, progress=False)
    assert len(judge.store) == 5
    CachedJudge(DummyJudge(seed=1), path).rate([base], progress=False)  # another judge identity
    assert len(ResultStore(path)) == 6


class _Interrupted(RuntimeError):
    pass


class FlakyJudge(DummyJudge):
    """Dies after `fail_after` batches, like a run killed half-way."""

    def __init__(self, fail_after):
        super().__init__(batch_size=2)
        self.fail_after = fail_after
        self.batches = 0

    def _rate_batch(self, requests):
        if self.batches == self.fail_after:
            raise _Interrupted()
        self.batches += 1
        return super()._rate_batch(requests)


def test_an_interrupted_run_resumes_without_recomputing(tmp_path):
    path = tmp_path / "c.sqlite"
    reqs = _requests(10)
    with pytest.raises(_Interrupted):
        CachedJudge(FlakyJudge(fail_after=3), path).rate(reqs, progress=False)
    assert len(ResultStore(path)) == 6  # three finished batches of two were kept
    resumed = DummyJudge(batch_size=2)
    out = CachedJudge(resumed, path).rate(reqs, progress=False)
    assert resumed.calls == 4
    assert [r.raw for r in out] == [r.raw for r in DummyJudge().rate(reqs, progress=False)]


def test_two_processes_can_share_one_cache(tmp_path):
    path = tmp_path / "shared.sqlite"
    script = textwrap.dedent(
        f"""
        import sys
        from mmjudge.judges.cached import CachedJudge
        from mmjudge.judges.requests import RatingRequest, Turn
        from mmjudge.judges.dummy import DummyJudge
        k = int(sys.argv[1])
        reqs = [RatingRequest([Turn("user", f"item {{i}}")]) for i in range(k * 50, k * 50 + 300)]
        CachedJudge(DummyJudge(batch_size=1), {str(path)!r}).rate(reqs, progress=False)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k)]) for k in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]  # all open the new file at once
    assert len(ResultStore(path)) == 450  # items 0..449 written by overlapping processes, each stored once


def test_results_are_stored_as_json(tmp_path):
    judge = CachedJudge(DummyJudge(), tmp_path / "c.sqlite")
    judge.rate(_requests(1), progress=False)
    [(value,)] = judge.store._conn.execute("SELECT value FROM results").fetchall()
    assert set(json.loads(value)) == {"raw", "greedy"}


@pytest.mark.parametrize("family", ["qwen2_vl", "llava"])
def test_prefix_steps_equal_separate_requests_at_each_boundary(family, tiny_vlm_dirs):
    """read_prefix reads every token boundary of the answer prefix from one forward pass; each must be
    what a separate request teacher-forcing the prefix up to there gives."""
    judge = load_judge("transformers", model=tiny_vlm_dirs[family], batch_size=4)
    img = Image.new("RGB", (40, 40), (90, 90, 200))
    digits = tuple("0123456789")
    base = dict(turns=[Turn("user", "Rate it from 0.0 to 1.0.")], image=img, choices=digits)
    spec = [RatingRequest(**base, answer_prefix=p, read_prefix=True) for p in ("0.", " 0.8", "")]
    short = RatingRequest(**base, answer_prefix="0")  # a batch-mate with no steps asked for
    results = judge.rate(spec + [short], progress=False)
    assert results[3].steps is None and results[2].steps == []
    for request, result in zip(spec[:2], results):
        assert result.steps and [s.offset for s in result.steps] == sorted({s.offset for s in result.steps})
        assert result.steps[0].offset == 0
        for step in result.steps:
            [alone] = judge.rate(
                [RatingRequest(**base, answer_prefix=request.answer_prefix[: step.offset])], progress=False
            )
            assert step.raw == pytest.approx(alone.raw, abs=1e-5)
            assert step.greedy == alone.greedy
        [plain] = judge.rate([RatingRequest(**base, answer_prefix=request.answer_prefix)], progress=False)
        assert result.raw == pytest.approx(plain.raw, abs=1e-5)


def test_prefix_steps_survive_the_cache(tmp_path, tiny_llava_dir):
    judge = CachedJudge(load_judge("transformers", model=tiny_llava_dir), tmp_path / "c.sqlite")
    req = [RatingRequest([Turn("user", "Rate.")], choices=tuple("0123456789"), answer_prefix="0.", read_prefix=True)]
    first = judge.rate(req, progress=False)
    again = CachedJudge(load_judge("transformers", model=tiny_llava_dir), tmp_path / "c.sqlite").rate(
        req, progress=False
    )
    assert first[0].steps and again[0].steps == first[0].steps


# ------------------------------------------------------------------------------------ progress
class _RecordingBar:
    """Stands in for the tqdm bar: counts what was reported done."""

    def __init__(self, total, **kwargs):
        self.n = 0

    def update(self, k):
        self.n += k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("prefetch", [False, True])
def test_progress_counts_a_batch_only_once_it_is_answered(prefetch, monkeypatch):
    """With prefetch the next batch is prepared while this one runs; the bar must not count it yet."""
    import mmjudge.progress

    bars = []
    monkeypatch.setattr(mmjudge.progress, "progress_bar", lambda **kw: bars.append(_RecordingBar(**kw)) or bars[-1])
    while_running, after = [], []  # what the bar showed while each batch ran, and once it was handed over

    class Watched(DummyJudge):
        def _rate_batch(self, batch):
            while_running.append(bars[0].n)
            return super()._rate_batch(batch)

    judge = Watched(batch_size=3)
    judge.prefetch = prefetch
    judge.rate(_requests(10), progress=True, on_batch=lambda batch, answers: after.append(bars[0].n))
    assert while_running == [0, 3, 6, 9]
    assert after == [3, 6, 9, 10]


def test_build_judge_uses_a_ready_cached_judge_as_is(tmp_path):
    """A judge that already has its cache is not wrapped again, and the cache option is not checked for it."""
    from mmjudge.judges.factory import build_judge

    ready = CachedJudge(DummyJudge(), tmp_path / "c.sqlite")
    assert build_judge(None, judge=ready, cache=tmp_path) is ready  # a folder: would be refused as a cache
    with pytest.raises(ValueError, match="is a folder"):
        build_judge(None, judge=DummyJudge(), cache=tmp_path)
    wrapped = build_judge(None, judge="dummy", cache=tmp_path / "d.sqlite")
    assert isinstance(wrapped, CachedJudge) and wrapped.store.path == tmp_path / "d.sqlite"


def test_a_wrapper_passes_on_the_named_backend_facts_and_refuses_a_typo(tmp_path):
    import pickle

    from mmjudge.judges.base import JudgeWrapper, find_layer
    from mmjudge.judges.data_parallel import DataParallelJudge

    backend = DummyJudge(teacher_forcing=False)
    judge = CachedJudge(DataParallelJudge(backend), tmp_path / "c.sqlite")
    judge.rate([RatingRequest([Turn("user", "Rate: a dog.")])], progress=False)
    assert judge.calls == 1 and judge.hits == 0  # `calls` is the backend's, `hits` the cache's own
    assert judge.capabilities.teacher_forcing is False and judge.identity() == backend.identity()
    assert judge.describe() == backend.describe() == "dummy:dummy"  # derived from the forwarded signature fields
    assert find_layer(judge, DummyJudge) is backend and find_layer(judge, DataParallelJudge) is judge.inner
    assert find_layer(backend, CachedJudge) is None
    with pytest.raises(AttributeError, match="'CachedJudge' object has no attribute 'cals'"):
        judge.cals  # noqa: B018 - a typo is an error, never read from the backend
    with pytest.raises(AttributeError, match="has no attribute 'teacher_forcing'"):
        judge.teacher_forcing  # noqa: B018 - capabilities are read as judge.capabilities.<name>
    assert not hasattr(JudgeWrapper(backend), "seed")  # the backend's own setting: not a forwarded fact
    again = pickle.loads(pickle.dumps(JudgeWrapper(backend)))  # unpickling reaches __getattr__ before inner
    assert again.calls == 1


@pytest.mark.parametrize("bad", ["8", 8.0, True, 0])
def test_batch_size_is_one_rule_everywhere(bad, tiny_llava_dir, clip_dir):
    """The local judge, the CLIP encoder and the batch planner refuse the same values with the same words
    (the local judge also takes "auto"): "8" used to be accepted by one, refused by another."""
    from mmjudge.encoders.clip import ClipEncoder
    from mmjudge.judges import load_judge

    with pytest.raises(ValueError, match=r"^Expected argument `batch_size` to be a positive integer or 'auto', but"):
        load_judge("transformers", model=tiny_llava_dir, batch_size=bad)
    with pytest.raises(ValueError, match=r"^Expected argument `batch_size` to be a positive integer, but got"):
        ClipEncoder(clip_dir, batch_size=bad)
    with pytest.raises(ValueError, match=r"^Expected argument `batch_size` to be a positive integer, but got"):
        plan_batches(_requests(2), bad)
