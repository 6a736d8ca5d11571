"""What keeps a GPU busy changes no rating: the vision tower's metadata computed while preparing (Qwen2-VL,
Qwen2.5-VL), a small first batch, one read-back per batch. Each is compared with the path without it on tiny
random models, and the judge counts how long its answering thread waited for preparation."""

import sys

import numpy as np
import pytest
from PIL import Image

from mmjudge.judges import load_judge
from mmjudge.judges.requests import RatingRequest, Turn

TOL = 1e-7  # as tests/judges/test_throughput.py: far above float32 rounding, far below what a wrong mask moves


def _requests(n_images: int = 3) -> list[RatingRequest]:
    """Two criteria about each image (images of two sizes: windows and images of different lengths) and one
    text-only criterion per sample."""
    images = [Image.new("RGB", (56 + 28 * (i % 2), 56 + 14 * i), (40 * i, 90, 200)) for i in range(n_images)]
    out = []
    for criterion in ("Correctness", "Completeness", "Fluency"):
        for i, image in enumerate(images):
            out.append(
                RatingRequest(
                    [Turn("user", f"Rate the {criterion.lower()} of caption {i}: a blue square" + " on sand" * i)],
                    image=None if criterion == "Fluency" else image,
                    answer_prefix="Score: ",
                    group=criterion,
                )
            )
    return out


def _raw(results) -> np.ndarray:
    return np.array([r.raw for r in results])


@pytest.fixture(params=["qwen2_vl", "qwen2_5_vl"])
def qwen_dir(request, tiny_family_dir, tiny_qwen_dir):  # tiny_qwen_dir: skips without torchvision
    return request.param, tiny_family_dir(request.param)


def test_vision_metadata_is_computed_while_preparing_and_equals_the_models_own(qwen_dir, monkeypatch):
    import transformers

    family, folder = qwen_dir
    requests = _requests()
    from mmjudge.judges import transformers as judge_module

    judge = load_judge("transformers", model=folder, batch_size=16)
    module = sys.modules[type(judge.model.model.visual).__module__]
    if not hasattr(module, "get_vision_position_ids"):
        pytest.skip(f"transformers {transformers.__version__} computes the vision metadata itself")
    with monkeypatch.context() as patch:
        patch.setattr(judge_module, "vision_metadata", lambda model, inputs: {})  # the model computes them itself
        own = _raw(judge.rate(requests, progress=False))
        plain = load_judge("transformers", model=folder, batch_size=1, share_prefix=False, prefetch=False)
        reference = _raw(plain.rate(requests, progress=False))

    computed_inside = []  # metadata the forward pass had to compute (not given precomputed)
    for name, key in (("get_vision_position_ids", "position_ids"), ("get_vision_attention_seqlens", "cu_seqlens")):
        original = getattr(module, name)

        def recording(*args, original=original, key=key, name=name, **kwargs):
            if kwargs.get("kwargs") is not None and key not in kwargs["kwargs"]:
                computed_inside.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, recording)
    got = _raw(judge.rate(requests, progress=False))
    assert np.array_equal(got, own)  # the same numbers, bit for bit
    assert np.abs(got - reference).max() < TOL
    assert computed_inside == []
    prepared = judge._prepare_rating([r for r in requests if r.image is not None])
    keys = {k for k in prepared.shared.prefix if k.startswith("image_") and k != "image_grid_thw"}
    windows = {"image_window_index", "image_cu_window_seqlens", "image_max_window_seqlen"}
    assert keys >= {"image_position_ids", "image_cu_seqlens", "image_max_seqlen"}
    assert (keys >= windows) == (family == "qwen2_5_vl")


def test_a_long_call_starts_with_small_batches_and_gives_the_same_ratings(tiny_llava_dir):
    requests = _requests(30)  # 90 requests: 60 about images, 30 text-only
    ramped = load_judge("transformers", model=tiny_llava_dir, batch_size=32)
    sizes = [len(b) for b in ramped.plan(requests)]
    assert sizes == [8, 16, 32, 4, 30]  # image requests (a quarter, half, a whole batch, the rest), then text
    flat = load_judge("transformers", model=tiny_llava_dir, batch_size=32, prefetch=False)
    assert [len(b) for b in flat.plan(requests)] == [32, 28, 30]  # nothing prepared ahead: no reason to start small
    small = load_judge("transformers", model=tiny_llava_dir, batch_size=8)
    assert [len(b) for b in small.plan(requests)][:2] == [8, 8]  # a quarter of 8 would split what shares a prefix
    assert np.abs(_raw(ramped.rate(requests, progress=False)) - _raw(flat.rate(requests, progress=False))).max() < TOL
    assert ramped.stats.batches == len(sizes) and ramped.stats.wait_seconds > 0  # the first batch is always waited for


def test_one_read_back_per_batch_gives_each_scale_its_ratings(tiny_llava_dir):
    judge = load_judge("transformers", model=tiny_llava_dir, batch_size=16)
    requests = _requests(2)
    for k, r in enumerate(requests):
        r.choices = ("1", "2", "3", "4", "5") if k % 2 else ("0", "1")
    mixed = judge.rate(requests, progress=False)
    for scale in (("1", "2", "3", "4", "5"), ("0", "1")):
        alone = [r for r in requests if tuple(r.choices) == scale]
        expected = _raw(judge.rate(alone, progress=False))
        got = np.array([res.raw for res, r in zip(mixed, requests) if tuple(r.choices) == scale])
        assert got.shape == expected.shape and np.abs(got - expected).max() < TOL


def test_pinned_batches_with_pixels_cast_early_give_the_same_ratings(tiny_family_dir, tiny_qwen_dir, monkeypatch):
    """What the preparing thread does on a GPU (every CPU tensor pinned, Qwen's pixel values cast to the vision
    tower's dtype on the way), run here with pinning stood in by copies: the ratings of a bf16 model equal
    those of the batch as prepared, bit for bit (the model casts the pixels first thing either way)."""
    import torch

    from mmjudge.judges.local.prepared import pin_batch
    from mmjudge.judges.local.vision_metadata import pixel_dtypes

    judge = load_judge("transformers", model=tiny_qwen_dir, batch_size=16, dtype="bfloat16")
    requests = [r for r in _requests() if r.image is not None]
    dtypes = pixel_dtypes(judge.model)
    assert dtypes == {"pixel_values": torch.bfloat16}
    expected = _raw(judge._rate_batch(judge._prepare_rating(requests)))
    empty = torch.empty
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: self.clone())  # no CUDA here: copies stand in
    monkeypatch.setattr(torch, "empty", lambda *a, pin_memory=False, **k: empty(*a, **k))
    batch = judge._prepare_rating(requests)
    pin_batch(batch, dtypes)
    assert batch.shared.prefix["pixel_values"].dtype == torch.bfloat16
    assert np.array_equal(_raw(judge._rate_batch(batch)), expected)
