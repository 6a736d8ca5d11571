"""InfoMetIC's text inputs: the caption as 32 CLIP BPE ids, its CLIP embedding, and each token embedded alone.

As the authors' ``process_text`` and ``backbone_encoding`` do it:

* ids: ``<start>`` + OpenAI CLIP BPE of the caption + ``<end>``, cut to 32 (the last id then ``<end>``) or padded
  with id 0; the mask is 1 on word tokens, 0 on ``<start>``, ``<end>`` and pads;
* the caption's embedding: CLIP's text tower on the 32 ids (pooled at the first ``<end>``; with the causal mask the
  pads after it change nothing), projected;
* each of the 32 ids (pads included) embedded alone as ``<start> id <end>`` — one embedding per distinct id,
  kept for the encoder's life.

>>> caption_ids([5, 6], length=6)
([49406, 5, 6, 49407, 0, 0], [0, 1, 1, 0, 0, 0])
>>> caption_ids(list(range(1, 9)), length=6)
([49406, 1, 2, 3, 4, 49407], [0, 1, 1, 1, 1, 0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SOT, EOT = 49406, 49407  # OpenAI CLIP's <|startoftext|>, <|endoftext|> (the authors hard-code them)
TEXT_LENGTH = 32


def caption_ids(bpe: Sequence[int], length: int = TEXT_LENGTH) -> tuple[list[int], list[int]]:
    """``(ids, mask)`` of a caption whose BPE ids (without start and end) are ``bpe``."""
    ids = [SOT, *bpe, EOT]
    if len(ids) > length:
        ids = ids[:length]
        ids[-1] = EOT
        return ids, [0] + [1] * (length - 2) + [0]
    mask = [0] + [1] * (len(ids) - 2) + [0] + [0] * (length - len(ids))
    return ids + [0] * (length - len(ids)), mask


class CaptionEncoder:
    """The frozen CLIP text tower InfoMetIC reads captions with. ``model``: a ``transformers`` ``CLIPModel`` (its
    text tower and projection are used); ``tokenizer``: OpenAI's BPE with OpenAI's cleaning
    (:func:`mmjudge.encoders.clip_tokenizer.clip_bpe_tokenizer`)."""

    def __init__(self, model: Any, tokenizer: Any, device: str, batch_size: int = 64):
        self.model, self.tokenizer, self.device, self.batch_size = model, tokenizer, device, int(batch_size)
        self._tokens: dict[int, Any] = {}  # id -> its embedding alone (the vocabulary bounds this)

    def ids(self, captions: Sequence[str]) -> tuple[Any, Any]:
        """``(ids, mask)`` tensors, (B, 32) each."""
        import torch

        bpe = self.tokenizer(list(captions), add_special_tokens=False)["input_ids"]  # one call for the batch
        pairs = [caption_ids(ids) for ids in bpe]
        return torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs], dtype=torch.float32)

    def _embed(self, ids: Any) -> Any:
        import torch

        with torch.inference_mode():
            out = self.model.get_text_features(input_ids=ids.to(self.device))
        return getattr(out, "pooler_output", out).float()

    def encode(self, ids: Any) -> tuple[Any, Any]:
        """``(text_global (B, D), tokens (B, 32, D))`` in float32 on the encoder's device."""
        import torch

        distinct, where = torch.unique(ids, return_inverse=True)  # (sorted)
        distinct_ids = distinct.tolist()
        todo = [t for t in distinct_ids if t not in self._tokens]
        for start in range(0, len(todo), self.batch_size):
            part = todo[start : start + self.batch_size]
            alone = torch.tensor([[SOT, t, EOT] for t in part])
            for t, vector in zip(part, self._embed(alone)):
                self._tokens[t] = vector
        # one gather: each id's vector looked up once, not once per position in Python
        table = torch.stack([self._tokens[t] for t in distinct_ids])
        tokens = table[where.to(table.device)]
        rows = [self._embed(ids[s : s + self.batch_size]) for s in range(0, len(ids), self.batch_size)]
        return torch.cat(rows), tokens
