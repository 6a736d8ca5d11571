"""FLEUR and RefFLEUR (Lee et al., ACL 2024): a VLM rates a caption from 0.0 to 1.0, score smoothed.

The judge (LLaVA-1.5-13B by default) answers the published prompt with a number ``"0.xy"``. Score
smoothing replaces the printed number by expectations under the judge's full-vocabulary softmax:

* ``"0.xy"``: ``Σ_d p₁(d)·d/10 + Σ_d p₂(d)·d/100``, with ``p₁`` / ``p₂`` the digit probabilities at the
  first / second decimal (the second term only when the judge prints a second decimal);
* ``"1.0"``: ``0.9·p(0) + p(1)``, with ``p`` the digit probabilities at the leading digit.

**Fast path (default, no free-running generation).** The prefix the judge would print is teacher-forced
with :class:`~mmjudge.judges.base.RatingRequest` s (cached like every judge call): the leading digit at
the start of the answer (one optional whitespace token first), the ``"."`` after it, the first decimal
after ``"0."`` and the second after ``"0.<d1>"``, each position checking that the judge's greedy token is
the one the prefix assumes. The first three are read from one forward pass over ``"0."``
(``read_prefix``), so a judge printing ``0.xy`` costs two forward passes per sample. A sample whose greedy
tokens deviate from ``0.x[y]`` / ``1.0`` falls back to the reference procedure: greedy generation, the first
``0.xy`` / ``1.0`` in the text, and the digit distributions read at those positions by teacher-forcing the
generated text. See ``docs/fleur_clipscore.md`` for where the two can differ.
``reference_scores`` in the tests' ``tests/helpers/fleur_reference.py`` is the published procedure taken literally
(``generate`` with per-step logits) for ``transformers`` judges; tests and benchmarks only.

The score arithmetic and the walk live in :mod:`mmjudge.metrics.fleur`; this module is the metric.

>>> from PIL import Image
>>> from mmjudge.metrics.fleur import FLEUR
>>> fleur = FLEUR(judge="dummy", cache=False)  # a hash-based stand-in judge: it never prints a score
>>> out = fleur.compute(predictions=["A dog on a beach."], images=[Image.new("RGB", (32, 32))], progress=False)
>>> out["method"], out["score"], out["score_status"], fleur.primary
(['generate'], [nan], ['no_rating'], 'score')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mmjudge.errors import check_bool
from mmjudge.images import DEFAULT_MAX_PIXELS, MAX_ASPECT_RATIO
from mmjudge.inputs import DEFAULT_MAX_TEXT_CHARS
from mmjudge.judges.base import Judge
from mmjudge.judges.requests import GenerationRequest, RatingRequest, RatingResult, Turn
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import CacheOption, build_text_judge, set_text_limits
from mmjudge.metrics.fleur.smoothing import DIGITS, parse_score, smooth_decimals, smooth_one
from mmjudge.metrics.fleur.walk import EXPECTED_NEXT, Walk
from mmjudge.metrics.spec import (
    EXPLAIN,
    PREDICTIONS,
    PROGRESS,
    REFERENCES,
    ChunkScores,
    InputSpec,
    Item,
    MetricSpec,
    OutputSpec,
)
from mmjudge.metrics.statuses import NO_RATING, OK
from mmjudge.prompts import load_prompt_file

__all__ = ["FLEUR", "parse_score", "smooth_decimals", "smooth_one", "FLEUR_PROMPT", "REFFLEUR_PROMPT"]

DEFAULT_MODEL = "llava-hf/llava-1.5-13b-hf"
# The published prompts, verbatim, are data: mmjudge/prompts/fleur.toml (its version is in signatures).
_PROMPTS = load_prompt_file("fleur")
PROMPT_VERSION = _PROMPTS["version"]
CONFIGS = ("fleur", "reffleur")
EXPLAIN_TURN = _PROMPTS["explain_turn"]
FLEUR_PROMPT = _PROMPTS["fleur"]
REFFLEUR_PROMPT = _PROMPTS["reffleur"]

_OUTPUTS = (
    OutputSpec("score", "score", "smoothed score (NaN when the judge printed none)", True, (0.0, 1.0)),
    OutputSpec("raw_score", "diagnostic", "the number the judge prints", None, (0.0, 1.0), ()),
    OutputSpec("method", "text", "'fast' (teacher-forced walk) or 'generate' (fallback)", None, aggregates=()),
    OutputSpec("score_status", "text", "ok, or no_rating: the judge printed no score in [0, 1]", None, aggregates=()),
    OutputSpec("score_note", "text", "what the judge wrote instead of a score", None, aggregates=()),
    OutputSpec("explanation", "text", "the judge's explanation", None, aggregates=(), optional=True),
)


_FLEUR_IMAGES = InputSpec(
    "images",
    "image",
    True,
    "image",
    "one image per prediction: PIL image, path or bytes",
    missing="FLEUR needs `images` (one per prediction): the judge rates the caption against the image.",
)


class FLEUR(Metric):
    """FLEUR (reference-free) and RefFLEUR (with reference captions) on any mmjudge judge.

    Args:
        model: judge model (Hub id or local folder); default ``llava-hf/llava-1.5-13b-hf`` (the paper's).
        judge: backend name (``"transformers"``, ``"dummy"``) or a ready :class:`~mmjudge.judges.Judge`.
        config_name: ``"fleur"`` (default) or ``"reffleur"`` (needs ``references``).
        conversation: prompt format: ``"auto"`` (default: LLaVA's original ``llava_v1`` conversation for
            LLaVA models, the processor's chat template otherwise), ``"llava_v1"``, or ``None`` (chat template).
        method: ``"fast"`` (teacher-forced walk, generation only for deviating samples) or ``"generate"``
            (the reference procedure for every sample, through the judge).
        explain: also generate an explanation ("Why? Tell me the reason.") after the smoothed score.
        max_new_tokens: generation limit of the reference procedure (512 as published).
        max_explanation_tokens: generation limit of each explanation.
        cache: ``True`` (default cache file), ``False`` or a path to an SQLite file.
        **judge_kwargs: passed to the backend (``batch_size``, ``device``, ``dtype``, ``revision``, …).
    """

    name = "fleur"
    configs = CONFIGS
    max_aspect_ratio = MAX_ASPECT_RATIO

    def __init__(
        self,
        model: str | None = None,
        judge: Judge | str | None = None,
        config_name: str = "fleur",
        conversation: str | None = "auto",
        method: str = "fast",
        explain: bool = False,
        max_new_tokens: int = 512,
        max_explanation_tokens: int = 256,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS,
        long_texts: str = "error",
        cache: CacheOption = True,
        **judge_kwargs: Any,
    ):
        config_name = self.check_config(config_name)
        if method not in ("fast", "generate"):
            raise ValueError(f"Expected argument `method` to be 'fast' or 'generate', but got {method!r}.")
        self.config_name = config_name
        self.method = method
        self.explain = check_bool(explain, "explain")
        self.max_new_tokens = int(max_new_tokens)
        self.max_explanation_tokens = int(max_explanation_tokens)
        set_text_limits(self, max_pixels, max_text_chars, long_texts)
        self.judge = build_text_judge(model, judge, cache, judge_kwargs, DEFAULT_MODEL)
        self.judge.require_images("FLEUR", "rates a caption against its image")
        # Both paths read digit probabilities at positions the judge is forced to (the printed score).
        self.judge.require(
            "teacher_forcing", "FLEUR", "it reads the digit distributions at forced positions of the printed score"
        )
        self.judge.require("full_distribution", "FLEUR", "its smoothing sums unnormalised digit probabilities")
        if self.method == "generate":  # explain=True is checked in compute, where the effective `explain` is known
            self.judge.require("can_generate", "FLEUR with method='generate'", "it generates text")
        self.conversation = _resolve_conversation(conversation, self.judge)

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = cls.check_config(config_name)
        inputs = (PREDICTIONS, _FLEUR_IMAGES) + ((REFERENCES,) if config == "reffleur" else ())
        what = "with reference captions" if config == "reffleur" else "reference-free"
        return MetricSpec(
            "fleur",
            config,
            inputs,
            _OUTPUTS,
            "score",
            f"a VLM's smoothed 0-1 caption score, {what}",
            label="RefFLEUR" if config == "reffleur" else "FLEUR",
            judged=True,
            options=(EXPLAIN, PROGRESS),
        )

    @property
    def uses_references(self) -> bool:
        return self.config_name == "reffleur"

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.judge,)

    def signature_fields(self) -> dict[str, Any]:
        return dict(
            **self.judge.signature_fields(),
            prompt=f"{self.config_name}@{PROMPT_VERSION}",
            conversation=self.conversation or "chat_template",
            smoothing="digit-expectation",
            decoding="teacher-forced-greedy" if self.method == "fast" else f"greedy-generate-{self.max_new_tokens}",
        )

    def prompt(self, text: str, references: Sequence[str] | None = None) -> str:
        """The published prompt for one candidate (and its references, for RefFLEUR)."""
        if self.uses_references:
            return REFFLEUR_PROMPT.format(references="\n".join(references or []), candidate=text)
        return FLEUR_PROMPT.format(candidate=text)

    # ---------------------------------------------------------------------------------------- scoring
    def _request(
        self, prompt: str, picture, digest: str, prefix: str = "", turns=None, read_prefix: bool = False
    ) -> RatingRequest:
        return RatingRequest(
            turns=turns or [Turn("user", prompt)],
            image=picture,
            choices=DIGITS,
            answer_prefix=prefix,
            group=self.config_name,
            conversation=self.conversation,
            read_prefix=read_prefix,
            image_digest=digest,
        )

    def _score_chunk(self, items: list[Item], explain: bool = False, progress: bool = False) -> ChunkScores:
        pictures = [it.image for it in items]
        digests = [it.digest for it in items]
        prompts = [self.prompt(it.text, it.references) for it in items]
        n = len(items)
        scores, printed, methods = [math.nan] * n, [math.nan] * n, ["generate"] * n
        written = [""] * n
        todo = list(range(n))
        if self.method == "fast":
            walks = self._walk(prompts, pictures, digests, progress)
            for i, walk in enumerate(walks):
                if walk.stage == "done":
                    scores[i], printed[i], methods[i] = walk.score(), float(walk.printed()), "fast"
            todo = [i for i, w in enumerate(walks) if w.stage != "done"]
        if todo:
            where = items[todo[0]].where(PREDICTIONS)
            self.judge.require(
                "can_generate",
                "FLEUR",
                f"{where}: the judge did not print 0.xy / 1.0 when teacher-forced, "
                "and the fallback reads the score from generated text",
            )
            generated = self._generate_scores(
                [prompts[i] for i in todo], [pictures[i] for i in todo], [digests[i] for i in todo], progress
            )
            for i, (score, number, text) in zip(todo, generated):
                scores[i], printed[i] = score, number
                written[i] = text
        status = [OK if not math.isnan(s) else NO_RATING for s in scores]
        notes = [
            "" if s == OK else f"the judge wrote {_shortened(written[i])!r}, no score in [0, 1]"
            for i, s in enumerate(status)
        ]
        out: dict[str, Any] = {
            "score": scores,
            "raw_score": printed,
            "method": methods,
            "score_status": status,
            "score_note": notes,
        }
        if explain:
            out["explanation"] = self._explain(prompts, pictures, digests, scores, progress)
        return ChunkScores(out)

    def _walk(self, prompts, pictures, digests, progress) -> list[Walk]:
        """Teacher-force the printed score, every sample in one batched round per step.

        With a judge that reads positions inside the answer prefix (``read_prefix``), each round
        teacher-forces the walk's prefix plus what the judge is expected to print next (``"0."`` at the
        start, ``"."`` after the leading digit) and the walk consumes every position of it while the
        judge's greedy tokens follow: a judge printing ``0.xy`` then needs two forward passes (``"0."``
        with its three positions, then ``"0.x"``). A deviation, or a prefix whose tokens cannot be aligned,
        continues from where the walk stands, one position per round."""
        walks = [Walk() for _ in prompts]
        speculate = [self.judge.capabilities.reads_prefix_steps] * len(walks)
        for _ in range(6):  # at most: one unaligned guess, whitespace, lead, dot, d1, d2
            active = [i for i, w in enumerate(walks) if w.stage not in ("done", "deviated")]
            if not active:
                break
            guesses = [
                walks[i].prefix + (EXPECTED_NEXT.get(walks[i].stage, "") if speculate[i] else "") for i in active
            ]
            requests = [
                self._request(prompts[i], pictures[i], digests[i], guess, read_prefix=guess != walks[i].prefix)
                for i, guess in zip(active, guesses)
            ]
            results = self.judge.rate(requests, progress=progress)
            for i, guess, result in zip(active, guesses, results):
                walk = walks[i]
                before = (walk.prefix, walk.stage)
                for step in result.steps or []:  # positions inside the guess, offsets from the answer's start
                    if step.offset < len(before[0]):
                        continue  # walked in an earlier round
                    if step.offset != len(walk.prefix) or walk.stage in ("done", "deviated"):
                        break
                    walk.step(RatingResult(raw=step.raw, greedy=step.greedy))
                if walk.prefix == guess and walk.stage not in ("done", "deviated"):
                    walk.step(result)  # the position after the whole guess
                if (walk.prefix, walk.stage) == before:
                    speculate[i] = False  # the guess could not be read: go one position at a time
        return walks

    def _generate_scores(self, prompts, pictures, digests, progress) -> list[tuple[float, float, str]]:
        """The reference procedure through the judge: generate, parse, read digit distributions. Returns
        ``(score, printed number, generated text)`` per prompt (NaN, NaN when no score was printed)."""
        requests = []
        for prompt, picture, digest in zip(prompts, pictures, digests):
            requests.append(
                GenerationRequest(
                    turns=[Turn("user", prompt)],
                    image=picture,
                    group=self.config_name,
                    max_new_tokens=self.max_new_tokens,
                    conversation=self.conversation,
                    image_digest=digest,
                )
            )
        texts = self.judge.generate(requests, progress=progress)
        matches = [parse_score(t) for t in texts]
        rating: list[RatingRequest] = []
        slots: list[tuple[int, str]] = []
        for k, (text, match) in enumerate(zip(texts, matches)):
            if match is None:
                continue
            positions = {"lead": match.start()} if match.group("one") else {"d1": match.start("d1")}
            if match.group("d2"):
                positions["d2"] = match.start("d2")
            for slot, pos in positions.items():
                rating.append(self._request(prompts[k], pictures[k], digests[k], text[:pos]))
                slots.append((k, slot))
        results = self.judge.rate(rating, progress=progress) if rating else []
        raw: dict[tuple[int, str], list] = {slot: r.raw for slot, r in zip(slots, results)}
        out = []
        for k, match in enumerate(matches):
            if match is None:
                out.append((math.nan, math.nan, texts[k]))
            elif match.group("one"):
                out.append((smooth_one(raw[(k, "lead")]), 1.0, texts[k]))
            else:
                out.append((smooth_decimals(raw[(k, "d1")], raw.get((k, "d2"))), float(match.group(0)), texts[k]))
        return out

    def _explain(self, prompts, pictures, digests, scores, progress) -> list[str]:
        """FLEUR's follow-up: the smoothed score as the assistant's answer, then "Why? Tell me the reason."."""
        requests = []
        for prompt, picture, digest, score in zip(prompts, pictures, digests, scores):
            answer = "" if math.isnan(score) else f"{score:.2f}"
            requests.append(
                GenerationRequest(
                    turns=[Turn("user", prompt), Turn("assistant", answer), Turn("user", EXPLAIN_TURN)],
                    image=picture,
                    group=self.config_name,
                    max_new_tokens=self.max_explanation_tokens,
                    conversation=self.conversation,
                    image_digest=digest,
                )
            )
        return self.judge.generate(requests, progress=progress)


def _shortened(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _resolve_conversation(conversation: str | None, judge: Judge) -> str | None:
    if conversation != "auto":
        if conversation is not None:
            from mmjudge.judges.conversations import CONVERSATIONS

            if conversation not in CONVERSATIONS:
                raise ValueError(
                    f"Expected argument `conversation` to be 'auto', None or one of {sorted(CONVERSATIONS)}, "
                    f"but got {conversation!r}."
                )
        return conversation
    return "llava_v1" if judge.model_type == "llava" else None
