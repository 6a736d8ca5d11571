"""Long-CLIP, OpenAI CLIP and OpenCLIP ViT checkpoints → a stock ``transformers`` ``CLIPModel`` (or folder).

Long-CLIP (``BeichenZhang/LongCLIP-L``, ``longclip-L.pt``) is an OpenAI-CLIP state dict whose text tower has
248 positions and two positional tables: its ``encode_text`` adds ``positional_embedding`` masked to
positions < 20 and ``positional_embedding_res`` masked to positions ≥ 20 (two 0/1 masks). Only one table
contributes at each position, so one 248-row table (rows < 20 from the first, rows ≥ 20 from the second)
is exactly equivalent, and a ``CLIPModel`` with ``max_position_embeddings=248`` computes the same
features. A plain OpenAI state dict (77 positions, one table) converts the same way, and so does an
OpenCLIP ViT state dict (the same keys; its ``ViT-L-14`` uses exact GELU: ``hidden_act="gelu"``), as
PAC-S's checkpoints need (:mod:`mmjudge.metrics.pac_s`).

The output folder holds ``config.json`` + ``model.safetensors``, the tokenizer (``model_max_length`` =
the text positions) and a CLIP image processor, so :class:`mmjudge.encoders.clip.ClipEncoder`, CLIPScore's
Long-CLIP option and VELA load it like any Hub CLIP checkpoint.

>>> import torch
>>> tables = {"positional_embedding": torch.zeros(248, 2), "positional_embedding_res": torch.ones(248, 2)}
>>> combined_positions(tables)[18:22, 0]
tensor([0., 0., 1., 1.])
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

LONG_CLIP_KEEP = 20  # Long-CLIP keeps CLIP's first 20 positions (mask1) and learns the rest (mask2)
DEFAULT_TOKENIZER = "openai/clip-vit-large-patch14"


def load_state_dict(checkpoint: str | os.PathLike | dict) -> dict[str, Any]:
    """The state dict inside a ``.pt`` file (a bare state dict, ``{"state_dict": …}``, or a saved module),
    with a ``module.`` prefix (DataParallel) removed.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds no CLIP state dict.
    """

    from mmjudge.encoders.checkpoint_files import ForeignObject, read_torch_file, torchscript_tensors

    if isinstance(checkpoint, dict):
        state = checkpoint
    else:
        from mmjudge.paths import not_a_regular_file

        path = Path(checkpoint).expanduser()
        problem = not_a_regular_file(path)  # /dev/zero, a FIFO, a folder, a link loop: said as such
        if problem is not None:
            raise ValueError(f"CLIP checkpoint {str(path)!r} is {problem}; give the .pt file.")
        if not path.is_file():
            raise FileNotFoundError(f"CLIP checkpoint {str(path)!r} does not exist.")
        # OpenAI's own .pt files are TorchScript archives: read as data too (never torch.jit.load, which runs
        # the archive's TorchScript), their module tree named as its state_dict would be.
        state = read_torch_file(path)
        if isinstance(state, ForeignObject) and state.foreign_name.startswith("__torch__."):
            state = torchscript_tensors(state)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if hasattr(state, "state_dict") and not isinstance(state, dict):
        state = state.state_dict()
    state = {k[len("module.") :] if k.startswith("module.") else k: v for k, v in dict(state).items()}
    needed = ("positional_embedding", "token_embedding.weight", "text_projection", "visual.proj", "visual.conv1.weight")
    missing = [k for k in needed if k not in state]
    if missing:
        raise ValueError(
            f"The checkpoint is not an OpenAI-format ViT CLIP state dict (missing {missing}); "
            "only Long-CLIP / OpenAI CLIP ViT checkpoints convert."
        )
    return state


def combined_positions(state: dict[str, Any]) -> Any:
    """The one positional table equivalent to Long-CLIP's two masked tables (or the plain table)."""
    table = state["positional_embedding"]
    res = state.get("positional_embedding_res")
    if res is None:
        return table.clone()
    if res.shape != table.shape:
        raise ValueError(
            f"positional_embedding {tuple(table.shape)} and positional_embedding_res {tuple(res.shape)} "
            "differ in shape."
        )
    combined = res.clone()
    combined[:LONG_CLIP_KEEP] = table[:LONG_CLIP_KEEP]
    return combined


def _count(state: dict, prefix: str) -> int:
    return len({k[len(prefix) :].split(".")[0] for k in state if k.startswith(prefix)})


def clip_config(
    state: dict[str, Any],
    eos_token_id: int | None = None,
    bos_token_id: int | None = None,
    pad_token_id: int | None = None,
    hidden_act: str = "quick_gelu",
) -> Any:
    """The ``CLIPConfig`` matching an OpenAI-format state dict (heads = width / 64, as OpenAI's and
    OpenCLIP's ViTs). ``hidden_act``: ``"quick_gelu"`` for OpenAI's models (and Long-CLIP), ``"gelu"`` (the
    exact, erf-based one) for OpenCLIP models trained without QuickGELU, e.g. its ``ViT-L-14`` configuration:
    the state dict does not say which."""
    from transformers import CLIPConfig

    vocab, text_width = state["token_embedding.weight"].shape
    vision_width, _, patch, _ = state["visual.conv1.weight"].shape
    grid = round((state["visual.positional_embedding"].shape[0] - 1) ** 0.5)
    eos = vocab - 1 if eos_token_id is None else int(eos_token_id)  # OpenAI: <|endoftext|> is the last id
    if eos == 2:
        raise ValueError("eos_token_id 2 makes transformers' CLIP pool at the largest id, not at <|endoftext|>.")
    text = dict(
        vocab_size=int(vocab),
        hidden_size=int(text_width),
        intermediate_size=int(state["transformer.resblocks.0.mlp.c_fc.weight"].shape[0]),
        num_hidden_layers=_count(state, "transformer.resblocks."),
        num_attention_heads=int(text_width) // 64,
        max_position_embeddings=int(state["positional_embedding"].shape[0]),
        hidden_act=hidden_act,
        eos_token_id=eos,
        bos_token_id=int(vocab - 2 if bos_token_id is None else bos_token_id),
        pad_token_id=int(eos if pad_token_id is None else pad_token_id),
    )
    vision = dict(
        hidden_size=int(vision_width),
        intermediate_size=int(state["visual.transformer.resblocks.0.mlp.c_fc.weight"].shape[0]),
        num_hidden_layers=_count(state, "visual.transformer.resblocks."),
        num_attention_heads=int(vision_width) // 64,
        image_size=int(patch * grid),
        patch_size=int(patch),
        hidden_act=hidden_act,
    )
    return CLIPConfig(text_config=text, vision_config=vision, projection_dim=int(state["text_projection"].shape[1]))


def _tower(state: dict, src: str, dst: str, layers: int) -> dict[str, Any]:
    out = {}
    for i in range(layers):
        s, d = f"{src}{i}.", f"{dst}{i}."
        for kind in ("weight", "bias"):
            q, k, v = state[f"{s}attn.in_proj_{kind}"].chunk(3, dim=0)
            (
                out[f"{d}self_attn.q_proj.{kind}"],
                out[f"{d}self_attn.k_proj.{kind}"],
                out[f"{d}self_attn.v_proj.{kind}"],
            ) = q, k, v
            out[f"{d}self_attn.out_proj.{kind}"] = state[f"{s}attn.out_proj.{kind}"]
            out[f"{d}layer_norm1.{kind}"] = state[f"{s}ln_1.{kind}"]
            out[f"{d}layer_norm2.{kind}"] = state[f"{s}ln_2.{kind}"]
            out[f"{d}mlp.fc1.{kind}"] = state[f"{s}mlp.c_fc.{kind}"]
            out[f"{d}mlp.fc2.{kind}"] = state[f"{s}mlp.c_proj.{kind}"]
    return out


def convert_state_dict(state: dict[str, Any]) -> dict[str, Any]:
    """OpenAI / Long-CLIP keys → ``transformers`` ``CLIPModel`` keys (float32 tensors)."""
    text_layers, vision_layers = _count(state, "transformer.resblocks."), _count(state, "visual.transformer.resblocks.")
    out = {
        "text_model.embeddings.token_embedding.weight": state["token_embedding.weight"],
        "text_model.embeddings.position_embedding.weight": combined_positions(state),
        "text_model.final_layer_norm.weight": state["ln_final.weight"],
        "text_model.final_layer_norm.bias": state["ln_final.bias"],
        "text_projection.weight": state["text_projection"].t(),
        "vision_model.embeddings.class_embedding": state["visual.class_embedding"],
        "vision_model.embeddings.patch_embedding.weight": state["visual.conv1.weight"],
        "vision_model.embeddings.position_embedding.weight": state["visual.positional_embedding"],
        "vision_model.pre_layrnorm.weight": state["visual.ln_pre.weight"],
        "vision_model.pre_layrnorm.bias": state["visual.ln_pre.bias"],
        "vision_model.post_layernorm.weight": state["visual.ln_post.weight"],
        "vision_model.post_layernorm.bias": state["visual.ln_post.bias"],
        "visual_projection.weight": state["visual.proj"].t(),
        "logit_scale": state["logit_scale"],
    }
    out.update(_tower(state, "transformer.resblocks.", "text_model.encoder.layers.", text_layers))
    out.update(_tower(state, "visual.transformer.resblocks.", "vision_model.encoder.layers.", vision_layers))
    return {k: v.detach().float().contiguous() for k, v in out.items()}


def to_clip_model(
    state: dict[str, Any], eos_token_id: int | None = None, hidden_act: str = "quick_gelu", **token_ids: int | None
) -> Any:
    """A ``CLIPModel`` (float32, eval mode) holding the converted weights; every weight must be used.
    ``hidden_act``: see :func:`clip_config`."""
    from accelerate import init_empty_weights
    from transformers import CLIPModel

    # No random initialisation of weights that are overwritten at once (seconds for a ViT-L/14 on a CPU):
    # parameters start empty and take the converted tensors; buffers (position ids) are built as usual.
    with init_empty_weights(include_buffers=False):
        model = CLIPModel(clip_config(state, eos_token_id, hidden_act=hidden_act, **token_ids))
    converted = convert_state_dict(state)
    result = model.load_state_dict(converted, strict=False, assign=True)
    missing = [k for k in result.missing_keys if not k.endswith("position_ids")]
    if missing or result.unexpected_keys:
        raise ValueError(
            f"Converted CLIP weights do not fit the model: missing {missing}, unexpected {result.unexpected_keys}."
        )
    return model.eval()


def convert_longclip(
    checkpoint: str | os.PathLike | dict,
    out_dir: str | os.PathLike,
    tokenizer: Any = DEFAULT_TOKENIZER,
) -> str:
    """Convert a Long-CLIP / OpenAI CLIP checkpoint to a ``transformers`` folder and return its path.

    Args:
        checkpoint: the ``.pt`` file (e.g. ``longclip-L.pt``) or a state dict.
        out_dir: the folder to write (created).
        tokenizer: the CLIP BPE tokenizer to ship with it: a Hub id or folder (default
            ``openai/clip-vit-large-patch14``, whose vocabulary Long-CLIP-L uses), a tokenizer object,
            or ``None`` for weights only. It is saved with ``model_max_length`` = the text positions
            (248 for Long-CLIP) and its ``<|endoftext|>`` id becomes the config's ``eos_token_id``.
    """
    from transformers import AutoTokenizer, CLIPImageProcessor

    state = load_state_dict(checkpoint)
    tok = None
    if tokenizer is not None:
        tok = AutoTokenizer.from_pretrained(str(tokenizer)) if isinstance(tokenizer, (str, os.PathLike)) else tokenizer
        vocab = state["token_embedding.weight"].shape[0]
        if len(tok) > vocab:
            raise ValueError(
                f"The tokenizer has {len(tok)} tokens but the checkpoint's text tower only {vocab}; "
                "give the matching CLIP tokenizer."
            )
    ids = (
        {}
        if tok is None
        else {
            "eos_token_id": tok.eos_token_id,
            "bos_token_id": tok.bos_token_id,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        }
    )
    model = to_clip_model(state, **ids)
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    positions = model.config.text_config.max_position_embeddings
    if tok is not None:
        tok.model_max_length = positions
        tok.save_pretrained(out)
    size = model.config.vision_config.image_size
    CLIPImageProcessor(
        size={"shortest_edge": size},
        crop_size={"height": size, "width": size},
        resample=3,
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
    ).save_pretrained(out)
    return str(out)
