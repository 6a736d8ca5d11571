"""Unit tests of the classic metrics: exact values on hand-checked inputs, invariants, bad input."""

import math

import numpy as np
import pytest

from mmjudge.metrics.baselines import (
    Baselines,
    check_pairs,
    compute_bleu,
    compute_cider_d,
    compute_rouge_l,
    lcs_length,
    ptb_tokenize,
)


# ------------------------------------------------------------------------------------- tokenisation
@pytest.mark.parametrize(
    "text, expected",
    [
        ("A man's dog isn't running.", "a man 's dog is n't running"),
        ('He said "hello" (twice)!', "he said hello -lrb- twice -rrb-"),  # brackets stay, as in pycocoevalcap
        ("Mr. Smith at 3:30 p.m. in the U.S.", "mr. smith at 3:30 p.m. in the u.s."),
        ("It cannot be -- gonna rain...", "it can not be gon na rain"),
        ("1,000 dogs; 12.5% off $5.50?!", "1,000 dogs 12.5 % off $ 5.50 ?!"),
        ("Black-and-white photo, etc.", "black-and-white photo etc."),
        ("the dogs' toys", "the dogs toys"),
        ("it\u2019s \u201ccurly\u201d \u2014 ok\u2026", "it 's curly ok"),
        ("  spaced   out\tTAB ", "spaced out tab"),
        ("No. 5 bus, not the no.", "no. 5 bus not the no"),
    ],
)
def test_ptb_tokenize_known_cases(text, expected):
    assert ptb_tokenize([text]) == [expected]


# ----------------------------------------------------------------------------------------------- BLEU
def test_bleu_hand_computed():
    # candidate "a b c d" vs reference "a b c e": p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0 (+1e-15 smoothing)
    corpus, per_item = compute_bleu(["a b c d"], [["a b c e"]])
    assert per_item[0, 0] == pytest.approx(0.75, abs=1e-9)
    assert per_item[1, 0] == pytest.approx(math.sqrt(0.75 * 2 / 3), abs=1e-9)
    assert per_item[2, 0] == pytest.approx((0.75 * 2 / 3 * 0.5) ** (1 / 3), abs=1e-9)
    assert per_item[3, 0] < 1e-3
    assert corpus == pytest.approx(per_item[:, 0].tolist())


def test_bleu_brevity_penalty_uses_closest_reference_shorter_on_ties():
    # candidate of length 2; references of lengths 1 and 3 are equally close: the shorter (1) wins, no penalty
    _, per_item = compute_bleu(["a b"], [["a", "a b c"]])
    assert per_item[0, 0] == pytest.approx(1.0, abs=1e-9)
    # a single longer reference: penalty exp(1 - 4/2)
    _, per_item = compute_bleu(["a b"], [["a b c d"]])
    assert per_item[0, 0] == pytest.approx(math.exp(1 - 2), abs=1e-9)


def test_bleu_clips_counts_to_the_reference_maximum():
    _, per_item = compute_bleu(["the the the the"], [["the cat", "the the dog"]])
    assert per_item[0, 0] == pytest.approx(2 / 4, abs=1e-9)


# -------------------------------------------------------------------------------------------- ROUGE-L
@pytest.mark.parametrize("seed", range(5))
def test_lcs_matches_dynamic_programming(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        a = [str(x) for x in rng.integers(0, 5, rng.integers(1, 70))]
        b = [str(x) for x in rng.integers(0, 5, rng.integers(1, 70))]
        table = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i, j] = table[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1, j], table[i, j - 1])
        assert lcs_length(a, b) == table[-1, -1] == lcs_length(b, a)


def test_rouge_l_formula():
    # LCS("a b c d", "a c d e f") = 3: P = 3/4, R = 3/5, beta = 1.2
    p, r, b2 = 0.75, 0.6, 1.44
    score, per_item = compute_rouge_l(["a b c d"], [["a c d e f"]])
    assert per_item[0] == pytest.approx((1 + b2) * p * r / (r + b2 * p), abs=1e-12)
    assert score == per_item[0]
    _, disjoint = compute_rouge_l(["x y"], [["a b"]])
    assert disjoint[0] == 0.0


def test_rouge_l_takes_max_precision_and_max_recall_separately():
    # ref 1 gives the best precision, ref 2 the best recall
    _, per_item = compute_rouge_l(["a b"], [["a b c d e f", "a x"]])
    p, r, b2 = 1.0, 0.5, 1.44
    assert per_item[0] == pytest.approx((1 + b2) * p * r / (r + b2 * p), abs=1e-12)


# -------------------------------------------------------------------------------------------- CIDEr-D
def test_cider_d_idf_comes_from_the_whole_call():
    cands, refs = ["a dog runs"], [["a dog runs fast"]]
    alone, _ = compute_cider_d(cands, refs)
    assert alone == 0.0  # one item: log(1) - log(df) = 0, every weight vanishes
    score, per_item = compute_cider_d(cands + ["a cat sleeps"], refs + [["a cat is sleeping"]])
    assert per_item[0] > 0 and score == pytest.approx(per_item.mean())


def test_cider_d_identical_sentences_score_ten():
    # identical candidate and reference, n-grams unique to the item: every cosine is 1, no length penalty
    _, per_item = compute_cider_d(["red car on road", "blue sky"], [["red car on road"], ["green tree"]])
    assert per_item[0] == pytest.approx(10.0, abs=1e-12)


def test_cider_d_clipping_and_length_penalty():
    refs = [["u v w x"], ["p q"], ["r s"]]
    cands = ["u v w x u v w x", "p q", "r s"]  # the candidate repeats its reference: counts clipped
    _, per_item = compute_cider_d(cands, refs)
    # every n-gram has idf log(3), which cancels in the cosines; clipped dot = Σ min(c, r)·r
    one = 4 / (4 * 2)  # unigrams: counts 2 vs 1 → dot 4, norms 4 and 2
    two = 3 / (math.sqrt(13) * math.sqrt(3))  # bigrams uv vw wx (×2) + xu; reference uv vw wx
    three = 2 / (math.sqrt(10) * math.sqrt(2))  # trigrams uvw vwx (×2) + wxu xuv
    four = 1 / math.sqrt(7)  # 4-grams uvwx (×2) + vwxu wxuv xuvw
    penalty = math.exp(-(4**2) / (2 * 6.0**2))  # 7 vs 3 bigrams
    assert per_item[0] == pytest.approx(10 * penalty * (one + two + three + four) / 4, abs=1e-12)


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "cands, refs, message",
    [
        (["a dog", ""], [["x"], ["y"]], r"candidates\[1\]: the candidate is empty"),
        (["a dog"], [[]], r"references\[0\]: the reference list is empty"),
        (["a dog", 3], [["x"], ["y"]], r"candidates\[1\]: expected a string, but got int"),
        (["a dog"], [["x", None]], r"references\[0\]\[1\]: expected a string, but got NoneType"),
        (["a dog", "b"], [["x"]], r"2 candidates and 1 reference lists"),
        ("a dog", [["x"]], r"Expected argument `candidates` to be a list of strings"),
        ([], [], r"`candidates` is empty"),
        (["a"], [["  "]], r"references\[0\]\[0\]: the reference is empty"),
    ],
)
def test_bad_input_raises_clear_errors(cands, refs, message):
    with pytest.raises(ValueError, match=message):
        check_pairs(cands, refs)


@pytest.mark.parametrize("config", ["bleu", "rouge_l", "cider", "meteor", "bertscore", "bartscore"])
def test_metric_checks_input_before_any_work(config):
    metric = (
        Baselines(config) if config not in ("bertscore",) else Baselines(config, model="never-loaded", num_layers=1)
    )
    with pytest.raises(ValueError, match=r"predictions\[0\]: the candidate is empty"):
        metric.compute(predictions=[""], references=[["a dog"]])
    with pytest.raises(ValueError, match=r"references\[0\]: the reference list is empty"):
        metric.compute(predictions=["a dog"], references=[[]])
    with pytest.raises(ValueError, match="need `references`"):
        metric.compute(predictions=["a dog"], references=None)
    assert metric._scorer is None  # nothing loaded, no process started


@pytest.mark.parametrize("bad", [5, float("nan"), None])
def test_non_list_references_name_the_item(bad):
    message = (
        r"^references\[0\]: expected a list of reference strings"
        if bad is not None
        else r"^references\[0\]: the reference list is empty"
    )
    with pytest.raises(ValueError, match=message):
        Baselines("bleu").compute(predictions=["a dog"], references=[bad])
    with pytest.raises(ValueError, match=r"^Expected `references` to have one entry per prediction \(2\), but got 1"):
        Baselines("bleu").compute(predictions=["a dog", "a cat"], references=[["a dog"]])


def test_metric_configs_and_options_are_checked():
    with pytest.raises(ValueError, match="Expected argument `config_name` to be one of"):
        Baselines("bleu4")
    with pytest.raises(ValueError, match=r"Options \['idf'\] do not apply to the 'cider' configuration"):
        Baselines("cider", idf=True)
    with pytest.raises(ValueError, match="Expected argument `direction`"):
        Baselines("bartscore", direction="sideways")


def test_metric_outputs_per_sample_corpus_and_signature():
    texts = ["A dog runs on the beach.", "Two cats sleep on a bed."]
    refs = [["A dog is running on the beach!", "A dog on the sand."], ["Two cats sleeping.", "Cats on a bed."]]
    out = Baselines("bleu").compute(predictions=texts, references=refs)
    cands = ptb_tokenize(texts)
    corpus, per_item = compute_bleu(cands, [ptb_tokenize(r) for r in refs])
    for k in range(4):
        assert out[f"bleu_{k + 1}"] == per_item[k].tolist()
        assert out[f"corpus_bleu_{k + 1}"] == corpus[k]
        assert out[f"mean_bleu_{k + 1}"] == pytest.approx(per_item[k].mean())
    assert "config=bleu" in out["signature"] and "tokenizer=ptb-python@1" in out["signature"]
    # deterministic, and independent of how the reference lists are typed
    again = Baselines("bleu").compute(predictions=tuple(texts), references=[tuple(r) for r in refs])
    assert again == out


def test_load_by_name_and_evaluate_shell():
    import evaluate

    import mmjudge

    assert isinstance(mmjudge.load("baselines", "rouge_l"), Baselines)
    module = evaluate.load("metrics/baselines", "cider")
    texts = ["A dog runs on the beach.", "Two cats sleep."]
    refs = [["A dog is running on the beach!", "A dog on the sand."], ["Two cats sleeping."]]
    out = module.compute(predictions=texts, references=refs)
    assert out["cider"] == Baselines("cider").compute(predictions=texts, references=refs)["cider"]


def test_coco_config_equals_the_single_configs_exactly():
    """The one-call COCO suite shares tokenisation and n-gram counts; its numbers must not change."""
    from mmjudge.metrics.baselines import Baselines
    from mmjudge.metrics.baselines.synthetic import synthetic_captions

    texts, references = synthetic_captions(300, seed=3)
    coco = Baselines("coco").compute(predictions=texts, references=references, progress=False)
    for config, keys in (
        ("bleu", ["bleu_1", "bleu_2", "bleu_3", "bleu_4"]),
        ("rouge_l", ["rouge_l"]),
        ("cider", ["cider"]),
    ):
        single = Baselines(config).compute(predictions=texts, references=references, progress=False)
        for key in keys:
            assert coco[key] == single[key] and coco[f"corpus_{key}"] == single[f"corpus_{key}"]
    assert "meteor" not in coco and coco["signature"].endswith("metrics=bleu4,rouge_l,cider_d")
    with pytest.raises(ValueError, match="do not apply to the 'cider'"):
        Baselines("cider", meteor=True)


def test_baselines_means_leave_out_nan_like_every_metric():
    # _put used np.mean, so one NaN sample made mean_<name> NaN where add_means (all other metrics) left it out
    class Stub:
        signature_fields = {"model": "stub"}

        def compute_score(self, texts, references, progress=True):
            return {part: np.array([0.5, np.nan, 0.7]) for part in ("precision", "recall", "f1")}

    metric = Baselines("bertscore", model="never-loaded", num_layers=1)
    metric._scorer = Stub()
    out = metric.compute(predictions=["a", "b", "c"], references=[["a"], ["b"], ["c"]], progress=False)
    assert out["bertscore_f1"][0] == 0.5 and math.isnan(out["bertscore_f1"][1])
    assert out["mean_bertscore_f1"] == pytest.approx(0.6, abs=1e-12)


# ------------------------------------------------------------------------------- repeated items, once
def test_ptb_tokenize_tokenises_each_distinct_text_once(monkeypatch):
    import mmjudge.metrics.baselines.tokenize as tokenize

    seen = []
    real = tokenize.tokenize_line
    monkeypatch.setattr(tokenize, "tokenize_line", lambda text: seen.append(text) or real(text))
    texts = ["A dog runs.", "Two cats!", "A dog runs.", "A dog runs.", "two cats!"]
    assert ptb_tokenize(texts) == ["a dog runs", "two cats", "a dog runs", "a dog runs", "two cats"]
    assert seen == ["A dog runs.", "Two cats!", "two cats!"]


def test_count_ngrams_with_repeats_equals_counting_every_sentence():
    from mmjudge.metrics.baselines.ngrams import _count_distinct, count_ngrams

    sentences = ["a dog runs", "", "a cat", "a dog runs", "a cat sleeps on a mat", "", "a cat", "x"]
    repeated, every = count_ngrams(sentences), _count_distinct(sentences, 4)
    for field in ("sentence", "gram", "order", "count", "lengths"):
        assert getattr(repeated, field).tolist() == getattr(every, field).tolist(), field
    assert repeated.n_grams == every.n_grams == 23  # 8 words, 7 bigrams, 5 trigrams, 3 4-grams


def test_a_corpus_of_texts_shorter_than_its_longest_ngram_is_counted():
    """Every text shorter than three words (so no 4-gram anywhere, and the 4-gram pass shifts by more words than
    the corpus holds): counted, not a broadcasting error — the case a one-reference, two-word corpus hits."""
    from mmjudge.metrics.baselines.ngrams import count_ngrams

    counts = count_ngrams(["a dog"], 4)
    assert counts.n_grams == 3 and counts.lengths.tolist() == [2]  # 2 words, 1 bigram, no trigram or 4-gram
    out = Baselines("bleu").compute(predictions=["a dog"], references=[["a dog"]], progress=False)
    assert out["bleu_1"] == [pytest.approx(1.0)]


def test_repeated_rows_score_as_if_each_were_scored():
    """Flickr8k-Expert's shape: each pair repeated per judgment, candidates found among the references. Each
    distinct item is scored once and counted as often as it occurs: BLEU's pooled counts, CIDEr-D's number of
    items and document frequencies. The plain functions over every row are the yardstick, to the last bit."""
    from mmjudge.metrics.baselines.synthetic import flickr8k_expert_shaped

    texts, references = flickr8k_expert_shaped(images=60, pairs=150, judgments=3, seed=5)
    out = Baselines("coco").compute(predictions=texts, references=references, progress=False)
    cands = ptb_tokenize(texts)
    refs = [ptb_tokenize(group) for group in references]
    bleu_corpus, bleu_items = compute_bleu(cands, refs)
    rouge_corpus, rouge_items = compute_rouge_l(cands, refs)
    cider_corpus, cider_items = compute_cider_d(cands, refs)
    for k in range(4):
        assert out[f"bleu_{k + 1}"] == bleu_items[k].tolist()
        assert out[f"corpus_bleu_{k + 1}"] == bleu_corpus[k]
    assert out["rouge_l"] == rouge_items.tolist() and out["corpus_rouge_l"] == rouge_corpus
    assert out["cider"] == cider_items.tolist() and out["corpus_cider"] == cider_corpus
    # counting each distinct pair once (not as often as it occurs) gives other CIDEr-D numbers: the test can fail
    once = Baselines("cider").compute(predictions=texts[::3], references=references[::3], progress=False)
    assert once["cider"] != out["cider"][::3]


@pytest.mark.parametrize(
    "cands, refs",
    [
        (["a dog"], [["a dog"]]),  # one item whose candidate is its reference: 2 distinct words, no 3-gram
        (["a"], [["a"]]),
        (["dog"], [["a dog"]]),
        (["a dog", "a dog"], [["a dog"], ["a dog"]]),
    ],
)
def test_corpora_with_fewer_words_than_the_longest_ngram_score_as_pycocoevalcap(cands, refs):
    """Counting each distinct sentence once can leave fewer words than n - 1 in the whole call (a candidate that
    equals its reference): the n-grams that do not fit are none, as pycocoevalcap counts them."""
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    gts, res = dict(enumerate(refs)), {k: [c] for k, c in enumerate(cands)}
    corpus, per_item = compute_bleu(cands, refs)
    expected_corpus, expected_items = Bleu(4).compute_score(gts, res, verbose=0)
    np.testing.assert_allclose(corpus, expected_corpus, rtol=0, atol=1e-12)
    np.testing.assert_allclose(per_item, expected_items, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compute_cider_d(cands, refs)[1], Cider().compute_score(gts, res)[1], atol=1e-12)
    out = Baselines("coco").compute(predictions=cands, references=refs, progress=False)
    assert out["bleu_1"] == pytest.approx(list(expected_items[0]), abs=1e-12)
