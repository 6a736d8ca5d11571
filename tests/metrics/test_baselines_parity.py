"""Parity with pycocoevalcap, the implementation captioning papers report, on a generated corpus.

pycocoevalcap runs its Java PTB tokenizer and METEOR jar here; these tests skip (saying why) where Java
or pycocoevalcap is absent. Our side never uses Java for tokenisation, BLEU, ROUGE-L or CIDEr-D.
"""

import shutil

import numpy as np
import pytest

from mmjudge.metrics.baselines import compute_bleu, compute_cider_d, compute_meteor, compute_rouge_l, ptb_tokenize
from mmjudge.metrics.baselines.synthetic import synthetic_captions

pytest.importorskip("pycocoevalcap", reason="pycocoevalcap (the reference implementation) is not installed")
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="pycocoevalcap's tokenizer and METEOR need Java")

N_ITEMS = 3000


@pytest.fixture(scope="module")
def corpus():
    """Raw captions, our tokenisation, and pycocoevalcap's (Java) tokenisation of the same captions."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    candidates, references = synthetic_captions(N_ITEMS, seed=2024)
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(references)})
    res = tokenizer.tokenize({i: [{"caption": c}] for i, c in enumerate(candidates)})
    ours_cands = ptb_tokenize(candidates)
    ours_refs = [ptb_tokenize(refs) for refs in references]
    return {"gts": gts, "res": res, "cands": ours_cands, "refs": ours_refs, "raw_cands": candidates}


@needs_java
def test_tokenisation_identical_to_stanford_ptb(corpus):
    assert corpus["cands"] == [corpus["res"][i][0] for i in range(N_ITEMS)]
    assert corpus["refs"] == [corpus["gts"][i] for i in range(N_ITEMS)]
    # the corpus does exercise the hard cases
    joined = " ".join(corpus["cands"])
    for token in (
        "n't",
        "'s",
        "-lrb-",
        "mr.",
        "u.s.",
        "p.m.",
        "gon",
        "1,000",
        "3.5",
        "%",
        "$",
        "?!",
        "black-and-white",
    ):
        assert f" {token} " in f" {joined} ", token


@needs_java
def test_bleu_rouge_cider_identical_per_sentence(corpus):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts, res = corpus["gts"], corpus["res"]
    ref_bleu, ref_bleu_items = Bleu(4).compute_score(gts, res, verbose=0)
    bleu, bleu_items = compute_bleu(corpus["cands"], corpus["refs"])
    np.testing.assert_allclose(bleu, ref_bleu, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bleu_items, np.array(ref_bleu_items), rtol=0, atol=1e-6)

    ref_rouge, ref_rouge_items = Rouge().compute_score(gts, res)
    rouge, rouge_items = compute_rouge_l(corpus["cands"], corpus["refs"])
    assert rouge == pytest.approx(ref_rouge, abs=1e-12)
    np.testing.assert_allclose(rouge_items, ref_rouge_items, rtol=0, atol=1e-6)

    ref_cider, ref_cider_items = Cider().compute_score(gts, res)
    cider, cider_items = compute_cider_d(corpus["cands"], corpus["refs"])
    assert cider == pytest.approx(ref_cider, abs=1e-9)
    np.testing.assert_allclose(cider_items, ref_cider_items, rtol=0, atol=1e-6)
    # not a degenerate corpus: the scores spread out
    assert np.std(cider_items) > 0.5 and np.std(bleu_items[3]) > 0.1


@pytest.mark.slow
@needs_java
def test_meteor_identical_to_pycocoevalcap(corpus):
    from pycocoevalcap.meteor.meteor import Meteor

    n = 150
    gts = {i: corpus["gts"][i] for i in range(n)}
    res = {i: corpus["res"][i] for i in range(n)}
    reference = Meteor()
    try:
        ref_score, ref_items = reference.compute_score(gts, res)
    finally:
        del reference
    score, items = compute_meteor(corpus["cands"][:n], corpus["refs"][:n])
    assert score == pytest.approx(ref_score, abs=1e-9)
    np.testing.assert_allclose(items, ref_items, rtol=0, atol=1e-9)
    # the long-lived process answers a second batch the same way
    again, again_items = compute_meteor(corpus["cands"][:20], corpus["refs"][:20])
    np.testing.assert_allclose(again_items, items[:20], rtol=0, atol=1e-12)


def test_meteor_without_java_names_the_fix(monkeypatch):
    import mmjudge.metrics.baselines.meteor as meteor

    monkeypatch.setattr(meteor.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="install a Java runtime"):
        meteor.MeteorScorer()


@needs_java
def test_flickr8k_expert_shaped_rows_identical_to_pycocoevalcap():
    """Repeated pairs (one row per judgment) and candidates that are references: the shape where the engine
    scores each distinct item once. Per row and corpus figures equal pycocoevalcap's, which scores every row."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from mmjudge.metrics.baselines import Baselines
    from mmjudge.metrics.baselines.synthetic import flickr8k_expert_shaped

    candidates, references = flickr8k_expert_shaped(images=200, pairs=600, judgments=3, seed=11)
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(references)})
    res = tokenizer.tokenize({i: [{"caption": c}] for i, c in enumerate(candidates)})
    out = Baselines("coco").compute(predictions=candidates, references=references, progress=False)
    ref_bleu, ref_bleu_items = Bleu(4).compute_score(gts, res, verbose=0)
    for k in range(4):
        assert out[f"corpus_bleu_{k + 1}"] == pytest.approx(ref_bleu[k], abs=1e-12)
        np.testing.assert_allclose(out[f"bleu_{k + 1}"], ref_bleu_items[k], rtol=0, atol=1e-6)
    ref_rouge, ref_rouge_items = Rouge().compute_score(gts, res)
    assert out["corpus_rouge_l"] == pytest.approx(ref_rouge, abs=1e-12)
    np.testing.assert_allclose(out["rouge_l"], ref_rouge_items, rtol=0, atol=1e-6)
    ref_cider, ref_cider_items = Cider().compute_score(gts, res)
    assert out["corpus_cider"] == pytest.approx(ref_cider, abs=1e-9)
    np.testing.assert_allclose(out["cider"], ref_cider_items, rtol=0, atol=1e-6)
    assert np.std(out["cider"]) > 0.5
