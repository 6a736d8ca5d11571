"""The authors' PAC-S / PAC-S++ checkpoints → a ``transformers`` CLIP, computing what their code computes.

Their files (``github:aimagelab/pacscore``) hold ``{"state_dict": …}`` of the CLIP model they load it into:

* PAC-S ``clip_ViT-B-32.pth``: OpenAI's CLIP ViT-B/32 (``clip.load``; QuickGELU, OpenAI's normalisation);
* PAC-S ``openClip_ViT-L-14.pth``: OpenCLIP's ``ViT-L-14`` (exact GELU) with the transform of its
  ``laion2b_s32b_b82k`` weights, mean = std = 0.5;
* PAC-S++ ``PAC++_clip_ViT-B-32.pth`` / ``PAC++_clip_ViT-L-14.pth``: OpenAI's CLIP rebuilt with LoRA layers
  of rank 4 (their ``models/clip_lora``), the LoRA factors stored beside the frozen weights.

PAC-S++ is read as their evaluation code runs it (``compute_correlations_pac++.py``: build, load, ``eval()``):
the attention input/output projections and the patch convolution add their LoRA update (scaling
``lora_alpha / r`` = 1/r), which is folded into the weight here (:func:`fold_lora`); the MLP layers are
marked merged when their model is built, so at evaluation they use the stored weights as they are and their
LoRA factors play no part — here neither.

**Precision.** Their evaluation scripts (``compute_correlations.py``, ``compute_correlations_pac++.py``,
``compute_metrics.py``; Polos's ``validate/compute_correlations.py`` and CaptionEvalKit's ``pacscore_metric.py``
alike) build the base CLIP with ``clip.load``, call ``model.float()``, and only then
``model.load_state_dict(checkpoint["state_dict"])``: the checkpoint's weights are used at full precision, and
so they are here. OpenAI's ``convert_weights`` (run by ``build_model`` inside ``clip.load``) rounds the base
model's linear, convolution and attention weights and the two projections to float16, but every one of them is
then overwritten by the checkpoint. Only a checkpoint handed to ``clip.load(<file>)`` itself keeps that rounding
(measured on tiny random float32 weights: up to 3.7e-4 on RefPAC-S, 2e-4 on the text embeddings);
:func:`round_like_clip_load` reproduces it (``fp16_weights=True``).

>>> import torch
>>> state = {"a.attn.in_proj_weight": torch.zeros(6, 2), "a.attn.in_proj_weight_lora_A": torch.ones(1, 2),
...          "a.attn.in_proj_weight_lora_B": torch.ones(6, 1)}
>>> fold_lora(state)["a.attn.in_proj_weight"][0].tolist()  # += B @ A / r, r = 1
[1.0, 1.0]
"""

from __future__ import annotations

import os
from typing import Any

from mmjudge.encoders.openai_clip import BACKBONES, Backbone

LORA = "lora_"
# Where the published checkpoints are listed (the card, metrics/pac_s/README.md, gives each file's link).
SOURCE = "https://github.com/aimagelab/pacscore#loading-clip-models"


def detect_backbone(state: dict[str, Any]) -> str | None:
    """The backbone a full-size checkpoint was made for, from its vision tower's width and patch size and
    whether it holds LoRA factors (the authors' ViT-L/14 PAC-S is OpenCLIP's, their PAC-S++ one OpenAI's);
    ``None`` for other shapes (e.g. tiny test models)."""
    width, _, patch, _ = state["visual.conv1.weight"].shape
    if (width, patch) == (768, 32):
        return "ViT-B/32"
    if (width, patch) == (1024, 14):
        return "ViT-L/14" if has_lora(state) else "open_clip_ViT-L/14"
    return None


def has_lora(state: dict[str, Any]) -> bool:
    return any(LORA in key for key in state)


def fold_lora(state: dict[str, Any]) -> dict[str, Any]:
    """A plain OpenAI-format state dict computing what the authors' LoRA CLIP computes at evaluation (see
    the module's description); every LoRA factor must be one their model has.

    Raises:
        ValueError: a LoRA factor in a place their model has none.
    """
    import torch

    out = {k: v.detach().to(torch.float32).clone() for k, v in state.items() if LORA not in k}
    used: set[str] = set()
    for key in list(out):
        if key.endswith(".attn.in_proj_weight") and f"{key}_lora_A" in state:
            a, b = state[f"{key}_lora_A"].float(), state[f"{key}_lora_B"].float()
            out[key] += (b @ a) / a.shape[0]
            used.update({f"{key}_lora_A", f"{key}_lora_B"})
        elif key.endswith((".attn.out_proj.weight", "visual.conv1.weight")):
            stem = key[: -len("weight")]
            if f"{stem}lora_A" not in state:
                continue
            a, b = state[f"{stem}lora_A"].float(), state[f"{stem}lora_B"].float()
            kernel = out[key].shape[-1] if out[key].dim() == 4 else 1
            out[key] += (b @ a).view(out[key].shape) / (a.shape[0] // kernel)
            used.update({f"{stem}lora_A", f"{stem}lora_B"})
    for key in state:
        if LORA in key and key not in used and ".mlp.c_fc." not in key and ".mlp.c_proj." not in key:
            raise ValueError(f"Unexpected LoRA weight {key!r}: not a PAC-S++ checkpoint layout mmjudge knows.")
    return out


# The tensors OpenAI's `convert_weights` stores in float16 (their models/clip/model.py): nn.Linear and nn.Conv2d
# weights and biases, nn.MultiheadAttention's input projection, and the parameters named text_projection / proj.
_FP16_SUFFIXES = tuple(
    f".{module}.{part}" for module in ("out_proj", "c_fc", "c_proj") for part in ("weight", "bias")
) + (".attn.in_proj_weight", ".attn.in_proj_bias")
_FP16_KEYS = ("visual.conv1.weight", "text_projection", "visual.proj")


def round_like_clip_load(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as OpenAI's ``clip.load(<file>)`` leaves it on the CPU: the tensors its ``convert_weights``
    makes float16 rounded to float16 and back to float32 (``model.float()`` does not bring the bits back),
    the embeddings, layer norms and ``logit_scale`` untouched. Not what the authors' evaluation scripts do (see
    the module's description): for reproducing numbers of a pipeline that loads the checkpoint that way.

    >>> import torch
    >>> state = {"visual.proj": torch.tensor([1 / 3]), "ln_final.weight": torch.tensor([1 / 3])}
    >>> {k: f"{v.item():.9f}" for k, v in round_like_clip_load(state).items()}
    {'visual.proj': '0.333251953', 'ln_final.weight': '0.333333343'}
    """
    import torch

    return {
        key: value.to(torch.float16).to(torch.float32) if key in _FP16_KEYS or key.endswith(_FP16_SUFFIXES) else value
        for key, value in state.items()
    }


def read_pac_checkpoint(
    path: str | os.PathLike, plus: bool, backbone: str | None = None
) -> tuple[dict[str, Any], Backbone]:
    """The authors' checkpoint at ``path`` as a plain OpenAI-format state dict, and its backbone.

    Args:
        path: the ``.pth`` file.
        plus: PAC-S++ (LoRA factors expected) or PAC-S (none expected).
        backbone: ``"ViT-B/32"``, ``"ViT-L/14"`` or ``"open_clip_ViT-L/14"`` (the authors' ``--clip_model``
            names); default: from the checkpoint's shapes (:func:`detect_backbone`), ``"ViT-B/32"`` for others.

    Raises:
        FileNotFoundError: no such file (the message says where to download the checkpoints).
        ValueError: not a CLIP checkpoint, the wrong kind for ``plus``, or a backbone its shapes contradict.
    """
    from mmjudge.encoders.checkpoint_files import require_file
    from mmjudge.encoders.longclip import load_state_dict

    kind = "PAC-S++" if plus else "PAC-S"
    file = require_file(path, f"{kind} checkpoint", f"the links in {SOURCE}")
    state = load_state_dict(file)
    if has_lora(state) != plus:
        other = "pac_s" if plus else "pac_s_plus"
        what = "has no LoRA weights (a PAC-S checkpoint)" if plus else "holds LoRA weights (a PAC-S++ checkpoint)"
        raise ValueError(f"{str(file)!r} {what}: use the `{other}` configurations for it.")
    detected = detect_backbone(state)
    if backbone is not None and backbone not in BACKBONES:
        raise ValueError(f"Expected argument `backbone` to be one of {sorted(BACKBONES)}, but got {backbone!r}.")
    name = backbone or detected or "ViT-B/32"
    chosen = BACKBONES[name]
    width, _, patch, _ = state["visual.conv1.weight"].shape
    if detected is not None and (chosen.width, chosen.patch) != (width, patch):
        raise ValueError(f"backbone={name!r} does not fit {str(file)!r}, a {detected} checkpoint.")
    return (fold_lora(state) if plus else state), chosen
