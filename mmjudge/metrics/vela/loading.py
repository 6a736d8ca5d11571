"""Building VELA: a fresh model to train (:func:`new_vela`) and a checkpoint loaded to score or resume
(:func:`load_vela`, :func:`read_checkpoint`). The model itself is :mod:`mmjudge.metrics.vela.model`.

>>> read_checkpoint("no/such/folder")
Traceback (most recent call last):
FileNotFoundError: VELA checkpoint folder 'no/such/folder' does not exist (train one with `mmjudge train-vela`).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

from mmjudge.metrics.vela.model import (
    CONFIG_FILE,
    DEFAULT_LLM,
    FOREIGN_HINT,
    FORMAT,
    WEIGHTS_FILE,
    VelaConfig,
    VelaModel,
)

logger = logging.getLogger(__name__)


def _load_llm(llm: Any, device: str | None, dtype: Any):
    from transformers import AutoModelForCausalLM

    from mmjudge.models import load_pretrained, load_tokenizer

    return load_pretrained(llm, [AutoModelForCausalLM], load_tokenizer, device=device, dtype=dtype, family="text_lm")


def _load_clip(clip_model: Any, device: str | None, clip_dtype: Any, clip_encoder: Any = None):
    if clip_encoder is not None:
        return clip_encoder
    if clip_model is None:
        raise ValueError(
            "VELA needs `clip_model=`: a Long-CLIP-L checkpoint in transformers format (no such checkpoint is on "
            "the Hub: convert BeichenZhang/LongCLIP-L's longclip-L.pt with `mmjudge convert-longclip longclip-L.pt "
            "DIR` and pass DIR), or 'tiny-random' for a plumbing test."
        )
    from mmjudge.encoders.clip import ClipEncoder

    return ClipEncoder(clip_model, device=device, dtype=clip_dtype)


def _add_lora(llm: Any, config: VelaConfig, trainable: bool):
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_targets),
        bias="none",
        inference_mode=not trainable,
    )
    return get_peft_model(llm, lora)


def _assemble(loaded: Any, encoder: Any, cfg: VelaConfig, trainable: bool, seed: int) -> VelaModel:
    """The model around a loaded LLM and CLIP: the LoRA adapter (when configured) and a head (seeded)."""
    from mmjudge.metrics.vela.head import VelaHead

    model = _add_lora(loaded.model, cfg, trainable=trainable) if cfg.lora_r else loaded.model
    head = VelaHead(cfg.feature_dim, cfg.projection_dim, cfg.mode_dim, cfg.criteria, seed=seed)
    identities = {
        "llm": loaded.identity.label(),
        "clip": encoder.model_identity.label(),
        "dtype": loaded.identity.dtype,
    }
    return VelaModel(model, loaded.processor, encoder, head, cfg, identities)


def new_vela(
    llm: Any = DEFAULT_LLM,
    clip_model: Any = None,
    device: str | None = None,
    dtype: Any = None,
    clip_dtype: Any = None,
    seed: int = 42,
    clip_encoder: Any = None,
    **config: Any,
) -> VelaModel:
    """A fresh VELA model to train: the LLM with a new LoRA adapter, a new head (seeded), CLIP frozen.
    ``config`` sets :class:`VelaConfig` fields (``projection_dim``, ``lora_r``, ``max_length`` …)."""
    import torch

    loaded = _load_llm(llm, device, dtype)
    encoder = _load_clip(clip_model, device, clip_dtype, clip_encoder)
    clip_dim = int(encoder.model.config.projection_dim)
    cfg = VelaConfig(
        llm=loaded.identity.name,
        llm_revision=loaded.identity.revision,
        llm_hidden_size=int(loaded.model.config.hidden_size),
        clip=encoder.model_identity.label(),
        clip_dim=clip_dim,
        **config,
    )
    torch.manual_seed(seed)  # LoRA's own initialisation draws from the global generator
    return _assemble(loaded, encoder, cfg, trainable=True, seed=seed)


def read_checkpoint(checkpoint: str | os.PathLike) -> tuple[VelaConfig, dict, Path]:
    """(config, tensors, folder) of an mmjudge VELA checkpoint folder.

    Raises:
        FileNotFoundError: no such folder.
        ValueError: not an mmjudge VELA checkpoint (e.g. the authors' ``vela_regressor.safetensors``).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(checkpoint).expanduser()
    if path.is_file() and path.suffix == ".safetensors":
        raise ValueError(
            f"{str(path)!r} is a bare safetensors file, not an mmjudge VELA checkpoint folder. {FOREIGN_HINT}"
        )
    if not path.is_dir():
        from mmjudge.paths import not_a_regular_file

        problem = not_a_regular_file(path)  # a device such as /dev/zero, a FIFO, a link loop: not "missing"
        if problem is not None or path.exists():
            raise ValueError(
                f"VELA checkpoint {str(path)!r} is {problem or 'a file'}, not a checkpoint folder (train one with "
                "`mmjudge train-vela`)."
            )
        raise FileNotFoundError(
            f"VELA checkpoint folder {str(path)!r} does not exist (train one with `mmjudge train-vela`)."
        )
    config_path, weights = path / CONFIG_FILE, path / WEIGHTS_FILE
    try:
        data = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        data = {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not weights.is_file():
        raise ValueError(
            f"{str(path)!r} is not an mmjudge VELA checkpoint (expected {CONFIG_FILE} with format "
            f"{FORMAT!r} and {WEIGHTS_FILE}). {FOREIGN_HINT}"
        )
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{str(weights)!r} cannot be read ({err}); the checkpoint is damaged.") from None
    return VelaConfig.from_dict(data), tensors, path


def load_vela(
    checkpoint: str | os.PathLike,
    clip_model: Any = None,
    llm: Any = None,
    device: str | None = None,
    dtype: Any = None,
    clip_dtype: Any = None,
    merge_lora: bool = True,
    clip_encoder: Any = None,
    trainable: bool = False,
) -> VelaModel:
    """Load a checkpoint written by :meth:`VelaModel.save` (``mmjudge train-vela``).

    Args:
        checkpoint: the folder.
        clip_model: the Long-CLIP folder it was trained with (required; see :func:`new_vela`).
        llm: the LLM (default: the Hub id stored in the checkpoint; a folder-trained checkpoint needs it).
        merge_lora: fold the LoRA adapter into the LLM's weights (faster inference).
        trainable: keep the adapter trainable (resuming training).
    """
    cfg, tensors, path = read_checkpoint(checkpoint)
    source = llm if llm is not None else cfg.llm
    if source in ("local", "") or str(source).startswith("injected"):
        raise ValueError(f"The checkpoint {str(path)!r} was trained on a local or injected LLM; pass it as `llm=`.")
    loaded = _load_llm(source, device, dtype)
    hidden = int(loaded.model.config.hidden_size)
    if hidden != cfg.llm_hidden_size:
        raise ValueError(
            f"{str(path)!r} was trained on an LLM of hidden size {cfg.llm_hidden_size} ({cfg.llm}), but "
            f"llm={source!r} has {hidden}: pass the LLM it was trained with."
        )
    encoder = _load_clip(clip_model, device, clip_dtype, clip_encoder)
    clip_dim = int(encoder.model.config.projection_dim)
    if clip_dim != cfg.clip_dim:
        raise ValueError(
            f"{str(path)!r} was trained with CLIP embeddings of size {cfg.clip_dim} ({cfg.clip}), but "
            f"the given CLIP model has {clip_dim}: pass the Long-CLIP it was trained with."
        )
    if encoder.model_identity.label() != cfg.clip:
        warnings.warn(
            f"VELA checkpoint trained with CLIP {cfg.clip}, scoring with {encoder.model_identity.label()}.",
            stacklevel=2,
        )
    if loaded.identity.revision != cfg.llm_revision and loaded.identity.name != "local":
        logger.info(
            "VELA: LLM revision %s differs from the trained one (%s)", loaded.identity.revision, cfg.llm_revision
        )
    vela = _assemble(loaded, encoder, cfg, trainable=trainable, seed=0)
    vela.load_state(tensors, repr(str(path)))
    if cfg.lora_r and merge_lora and not trainable:
        vela.llm = vela.llm.merge_and_unload()
    if not trainable:
        vela.llm.eval()
        vela.head.eval()
    return vela
