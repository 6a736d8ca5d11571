"""CLIPScore and RefCLIPScore (Hessel et al., EMNLP 2021).

* CLIP-S(c, v) = w · max(cos(E_text("A photo depicts " + c), E_image(v)), 0), w = 2.5;
* RefCLIP-S(c, R, v) = harmonic mean of CLIP-S(c, v) and max_{r∈R} cos(E_text(c'), E_text(r')), where
  c', r' carry the same prefix (the reference cosine is neither scaled nor clamped, as published).

One class, two configurations: ``clip_score`` returns CLIP-S; ``ref_clip_score`` needs ``references`` and
returns both CLIP-S and RefCLIP-S. Embeddings come from :class:`mmjudge.encoders.clip.ClipEncoder` (batched,
fp16 on GPU / fp32 on CPU, cached by content so references and repeated images are embedded once).

>>> from mmjudge.metrics.clip_score import clip_s, ref_clip_s
>>> clip_s([0.4, -0.1])  # 2.5 * max(cos, 0)
[1.0, 0.0]
>>> ref_clip_s([1.0, 0.0], [0.5, 0.7])  # harmonic mean with the best reference cosine
[0.6666666666666666, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge.encoders.clip import DEFAULT_CLIP, ClipEncoder
from mmjudge.images import DEFAULT_MAX_PIXELS
from mmjudge.metrics.base import IMAGES, PREDICTIONS, REFERENCES, ChunkScores, Item, Metric, MetricSpec, OutputSpec

CONFIGS = ("clip_score", "ref_clip_score")
PREFIX = "A photo depicts "
W = 2.5


def clip_s(cosines: Sequence[float], w: float = W) -> list[float]:
    """CLIP-S from image–caption cosines: ``w · max(cos, 0)``."""
    return [float(w * max(c, 0.0)) for c in cosines]


def ref_clip_s(clip_scores: Sequence[float], ref_cosines: Sequence[float]) -> list[float]:
    """RefCLIP-S: ``2ab / (a + b)`` with ``a`` = CLIP-S and ``b`` = the best reference cosine; 0 when ``a + b = 0``."""
    out = []
    for a, b in zip(clip_scores, ref_cosines):
        out.append(0.0 if a + b == 0 else float(2 * a * b / (a + b)))
    return out


class CLIPScore(Metric):
    """CLIP-S and RefCLIP-S with a ``transformers`` CLIP model.

    Args:
        model: CLIP checkpoint (default ``openai/clip-vit-base-patch32``, the paper's ViT-B/32); a Long-CLIP
            checkpoint in ``transformers`` format reads up to 248 tokens.
        config_name: ``"clip_score"`` (default) or ``"ref_clip_score"``.
        w: the rescaling weight (2.5 as published).
        prefix: text put before every caption and reference (``"A photo depicts "`` as published).
        max_text_positions, device, dtype, batch_size, revision: see :class:`mmjudge.encoders.clip.ClipEncoder`.
        cache: ``False`` (default: in-memory cache only), ``True`` or a path: also keep embeddings in that
            SQLite file (computing CLIP embeddings is cheap, so the persistent cache is opt-in).
        max_pixels: larger images are refused as possible decompression bombs.
        encoder: a ready :class:`~mmjudge.encoders.clip.ClipEncoder` (shares its model and cache).
    """

    name = "clip_score"
    configs = CONFIGS

    def __init__(
        self,
        model: str | None = None,
        config_name: str = "clip_score",
        w: float = W,
        prefix: str = PREFIX,
        max_text_positions: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 64,
        revision: str | None = None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        cache: Any = False,
        encoder: ClipEncoder | None = None,
    ):
        config_name = self.check_config(config_name)
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
            raise ValueError(f"Expected argument `w` to be a positive number, but got {w!r}.")
        self.config_name = config_name
        self.w = float(w)
        self.prefix = str(prefix)
        self.max_pixels = int(max_pixels)
        self.encoder = encoder or ClipEncoder(
            model or DEFAULT_CLIP,
            revision=revision,
            device=device,
            dtype=dtype,
            max_text_positions=max_text_positions,
            batch_size=batch_size,
            cache=cache,
        )

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = cls.check_config(config_name)
        clip = OutputSpec("clip_score", "score", "2.5 * max(cos(caption, image), 0)", True, (0.0, 2.5))
        if config == "clip_score":
            return MetricSpec(
                "clip_score",
                config,
                (PREDICTIONS, IMAGES),
                (clip,),
                "clip_score",
                "CLIP image-caption similarity, reference-free",
                label="CLIP-S",
            )
        outputs = (
            clip,
            OutputSpec("ref_clip_score", "score", "harmonic mean of CLIP-S and the best reference cosine", True),
            OutputSpec(
                "ref_cosine", "diagnostic", "best cosine between the caption and a reference", None, aggregates=()
            ),
        )
        return MetricSpec(
            "clip_score",
            config,
            (PREDICTIONS, IMAGES, REFERENCES),
            outputs,
            "ref_clip_score",
            "CLIP image-caption similarity combined with reference similarity",
            label="RefCLIP-S",
        )

    def signature_fields(self) -> dict[str, Any]:
        return dict(**self.encoder.signature_fields(), w=self.w, prefix=repr(self.prefix))

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        n = len(items)
        refs = [it.references for it in items] if self.config_name == "ref_clip_score" else []
        image_vectors = self.encoder.encode_images(
            [it.image for it in items], progress=progress, digests=[it.digest for it in items]
        )
        flat_refs = [r for group in refs for r in group]
        text_vectors = self.encoder.encode_texts(
            [self.prefix + t for t in [it.text for it in items] + flat_refs], progress=progress
        )
        candidates = text_vectors[:n]
        cosines = np.sum(candidates.astype(np.float64) * image_vectors, axis=1)
        scores = clip_s(cosines, self.w)
        out: dict[str, Any] = {"clip_score": scores}
        if refs:
            ref_vectors, start, best = text_vectors[n:], 0, []
            for i, group in enumerate(refs):
                block = ref_vectors[start : start + len(group)].astype(np.float64)
                best.append(float(np.max(block @ candidates[i].astype(np.float64))))
                start += len(group)
            out.update(ref_clip_score=ref_clip_s(scores, best), ref_cosine=best)
        return ChunkScores(out)
