"""VELA (Matsuda et al., 2025): Descriptiveness, Relevance and Fluency of long captions, fast.

An LLM reads the references and the candidate in one forward pass (no generation), Long-CLIP compares the
image with the candidate, and a trained head maps both to three scores in [0, 1] (see
:mod:`mmjudge.metrics.vela.model`). The primary output ``vela`` is their mean.

Scores need a checkpoint trained with ``mmjudge train-vela`` and the Long-CLIP it was trained with
(converted by ``mmjudge convert-longclip``). ``allow_untrained=True`` scores with a fresh random head —
plumbing and speed only, the numbers mean nothing.

>>> VELA.spec_for().primary, [o.name for o in VELA.spec_for().outputs]
('vela', ['vela', 'descriptiveness', 'relevance', 'fluency'])
"""

from __future__ import annotations

import warnings
from typing import Any

from mmjudge.errors import check_batch_size, check_bool
from mmjudge.images import DEFAULT_MAX_PIXELS
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import given_once
from mmjudge.metrics.spec import IMAGES, PREDICTIONS, REFERENCES, ChunkScores, Item, MetricSpec, OutputSpec
from mmjudge.metrics.vela.criteria import CRITERIA, CRITERION_NAMES
from mmjudge.metrics.vela.model import DEFAULT_LLM


class VELA(Metric):
    """VELA scores for long captions.

    Args:
        checkpoint: a folder written by ``mmjudge train-vela`` (``config.json`` + ``vela.safetensors``).
            The authors' ``Ka2ukiMatsuda/vela`` release is refused with a clear message (its layout could
            not be verified).
        clip_model: the Long-CLIP folder (transformers format) the checkpoint was trained with; required.
        llm: the LLM (default: the one stored in the checkpoint, e.g. ``Qwen/Qwen2.5-3B-Instruct``).
        device, dtype: see :mod:`mmjudge.models` (bf16 on GPU, fp32 on CPU by default).
        batch_size: prompts per LLM forward pass.
        allow_untrained: without a checkpoint, score with a random head (plumbing and speed tests only).
        vela: a ready :class:`mmjudge.metrics.vela.VelaModel` (tests, training loops).
        model: another name for ``llm`` (the CLI's ``--model``).
        cache: accepted for the CLI's ``--cache/--no-cache``; VELA caches nothing on disk.
        compile: ``torch.compile`` the MLPs and norms of the LLM's and CLIP's blocks
            (:func:`mmjudge.models.compile_repeated_blocks`); scores equal up to float rounding. Off by default.
    """

    name = "vela"
    configs = ("vela",)

    def __init__(
        self,
        checkpoint: str | None = None,
        clip_model: Any = None,
        llm: Any = None,
        device: str | None = None,
        dtype: Any = None,
        batch_size: int = 8,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        allow_untrained: bool = False,
        vela: Any = None,
        config_name: str | None = None,
        model: Any = None,
        cache: Any = None,
        compile: bool = False,
    ):
        self.config_name = self.check_config(config_name)
        compile = check_bool(compile, "compile")  # before loading anything: `--set compile=no` is the string "no"
        llm = given_once(llm, model, "llm", "the LLM")  # the CLI's --model (the judge model) is VELA's LLM
        if cache not in (None, False):
            warnings.warn("VELA keeps no judge cache (one forward pass per caption); `cache` is ignored.", stacklevel=2)
        check_batch_size(batch_size)
        self.batch_size, self.max_pixels = batch_size, int(max_pixels)
        from mmjudge.models import local_fingerprint

        if vela is not None:
            self.vela, self.checkpoint_id = vela, "in-memory"
        elif checkpoint is not None:
            from pathlib import Path

            from mmjudge.metrics.vela import load_vela

            self.vela = load_vela(checkpoint, clip_model=clip_model, llm=llm, device=device, dtype=dtype)
            self.checkpoint_id = local_fingerprint(Path(str(checkpoint)).expanduser())
        elif allow_untrained:
            from mmjudge.metrics.vela import new_vela

            warnings.warn(
                "VELA without a checkpoint: a random head, scores mean nothing (plumbing/speed only).", stacklevel=2
            )
            self.vela = new_vela(llm or DEFAULT_LLM, clip_model, device=device, dtype=dtype, seed=42)
            self.checkpoint_id = "untrained-seed42"
        else:
            raise ValueError(
                "VELA needs `checkpoint=DIR`, a folder trained with `mmjudge train-vela` (and `clip_model=` the "
                "Long-CLIP folder it was trained with); pass allow_untrained=True only for plumbing tests."
            )
        if compile:  # regional torch.compile of the LLM's and CLIP's blocks; outputs equal up to float rounding
            from mmjudge.models import compile_repeated_blocks

            compile_repeated_blocks(self.vela.llm)
            compile_repeated_blocks(self.vela.clip.model)

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        cls.check_config(config_name)
        outputs = (OutputSpec("vela", "score", "mean of the three criterion scores", True, (0.0, 1.0)),) + tuple(
            OutputSpec(CRITERION_NAMES[c], "score", f"{CRITERION_NAMES[c].capitalize()} (0-1)", True, (0.0, 1.0))
            for c in CRITERIA
        )
        return MetricSpec(
            "vela",
            "vela",
            (PREDICTIONS, IMAGES, REFERENCES),
            outputs,
            "vela",
            "LLM-hybrid long-caption metric: Descriptiveness, Relevance, Fluency",
            label="VELA",
            requires=("checkpoint", "clip_model"),
        )

    def signature_fields(self) -> dict[str, Any]:
        cfg = self.vela.config
        return {
            "llm": self.vela.identities["llm"],
            "clip": self.vela.identities["clip"],
            "dtype": self.vela.identities["dtype"],
            "checkpoint": self.checkpoint_id,
            "prompt": f"vela@{cfg.prompt_version}",
            "criteria": "/".join(cfg.criteria),
            "max_length": cfg.max_length,
        }

    def _reference_owner(self) -> str | None:
        return "VELA"

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        values = self.vela.score(
            [it.text for it in items],
            [it.image for it in items],
            [it.references for it in items],
            batch_size=self.batch_size,
            progress=progress,
        )
        order = list(self.vela.config.criteria)
        out: dict[str, Any] = {"vela": [float(v) for v in values.mean(axis=1)]}
        for c in CRITERIA:
            out[CRITERION_NAMES[c]] = [float(v) for v in values[:, order.index(c)]]
        return ChunkScores(out)
