"""InfoMetIC's trained part and the three scores' formulas (Hu et al., ACL 2023; the authors' ``ClipSeq.py``,
github.com/HAWLYQ/InfoMetIC @ 6400643), written here from the paper's code description — no code of theirs
is copied (their repository has no licence).

The inputs are CLIP ViT-B/32 vectors, all precomputed or computed by the frozen CLIP text tower:

* ``image_global`` (B × D): the image's CLIP embedding; ``regions`` (B × (K+1) × D): the embeddings of the
  K clustered detector-box crops and a zero "pad" row; ``boxes`` (B × (K+1) × 4): their pixel boxes (the pad's
  zeros); ``global_box`` (B × 4): ``[0, 0, W, H]``;
* ``text_global`` (B × D): CLIP's embedding of the whole caption (32 tokens); ``tokens`` (B × 32 × D): each token
  embedded alone as ``<start> token <end>``; ``text_mask`` (B × 32): 1 on word tokens, 0 on start, end and pad.

**InfoMetIC** (the trained head, :class:`InfoMetICHead`): the image sequence is ``[global; regions; pad]`` with
box positions added (``(box / [W, H, W, H]) @ bbox_position_embedding``), the global token masked out of the
attention below. Image and text sequences go through their own 4-layer transformers, then together through a
2-layer fusion transformer (CLIP's pre-LN blocks, QuickGELU, no padding mask), each followed by one shared
LayerNorm. With ``s = exp(logit_scale)`` (the head's own):

* vision recall ``R = s·cos(image_global, Σ_j a_j v_j)``, ``a = softmax_j(⟨text_global·Q_i, v_j·K_i⟩)`` over the
  fused image outputs ``v`` (the global one masked with −10⁴);
* text precision ``P = s·cos(Σ_i b_i u_i, text_global)``, ``b = softmax_i(⟨image_global·Q_t, u_i·K_t⟩)`` over the
  fused text outputs ``u`` (start, end and pads masked with −10⁴);
* ``InfoMetIC = R + P``; ``InfoMetIC+ = R + P + 100·cos(image_global, text_global)``.

**InfoCLIP** (:func:`infoclip_scores`, training-free): the same two attentions on the raw CLIP vectors (no
projections, no transformers, no boxes; the pad row takes part with a zero logit), ``s`` = CLIP's own scale;
InfoCLIP = ``R + P``.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

MASKED = -10000.0  # the authors' additive mask value


class _QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


class _Block(nn.Module):
    """CLIP's residual attention block (pre-LN, ``nn.MultiheadAttention`` on sequence-first input, QuickGELU
    MLP ×4), named as CLIP's state dicts name it; LayerNorms computed in float32."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            OrderedDict(
                [("c_fc", nn.Linear(width, 4 * width)), ("gelu", _QuickGELU()), ("c_proj", nn.Linear(4 * width, width))]
            )
        )
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _layer_norm(self.ln_1, x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(_layer_norm(self.ln_2, x))


class _Transformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int):
        super().__init__()
        self.resblocks = nn.Sequential(*[_Block(width, heads) for _ in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (sequence, batch, width)
        return self.resblocks(x)


def _layer_norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return norm(x.float()).to(x.dtype)


@dataclass(frozen=True)
class HeadShape:
    """The sizes of an InfoMetIC head, read from its state dict (the number of attention heads is not in it)."""

    width: int
    inter_layers: int
    intra_layers: int


def head_shape(state: dict[str, Any]) -> HeadShape:
    """The head's width and layer counts from its keys (``fusion_encoder.resblocks.N.…``, ``image_encoder…``).

    Raises:
        ValueError: the keys of an InfoMetIC head are not there.
    """

    def layers(prefix: str) -> int:
        found = {int(m.group(1)) for k in state if (m := re.match(rf"{prefix}\.resblocks\.(\d+)\.", k))}
        return max(found) + 1 if found else 0

    if "ln.weight" not in state or not layers("fusion_encoder") or not layers("image_encoder"):
        raise ValueError("not an InfoMetIC checkpoint: it lacks ln.weight or the fusion / image encoders.")
    return HeadShape(int(state["ln.weight"].shape[0]), layers("fusion_encoder"), layers("image_encoder"))


class InfoMetICHead(nn.Module):
    """The trained part of InfoMetIC; its parameter names are the authors' (``load_state_dict`` of their file
    minus ``clip_backbone.*``). ``heads``: attention heads (16 in the released model; not in the file)."""

    def __init__(self, shape: HeadShape, heads: int = 16):
        super().__init__()
        if shape.width % heads:
            raise ValueError(
                f"Expected argument `fusion_heads` to divide the head's width {shape.width}, but got {heads}."
            )
        width = shape.width
        self.fusion_encoder = _Transformer(width, shape.inter_layers, heads)
        self.image_encoder = _Transformer(width, shape.intra_layers, heads)
        self.text_encoder = _Transformer(width, shape.intra_layers, heads)
        self.ln = nn.LayerNorm(width)
        self.bbox_position_embedding = nn.Parameter(torch.zeros(4, width))
        self.logit_scale = nn.Parameter(torch.zeros([]))
        for name in ("img_att_query", "img_att_key", "text_att_query", "text_att_key"):
            setattr(self, name, nn.Parameter(torch.zeros(width, width)))

    def _encode(self, encoder: _Transformer, x: torch.Tensor) -> torch.Tensor:
        return _layer_norm(self.ln, encoder(x.permute(1, 0, 2)).permute(1, 0, 2))

    def forward(
        self,
        image_global: torch.Tensor,
        regions: torch.Tensor,
        boxes: torch.Tensor,
        global_box: torch.Tensor,
        text_global: torch.Tensor,
        tokens: torch.Tensor,
        text_mask: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """``vision_recall``, ``text_precision`` and ``it`` (= ``s·cos(image, text)``), one value per row."""
        image = torch.cat([image_global[:, None], regions], dim=1)
        box = torch.cat([global_box[:, None], boxes], dim=1)
        image = (
            image
            + (box / torch.cat([global_box[:, 2:], global_box[:, 2:]], dim=1)[:, None]) @ self.bbox_position_embedding
        )
        image_mask = torch.ones(image.shape[:2], dtype=image.dtype, device=image.device)
        image_mask[:, 0] = 0.0  # the global token is left out of the fine-grained attention
        dtype = self.ln.weight.dtype
        image_out, text_out = (
            self._encode(self.image_encoder, image.to(dtype)),
            self._encode(self.text_encoder, tokens.to(dtype)),
        )
        fused = self._encode(self.fusion_encoder, torch.cat([image_out, text_out], dim=1))
        image_out, text_out = fused[:, : image.shape[1]], fused[:, image.shape[1] :]
        scale = self.logit_scale.exp()
        recall = scale * _attended_cosine(
            text_global @ self.img_att_query, image_out @ self.img_att_key, image_out, image_mask, image_global
        )
        precision = scale * _attended_cosine(
            image_global @ self.text_att_query, text_out @ self.text_att_key, text_out, text_mask, text_global
        )
        return {"vision_recall": recall, "text_precision": precision, "it": scale * _cosine(image_global, text_global)}


def infoclip_scores(
    image_global: torch.Tensor,
    regions: torch.Tensor,
    text_global: torch.Tensor,
    tokens: torch.Tensor,
    text_mask: torch.Tensor,
    scale: torch.Tensor | float,
) -> dict[str, torch.Tensor]:
    """InfoCLIP's ``vision_recall``, ``text_precision`` and ``it`` (``scale``: CLIP's ``exp(logit_scale)``)."""
    image = torch.cat([image_global[:, None], regions], dim=1)
    image_mask = torch.ones(image.shape[:2], dtype=image.dtype, device=image.device)
    image_mask[:, 0] = 0.0
    recall = scale * _attended_cosine(text_global, image, image, image_mask, image_global)
    precision = scale * _attended_cosine(image_global, tokens, tokens, text_mask, text_global)
    return {"vision_recall": recall, "text_precision": precision, "it": scale * _cosine(image_global, text_global)}


def _attended_cosine(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """``cos(Σ_j a_j values_j, target)`` with ``a = softmax_j(⟨query, keys_j⟩ + (1 − mask_j)·MASKED)``."""
    logits = (query[:, None] * keys).sum(-1) + (1 - mask) * MASKED
    attended = (values * torch.softmax(logits, dim=-1)[..., None]).sum(1)
    return _cosine(attended, target)


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return ((a / a.norm(dim=-1, keepdim=True)) * (b / b.norm(dim=-1, keepdim=True))).sum(-1)
