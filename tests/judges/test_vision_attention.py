"""The vision tower's attention packed into one call per layer (``judges/local/vision_attention.py``) gives
the per-image path's numbers in every family it applies to, on images of one size (the reshape) and of
several sizes (the padded rows). Random weights: plumbing and arithmetic, not quality."""

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import AttentionInterface

from mmjudge.judges import load_judge
from mmjudge.judges.local import vision_attention
from mmjudge.judges.local.vision_attention import PACKED_VISION_MODELS, packed_attention
from mmjudge.judges.requests import RatingRequest, Turn

FAMILIES = sorted(PACKED_VISION_MODELS)
SIZES = {"one size": [(56, 56)] * 3, "three sizes": [(56, 56), (84, 56), (112, 84)]}


def _requests(sizes):
    images = [Image.new("RGB", size, (40 * k, 200 - 30 * k, 90)) for k, size in enumerate(sizes)]
    return [
        RatingRequest([Turn("user", f"Rate caption {k}: a {k} square.")], image=image, answer_prefix="Score: ")
        for k, image in enumerate(images)
    ]


@pytest.mark.parametrize("sizes", list(SIZES), ids=list(SIZES))
@pytest.mark.parametrize("family", FAMILIES)
def test_packed_vision_attention_equals_the_per_image_path(family, sizes, tiny_family_dir, monkeypatch):
    folder = tiny_family_dir(family)
    requests = _requests(SIZES[sizes])
    packed = load_judge("transformers", model=folder, batch_size=8, share_prefix=False, packed_vision=True)
    plain = load_judge("transformers", model=folder, batch_size=8, share_prefix=False, packed_vision=False)
    assert packed.packed_vision and not plain.packed_vision
    assert packed.model.config.vision_config._attn_implementation == vision_attention.NAME
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("cu_seq_lens_q") is not None)
        return packed_attention(*args, **kwargs)

    monkeypatch.setitem(AttentionInterface._global_mapping, vision_attention.NAME, counted)
    a = np.array([r.raw for r in packed.rate(requests, progress=False)])
    b = np.array([r.raw for r in plain.rate(requests, progress=False)])
    assert np.abs(a - b).max() < 1e-7
    assert a.sum() > 0
    assert calls and all(calls)  # the packed function answered every vision layer, with the boundaries


def test_the_padded_rows_equal_attention_segment_by_segment():
    """Segments of different lengths (as Qwen2.5-VL's edge windows are), checked against sdpa per segment."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 3, 11, 8) for _ in range(3))
    cu = torch.tensor([0, 2, 7, 11], dtype=torch.int32)
    out, _ = packed_attention(None, q, k, v, cu_seq_lens_q=cu, max_length_q=5, scaling=0.3)
    alone = [
        torch.nn.functional.scaled_dot_product_attention(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], scale=0.3)
        for a, b in ((0, 2), (2, 7), (7, 11))
    ]
    assert out.shape == (1, 11, 3, 8)
    assert torch.allclose(out, torch.cat(alone, dim=2).transpose(1, 2), atol=1e-6)
    out_equal, _ = packed_attention(
        None, q[:, :, :10], k[:, :, :10], v[:, :, :10], cu_seq_lens_q=cu.new_tensor([0, 5, 10]), max_length_q=5
    )
    alone = [
        torch.nn.functional.scaled_dot_product_attention(*(t[:, :, a:b] for t in (q, k, v)))
        for a, b in ((0, 5), (5, 10))
    ]
    assert torch.allclose(out_equal, torch.cat(alone, dim=2).transpose(1, 2), atol=1e-6)


def test_other_families_and_eager_attention_are_left_alone(tiny_family_dir):
    llava = load_judge("transformers", model=tiny_family_dir("llava"), batch_size=2)
    assert not llava.packed_vision
    eager = load_judge(
        "transformers", model=tiny_family_dir("qwen2_vl"), batch_size=2, model_kwargs={"attn_implementation": "eager"}
    )
    assert not eager.packed_vision
