"""CAPTURE's two models, loaded through :func:`mmjudge.models.load_pretrained` and run as the authors' code runs
them.

* :class:`SceneGraphParser` — the FACTUAL T5 scene-graph parser (``lizhuang144/flan-t5-base-VG-factual-sg``),
  as FactualSceneGraph 0.7.3's ``SceneGraphParser.parse(sentences, beam_size=5, max_output_len=128)`` runs
  it: the prompt ``"Generate Scene Graph: " + sentence``, inputs cut to the batch's longest prompt (at most
  64 tokens, counted without special tokens, so the longest loses its last token to ``</s>``), beam search
  with 5 beams, ``max_length=128``, early stopping, decoding started from the pad token; each text's
  sentences form one batch (up to 32), as they do there.
* :class:`SentenceEncoder` — a sentence-transformers model (``sentence-transformers/all-mpnet-base-v2``) read
  with ``transformers``: tokens truncated at the model's ``max_seq_length``, mean pooling over the attention
  mask, L2 normalisation (CAPTURE normalises again). Only mean pooling is read; another pooling is refused.

Both take a Hub id, a local folder, ``"tiny-random"`` (random weights, plumbing only) or a callable returning
``(model, tokenizer)``; float32 on every device by default, as the package runs them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge.errors import check_batch_size

PARSER = "lizhuang144/flan-t5-base-VG-factual-sg"
ENCODER = "sentence-transformers/all-mpnet-base-v2"
PROMPT = "Generate Scene Graph: "


class SceneGraphParser:
    """Sentences in, FactualSceneGraph's graph texts out (:func:`mmjudge.metrics.capture.graphs.graph_text`).

    Args:
        model: the T5 parser (default :data:`PARSER`).
        beam_size, max_input_len, max_output_len, batch_size: 5, 64, 128, 32, as CAPTURE calls the parser.
        device, dtype, revision: as :func:`mmjudge.models.load_pretrained` reads them (default float32).
    """

    def __init__(
        self,
        model: Any = PARSER,
        beam_size: int = 5,
        max_input_len: int = 64,
        max_output_len: int = 128,
        batch_size: int = 32,
        device: str | None = None,
        dtype: str | None = None,
        revision: str | None = None,
    ):
        from transformers import AutoModelForSeq2SeqLM

        from mmjudge.models import load_pretrained, load_tokenizer

        check_batch_size(batch_size)
        loaded = load_pretrained(
            model,
            [AutoModelForSeq2SeqLM],
            load_tokenizer,
            device=device,
            dtype=dtype,
            gpu_dtype="float32",
            revision=revision,
            family="scene_graph_t5",
        )
        self.model, self.tokenizer, self.identity = loaded.model.eval(), loaded.processor, loaded.identity
        self.device = loaded.device
        self.beam_size, self.max_input_len, self.max_output_len = beam_size, max_input_len, max_output_len
        self.batch_size = batch_size

    def settings(self) -> dict[str, Any]:
        return {"beams": self.beam_size, "max_input": self.max_input_len, "max_output": self.max_output_len}

    def parse(self, sentences: Sequence[str]) -> list[str]:
        """One graph text per sentence."""
        from mmjudge.metrics.capture.graphs import graph_text

        out: list[str] = []
        for start in range(0, len(sentences), self.batch_size):
            prompts = [PROMPT + s.strip() for s in sentences[start : start + self.batch_size]]
            out += [graph_text(t) for t in self._generate(prompts)]
        return out

    def _generate(self, prompts: list[str]) -> list[str]:
        import torch

        longest = max(len(self.tokenizer.encode(p, add_special_tokens=False)) for p in prompts)
        encoded = self.tokenizer(
            prompts,
            max_length=min(self.max_input_len, longest),
            truncation=True,
            padding="longest",
            return_tensors="pt",
        )
        with torch.no_grad():
            generated = self.model.generate(
                encoded["input_ids"].to(self.device),
                attention_mask=encoded["attention_mask"].to(self.device),
                use_cache=True,
                decoder_start_token_id=self.tokenizer.pad_token_id,
                num_beams=self.beam_size,
                max_length=self.max_output_len,
                early_stopping=self.beam_size > 1,
                num_return_sequences=1,
            )
        return self.tokenizer.batch_decode(generated, skip_special_tokens=True, clean_up_tokenization_spaces=True)


def _sentence_config(source: Any, revision: str | None) -> dict[str, Any]:
    """The sentence-transformers files beside the weights (``sentence_bert_config.json``, the pooling config),
    when the model is a folder or Hub id that has them."""
    if callable(source):
        return {}
    from transformers.utils import cached_file

    config: dict[str, Any] = {}
    for name, key in (("sentence_bert_config.json", "model"), ("1_Pooling/config.json", "pooling")):
        path = cached_file(str(source), name, revision=revision, _raise_exceptions_for_missing_entries=False)
        if path:
            with open(path, encoding="utf-8") as f:
                config[key] = json.load(f)
    return config


class SentenceEncoder:
    """Phrases in, L2-normalised mean-pooled embeddings out (float32, as sentence-transformers returns them).

    Args:
        model: a sentence-transformers model (default :data:`ENCODER`).
        batch_size: phrases per forward pass (4, as CAPTURE's ``encode_phrases`` asks).
        device, dtype, revision: as :func:`mmjudge.models.load_pretrained` reads them (default float32).

    Raises:
        ValueError: the model's pooling is not mean pooling.
    """

    def __init__(
        self,
        model: Any = ENCODER,
        batch_size: int = 4,
        device: str | None = None,
        dtype: str | None = None,
        revision: str | None = None,
    ):
        from transformers import AutoModel

        from mmjudge.models import load_pretrained, load_tokenizer, resolve_source

        check_batch_size(batch_size)
        source = resolve_source(model, "sentence_encoder")
        config = _sentence_config(source, revision)
        pooling = config.get("pooling", {"pooling_mode_mean_tokens": True})
        modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
        if modes != ["pooling_mode_mean_tokens"]:
            raise ValueError(f"CAPTURE's sentence encoder must use mean pooling, but {model!r} pools with {modes}.")
        loaded = load_pretrained(
            source, [AutoModel], load_tokenizer, device=device, dtype=dtype, gpu_dtype="float32", revision=revision
        )
        self.model, self.tokenizer, self.identity = loaded.model.eval(), loaded.processor, loaded.identity
        self.device = loaded.device
        limit = config.get("model", {}).get("max_seq_length") or self.tokenizer.model_max_length
        self.max_length = int(min(limit, 100_000))
        self.lowercase = bool(config.get("model", {}).get("do_lower_case", False))
        self.batch_size = batch_size

    def encode(self, phrases: Sequence[str]) -> np.ndarray:
        """``(len(phrases), dim)`` unit vectors."""
        import torch

        texts = [p.lower() for p in phrases] if self.lowercase else list(phrases)
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                texts[start : start + self.batch_size],
                truncation=True,
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            ).to(self.device)
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def similarity(self, cands: list[str], refs: list[str]) -> np.ndarray:
        """Cosine matrix (candidates × references), encoded together as ``encode_phrases`` does."""
        vectors = self.encode(cands + refs)
        vectors = vectors / np.sqrt(np.sum(vectors**2, axis=1, keepdims=True))
        return vectors[: len(cands)] @ vectors[len(cands) :].T
