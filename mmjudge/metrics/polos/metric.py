"""Polos (Wada et al., CVPR 2024): a supervised caption metric trained on human judgments (Polaris), from
the authors' checkpoint.

For a candidate, its image and each reference, SimCSE-RoBERTa sentence embeddings and raw CLIP ViT-B/32
features are combined (:mod:`mmjudge.metrics.polos.head`) and a feed-forward head gives a score in (0, 1);
the candidate's score is the best over its references.

The authors' layer mix normalises each RoBERTa layer with statistics pooled over the whole batch their
``predict`` was given, so there a caption's score depends on the captions batched with it. Here each text
is normalised alone by default (their ``predict(batch_size=1)``): a caption's score is its own, whatever
else is scored, in any order, chunk or resumed run. ``norm_batch_size=32`` reproduces their evaluation
scripts (``predict(batch_size=32)`` over the benchmark in its order): items are grouped 32 by 32 by their
position in the whole input, texts are normalised within their group, and each group uses as many references
per item as its item with the fewest has (their collate keeps that many). Chunks then close only between
groups (a ``chunk_size`` or the image bound is rounded up to the group's end), so the scores are the same in
any chunking; a resumed or sharded run must start at a multiple of the group size (else a ``ValueError``).

>>> Polos.spec_for().primary, Polos.spec_for().requires
('polos', ('checkpoint',))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mmjudge.errors import check_batch_size, check_positive_int
from mmjudge.images import DEFAULT_MAX_PIXELS
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import given_once
from mmjudge.metrics.polos.model import PREFIX, PolosModel
from mmjudge.metrics.spec import IMAGES, PREDICTIONS, REFERENCES, ChunkScores, Item, MetricSpec, OutputSpec


class Polos(Metric):
    """Polos scores from the authors' ``reprod.ckpt``.

    Args:
        checkpoint: ``reprod.ckpt`` from the authors' ``reprod.zip`` (download link in the card); read
            offline, named in the signature by its SHA-256. ``hparams.yaml`` beside it is read too.
        text_tokenizer: the RoBERTa tokenizer (default the checkpoint's ``princeton-nlp/sup-simcse-roberta-base``
            from the Hugging Face cache; or a folder).
        clip_tokenizer: OpenAI CLIP's BPE (default: the copy ``open-clip-torch`` installs).
        clip_model: a ``transformers`` CLIP ViT-B/32 for checkpoints without ``clip.*`` weights.
        norm_batch_size: ``None`` (default: each text normalised alone) or the authors' evaluation batch
            size (32) to reproduce their numbers exactly (see the module's description).
        device, dtype, batch_size: float32 on every device by default, as the authors ran it.
        max_pixels: larger images are refused as possible decompression bombs.
        cache: ``False`` (default), ``True`` or a path: keep CLIP embeddings in that SQLite file.
        model: another name for ``checkpoint`` (the CLI's ``--model``).
    """

    name = "polos"
    configs = ("polos",)

    def __init__(
        self,
        checkpoint: str | None = None,
        config_name: str | None = None,
        text_tokenizer: Any = None,
        clip_tokenizer: Any = None,
        clip_model: Any = None,
        norm_batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 64,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        cache: Any = False,
        model: str | None = None,
    ):
        self.config_name = self.check_config(config_name)
        checkpoint = given_once(checkpoint, model, "checkpoint")
        if checkpoint is None:
            raise ValueError(
                "Polos needs `checkpoint=`, the authors' reprod.ckpt (from "
                "https://polos-polaris.s3.ap-northeast-1.amazonaws.com/reprod.zip; see metrics/polos/README.md)."
            )
        check_batch_size(batch_size)
        if norm_batch_size is not None:
            check_positive_int(norm_batch_size, "norm_batch_size")
        self.norm_batch_size, self.max_pixels = norm_batch_size, int(max_pixels)
        self.model = PolosModel(
            checkpoint, text_tokenizer, clip_tokenizer, clip_model, device, dtype, batch_size, cache
        )

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = cls.check_config(config_name)
        return MetricSpec(
            "polos",
            config,
            (PREDICTIONS, IMAGES, REFERENCES),
            (
                OutputSpec(
                    "polos", "score", "Polos score: best over the references of the trained head", True, (0.0, 1.0)
                ),
            ),
            "polos",
            "learned caption metric (SimCSE + CLIP features, trained on human judgments)",
            label="Polos",
            requires=("checkpoint",),
        )

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.model.clip,)

    def signature_fields(self) -> dict[str, Any]:
        clip = self.model.clip.identity()
        return {
            "checkpoint": self.model.fingerprint,
            "text_tokenizer": self.model.text_tokenizer_id,
            "clip": f"{clip['model']}@{clip['revision']}",
            "clip_tokenizer": clip.get("tokenizer", "clip_model"),
            "dtype": str(self.model.dtype).replace("torch.", ""),
            "norm": "per-text" if self.norm_batch_size is None else f"batches-of-{self.norm_batch_size}",
            "prefix": repr(PREFIX),
        }

    @property
    def chunk_multiple(self) -> int:  # type: ignore[override]
        """Chunks close only between groups: a group is normalised whole, whatever the chunking."""
        return self.norm_batch_size or 1

    def _reference_owner(self) -> str | None:
        return "Polos"

    def _texts(self, items: list[Item]) -> tuple[list[str], list[int], list[int], list[list[int]]]:
        """The texts to embed and their normalisation groups; each item's candidate row and reference rows."""
        texts: list[str] = []
        groups: list[int] = []
        if self.norm_batch_size is None:  # each distinct text alone: its own group, embedded once
            rows: dict[str, int] = {}
            for text in [it.text for it in items] + [r for it in items for r in it.references]:
                if text not in rows:
                    rows[text] = len(texts)
                    texts.append(text)
                    groups.append(len(groups))
            return texts, groups, [rows[it.text] for it in items], [[rows[r] for r in it.references] for it in items]
        size = self.norm_batch_size
        by_group: dict[int, list[int]] = {}
        for position, it in enumerate(items):
            start = it.position - it.index  # the input position of the stream's first item
            if start % size:
                raise ValueError(
                    f"Polos with norm_batch_size={size} normalises items in groups of {size} by their position in "
                    f"the whole input, so a run must start at a multiple of {size}, but this one starts at input "
                    f"item {start} (a resumed or sharded run): score from the start in one process, or use "
                    "norm_batch_size=None."
                )
            by_group.setdefault(it.position // size, []).append(position)
        cand_rows, ref_rows = [0] * len(items), [[] for _ in items]
        for members in by_group.values():
            group = len(set(groups))
            for position in members:  # the group's candidates, normalised together
                cand_rows[position] = len(texts)
                texts.append(items[position].text)
                groups.append(group)
            for j in range(min(len(items[p].references) for p in members)):  # their collate's zip
                for position in members:
                    ref_rows[position].append(len(texts))
                    texts.append(items[position].references[j])
                    groups.append(group + 1 + j)
        return texts, groups, cand_rows, ref_rows

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        texts, groups, cand_rows, ref_rows = self._texts(items)
        embedded = self.model.text_embeddings(texts, groups)
        clip = self.model.clip
        flat = [k for rows in ref_rows for k in rows]
        features = {
            "image": clip.encode_images(
                [it.image for it in items], progress=progress, digests=[it.digest for it in items]
            ),
            "cand": clip.encode_texts([PREFIX + it.text for it in items], progress=progress),
            "ref": clip.encode_texts([PREFIX + texts[k] for k in flat], progress=progress),
        }
        pairs, owner, start = [], [], 0
        for i, rows in enumerate(ref_rows):
            pairs += [(i, start + j) for j in range(len(rows))]
            owner += [i] * len(rows)
            start += len(rows)
        scores = self.model.score(pairs, embedded[cand_rows], embedded[flat], features)
        best = np.full(len(items), -np.inf)
        np.maximum.at(best, np.asarray(owner), scores)
        return ChunkScores({"polos": [float(v) for v in best]})
