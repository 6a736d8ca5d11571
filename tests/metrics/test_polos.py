"""Polos checked against its formula written out in the test, from the authors' code (PolosEstimator,
ScalarMixWithDropout, FeedForward): per RoBERTa layer a layer norm with one mean/variance over the unmasked
tokens of the normalisation group, the softmax-weighted mix times gamma, the ``<s>`` position; raw CLIP
features from an independent peer (open_clip, PyPI); the 10-part feature vector; linear-tanh-linear-tanh-
linear-sigmoid; the best reference. The checkpoint is a tiny random one in the authors' Lightning layout.
Random weights: this proves the reading and the arithmetic, never quality. (The comparison with the
authors' own code on such a file is in the development notes; their repository cannot run in CI.)
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from PIL import Image
from transformers import AutoTokenizer, RobertaConfig, RobertaModel

import mmjudge
from mmjudge.metrics.polos import read_polos_checkpoint
from mmjudge.tiny_models.checkpoints import tiny_polos

open_clip = pytest.importorskip("open_clip")

CAPTIONS = ["a dog runs on the beach", "Two people ride bikes. The sky is blue!", "A cat &amp; a dog", "red"]
REFERENCES = [
    ["a dog on a beach", "the dog is running"],
    ["people riding bicycles"],
    ["a cat", "a dog", "pets"],
    ["red"],
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_polos(tmp_path_factory.mktemp("polos"), clip_vocab=49408)  # OpenAI's BPE for the CLIP side


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        for w, h in [(40, 30), (31, 57), (64, 64), (50, 45)]
    ]


def independent_scores(tiny, images, captions, references, group_size=None):
    """Polos's formula, written out here (see the module's description)."""
    state = torch.load(tiny["checkpoint"], weights_only=True)["state_dict"]
    tok = AutoTokenizer.from_pretrained(tiny["text_tokenizer"])
    config = RobertaConfig(
        vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=128,
        max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5,
    )  # fmt: skip
    roberta = RobertaModel(config)
    roberta.load_state_dict({k[len("encoder.model.") :]: v for k, v in state.items() if k.startswith("encoder.model.")})
    roberta.eval()
    weights = torch.softmax(torch.cat([state[f"scalar_mix.scalar_parameters.{i}"] for i in range(3)]), 0)
    gamma = state["scalar_mix.gamma"]

    def embed(texts):  # texts normalised together: one mean and variance per layer over all their tokens
        with torch.no_grad():
            layers = [roberta(**tok([t], return_tensors="pt"), output_hidden_states=True).hidden_states for t in texts]
        cls = 0
        for k in range(3):
            tokens = torch.cat([h[k][0] for h in layers])  # (all tokens, H)
            mean = tokens.mean()
            std = torch.sqrt(((tokens - mean) ** 2).mean() + 1e-12)
            cls = cls + weights[k] * torch.stack([(h[k][0, 0] - mean) / std for h in layers])
        return gamma * cls

    clip = {k[len("clip.") :]: v.clone() for k, v in state.items() if k.startswith("clip.")}
    peer = open_clip.model.build_model_from_openai_state_dict(dict(clip), cast_dtype=None).float()
    peer.load_state_dict(clip)
    peer.eval()
    transform = open_clip.transform.image_transform(32, is_train=False)
    with torch.no_grad():
        image = peer.encode_image(torch.stack([transform(i) for i in images]))
        text = lambda ts: peer.encode_text(open_clip.tokenize(["A photo depicts " + t for t in ts]))  # noqa: E731

        def head(x):
            for i in (1, 2):
                x = torch.tanh(x @ state[f"ff.0.ff.linear_{i}.weight"].T + state[f"ff.0.ff.linear_{i}.bias"])
            return torch.sigmoid(x @ state["ff.0.ff.linear_3.weight"].T + state["ff.0.ff.linear_3.bias"])[:, 0]

        size = group_size or 1
        scores = []
        for start in range(0, len(captions), size):
            idx = list(range(start, min(start + size, len(captions))))
            cand = embed([captions[i] for i in idx]) if group_size else torch.cat([embed([captions[i]]) for i in idx])
            keep = min(len(references[i]) for i in idx) if group_size else None
            best = torch.full((len(idx),), -1.0)
            for j in range(max(len(references[i]) for i in idx) if keep is None else keep):
                for n, i in enumerate(idx):
                    if j >= len(references[i]):
                        continue
                    if group_size:
                        ref = embed([references[m][j] for m in idx])[n : n + 1]
                    else:
                        ref = embed([references[i][j]])
                    t_c, t_r, e_c, e_r = cand[n : n + 1], ref, text([captions[i]]), text([references[i][j]])
                    e_v = image[i : i + 1]
                    x = torch.cat(
                        [
                            t_r,
                            t_c,
                            (t_c - t_r).abs(),
                            t_c * t_r,
                            e_v,
                            e_c,
                            (e_v - e_c).abs(),
                            e_v * e_c,
                            (e_r - e_c).abs(),
                            e_r * e_c,
                        ],
                        dim=1,
                    )
                    best[n] = max(best[n], head(x)[0])
            scores += best.tolist()
    return np.array(scores)


def test_polos_equals_its_formula_written_out(tiny, images):
    metric = mmjudge.load("polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"])
    out = metric.compute(predictions=CAPTIONS, images=images, references=REFERENCES, progress=False)
    want = independent_scores(tiny, images, CAPTIONS, REFERENCES)
    np.testing.assert_allclose(out["polos"], want, atol=1e-5, rtol=0)
    assert len(set(np.round(want, 4))) == len(want)  # the items differ: a constant would not pass


def test_norm_batch_size_reproduces_the_authors_batches(tiny, images):
    metric = mmjudge.load(
        "polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"], norm_batch_size=2
    )
    out = metric.compute(predictions=CAPTIONS, images=images, references=REFERENCES, progress=False)
    want = independent_scores(tiny, images, CAPTIONS, REFERENCES, group_size=2)
    np.testing.assert_allclose(out["polos"], want, atol=1e-5, rtol=0)
    alone = independent_scores(tiny, images, CAPTIONS, REFERENCES)
    assert np.max(np.abs(want - alone)) > 1e-4  # grouping changes scores: why it is not the default
    assert "norm=batches-of-2" in str(out["signature"])


def test_norm_batch_size_groups_by_input_position_whatever_the_chunks_or_resume(tiny, images):
    """Groups of 4 by position in the whole input: a chunk_size of 3 (or the image bound) does not split a
    group, and a run resumed at item 4 (``_i``: input positions) scores 4..7 as one group, as the full run
    does; resuming inside a group is refused rather than grouping other items together."""
    metric = mmjudge.load(
        "polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"], norm_batch_size=4
    )
    captions = CAPTIONS + ["a small boat on a calm lake", "three birds", "Snow!", "a man reading a newspaper"]
    references = REFERENCES + [["a boat", "a lake"], ["birds on a wire"], ["snow falls", "winter"], ["a man reads"]]
    pictures = images + images[::-1]
    items = [{"text": c, "image": pictures[i], "references": references[i]} for i, c in enumerate(captions)]
    whole = metric.compute(predictions=captions, images=pictures, references=references, progress=False)["polos"]
    np.testing.assert_allclose(whole, independent_scores(tiny, pictures, captions, references, 4), atol=1e-5, rtol=0)
    chunked = [r.values["polos"] for r in metric.stream(iter(items), chunk_size=3)]
    resumed = [r.values["polos"] for r in metric.stream([{**it, "_i": 4 + k} for k, it in enumerate(items[4:])])]
    np.testing.assert_allclose(chunked, whole, atol=1e-6, rtol=0)  # float noise of batching only
    np.testing.assert_allclose(resumed, whole[4:], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"^Polos with norm_batch_size=4 .* starts at input item 6 \(a resumed"):
        list(metric.stream([{**it, "_i": 6 + k} for k, it in enumerate(items[6:])]))


def test_per_text_scores_do_not_depend_on_chunks_or_order(tiny, images):
    metric = mmjudge.load("polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"])
    items = [{"text": c, "image": images[i], "references": REFERENCES[i]} for i, c in enumerate(CAPTIONS)]
    whole = [r.values["polos"] for r in metric.stream(items)]
    one_by_one = [r.values["polos"] for r in metric.stream(iter(items), chunk_size=1)]
    backwards = [r.values["polos"] for r in metric.stream(items[::-1], chunk_size=3)][::-1]
    np.testing.assert_allclose(one_by_one, whole, atol=1e-6)
    np.testing.assert_allclose(backwards, whole, atol=1e-6)


def test_a_lightning_checkpoint_reads_without_lightning(tmp_path, tiny):
    """Lightning's classes in the file become inert stand-ins; a global that would run code runs nothing;
    ``hparams.yaml`` beside the file wins, as in the authors' ``load_checkpoint``."""
    script = f"""
import os, sys, types, torch
parsing = types.ModuleType("pytorch_lightning.utilities.parsing")
class AttributeDict(dict):
    pass
AttributeDict.__module__ = parsing.__name__
parsing.AttributeDict = AttributeDict
callbacks = types.ModuleType("pytorch_lightning.callbacks")
class ModelCheckpoint:
    pass
ModelCheckpoint.__module__ = callbacks.__name__
callbacks.ModelCheckpoint = ModelCheckpoint
for name in ("pytorch_lightning", "pytorch_lightning.utilities"):
    sys.modules[name] = types.ModuleType(name)
sys.modules.update({{parsing.__name__: parsing, callbacks.__name__: callbacks}})
class Hostile:
    def __reduce__(self):
        return (os.system, ("touch {tmp_path / "pwned"}",))
ckpt = torch.load({tiny["checkpoint"]!r}, weights_only=True)
ckpt["hyper_parameters"] = AttributeDict(ckpt["hyper_parameters"], activations="Tanh")
ckpt["callbacks"] = {{ModelCheckpoint: {{"best_model_score": torch.tensor(0.5)}}}}
ckpt["hostile"] = Hostile()
os.makedirs({str(tmp_path / "reprod")!r})
torch.save(ckpt, {str(tmp_path / "reprod" / "reprod.ckpt")!r})
"""
    subprocess.run([sys.executable, "-c", script], check=True)  # the classes exist only in that process
    (tmp_path / "reprod" / "hparams.yaml").write_text(yaml.safe_dump({"activations": "ReLU", "pool": "cls"}))
    read = read_polos_checkpoint(tmp_path / "reprod" / "reprod.ckpt")
    assert not (tmp_path / "pwned").exists()
    assert read.hparams["activations"] == "ReLU" and read.hparams["layer"] == "mix"
    assert set(read.state) == set(torch.load(tiny["checkpoint"], weights_only=True)["state_dict"])


def test_mistakes_are_one_line(tmp_path, tiny):
    with pytest.raises(ValueError, match="needs `checkpoint=`.*reprod.zip"):
        mmjudge.load("polos")
    with pytest.raises(FileNotFoundError, match="does not exist: download it from .*reprod.zip"):
        mmjudge.load("polos", checkpoint=str(tmp_path / "reprod.ckpt"))
    torch.save({"state_dict": {"visual.proj": torch.zeros(2)}}, tmp_path / "other.ckpt")
    with pytest.raises(ValueError, match="not a Polos checkpoint"):
        mmjudge.load("polos", checkpoint=str(tmp_path / "other.ckpt"))
    with pytest.raises(OSError, match="RoBERTa tokenizer of .*huggingface-cli download"):
        mmjudge.load("polos", checkpoint=tiny["checkpoint"], text_tokenizer=str(tmp_path / "no-such-tokenizer"))
    with pytest.raises(ValueError, match="norm_batch_size"):
        mmjudge.load("polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"], norm_batch_size=0)


def test_signature_names_the_checkpoint_by_content(tiny):
    import hashlib

    with open(tiny["checkpoint"], "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    sig = str(mmjudge.load("polos", checkpoint=tiny["checkpoint"], text_tokenizer=tiny["text_tokenizer"]).signature)
    assert f"checkpoint=sha256-{digest}" in sig and "norm=per-text" in sig
    assert os.path.dirname(tiny["checkpoint"]) not in sig


def test_hostile_pickles_run_nothing(tmp_path):
    from mmjudge.encoders.checkpoint_files import ForeignObject, read_torch_file

    class Hostile:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    torch.save({"x": Hostile(), "t": torch.ones(2)}, tmp_path / "h.pt")
    out = read_torch_file(tmp_path / "h.pt")
    assert isinstance(out["x"], ForeignObject) and out["t"].tolist() == [1.0, 1.0]
    assert not (tmp_path / "pwned").exists()
