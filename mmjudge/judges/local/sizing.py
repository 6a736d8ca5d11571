"""``batch_size="auto"`` for a local judge: as many requests as free GPU memory holds at the length of the
longest one, from a generous per-token estimate of the model's memory.

>>> from types import SimpleNamespace
>>> config = SimpleNamespace(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
...                          head_dim=16, intermediate_size=128, vocab_size=1000)
>>> bytes_per_token(SimpleNamespace(config=config, dtype="torch.float32"))
4608
>>> auto_batch_size(free_bytes=10_000_000, tokens=100, per_token=4608, vocab=1000, cap=256)
10
"""

from __future__ import annotations

import os
from typing import Any

# batch_size="auto": requests per batch on CPU; at most this many on GPU; share of free GPU memory used.
CPU_AUTO_BATCH = 8
MAX_AUTO_BATCH = int(os.environ.get("MMJUDGE_MAX_AUTO_BATCH", "256"))
AUTO_MEMORY_FRACTION = 0.5
# Batches at least this large start a long call with a quarter, then half a batch (TransformersJudge.plan): the
# GPU then starts while the next batch is prepared. Smaller ones would split the requests that share a prefix.
MIN_RAMP_BATCH = 32


def text_config(model: Any) -> Any:
    """The language model's config (a VLM's ``text_config``, or the config itself)."""
    config = model.config
    return getattr(config, "text_config", None) or config


def vocab_size(model: Any) -> int:
    return int(getattr(text_config(model), "vocab_size", 32000))


def bytes_per_token(model: Any) -> int:
    """A generous estimate of GPU memory per token in one forward pass: the KV cache of every layer
    plus the transient activations of one layer (MLP intermediate, attention, residual copies)."""
    cfg = text_config(model)
    hidden = int(getattr(cfg, "hidden_size", 4096))
    layers = int(getattr(cfg, "num_hidden_layers", 32))
    heads = int(getattr(cfg, "num_attention_heads", 32))
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
    intermediate = int(getattr(cfg, "intermediate_size", 4 * hidden))
    width = 2 if str(model.dtype) in ("torch.bfloat16", "torch.float16") else 4
    return width * (layers * 2 * kv_heads * head_dim + 4 * intermediate + 8 * hidden)


def auto_batch_size(free_bytes: int, tokens: int, per_token: int, vocab: int, cap: int = MAX_AUTO_BATCH) -> int:
    """Requests per batch: :data:`AUTO_MEMORY_FRACTION` of ``free_bytes`` over what one request of
    ``tokens`` tokens costs (its activations and its float32 logits), between 1 and ``cap``."""
    per_request = tokens * per_token + 2 * 4 * vocab
    return int(max(1, min(cap, (free_bytes * AUTO_MEMORY_FRACTION) // per_request)))
