"""InfoMetIC / InfoMetIC+ / InfoCLIP against the formulas written out on independent parts
(tests/helpers/infometic_reference.py), on a tiny random checkpoint and region features in the authors' layout;
the feature folder's rules and the one-line errors."""

import math

import pytest
import torch
from PIL import Image

import mmjudge
from infometic_reference import reference_scores
from mmjudge.metrics.infometic import InfoMetIC, RegionFeatures, caption_ids
from mmjudge.tiny_models.infometic import tiny_infometic

pytest.importorskip("lmdb")
pytest.importorskip("open_clip")

NAMES = [f"COCO_val2014_{k:012d}.jpg" for k in range(1, 7)]
CAPTIONS = [
    "A man rides a horse on the beach.",
    "Two dogs play in the snow near a red barn.",
    "a cat &amp; a DOG",  # OpenAI's cleaning: HTML unescaped, lowercased
    "A very long caption " * 12,  # more than 32 tokens: cut, the last id <end>
    "x",
    "People   walking down a busy street at night.",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_infometic(tmp_path_factory.mktemp("infometic"), NAMES, seed=1)


@pytest.fixture(scope="module")
def reference(tiny):
    return reference_scores(tiny["checkpoint"], tiny["features"], CAPTIONS, NAMES, tiny["fusion_heads"])


@pytest.mark.parametrize("config", ["infometic", "infometic_plus", "infoclip"])
def test_equals_the_formulas_written_out(tiny, reference, config):
    metric = mmjudge.load("infometic", config, **tiny)
    out = metric.compute(predictions=CAPTIONS, images=[f"/anywhere/{n}" for n in NAMES], progress=False)
    if config == "infoclip":
        assert out["infoclip"] == pytest.approx(reference["infoclip"], abs=1e-3)  # scale 100: float32 noise
        assert out["infoclip"] == pytest.approx([r + p for r, p in zip(out["vision_recall"], out["text_precision"])])
    else:
        assert out["vision_recall"] == pytest.approx(reference["r"], abs=1e-5)
        assert out["text_precision"] == pytest.approx(reference["p"], abs=1e-5)
        assert out["infometic"] == pytest.approx(reference["infometic"], abs=1e-5)
    if config == "infometic_plus":
        assert out["infometic_plus"] == pytest.approx(reference["infometic_plus"], abs=1e-4)
        plus_term = [a - b for a, b in zip(out["infometic_plus"], out["infometic"])]
        assert plus_term == pytest.approx(out["clip_cosine"]) and all(abs(c) <= 100 for c in plus_term)
    primary = out[config]
    assert len({round(v, 5) for v in primary}) == len(primary)  # every caption and image counts
    metric.spec.check_result(out, len(NAMES))


def test_region_counts_batch_apart_and_give_the_same_scores(tiny):
    """No padding mask in the authors' transformers: images with different numbers of clustered boxes must
    not share a batch; batching changes nothing."""
    one = mmjudge.load("infometic", **tiny, batch_size=1)
    many = mmjudge.load("infometic", **tiny, batch_size=64)
    paths = [f"/x/{n}" for n in NAMES]
    a = one.compute(predictions=CAPTIONS, images=paths, progress=False)["infometic"]
    b = many.compute(predictions=CAPTIONS, images=paths, progress=False)["infometic"]
    assert a == pytest.approx(b, abs=1e-5)
    sizes = {len(RegionFeatures(tiny["features"]).get(n).regions) for n in NAMES}
    assert len(sizes) > 1


def test_caption_ids_are_the_authors():
    assert caption_ids([10, 11]) == ([49406, 10, 11, 49407] + [0] * 28, [0, 1, 1, 0] + [0] * 28)
    ids, mask = caption_ids(list(range(100, 140)))
    assert len(ids) == 32 and ids[-1] == 49407 and ids[:2] == [49406, 100] and mask == [0] + [1] * 30 + [0]


def test_images_are_found_by_file_name_or_refused_in_one_line(tiny, tmp_path):
    metric = mmjudge.load("infometic", **tiny)
    picture = tmp_path / NAMES[0]
    Image.new("RGB", (8, 8)).save(picture, format="PNG")
    with Image.open(picture) as opened:  # a PIL image opened from a file is found by that file's name
        by_pil = metric.compute(predictions=CAPTIONS[:1], images=[opened], progress=False)["infometic"]
    by_path = metric.compute(predictions=CAPTIONS[:1], images=[str(picture)], progress=False)["infometic"]
    assert by_pil == by_path and not math.isnan(by_path[0])
    with pytest.raises(ValueError, match=r"images\[0\]: InfoMetIC finds an image's region features by its file name"):
        metric.compute(predictions=["a"], images=[Image.new("RGB", (4, 4))], progress=False)
    with pytest.raises(ValueError, match=r"images\[1\]: no region features for 'flickr_1.jpg' .* MSCOCO images only"):
        metric.compute(predictions=["a", "b"], images=[NAMES[0], "flickr_1.jpg"], progress=False)
    rows = list(
        metric.stream([{"text": "a", "image": "flickr_1.jpg"}, {"text": "b", "image": NAMES[1]}], on_error="record")
    )
    assert "no region features" in rows[0].error and rows[1].error is None


def test_missing_inputs_are_one_line(tiny, tmp_path):
    with pytest.raises(ValueError, match="InfoMetIC needs `features=`.*MSCOCO only"):
        InfoMetIC(checkpoint=tiny["checkpoint"])
    with pytest.raises(ValueError, match="InfoMetIC\\+ needs `checkpoint=`, the authors' best_model.pth"):
        InfoMetIC(config_name="infometic_plus", features=tiny["features"])
    with pytest.raises(FileNotFoundError, match="holds 0 \\*fn2imgid.json file\\(s\\) and 0 LMDB folder\\(s\\)"):
        InfoMetIC(checkpoint=tiny["checkpoint"], features=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="InfoMetIC checkpoint .* does not exist: download it from"):
        InfoMetIC(checkpoint=str(tmp_path / "best_model.pth"), features=tiny["features"])
    state = torch.load(tiny["checkpoint"])
    del state["img_att_key"]
    torch.save(state, tmp_path / "broken.pth")
    with pytest.raises(ValueError, match="does not fit InfoMetIC's model: .*img_att_key"):
        InfoMetIC(checkpoint=str(tmp_path / "broken.pth"), features=tiny["features"], fusion_heads=4)
    with pytest.raises(ValueError, match="`fusion_heads` to divide the head's width 64, but got 5"):
        InfoMetIC(checkpoint=tiny["checkpoint"], features=tiny["features"], fusion_heads=5)


def test_signature_names_files_by_content(tiny):
    signature = mmjudge.load("infometic", "infoclip", **tiny).compute(
        predictions=["a"], images=[NAMES[0]], progress=False
    )["signature"]
    assert "config=infoclip" in signature and "combination=R+P(assumed)" in signature
    assert (
        "checkpoint=sha256-" in signature
        and "features=local-" in signature
        and "/" not in signature.split("features=")[1]
    )
