"""A tiny random InfoMetIC checkpoint and region-feature folder in the authors' own layout
(github.com/HAWLYQ/InfoMetIC: ``infometic/save/infometic/best_model.pth``, ``infometic/data/coco_fn2imgid.json``
and ``infometic/data/mscoco_vit32_lmdb/``). Random weights and features prove plumbing and arithmetic, never
quality.

>>> import tempfile
>>> files = tiny_infometic(tempfile.mkdtemp(), ["a.jpg"])
>>> sorted(files), files["fusion_heads"]
(['checkpoint', 'features', 'fusion_heads'], 4)
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmjudge.tiny_models._tokenizers import PathLike
from mmjudge.tiny_models.checkpoints import _block, openai_clip_state

DEFAULT_IMAGES = ("COCO_val2014_000000000042.jpg", "COCO_val2014_000000000073.jpg", "COCO_val2014_000000000074.jpg")
OPENAI_VOCAB = 49408  # the authors hard-code OpenAI's <start>/<end> ids: the text tower keeps OpenAI's vocabulary


def infometic_state(width: int = 64, inter_layers: int = 2, intra_layers: int = 4, seed: int = 0) -> dict[str, Any]:
    """A random state dict with the keys of the authors' ``CLIPSeqModel`` (released configuration: box positions,
    cross attention, no box texts): ``clip_backbone.*`` (an OpenAI-format CLIP whose embedding width is ``width``)
    and the head."""
    import torch

    gen = torch.Generator().manual_seed(seed + 7)

    def r(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen) * 0.05

    state = {f"clip_backbone.{k}": v for k, v in openai_clip_state(OPENAI_VOCAB, embed_dim=width, seed=seed).items()}
    for prefix, layers in (
        ("fusion_encoder", inter_layers),
        ("image_encoder", intra_layers),
        ("text_encoder", intra_layers),
    ):
        for i in range(layers):
            state.update(_block(f"{prefix}.resblocks.{i}.", width, r, 0))
    state["ln.weight"], state["ln.bias"] = 1 + r(width), r(width)
    state["bbox_position_embedding"] = torch.randn(4, width, generator=gen) * 0.5
    state["logit_scale"] = torch.tensor(math.log(1 / 0.07)) + r(1)[0]
    for name in ("img_att_query", "img_att_key", "text_att_query", "text_att_key"):
        state[name] = torch.randn(width, width, generator=gen) * width**-0.5
    return state


def write_region_features(folder: PathLike, images: Sequence[str], width: int = 64, seed: int = 0) -> str:
    """The authors' feature folder for ``images`` (file names): ``coco_fn2imgid.json`` and an LMDB
    ``mscoco_vit32_lmdb`` whose values are ``np.savez`` archives (``feat``, ``bbox``, ``bbox_text``,
    ``global_feat``, ``global_bbox``, ``clustered_bbox``); between 3 and 120 boxes per image (the authors cut to
    100), at most 20 clustered. Needs the ``lmdb`` package."""
    import lmdb
    import numpy as np

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    ids = {name: 1000 + k for k, name in enumerate(images)}
    env = lmdb.open(str(out / "mscoco_vit32_lmdb"), map_size=1 << 26)
    with env.begin(write=True) as txn:
        for k, imgid in enumerate(ids.values()):
            n = (5, 120, 3)[k % 3] + int(rng.integers(0, 4))
            w, h = float(rng.integers(200, 640)), float(rng.integers(200, 640))
            x1, y1 = rng.uniform(0, w / 2, n), rng.uniform(0, h / 2, n)
            boxes = np.stack([x1, y1, x1 + rng.uniform(1, w / 2, n), y1 + rng.uniform(1, h / 2, n)], 1)
            picked = rng.choice(min(n, 100), size=min(int(rng.integers(1, 21)), min(n, 100)), replace=False)
            buffer = io.BytesIO()
            np.savez(
                buffer,
                feat=rng.normal(0, 0.5, (n, width)).astype(np.float32),
                bbox=boxes.astype(np.float32),
                bbox_text=rng.integers(0, OPENAI_VOCAB, (n, 10)),
                global_feat=rng.normal(0, 0.5, width).astype(np.float32),
                global_bbox=np.array([0.0, 0.0, w, h], dtype=np.float32),
                clustered_bbox=picked.astype(np.int64),
            )
            txn.put(str(imgid).encode("utf-8"), buffer.getvalue())
    env.close()
    (out / "coco_fn2imgid.json").write_text(json.dumps(ids), encoding="utf-8")
    return str(out)


def tiny_infometic(
    directory: PathLike, images: Sequence[str] = DEFAULT_IMAGES, seed: int = 0, heads: int = 4, width: int = 64
) -> dict:
    """A tiny InfoMetIC (``width`` 64 by default; the authors' 2 fusion and 4 intra-modal layers) saved as their
    ``best_model.pth`` (a plain state dict) and region features for ``images``; returns ``{"checkpoint",
    "features", "fusion_heads"}`` to pass to ``mmjudge.load("infometic", config, **…)``."""
    import torch

    out = Path(directory)
    (out / "save" / "infometic").mkdir(parents=True, exist_ok=True)
    path = out / "save" / "infometic" / "best_model.pth"
    torch.save(infometic_state(width=width, seed=seed), path)
    features = write_region_features(out / "data", images, width=width, seed=seed)
    return {"checkpoint": str(path), "features": features, "fusion_heads": heads}
