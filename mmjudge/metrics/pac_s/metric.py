"""PAC-S and PAC-S++ (Sarto et al., CVPR 2023 / IJCV 2025), with the authors' published checkpoints.

PAC-S is CLIP-S computed with CLIP weights fine-tuned by positive-augmented contrastive learning, and
``w = 2.0`` (the authors' ``evaluation/pac_score/pac_score.py``):

* PAC-S(c, v) = 2 · max(cos(E_text("A photo depicts " + c), E_image(v)), 0);
* RefPAC-S = the harmonic mean of PAC-S and the best cosine between the caption and a reference (both
  with the prefix; no scaling, no clamp);
* the ``_avg`` configurations (VELA's PAC-S_avg, PAC-S++_avg, for long captions) average PAC-S over the
  caption's sentences (:mod:`mmjudge.metrics.clip_score.sentences`).

Texts are tokenized as OpenAI's ``clip.tokenize(..., truncate=True)`` (77 tokens, the last kept token
replaced by end-of-text), images resized (bicubic, short side to 224) and centre-cropped, normalised as the
backbone was trained. PAC-S++ checkpoints hold LoRA factors (:mod:`mmjudge.metrics.pac_s.checkpoints`).

>>> PACScore.spec_for("ref_pac_s_plus").label, PACScore.spec_for("ref_pac_s_plus").primary
('RefPAC-S++', 'ref_pac_s_plus')
"""

from __future__ import annotations

from typing import Any

from mmjudge.errors import check_batch_size, check_bool
from mmjudge.images import DEFAULT_MAX_PIXELS
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import given_once
from mmjudge.metrics.clip_score.metric import PREFIX, check_w, similarity_chunk
from mmjudge.metrics.clip_score.sentences import SPLIT_VERSION
from mmjudge.metrics.spec import IMAGES, PREDICTIONS, REFERENCES, ChunkScores, Item, MetricSpec, OutputSpec

CONFIGS = ("pac_s", "ref_pac_s", "pac_s_plus", "ref_pac_s_plus", "pac_s_avg", "pac_s_plus_avg")
W = 2.0
# config -> (PAC-S++?, with references?, sentence average?, label)
_FLAVOURS = {
    "pac_s": (False, False, False, "PAC-S"),
    "ref_pac_s": (False, True, False, "RefPAC-S"),
    "pac_s_plus": (True, False, False, "PAC-S++"),
    "ref_pac_s_plus": (True, True, False, "RefPAC-S++"),
    "pac_s_avg": (False, False, True, "PAC-S_avg"),
    "pac_s_plus_avg": (True, False, True, "PAC-S++_avg"),
}


def _spec(config: str) -> MetricSpec:
    plus, refs, avg, label = _FLAVOURS[config]
    base = "pac_s_plus" if plus else "pac_s"
    weights = "PAC-S++" if plus else "PAC-S"
    if avg:
        outputs: tuple[OutputSpec, ...] = (
            OutputSpec(config, "score", f"mean {weights} over the caption's sentences", True, (0.0, 2.0)),
            OutputSpec("sentences", "diagnostic", "sentences the caption was split into", None, aggregates=()),
        )
        description = f"{weights} image-caption similarity averaged over sentences (long captions), reference-free"
    else:
        outputs = (
            OutputSpec(base, "score", f"2 * max(cos(caption, image), 0) with {weights} weights", True, (0.0, 2.0)),
        )
        description = f"{weights} image-caption similarity, reference-free"
    if refs:
        outputs += (
            OutputSpec(config, "score", f"harmonic mean of {weights} and the best reference cosine", True),
            OutputSpec(
                "ref_cosine", "diagnostic", "best cosine between the caption and a reference", None, aggregates=()
            ),
        )
        description = f"{weights} image-caption similarity combined with reference similarity"
    inputs = (PREDICTIONS, IMAGES, REFERENCES) if refs else (PREDICTIONS, IMAGES)
    return MetricSpec("pac_s", config, inputs, outputs, config, description, label=label, requires=("checkpoint",))


class PACScore(Metric):
    """PAC-S, RefPAC-S, PAC-S++, RefPAC-S++ and their sentence averages, from the authors' checkpoints.

    Args:
        checkpoint: the authors' ``.pth`` file (``clip_ViT-B-32.pth``, ``openClip_ViT-L-14.pth`` for the PAC-S
            configurations; ``PAC++_clip_ViT-B-32.pth``, ``PAC++_clip_ViT-L-14.pth`` for ``*_plus*``): where
            to download them is in the card. Read offline; named in the signature by its SHA-256.
        config_name: ``pac_s`` (default), ``ref_pac_s``, ``pac_s_plus``, ``ref_pac_s_plus``, ``pac_s_avg``,
            ``pac_s_plus_avg``.
        backbone: the CLIP the checkpoint belongs to, as the authors name it: ``"ViT-B/32"``,
            ``"open_clip_ViT-L/14"`` (PAC-S ViT-L) or ``"ViT-L/14"`` (PAC-S++ ViT-L); default: read from the
            checkpoint's shapes. It fixes the activation and the pixel normalisation.
        clip_tokenizer: OpenAI's BPE vocabulary: default the copy ``open-clip-torch`` installs, else the
            Hub's ``openai/clip-vit-base-patch32``; or a tokenizer folder, Hub id or ``.txt.gz`` file.
        w, prefix: 2.0 and ``"A photo depicts "``, as published.
        device, dtype, batch_size: float32 on every device by default (the authors' ``model.float()``).
        fp16_weights: ``False`` (default): the checkpoint's weights as stored, as the authors' evaluation scripts
            load them (``model.float()`` before ``load_state_dict``). ``True``: rounded as OpenAI's
            ``clip.load(<checkpoint file>)`` rounds them (``checkpoints.round_like_clip_load``), to reproduce
            a pipeline that loads it that way; PAC-S on an OpenAI backbone only. Recorded in the signature
            (``fp16_weights=1``).
        max_pixels: larger images are refused as possible decompression bombs.
        cache: ``False`` (default), ``True`` or a path: also keep embeddings in that SQLite file.
        model: another name for ``checkpoint`` (the CLI's ``--model``).
    """

    name = "pac_s"
    configs = CONFIGS

    def __init__(
        self,
        checkpoint: str | None = None,
        config_name: str = "pac_s",
        backbone: str | None = None,
        clip_tokenizer: Any = None,
        w: float = W,
        prefix: str = PREFIX,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 64,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        cache: Any = False,
        model: str | None = None,
        fp16_weights: bool = False,
    ):
        self.config_name = self.check_config(config_name)
        plus, self.with_references, self.sentence_average, label = _FLAVOURS[self.config_name]
        checkpoint = given_once(checkpoint, model, "checkpoint")
        if checkpoint is None:
            example = "PAC++_clip_ViT-B-32.pth" if plus else "clip_ViT-B-32.pth"
            raise ValueError(
                f"{label} needs `checkpoint=`, the authors' {example} "
                "or ViT-L/14 file (download links: metrics/pac_s/README.md, or https://github.com/aimagelab/pacscore)."
            )
        w = check_w(w)
        check_batch_size(batch_size)
        self.w, self.prefix, self.max_pixels = float(w), str(prefix), int(max_pixels)
        self.fp16_weights = check_bool(fp16_weights, "fp16_weights")
        from mmjudge.encoders.checkpoint_files import checkpoint_fingerprint
        from mmjudge.encoders.openai_clip import encoder_from_state
        from mmjudge.metrics.pac_s.checkpoints import read_pac_checkpoint, round_like_clip_load

        state, self.backbone = read_pac_checkpoint(checkpoint, plus, backbone)
        if self.fp16_weights and (plus or self.backbone.hidden_act != "quick_gelu"):
            raise ValueError(
                f"fp16_weights=True reproduces OpenAI's clip.load(<checkpoint file>), which builds PAC-S on an OpenAI "
                f"backbone only; {label} on {self.backbone.name} is never loaded that way: drop fp16_weights."
            )
        self.checkpoint_id = checkpoint_fingerprint(checkpoint)
        self.encoder = encoder_from_state(
            round_like_clip_load(state) if self.fp16_weights else state,
            self.backbone,
            self.checkpoint_id + ("+fp16-weights" if self.fp16_weights else ""),  # embeddings cached apart
            clip_tokenizer,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            cache=cache,
            name="pac_s_plus" if plus else "pac_s",
        )

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        return _spec(cls.check_config(config_name))

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.encoder,)

    def signature_fields(self) -> dict[str, Any]:
        ident = self.encoder.identity()
        fields = {
            "checkpoint": self.checkpoint_id,
            "backbone": self.backbone.name,
            "tokenizer": ident["tokenizer"],
            "dtype": ident["dtype"],
            "text_positions": ident["max_text_positions"],
            "preprocess": ident["preprocess"],
            "w": self.w,
            "prefix": repr(self.prefix),
        }
        if self.sentence_average:
            fields["sentences"] = SPLIT_VERSION
        if self.fp16_weights:  # (absent: the weights as stored, the authors' scripts)
            fields["fp16_weights"] = 1
        return fields

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        scored = similarity_chunk(
            self.encoder,
            items,
            self.prefix,
            self.w,
            references=self.with_references,
            sentences=self.sentence_average,
            progress=progress,
        )
        config = self.config_name
        if self.sentence_average:
            return ChunkScores({config: scored["score"], "sentences": scored["sentences"]})
        base = "pac_s_plus" if "plus" in config else "pac_s"
        out: dict[str, Any] = {base: scored["score"]}
        if self.with_references:
            out.update({config: scored["ref_score"], "ref_cosine": scored["ref_cosine"]})
        return ChunkScores(out)
