"""BARTScore (Yuan et al. 2021): text quality as a seq2seq model's log-likelihood.

score(x → y) = (1/|y|) Σ_t log p(y_t | y_<t, x), the mean log-probability of the target's tokens
(special tokens included, as the original implementation counts them) under a BART model reading the
source. For captions with references (per reference r, candidate c):

* ``precision``: score(r → c); ``recall``: score(c → r); ``f``: their arithmetic mean (the paper's F).

Over several references the per-reference values are reduced with ``max`` (default) or ``mean``.
Scores are negative log-likelihood-like numbers (higher is better), comparable only under one model.
Default model ``facebook/bart-large-cnn``, as published; the tests use a tiny random BART.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_MODEL = "facebook/bart-large-cnn"
DIRECTIONS = ("precision", "recall", "f")
REDUCTIONS = ("max", "mean")


class BARTScorer:
    """A loaded BART model that scores source → target pairs; keep it to avoid reloading."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 8,
        device: str | None = None,
        revision: str | None = None,
        max_length: int = 1024,
    ):
        from transformers import AutoModelForSeq2SeqLM

        from mmjudge.models import load_pretrained, load_tokenizer

        loaded = load_pretrained(
            model, [AutoModelForSeq2SeqLM], load_tokenizer, device=device, dtype="float32", revision=revision
        )
        self.model, self.tokenizer, self.model_identity = loaded.model, loaded.processor, loaded.identity
        self.device = self.model.device
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)

    @property
    def signature_fields(self) -> dict:
        return {"model": self.model_identity.label()}

    def log_likelihood(self, sources: Sequence[str], targets: Sequence[str], progress: bool = True) -> np.ndarray:
        """Mean token log-probability of each target given its source (array of length ``len(sources)``)."""
        import torch

        starts = range(0, len(sources), self.batch_size)
        if progress and len(starts) > 1:
            from mmjudge.progress import progress_bar

            starts = progress_bar(starts, desc="BARTScore", unit="batch")
        scores = []
        with torch.inference_mode():
            for start in starts:
                src = self.tokenizer(
                    list(sources[start : start + self.batch_size]),
                    max_length=self.max_length,
                    truncation=True,
                    padding=True,
                    return_tensors="pt",
                )
                tgt = self.tokenizer(
                    list(targets[start : start + self.batch_size]),
                    max_length=self.max_length,
                    truncation=True,
                    padding=True,
                    return_tensors="pt",
                )
                labels = tgt["input_ids"].masked_fill(tgt["attention_mask"] == 0, -100)
                out = self.model(
                    input_ids=src["input_ids"].to(self.device),
                    attention_mask=src["attention_mask"].to(self.device),
                    labels=labels.to(self.device),
                )
                log_probs = out.logits.float().log_softmax(dim=-1)
                mask = tgt["attention_mask"].to(self.device)
                picked = log_probs.gather(-1, tgt["input_ids"].to(self.device).unsqueeze(-1)).squeeze(-1)
                scores.append(((picked * mask).sum(dim=1) / mask.sum(dim=1)).cpu().numpy().astype(np.float64))
        return np.concatenate(scores) if scores else np.zeros(0)

    def compute_score(
        self,
        candidates: Sequence[str],
        references: Sequence[Sequence[str]],
        direction: str = "f",
        reduction: str = "max",
        progress: bool = True,
    ) -> np.ndarray:
        """Per-item BARTScore of each candidate against its references."""
        if direction not in DIRECTIONS:
            raise ValueError(f"Expected argument `direction` to be one of {DIRECTIONS}, but got {direction!r}.")
        if reduction not in REDUCTIONS:
            raise ValueError(f"Expected argument `reduction` to be one of {REDUCTIONS}, but got {reduction!r}.")
        flat_cands = [c for c, refs in zip(candidates, references) for _ in refs]
        flat_refs = [r for refs in references for r in refs]
        parts = []
        if direction in ("precision", "f"):
            parts.append(self.log_likelihood(flat_refs, flat_cands, progress))
        if direction in ("recall", "f"):
            parts.append(self.log_likelihood(flat_cands, flat_refs, progress))
        per_pair = np.mean(parts, axis=0)
        out, k = np.zeros(len(candidates)), 0
        for i, refs in enumerate(references):
            chunk = per_pair[k : k + len(refs)]
            out[i] = chunk.max() if reduction == "max" else chunk.mean()
            k += len(refs)
        return out
