"""CLIPScore and RefCLIPScore (Hessel et al., EMNLP 2021).

* CLIP-S(c, v) = w · max(cos(E_text("A photo depicts " + c), E_image(v)), 0), w = 2.5;
* RefCLIP-S(c, R, v) = harmonic mean of CLIP-S(c, v) and max_{r∈R} cos(E_text(c'), E_text(r')), where
  c', r' carry the same prefix (the reference cosine is neither scaled nor clamped, as published).

One class, three configurations: ``clip_score`` returns CLIP-S; ``ref_clip_score`` needs ``references`` and
returns both CLIP-S and RefCLIP-S; ``clip_score_avg`` (VELA's CLIP-S_avg, for long captions) averages CLIP-S
over the caption's sentences (:mod:`mmjudge.metrics.clip_score.sentences`). Embeddings come from
:class:`mmjudge.encoders.clip.ClipEncoder` (batched, fp16 on GPU / fp32 on CPU, cached by content so
references and repeated images are embedded once).

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
from mmjudge.metrics.base import Metric
from mmjudge.metrics.clip_score.sentences import SPLIT_VERSION, mean_per_item, split_sentences
from mmjudge.metrics.spec import IMAGES, PREDICTIONS, REFERENCES, ChunkScores, Item, MetricSpec, OutputSpec

CONFIGS = ("clip_score", "ref_clip_score", "clip_score_avg")
PREFIX = "A photo depicts "
W = 2.5


def clip_s(cosines: Sequence[float], w: float = W) -> list[float]:
    """CLIP-S from image–caption cosines: ``w · max(cos, 0)``."""
    return [float(w * max(c, 0.0)) for c in cosines]


def check_w(w: Any) -> float:
    """The weight ``w`` of CLIP-S (and PAC-S), a positive finite number.

    >>> check_w(2.5), check_w(2)
    (2.5, 2.0)
    """
    if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
        raise ValueError(f"Expected argument `w` to be a positive number, but got {w!r}.")
    return float(w)


def ref_clip_s(clip_scores: Sequence[float], ref_cosines: Sequence[float]) -> list[float]:
    """RefCLIP-S: ``2ab / (a + b)`` with ``a`` = CLIP-S and ``b`` = the best reference cosine; 0 when ``a + b = 0``."""
    out = []
    for a, b in zip(clip_scores, ref_cosines):
        out.append(0.0 if a + b == 0 else float(2 * a * b / (a + b)))
    return out


def similarity_chunk(
    encoder: ClipEncoder,
    items: Sequence[Item],
    prefix: str,
    w: float,
    references: bool = False,
    sentences: bool = False,
    progress: bool = False,
) -> dict[str, list]:
    """CLIP-S-style scores of a chunk with ``encoder``: ``score`` (``w · max(cos, 0)``; with ``sentences``
    the mean over the caption's sentences, and ``sentences`` their count); with ``references`` also
    ``ref_score`` (the harmonic mean with the best reference cosine) and ``ref_cosine``. Shared by
    CLIP-S and PAC-S, which differ only in their weights, ``w`` and names."""
    n = len(items)
    image_vectors = encoder.encode_images(
        [it.image for it in items], progress=progress, digests=[it.digest for it in items]
    )
    if sentences:
        pieces = [split_sentences(it.text) for it in items]
        vectors = encoder.encode_texts([prefix + s for p in pieces for s in p], progress=progress)
        per_item, start = [], 0
        for i, p in enumerate(pieces):
            cosines = vectors[start : start + len(p)].astype(np.float64) @ image_vectors[i].astype(np.float64)
            per_item.append(clip_s(cosines, w))
            start += len(p)
        return {"score": mean_per_item(per_item), "sentences": [len(p) for p in pieces]}
    refs = [it.references for it in items] if references else []
    flat_refs = [r for group in refs for r in group]
    text_vectors = encoder.encode_texts([prefix + t for t in [it.text for it in items] + flat_refs], progress=progress)
    candidates = text_vectors[:n]
    cosines = np.sum(candidates.astype(np.float64) * image_vectors, axis=1)
    out: dict[str, list] = {"score": clip_s(cosines, w)}
    if refs:
        ref_vectors, start, best = text_vectors[n:], 0, []
        for i, group in enumerate(refs):
            block = ref_vectors[start : start + len(group)].astype(np.float64)
            best.append(float(np.max(block @ candidates[i].astype(np.float64))))
            start += len(group)
        out.update(ref_score=ref_clip_s(out["score"], best), ref_cosine=best)
    return out


class CLIPScore(Metric):
    """CLIP-S and RefCLIP-S with a ``transformers`` CLIP model.

    Args:
        model: CLIP checkpoint (default ``openai/clip-vit-base-patch32``, the paper's ViT-B/32); a Long-CLIP
            checkpoint in ``transformers`` format reads up to 248 tokens.
        config_name: ``"clip_score"`` (default), ``"ref_clip_score"`` or ``"clip_score_avg"`` (the mean CLIP-S
            of the caption's sentences: VELA's CLIP-S_avg; the CaptionEvalKit reproduction of VELA's Table 1
            runs it with ``model="openai/clip-vit-large-patch14"``).
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
        self.w = check_w(w)
        self.config_name = config_name
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
        if config == "clip_score_avg":
            return MetricSpec(
                "clip_score",
                config,
                (PREDICTIONS, IMAGES),
                (
                    OutputSpec("clip_score_avg", "score", "mean CLIP-S over the caption's sentences", True, (0.0, 2.5)),
                    OutputSpec("sentences", "diagnostic", "sentences the caption was split into", None, aggregates=()),
                ),
                "clip_score_avg",
                "CLIP image-caption similarity averaged over sentences (long captions), reference-free",
                label="CLIP-S_avg",
            )
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

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.encoder,)

    def signature_fields(self) -> dict[str, Any]:
        fields = dict(**self.encoder.signature_fields(), w=self.w, prefix=repr(self.prefix))
        if self.config_name == "clip_score_avg":
            fields["sentences"] = SPLIT_VERSION
        return fields

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        config = self.config_name
        scored = similarity_chunk(
            self.encoder,
            items,
            self.prefix,
            self.w,
            references=config == "ref_clip_score",
            sentences=config == "clip_score_avg",
            progress=progress,
        )
        if config == "clip_score_avg":
            return ChunkScores({"clip_score_avg": scored["score"], "sentences": scored["sentences"]})
        out: dict[str, Any] = {"clip_score": scored["score"]}
        if config == "ref_clip_score":
            out.update(ref_clip_score=scored["ref_score"], ref_cosine=scored["ref_cosine"])
        return ChunkScores(out)
