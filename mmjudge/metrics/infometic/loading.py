"""The authors' InfoMetIC checkpoint read into the parts that score: the frozen CLIP text tower (a
``transformers`` CLIP converted from the file's ``clip_backbone.*``, OpenAI's format) and the trained head.

Their ``best_model.pth`` is ``torch.save(model.state_dict())`` of their whole model, loaded back with a strict
``load_state_dict``: every key of the head must be there, and nothing else than ``clip_backbone.*`` may be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.metrics.infometic.features import RegionInput

BACKBONE = "clip_backbone."
DEFAULT_CLIP = "openai/clip-vit-base-patch32"
CHECKPOINT_SOURCE = "the Google Drive folder linked in github.com/HAWLYQ/InfoMetIC's README (best_model.pth, 462 MB)"


def split_checkpoint(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(clip state in OpenAI's format, float32; the head's state)`` of the authors' file.

    >>> import torch
    >>> clip, head = split_checkpoint({"clip_backbone.ln_final.weight": torch.ones(2, dtype=torch.float16),
    ...                                "ln.weight": torch.ones(2)})
    >>> list(clip), clip["ln_final.weight"].dtype, list(head)
    (['ln_final.weight'], torch.float32, ['ln.weight'])
    """
    clip = {k[len(BACKBONE) :]: v.float() for k, v in state.items() if k.startswith(BACKBONE)}
    head = {k: v for k, v in state.items() if not k.startswith(BACKBONE)}
    return clip, head


@dataclass
class Parts:
    """What scores: the caption encoder, the trained head (``None`` for InfoCLIP), CLIP's scale for InfoCLIP or
    the head's for InfoMetIC (``scale``), the device and what identifies them (``identity``)."""

    text: Any
    head: Any
    scale: float
    device: str
    batch_size: int
    identity: dict[str, Any]

    def score(self, captions: Sequence[str], regions: Sequence[RegionInput]) -> dict[str, list[float]]:
        """``vision_recall``, ``text_precision`` and ``it`` for equal-length region inputs, one per caption."""
        import numpy as np
        import torch

        from mmjudge.metrics.infometic.model import infoclip_scores

        def stack(name: str) -> Any:
            return torch.from_numpy(np.stack([getattr(r, name) for r in regions])).to(self.device, torch.float32)

        ids, mask = self.text.ids(captions)
        text_global, tokens = self.text.encode(ids)
        image_global, mask = stack("image_global"), mask.to(self.device)
        with torch.inference_mode():
            if self.head is None:
                out = infoclip_scores(image_global, stack("regions"), text_global, tokens, mask, self.scale)
            else:
                out = self.head(
                    image_global, stack("regions"), stack("boxes"), stack("global_box"), text_global, tokens, mask
                )
        return {k: v.float().cpu().tolist() for k, v in out.items()}


def load_parts(
    checkpoint: str | None,
    config: str,
    clip_model: str | None,
    fusion_heads: int,
    clip_tokenizer: Any,
    device: str | None,
    dtype: str | None,
    batch_size: int,
) -> Parts:
    """The scoring parts for ``config`` (see :class:`~mmjudge.metrics.infometic.metric.InfoMetIC`'s options).

    Raises:
        FileNotFoundError: no checkpoint file (the message says where to download it).
        ValueError: not the authors' file (a missing or unexpected key, or a shape that does not fit).
    """
    import torch

    from mmjudge.encoders.checkpoint_files import checkpoint_fingerprint, read_torch_file, require_file
    from mmjudge.encoders.clip_tokenizer import clip_bpe_tokenizer
    from mmjudge.metrics.infometic.model import InfoMetICHead, head_shape
    from mmjudge.metrics.infometic.text import EOT, SOT, CaptionEncoder
    from mmjudge.models import resolve_device, resolve_dtype

    resolved = resolve_device(device)
    dtype_name = resolve_dtype(dtype, resolved, gpu_default="float32")
    tokenizer = clip_bpe_tokenizer(clip_tokenizer)
    identity: dict[str, Any] = {"dtype": dtype_name, "tokenizer": tokenizer.fingerprint()}
    head, clip = None, None
    if checkpoint is not None:
        path = require_file(checkpoint, "InfoMetIC checkpoint", CHECKPOINT_SOURCE)
        state = read_torch_file(path)
        if not isinstance(state, dict) or not any(k.startswith(BACKBONE) for k in state):
            raise ValueError(f"{str(path)!r} is not InfoMetIC's best_model.pth: it holds no clip_backbone.* weights.")
        clip_state, head_state = split_checkpoint(state)
        identity["checkpoint"] = checkpoint_fingerprint(path)
        from mmjudge.encoders.longclip import to_clip_model

        clip = to_clip_model(clip_state, eos_token_id=EOT, hidden_act="quick_gelu", bos_token_id=SOT, pad_token_id=0)
        if config != "infoclip":
            try:
                head = InfoMetICHead(head_shape(head_state), fusion_heads)
                head.load_state_dict(head_state, strict=True)
            except (RuntimeError, ValueError) as err:
                reason = " ".join(str(err).split())[:300]
                raise ValueError(f"{str(path)!r} does not fit InfoMetIC's model: {reason}") from None
            head = head.to(resolved, getattr(torch, dtype_name)).eval().requires_grad_(False)
    else:
        from transformers import CLIPModel

        from mmjudge.models import load_pretrained, load_tokenizer

        loaded = load_pretrained(
            clip_model or DEFAULT_CLIP, [CLIPModel], processor_loader=load_tokenizer, device=resolved, dtype=dtype_name
        )
        clip = loaded.model
        identity["clip"] = loaded.identity.label()
    clip = clip.to(resolved, getattr(torch, dtype_name)).eval().requires_grad_(False)
    if len(tokenizer) > int(clip.config.text_config.vocab_size):
        raise ValueError("The CLIP tokenizer has more tokens than the checkpoint's text tower: pass `clip_tokenizer=`.")
    scale = float(head.logit_scale.exp()) if head is not None else float(clip.logit_scale.exp())
    return Parts(
        CaptionEncoder(clip, tokenizer, resolved, batch_size), head, scale, resolved, int(batch_size), identity
    )
