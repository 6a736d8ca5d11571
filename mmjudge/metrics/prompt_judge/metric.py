"""Judges that need only a prompt: a VLM (GPT-4o in the papers) writes an answer holding a number, and the
score is read from the probabilities of the tokens it wrote there. One metric, one configuration per
published prompt, the prompts and reading rules as data (``mmjudge/prompts/<family>.toml``):

=================== =============== ==========================================================================
config              family          what
=================== =============== ==========================================================================
``g_veval``         ``g_veval``     G-VEval (Tong et al., AAAI 2025), image only ("ref-free")
``g_veval_ref_only``                G-VEval, references only, no image
``g_veval_combined``                G-VEval, image and references
``gpt_fleur``       ``gpt_fleur``   FLEUR's prompt on GPT-4o (HarmonicEval's GPT-FLEUR)
``gpt_reffleur``                    RefFLEUR's prompt on GPT-4o
``vela_gpt4o``      ``vela_gpt4o``  VELA Table 1's "GPT-4o w/o references": a STAND-IN prompt (see its file)
``vela_gpt4o_refs``                 VELA Table 1's "GPT-4o w/ references": a STAND-IN prompt
=================== =============== ==========================================================================

Every request is a :class:`~mmjudge.judges.base.ScoredGenerationRequest` (cached like every judge call),
answered by any judge that lists the probabilities of what it generates: the OpenAI-compatible backend
(OpenAI, vLLM, SGLang, llama.cpp), a local ``transformers`` model, the ``dummy`` stand-in. How the number
is read is :mod:`mmjudge.metrics.prompt_judge.reading`. A multi-perspective family (``vela_gpt4o``) asks
one question per perspective and returns a column per perspective plus their mean (``overall``).

>>> from PIL import Image
>>> from mmjudge.metrics.prompt_judge import PromptJudge
>>> g = PromptJudge("g_veval", judge="dummy", cache=False)  # hash-based stand-in: it writes no score
>>> out = g.compute(predictions=["A dog on a beach."], images=[Image.new("RGB", (8, 8))], progress=False)
>>> out["score"], out["score_status"], g.primary
([nan], ['no_rating'], 'score')
>>> print(g.prompt("A dog.", None).splitlines()[-8])
A dog.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.errors import check_positive_int
from mmjudge.images import DEFAULT_MAX_PIXELS
from mmjudge.inputs import DEFAULT_MAX_TEXT_CHARS, finite_mean
from mmjudge.judges.base import Judge
from mmjudge.judges.requests import ScoredGenerationRequest, Turn
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import CacheOption, build_text_judge, set_text_limits
from mmjudge.metrics.prompt_judge.reading import READINGS, read
from mmjudge.metrics.spec import (
    IMAGES,
    PREDICTIONS,
    PROGRESS,
    REFERENCES,
    ChunkScores,
    InputSpec,
    Item,
    MetricSpec,
    OutputSpec,
)
from mmjudge.metrics.statuses import ERROR, NO_RATING, OK
from mmjudge.prompts import load_prompt_file

FAMILIES = ("g_veval", "gpt_fleur", "vela_gpt4o")


@dataclass(frozen=True)
class PromptConfig:
    """One configuration: its family's file data and its own prompt and inputs."""

    name: str
    family: str
    version: str
    label: str
    prompt: str
    uses_references: bool
    uses_image: bool
    data: dict

    @property
    def criteria(self) -> list[str]:
        return list(self.data.get("criteria") or [])

    @property
    def scale(self) -> tuple[float, float]:
        low, high = self.data["scale"]
        return float(low), float(high)


def _load_configs() -> dict[str, PromptConfig]:
    out: dict[str, PromptConfig] = {}
    for family in FAMILIES:
        data = load_prompt_file(family)
        if data.get("reading") not in READINGS:
            raise ValueError(f"mmjudge/prompts/{family}.toml: `reading` must be one of {READINGS}.")
        shared = load_prompt_file(data["prompts_from"]) if data.get("prompts_from") else {}
        for name, config in data["configs"].items():
            prompt = config["prompt"] if "prompt" in config else shared[config["prompt_key"]]
            out[name] = PromptConfig(
                name=name,
                family=family,
                version=str(data["version"]) + (f"+{data['prompts_from']}@{shared['version']}" if shared else ""),
                label=config["label"],
                prompt=prompt,
                uses_references=bool(config["uses_references"]),
                uses_image=bool(config["uses_image"]),
                data={k: v for k, v in data.items() if k != "configs"},
            )
    return out


PROMPT_CONFIGS = _load_configs()
CONFIGS = tuple(PROMPT_CONFIGS)


def _outputs(config: PromptConfig) -> tuple[OutputSpec, ...]:
    names = config.criteria or ["score"]
    outs: list[OutputSpec] = []
    for name in names:
        outs += [
            OutputSpec(name, "score", f"{name}: the expectation of the number the judge wrote", True, config.scale),
            OutputSpec(f"{name}_printed", "diagnostic", "the number the judge wrote", None, config.scale, ()),
            OutputSpec(f"{name}_status", "text", "ok, no_rating (no number to read) or error", None, aggregates=()),
            OutputSpec(
                f"{name}_note", "text", "what the judge wrote instead of a number, or the error", None, aggregates=()
            ),
            OutputSpec(f"{name}_response", "text", "the judge's whole answer", None, aggregates=()),
        ]
    if config.criteria:
        outs.insert(0, OutputSpec("overall", "score", "mean of the perspectives that got a score", True, config.scale))
    return tuple(outs)


class PromptJudge(Metric):
    """A prompt-only judge (see the module) on any judge that lists the probabilities of what it writes.

    Args:
        config_name: one of :data:`CONFIGS`.
        model: judge model; default the family's (``openai:gpt-4o-2024-05-13`` for G-VEval, as its code;
            ``openai:gpt-4o-2024-08-06`` for GPT-FLEUR, as HarmonicEval's appendix). ``openai:`` models need
            ``OPENAI_API_KEY``; ``base_url=`` points the backend at any OpenAI-compatible server.
        judge: backend name or a ready :class:`~mmjudge.judges.Judge`.
        max_new_tokens: tokens the judge may write (default the family's: 512 for G-VEval's reasoning).
        top_logprobs: alternatives listed per position (default the family's: 5 for G-VEval, as its code).
        cache: ``True`` (default cache file), ``False`` or a path.
        **judge_kwargs: passed to the backend (``base_url``, ``max_concurrency``, ``device`` …).
    """

    name = "prompt_judge"
    configs = CONFIGS

    def __init__(
        self,
        config_name: str = "g_veval",
        model: str | None = None,
        judge: Judge | str | None = None,
        max_new_tokens: int | None = None,
        top_logprobs: int | None = None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS,
        long_texts: str = "error",
        cache: CacheOption = True,
        **judge_kwargs: Any,
    ):
        self.config_name = self.check_config(config_name)
        self.config = PROMPT_CONFIGS[self.config_name]
        data = self.config.data
        # None: the family's; anything else a whole number of at least 1 (0 is not "the default", 2.9 not 2).
        self.max_new_tokens = (
            int(data["max_new_tokens"])
            if max_new_tokens is None
            else check_positive_int(max_new_tokens, "max_new_tokens")
        )
        self.top_logprobs = (
            int(data["top_logprobs"]) if top_logprobs is None else check_positive_int(top_logprobs, "top_logprobs")
        )
        set_text_limits(self, max_pixels, max_text_chars, long_texts)
        self.judge = build_text_judge(model, judge, cache, judge_kwargs, data["default_model"])
        self.judge.require(
            "scores_generation",
            f"prompt_judge {self.config_name!r}",
            "it reads the probabilities of the number it writes",
        )
        if self.config.uses_image:
            self.judge.require_images(f"prompt_judge {self.config_name!r}", "shows the judge the image")

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = PROMPT_CONFIGS[cls.check_config(config_name)]
        inputs: tuple[InputSpec, ...] = (PREDICTIONS,)
        if config.uses_image:
            inputs += (IMAGES,)
        if config.uses_references:
            inputs += (REFERENCES,)
        outputs = _outputs(config)
        return MetricSpec(
            "prompt_judge",
            config.name,
            inputs,
            outputs,
            "overall" if config.criteria else "score",
            f"{config.label}: a judge's written score read from its token probabilities",
            label=config.label,
            judged=True,
            options=(PROGRESS,),
        )

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.judge,)

    def signature_fields(self) -> dict[str, Any]:
        # `listed`: alternatives asked per generated position (a judge's own `top_logprobs` caps it).
        return {
            **self.judge.signature_fields(),
            "prompt": f"{self.config_name}@{self.config.version}",
            "reading": self.config.data["reading"],
            "listed": self.top_logprobs,
            "max_new_tokens": self.max_new_tokens,
        }

    def prompt(self, text: str, references: Sequence[str] | None, criterion: str | None = None) -> str:
        """The prompt for one candidate (and its references; ``criterion`` for multi-perspective families)."""
        data = self.config.data
        prompt = self.config.prompt.replace(data["candidate_placeholder"], text)
        if self.config.uses_references:
            joined = data["references_join"].join(references or [])
            prompt = prompt.replace(
                data["references_placeholder"], f"{data['references_prefix']}{joined}{data['references_suffix']}"
            )
        if criterion is not None:
            prompt = prompt.replace("{definition}", data["definitions"][criterion])
        return prompt

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        criteria = self.config.criteria or [None]
        requests, slots = [], []
        for k, item in enumerate(items):
            for criterion in criteria:
                requests.append(
                    ScoredGenerationRequest(
                        turns=[Turn("user", self.prompt(item.text, item.references, criterion))],
                        image=item.image if self.config.uses_image else None,
                        image_digest=item.digest if self.config.uses_image else None,
                        group=criterion or self.config_name,
                        max_new_tokens=self.max_new_tokens,
                        top_logprobs=self.top_logprobs,
                    )
                )
                slots.append((k, criterion or "score"))
        answers = self.judge.generate_scored(requests, progress=progress)
        names = [c or "score" for c in criteria]
        out: dict[str, list] = {
            f"{name}{suffix}": [None] * len(items)
            for name in names
            for suffix in ("", "_printed", "_status", "_note", "_response")
        }
        data = self.config.data
        for (k, name), answer in zip(slots, answers):
            reading = read(
                answer, data["reading"], self.config.scale, data.get("marker", "$"), data.get("normalise", True)
            )
            failed = ERROR if answer.error is not None else NO_RATING
            out[name][k] = reading.score
            out[f"{name}_printed"][k] = reading.printed
            out[f"{name}_status"][k] = OK if math.isfinite(reading.score) else failed
            out[f"{name}_note"][k] = reading.note
            out[f"{name}_response"][k] = answer.text
        if self.config.criteria:
            out["overall"] = [finite_mean([out[c][k] for c in names]) for k in range(len(items))]
        return ChunkScores(out)
