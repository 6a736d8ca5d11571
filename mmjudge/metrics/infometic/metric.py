"""InfoMetIC, InfoMetIC+ and InfoCLIP (Hu, Chen, Zhang, Jin, ACL 2023): reference-free caption scores that
weigh which image regions a caption covers (vision recall) and which of its words the image supports (text
precision). Formulas: :mod:`mmjudge.metrics.infometic.model`.

* ``infometic``: ``R + P`` from the authors' trained model (their ``best_model.pth``: a plain state dict, the
  frozen CLIP ViT-B/32 under ``clip_backbone.*``);
* ``infometic_plus``: ``R + P + 100·cos(image, caption)``;
* ``infoclip``: the training-free variant (CLIP vectors only); its combination ``R + P`` is **assumed** (the
  released code computes R and P but not the benchmark script that combined them).

The images are not looked at: every score reads the authors' precomputed region features, found by the image's
file name in their feature folder (``features=``, :mod:`mmjudge.metrics.infometic.features`), which exists for
MSCOCO images only.

>>> InfoMetIC.spec_for("infometic_plus").primary, InfoMetIC.spec_for("infoclip").requires
('infometic_plus', ('features',))
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from mmjudge.errors import check_batch_size, check_positive_int
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import given_once
from mmjudge.metrics.chunks import ChunkImages
from mmjudge.metrics.infometic.features import MISSING, RegionFeatures
from mmjudge.metrics.infometic.loading import CHECKPOINT_SOURCE, load_parts
from mmjudge.metrics.spec import PREDICTIONS, ChunkScores, InputSpec, Item, MetricSpec, OutputSpec

CONFIGS = ("infometic", "infometic_plus", "infoclip")
LABELS = {"infometic": "InfoMetIC", "infometic_plus": "InfoMetIC+", "infoclip": "InfoCLIP"}
_IMAGES = InputSpec(
    "images",
    "image",
    True,
    "image",
    "one image per prediction, by file name (a path): its precomputed region features are looked up",
    missing="InfoMetIC needs `images` (one per prediction): their file names find the region features.",
)
_PARTS = (
    OutputSpec("vision_recall", "score", "R: how much of the image's salient regions the caption covers", True),
    OutputSpec("text_precision", "score", "P: how much of the caption the image supports", True),
)


def _spec(config: str) -> MetricSpec:
    label = LABELS[config]
    outputs: tuple[OutputSpec, ...]
    if config == "infometic_plus":
        outputs = (
            OutputSpec("infometic_plus", "score", "R + P + 100 cos(image, caption)", True),
            OutputSpec("infometic", "score", "R + P", True),
            *_PARTS,
            OutputSpec("clip_cosine", "diagnostic", "100 cos(image, caption) of the CLIP embeddings", None),
        )
    else:
        what = "R + P (the combination is assumed: see the card)" if config == "infoclip" else "R + P"
        outputs = (OutputSpec(config, "score", what, True), *_PARTS)
    how = "training-free, from CLIP vectors" if config == "infoclip" else "the authors' trained model"
    return MetricSpec(
        "infometic",
        config,
        (PREDICTIONS, _IMAGES),
        outputs,
        config,
        f"informativeness (vision recall + text precision), reference-free, {how}",
        label=label,
        requires=("features",) if config == "infoclip" else ("checkpoint", "features"),
    )


class _Undecoded(ChunkImages):
    """Images are not decoded: InfoMetIC reads precomputed features by the image's file name."""

    def measure(self, item: Any) -> int:
        return 0

    def start(self, chunk: list) -> dict:
        return {}

    def finish(self, chunk: list, decoding: dict) -> list:
        return chunk


class InfoMetIC(Metric):
    """InfoMetIC / InfoMetIC+ / InfoCLIP on the authors' precomputed region features.

    Args:
        checkpoint: the authors' ``best_model.pth`` (needed by ``infometic`` and ``infometic_plus``; for
            ``infoclip``, its frozen CLIP is used when given). Named in signatures by its SHA-256.
        features: the folder of the authors' region features (``coco_fn2imgid.json`` + the LMDB): MSCOCO only.
        config_name: ``infometic`` (default), ``infometic_plus``, ``infoclip``.
        clip_model: ``infoclip`` without a checkpoint: a ``transformers`` CLIP ViT-B/32 (default
            ``openai/clip-vit-base-patch32``, the same weights as OpenAI's), Hub id or folder.
        fusion_heads: the trained transformers' attention heads (16 in the released model; the file does not say).
        clip_tokenizer: OpenAI's BPE vocabulary (default: the copy ``open-clip-torch`` installs).
        device, dtype, batch_size: float32 by default on every device (the authors ran CLIP in float16 on a GPU).
        model: another name for ``checkpoint`` (the CLI's ``--model``).
    """

    name = "infometic"
    configs = CONFIGS

    def __init__(
        self,
        checkpoint: str | None = None,
        features: str | None = None,
        config_name: str = "infometic",
        clip_model: str | None = None,
        fusion_heads: int = 16,
        clip_tokenizer: Any = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 64,
        model: str | None = None,
    ):
        self.config_name = self.check_config(config_name)
        checkpoint = given_once(checkpoint, model, "checkpoint")
        label = LABELS[self.config_name]
        if checkpoint is None and self.config_name != "infoclip":
            raise ValueError(
                f"{label} needs `checkpoint=`, the authors' best_model.pth: download it from {CHECKPOINT_SOURCE}."
            )
        if features is None:
            raise ValueError(MISSING)
        self.fusion_heads = check_positive_int(fusion_heads, "fusion_heads")
        check_batch_size(batch_size)
        self.features = RegionFeatures(features)
        from mmjudge.models import local_fingerprint

        self.parts = load_parts(
            checkpoint, self.config_name, clip_model, self.fusion_heads, clip_tokenizer, device, dtype, batch_size
        )
        self.features_id = local_fingerprint(self.features.root)

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        return _spec(cls.check_config(config_name))

    def signature_fields(self) -> dict[str, Any]:
        fields = dict(self.parts.identity)
        fields["features"] = self.features_id
        if self.config_name == "infoclip":
            fields["combination"] = "R+P(assumed)"
        else:
            fields["fusion_heads"] = self.fusion_heads
        return fields

    def _chunk_images(self, on_error: str) -> ChunkImages:
        return _Undecoded(None, on_error, None, None)

    def _prepare_item(self, item: Item) -> Item:
        where = item.where(_IMAGES)
        name = self.features.name_of(item.image)
        if name is None:
            raise ValueError(
                f"{where}: InfoMetIC finds an image's region features by its file name, and this image has none: "
                "pass its path."
            )
        region = self.features.get(name)
        if region is None:
            raise ValueError(
                f"{where}: no region features for {name!r} in {str(self.features.root)!r}: the authors published "
                "them for MSCOCO images only, and without their detector and clustering they cannot be rebuilt."
            )
        item.prepared, item.image = region, None
        return item

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        by_size: dict[int, list[int]] = defaultdict(list)  # no padding mask: only equal region counts batch
        for k, it in enumerate(items):
            by_size[len(it.prepared.regions)].append(k)
        parts = {name: [math.nan] * len(items) for name in ("vision_recall", "text_precision", "it")}
        for rows in by_size.values():
            for start in range(0, len(rows), self.parts.batch_size):
                batch = rows[start : start + self.parts.batch_size]
                scored = self.parts.score([items[k].text for k in batch], [items[k].prepared for k in batch])
                for name, values in scored.items():
                    for k, value in zip(batch, values):
                        parts[name][k] = value
        recall, precision = parts["vision_recall"], parts["text_precision"]
        base = [r + p for r, p in zip(recall, precision)]
        out: dict[str, list] = {"vision_recall": recall, "text_precision": precision}
        if self.config_name == "infometic_plus":
            cosine = [100.0 * it / self.parts.scale for it in parts["it"]]
            out.update(infometic_plus=[b + c for b, c in zip(base, cosine)], infometic=base, clip_cosine=cosine)
        else:
            out[self.config_name] = base
        return ChunkScores(out)
