"""CLIP models from OpenAI-format state dicts (OpenAI CLIP, OpenCLIP, the PAC-S and Polos checkpoints
built on them) as a ready :class:`~mmjudge.encoders.clip.ClipEncoder`: converted to ``transformers`` in
memory (:mod:`mmjudge.encoders.longclip`), tokenized as OpenAI's ``clip.tokenize``
(:mod:`mmjudge.encoders.clip_tokenizer`), images normalised as the backbone was trained.

>>> BACKBONES["open_clip_ViT-L/14"].hidden_act, BACKBONES["ViT-B/32"].hidden_act
('gelu', 'quick_gelu')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mmjudge.encoders.clip import OPENAI_MEAN, OPENAI_STD


@dataclass(frozen=True)
class Backbone:
    """A CLIP architecture an OpenAI-format state dict is loaded into: its activation and pixel
    normalisation (which the state dict does not record), and the vision shape that identifies it. The names
    are the PAC-S authors' ``--clip_model`` choices."""

    name: str
    hidden_act: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    width: int
    patch: int


BACKBONES = {
    "ViT-B/32": Backbone("ViT-B/32", "quick_gelu", OPENAI_MEAN, OPENAI_STD, 768, 32),
    "ViT-L/14": Backbone("ViT-L/14", "quick_gelu", OPENAI_MEAN, OPENAI_STD, 1024, 14),
    "open_clip_ViT-L/14": Backbone("open_clip_ViT-L/14", "gelu", (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), 1024, 14),
}


def encoder_from_state(
    state: dict[str, Any],
    backbone: Backbone,
    fingerprint: str,
    clip_tokenizer: Any = None,
    device: str | None = None,
    dtype: Any = None,
    batch_size: int = 64,
    cache: Any = None,
    normalize: bool = True,
    name: str = "pac_s",
) -> Any:
    """A :class:`~mmjudge.encoders.clip.ClipEncoder` over the converted ``state`` (OpenAI format), with
    OpenAI's tokenization (:func:`~mmjudge.encoders.clip_tokenizer.clip_bpe_tokenizer`) and the backbone's
    pixel normalisation. It runs in float32 by default on every device, as the authors' code
    (``model.float()``); ``dtype="float16"`` trades exactness for speed on a GPU. ``fingerprint`` (the
    checkpoint's content) and the tokenizer's vocabulary name the embeddings in caches and signatures."""
    import torch

    from mmjudge.encoders.clip import ClipEncoder
    from mmjudge.encoders.clip_tokenizer import clip_bpe_tokenizer
    from mmjudge.encoders.longclip import to_clip_model
    from mmjudge.models import ModelIdentity, resolve_device, resolve_dtype

    positions = int(state["positional_embedding"].shape[0])
    tokenizer = clip_bpe_tokenizer(clip_tokenizer, positions)
    vocab = int(state["token_embedding.weight"].shape[0])
    if len(tokenizer) > vocab:
        raise ValueError(
            f"The CLIP tokenizer has {len(tokenizer)} tokens but the checkpoint's text tower only {vocab}: "
            "give the tokenizer it was trained with (`clip_tokenizer=`)."
        )
    resolved = resolve_device(device)
    dtype_name = resolve_dtype(dtype, resolved, gpu_default="float32")

    def build() -> tuple[Any, Any]:
        ids = {"bos_token_id": tokenizer.bos_token_id, "pad_token_id": tokenizer.pad_token_id}
        model = to_clip_model(state, eos_token_id=tokenizer.eos_token_id, hidden_act=backbone.hidden_act, **ids)
        return model.to(getattr(torch, dtype_name)), tokenizer

    encoder = ClipEncoder(
        build,
        device=resolved,
        batch_size=batch_size,
        cache=cache,
        image_mean=backbone.mean,
        image_std=backbone.std,
        normalize=normalize,
        identity={"tokenizer": tokenizer.fingerprint()},
    )
    encoder.model_identity = ModelIdentity(f"{name}:{backbone.name}", fingerprint, dtype_name)
    return encoder
