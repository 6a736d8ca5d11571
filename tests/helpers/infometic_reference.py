"""InfoMetIC, InfoMetIC+ and InfoCLIP written out from the authors' description of their code (HAWLYQ/InfoMetIC
@ 6400643: ``inference.py``'s ``get_image_input`` / ``process_text`` / ``evaluate``, ``ClipSeq.py``'s forward), on
independent parts: open_clip's own OpenAI CLIP (built from the file's ``clip_backbone.*``) and its tokenizer for the
text, ``lmdb`` + ``np.load`` for the features, and the trained transformers as plain tensor arithmetic (attention
by hand, no ``nn.MultiheadAttention``). For tests only; the metric's path is ``mmjudge.metrics.infometic``.

At development time mmjudge was also checked against the authors' code itself (their ``CLIPSeqModel`` and
``MSCOCO_Infer.evaluate`` on CPU, tiny random weights of width 512): max |Δ| 1.1e-6 (InfoMetIC), 3.4e-6
(InfoMetIC+), 3.3e-5 (InfoCLIP, scale 100).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

SOT, EOT = 49406, 49407


def process_text(bpe: list[int], length: int = 32) -> tuple[list[int], list[int], int]:
    text = [SOT, *bpe, EOT]
    if len(text) > length:
        text = text[:length]
        text[-1] = EOT
        return text, [0] + [1] * (length - 2) + [0], length
    return text + [0] * (length - len(text)), [0] + [1] * (len(text) - 2) + [0] * (1 + length - len(text)), len(text)


def image_input(features: str, name: str, image_length: int = 100):
    import lmdb

    folder = Path(features)
    imgid = json.loads((folder / "coco_fn2imgid.json").read_text())[name]
    env = lmdb.open(str(folder / "mscoco_vit32_lmdb"), readonly=True, lock=False)
    try:
        with env.begin() as txn:
            data = np.load(io.BytesIO(txn.get(str(imgid).encode())))
            feat, bbox = data["feat"], data["bbox"]
            if len(feat) < image_length:
                feat = np.pad(feat, ((0, image_length - len(feat)), (0, 0)))
                bbox = np.pad(bbox, ((0, image_length - len(bbox)), (0, 0)))
            else:
                feat, bbox = feat[:image_length], bbox[:image_length]
            index = data["clustered_bbox"]
            regions, boxes = np.zeros([len(index) + 1, feat.shape[1]]), np.zeros([len(index) + 1, 4])
            for i, raw in enumerate(index):
                regions[i], boxes[i] = feat[raw], bbox[raw]
            return (
                torch.tensor(regions).float(),
                torch.tensor(boxes).float(),
                torch.tensor(data["global_feat"]).float(),
                torch.tensor(data["global_bbox"]).float(),
            )
    finally:
        env.close()


def _block(x, sd, prefix, heads):
    width = x.shape[-1]

    def ln(v, name):
        return F.layer_norm(v, (width,), sd[f"{prefix}{name}.weight"], sd[f"{prefix}{name}.bias"], eps=1e-5)

    h = ln(x, "ln_1")
    length, batch, _ = h.shape
    q, k, v = (h @ sd[f"{prefix}attn.in_proj_weight"].T + sd[f"{prefix}attn.in_proj_bias"]).chunk(3, dim=-1)
    split = [t.reshape(length, batch * heads, width // heads).transpose(0, 1) for t in (q, k, v)]
    weights = torch.softmax(split[0] @ split[1].transpose(1, 2) / math.sqrt(width // heads), dim=-1)
    attended = (weights @ split[2]).transpose(0, 1).reshape(length, batch, width)
    x = x + attended @ sd[f"{prefix}attn.out_proj.weight"].T + sd[f"{prefix}attn.out_proj.bias"]
    m = ln(x, "ln_2") @ sd[f"{prefix}mlp.c_fc.weight"].T + sd[f"{prefix}mlp.c_fc.bias"]
    m = m * torch.sigmoid(1.702 * m)
    return x + m @ sd[f"{prefix}mlp.c_proj.weight"].T + sd[f"{prefix}mlp.c_proj.bias"]


def _encoder(x, sd, name, heads):  # x: batch-first; the authors' encoders run sequence-first
    x = x.permute(1, 0, 2)
    layers = len({k.split(".")[2] for k in sd if k.startswith(f"{name}.resblocks.")})
    for i in range(layers):
        x = _block(x, sd, f"{name}.resblocks.{i}.", heads)
    x = x.permute(1, 0, 2)
    return F.layer_norm(x, (x.shape[-1],), sd["ln.weight"], sd["ln.bias"], eps=1e-5)


def _cos(a, b):
    return torch.sum((a / a.norm(dim=-1, keepdim=True)) * (b / b.norm(dim=-1, keepdim=True)), dim=-1)


def reference_scores(checkpoint: str, features: str, captions, names, heads: int) -> dict[str, list[float]]:
    """Per caption: ``r``, ``p``, ``infometic``, ``infometic_plus`` (trained head) and ``infoclip`` (R + P)."""
    from open_clip.model import build_model_from_openai_state_dict
    from open_clip.tokenizer import SimpleTokenizer

    sd = {k: v.float() for k, v in torch.load(checkpoint).items()}
    backbone = {k[len("clip_backbone.") :]: v for k, v in sd.items() if k.startswith("clip_backbone.")}
    clip = build_model_from_openai_state_dict(dict(backbone), cast_dtype=torch.float32).float().eval()
    clip.load_state_dict(backbone)  # it rounds the weights to float16 whatever the cast type: the exact ones back
    tokenizer = SimpleTokenizer()

    def encode(ids):  # open_clip runs the full 77 positions; the causal mask keeps padded ends out
        padded = F.pad(ids, (0, 77 - ids.shape[1]))
        with torch.no_grad():
            return clip.encode_text(padded)

    out = {key: [] for key in ("r", "p", "infometic", "infometic_plus", "infoclip")}
    for caption, name in zip(captions, names):
        ids, mask, _ = process_text(tokenizer.encode(caption))
        text, text_mask = torch.tensor([ids]), torch.tensor([mask]).float()
        singles = torch.tensor([[SOT, t, EOT] for t in ids])
        tokens, text_global = encode(singles)[None], encode(text)
        regions, boxes, image_global, global_box = image_input(features, name)
        image_global, global_box = image_global[None], global_box[None]
        img = torch.cat([image_global[:, None], regions[None]], dim=1)
        box = torch.cat([global_box[:, None], boxes[None]], dim=1)
        img_mask = torch.tensor([[0.0] + [1.0] * regions.shape[0]])
        # InfoCLIP: CLIP's own scale, the raw vectors
        s = clip.logit_scale.exp()
        a = torch.softmax(torch.sum(text_global[:, None] * img, -1) + (1 - img_mask) * -10000.0, -1)
        r0 = s * _cos(image_global, torch.sum(img * a[..., None], 1))
        b = torch.softmax(torch.sum(image_global[:, None] * tokens, -1) + (1 - text_mask) * -10000.0, -1)
        p0 = s * _cos(torch.sum(tokens * b[..., None], 1), text_global)
        out["infoclip"].append(float(r0 + p0))
        # InfoMetIC: box positions, intra-modal, fusion, the trained attentions, the head's scale
        with torch.no_grad():
            img = (
                img
                + (box / torch.cat([global_box[:, 2:], global_box[:, 2:]], 1)[:, None]) @ sd["bbox_position_embedding"]
            )
            fused = _encoder(
                torch.cat([_encoder(img, sd, "image_encoder", heads), _encoder(tokens, sd, "text_encoder", heads)], 1),
                sd,
                "fusion_encoder",
                heads,
            )
            img_out, text_out = fused[:, : img.shape[1]], fused[:, img.shape[1] :]
            s = sd["logit_scale"].exp()
            a = torch.softmax(
                torch.sum((text_global @ sd["img_att_query"])[:, None] * (img_out @ sd["img_att_key"]), -1)
                + (1 - img_mask) * -10000.0,
                -1,
            )
            r = s * _cos(image_global, torch.sum(img_out * a[..., None], 1))
            b = torch.softmax(
                torch.sum((image_global @ sd["text_att_query"])[:, None] * (text_out @ sd["text_att_key"]), -1)
                + (1 - text_mask) * -10000.0,
                -1,
            )
            p = s * _cos(torch.sum(text_out * b[..., None], 1), text_global)
            it = s * _cos(image_global, text_global)
        out["r"].append(float(r))
        out["p"].append(float(p))
        out["infometic"].append(float(r + p))
        out["infometic_plus"].append(float(r + p + (100.0 / s) * it))
    return out
