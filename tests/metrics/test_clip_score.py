"""CLIPScore / RefCLIPScore: formula against an independent re-computation on a tiny random CLIP,
preprocessing, truncation warning, Long-CLIP positions, caches, batch invariance, bad inputs, evaluate, CLI."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

import mmjudge
from mmjudge.encoders.clip import ClipEncoder
from mmjudge.encoders.clip_inputs import preprocess_images
from mmjudge.metrics.clip_score import CLIPScore, clip_s, ref_clip_s
from mmjudge.testing import tiny_clip

IMAGES = [Image.new("RGB", (50, 40), c) for c in ("red", "blue")] + [Image.linear_gradient("L").convert("RGB")]
TEXTS = ["a dog runs on the beach", "two people ride bikes", "a cat sits on a mat"]
REFS = [["a dog on a beach", "a puppy"], ["people on bikes"], ["a cat", "a kitten on a mat", "a window"]]


def test_formulas_exact():
    assert clip_s([0.4, -0.3, 0.0]) == [1.0, 0.0, 0.0]
    assert clip_s([0.4], w=1.0) == [0.4]
    assert ref_clip_s([1.0, 0.0, 0.5], [0.5, 0.0, -0.2]) == pytest.approx([2 * 0.5 / 1.5, 0.0, 2 * 0.5 * -0.2 / 0.3])


def independent_scores(path, texts, images, refs):
    """Re-computation straight from transformers: CLIPModel features, cosines, the published formulas."""
    from transformers import AutoTokenizer, CLIPModel

    model, tok = CLIPModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    pixels = preprocess_images(images, 32, (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))
    with torch.no_grad():
        img = model.get_image_features(pixel_values=pixels).pooler_output

        def text(t):
            ids = tok(["A photo depicts " + x for x in t], padding=True, return_tensors="pt")
            return torch.nn.functional.normalize(model.get_text_features(**ids).pooler_output, dim=-1)

        img = torch.nn.functional.normalize(img, dim=-1)
        cand = text(texts)
        cos = (cand * img).sum(-1)
        s = 2.5 * cos.clamp(min=0)
        best = torch.stack([(text(r) @ c).max() for r, c in zip(refs, cand)])
    return s.tolist(), (2 * s * best / (s + best)).tolist()


def test_matches_independent_recomputation(clip_dir):
    metric = CLIPScore(model=clip_dir, config_name="ref_clip_score")
    out = metric.compute(predictions=TEXTS, images=IMAGES, references=REFS, progress=False)
    expected_s, expected_ref = independent_scores(clip_dir, TEXTS, IMAGES, REFS)
    assert out["clip_score"] == pytest.approx(expected_s, abs=1e-5)
    assert out["ref_clip_score"] == pytest.approx(expected_ref, abs=1e-5)
    assert out["mean_clip_score"] == pytest.approx(np.mean(expected_s))
    assert "metric=clip_score|config=ref_clip_score" in out["signature"] and "w=2.5" in out["signature"]
    assert set(CLIPScore(model=clip_dir).compute(predictions=TEXTS, images=IMAGES, progress=False)) == {
        "clip_score",
        "mean_clip_score",
        "signature",
        "scored",
        "failures",
    }


def test_preprocessing_bicubic_resize_and_centre_crop():
    image = Image.new("RGB", (60, 30), "black")
    image.paste((255, 255, 255), (0, 0, 15, 30))  # a white left quarter is cropped away
    pixels = preprocess_images([image], 16, (0.0,) * 3, (1.0,) * 3)
    assert pixels.shape == (1, 3, 16, 16) and float(pixels.max()) < 0.1  # bicubic overshoot at the edge only
    manual = np.asarray(image.resize((32, 16), Image.BICUBIC).crop((8, 0, 24, 16)), dtype=np.float32) / 255
    assert np.allclose(pixels[0].permute(1, 2, 0).numpy(), manual)


def test_caches_batch_invariance_and_persistence(clip_dir, tmp_path):
    small = CLIPScore(model=clip_dir, config_name="ref_clip_score", batch_size=1, cache=tmp_path / "e.sqlite")
    big = CLIPScore(model=clip_dir, config_name="ref_clip_score", batch_size=16)
    a = small.compute(predictions=TEXTS, images=IMAGES, references=REFS, progress=False)
    b = big.compute(predictions=TEXTS, images=IMAGES, references=REFS, progress=False)
    assert a["ref_clip_score"] == pytest.approx(b["ref_clip_score"], abs=1e-5)
    assert small.encoder.computed == 3 + 3 + 6
    again = small.compute(predictions=TEXTS, images=IMAGES, references=REFS, progress=False)
    assert again["ref_clip_score"] == a["ref_clip_score"] and small.encoder.computed == 12  # memory cache
    fresh = CLIPScore(model=clip_dir, config_name="ref_clip_score", cache=tmp_path / "e.sqlite")
    assert fresh.compute(predictions=TEXTS, images=IMAGES, references=REFS, progress=False)[
        "clip_score"
    ] == pytest.approx(a["clip_score"])
    assert fresh.encoder.computed == 0  # everything came from the SQLite file


def test_truncation_warning_and_long_clip(clip_dir, tmp_path):
    long_caption = "a dog runs on the beach next to two people " * 12
    metric = CLIPScore(model=clip_dir)
    with pytest.warns(UserWarning, match="longer than the text encoder's 77 tokens"):
        metric.compute(predictions=[long_caption], images=IMAGES[:1], progress=False)
    long_clip = ClipEncoder(tiny_clip(tmp_path / "long", max_position_embeddings=248))
    assert long_clip.max_text_positions == 248
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        long_clip.encode_texts([long_caption])
    with pytest.raises(ValueError, match="max_text_positions"):
        ClipEncoder(clip_dir, max_text_positions=100)


def test_bad_inputs(clip_dir):
    metric = CLIPScore(model=clip_dir, config_name="ref_clip_score")
    with pytest.raises(ValueError, match="needs `references`"):
        metric.compute(predictions=TEXTS[:1], images=IMAGES[:1])
    with pytest.raises(ValueError, match=r"predictions\[0\]: the text is empty"):
        metric.compute(predictions=[" "], images=IMAGES[:1], references=[["a"]])
    with pytest.raises(ValueError, match=r"images\[0\]: cannot read image"):
        metric.compute(predictions=["a"], images=[b"\x89PNG broken"], references=[["a"]])
    with pytest.raises(ValueError, match=r"references\[0\]"):
        metric.compute(predictions=["a"], images=IMAGES[:1], references=[[]])
    with pytest.raises(ValueError, match="`w`"):
        CLIPScore(model=clip_dir, w=-1)
    assert metric.encoder.computed == 0


@pytest.mark.parametrize("bad", [5, float("nan")])
def test_non_list_references_name_the_item_and_a_lone_string_is_one_reference(clip_dir, bad):
    metric = CLIPScore(model=clip_dir, config_name="ref_clip_score")
    with pytest.raises(ValueError, match=r"^references\[0\]: expected a list of reference strings"):
        metric.compute(predictions=["a"], images=IMAGES[:1], references=[bad], progress=False)
    # the rule every metric shares: a lone string is a one-reference list (it used to be refused here)
    lone = metric.compute(predictions=["a dog"], images=IMAGES[:1], references=["a red square"], progress=False)
    listed = metric.compute(predictions=["a dog"], images=IMAGES[:1], references=[["a red square"]], progress=False)
    assert lone["ref_clip_score"] == listed["ref_clip_score"]


@pytest.mark.slow
def test_registry_evaluate_and_cli(clip_dir, tmp_path, offline_env):
    assert isinstance(mmjudge.load("clip_score", "ref_clip_score", model=clip_dir), CLIPScore)
    env = offline_env
    code = (
        "import mmjudge, evaluate, sys\nfrom PIL import Image\n"
        "for name in ('clip_score', 'metrics/clip_score'):\n"
        "    m = evaluate.load(name, config_name='ref_clip_score', model=sys.argv[1])\n"
        "    image = Image.new('RGB', (40, 30), 'red')\n"
        "    out = m.compute(predictions=['a dog'], images=[image], references=[['a puppy']])\n"
        "    print(name, round(out['ref_clip_score'][0], 6))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, clip_dir], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.split("\n")
    direct = CLIPScore(model=clip_dir, config_name="ref_clip_score").compute(
        predictions=["a dog"], images=[Image.new("RGB", (40, 30), "red")], references=[["a puppy"]], progress=False
    )
    assert f"clip_score {round(direct['ref_clip_score'][0], 6)}" in lines
    assert f"metrics/clip_score {round(direct['ref_clip_score'][0], 6)}" in lines
    image = tmp_path / "x.png"
    Image.new("RGB", (40, 30), "red").save(image)
    output = tmp_path / "out.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge.cli",
            "score",
            "--metric",
            "clip_score",
            "--config",
            "ref_clip_score",
            "--model",
            clip_dir,
            "--text",
            "a dog",
            "--image",
            str(image),
            "--references",
            "a puppy",
            "--output",
            str(output),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(output.read_text())["ref_clip_score"] == pytest.approx(direct["ref_clip_score"][0], abs=1e-6)
