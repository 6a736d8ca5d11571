"""What a language model's attention layers allow when a prefix's KV cache is reused: read from its config.

Why this matters: the shared-prefix path runs a prefix once and continues several requests from copies of
its cache. That is the same computation as the plain path only if every layer sees, for every token, the
keys it would see in the full prompt:

* full attention (every family here): any layout works, padding is masked;
* sliding-window attention (Gemma 3: 1,024 tokens; Aya Vision / Cohere2: 4,096; Mistral with
  ``sliding_window``): a token sees the ``window`` positions before it *counted in cache slots*, so the
  padding between a prefix and a shorter suffix would push real tokens out of the window; the shared path
  then closes that gap (see :mod:`~mmjudge.judges.local.prefix_sharing`) or hands the request to the plain
  path;
* cross-attention layers (Mllama): their cache holds the image's keys, not the prompt's; they are
  selected per request but never shifted;
* anything else (chunked attention as in Llama 4, linear/recurrent layers): not shared at all, the plain
  path answers (correct, only without the speed-up).

>>> from types import SimpleNamespace
>>> gemma = SimpleNamespace(layer_types=["sliding_attention", "full_attention"], sliding_window=1024)
>>> attention_layout(SimpleNamespace(config=SimpleNamespace(get_text_config=lambda decoder=True: gemma)))
AttentionLayout(window=1024, cross_attention_layers=frozenset(), unsupported=())
>>> llama4 = SimpleNamespace(layer_types=["chunked_attention", "full_attention"], attention_chunk_size=8192)
>>> attention_layout(SimpleNamespace(config=SimpleNamespace(get_text_config=lambda decoder=True: llama4))).shareable
False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Layer kinds whose cached keys can be reused by the shared-prefix path.
SHAREABLE_KINDS = frozenset({"full_attention", "sliding_attention"})


@dataclass(frozen=True)
class AttentionLayout:
    """The facts about a model's attention that prefix sharing needs.

    Attributes:
        window: the smallest sliding window of its sliding-window layers (tokens), ``None`` without any.
        cross_attention_layers: indices of cross-attention layers (their cache holds image keys).
        unsupported: layer kinds the shared path cannot reuse (it is then off for this model).
    """

    window: int | None = None
    cross_attention_layers: frozenset = frozenset()
    unsupported: tuple = ()

    @property
    def shareable(self) -> bool:
        return not self.unsupported


def attention_layout(model: Any) -> AttentionLayout:
    """The :class:`AttentionLayout` of ``model`` (a VLM's text config, or the config itself)."""
    config = model.config
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    kinds = getattr(text, "layer_types", None)
    if not kinds:  # as transformers infers them when a config does not list them
        if getattr(text, "sliding_window", None) is not None:
            kinds = ["sliding_attention"]
        elif getattr(text, "attention_chunk_size", None) is not None:
            kinds = ["chunked_attention"]
        else:
            kinds = ["full_attention"]
    window = getattr(text, "sliding_window", None) if "sliding_attention" in kinds else None
    cross = frozenset(getattr(text, "cross_attention_layers", None) or ())
    unsupported = tuple(sorted(set(kinds) - SHAREABLE_KINDS))
    if "sliding_attention" in kinds and not window:
        unsupported += ("sliding_attention without a sliding_window",)
    return AttentionLayout(int(window) if window else None, cross, unsupported)
