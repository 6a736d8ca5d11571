"""EXPERT (Kim et al., ACL Findings 2025): LLaVA-1.5-13B fine-tuned with a LoRA adapter rates a caption from
0.0 to 1.0 against its image; the printed number is smoothed with the digit probabilities; a second turn
explains the score by Fluency, Relevance and Descriptiveness.

The authors' procedure (``github.com/hjkim811/EXPERT``, ``expert.py``), which this metric follows:

* the judge is ``liuhaotian/llava-v1.5-13b`` with ``hjkim811/EXPERT-llava-13b-lora`` merged into it (here the
  same weights as ``llava-hf/llava-1.5-13b-hf`` with the adapter read into them, ``adapter=``);
* the prompt is rendered in LLaVA's ``llava_v0`` conversation: their script infers it from the model's name
  (which holds neither ``v1`` nor ``llama-2`` nor ``mpt``), and its ``--conv-mode`` default only prints a
  warning; generation stops at that format's separator ``"###"``;
* the image is padded to a square with CLIP's mean colour (LLaVA's ``image_aspect_ratio="pad"``), then
  preprocessed by the judge's processor;
* greedy generation (at most 512 tokens) with the probabilities of every step, read as
  :mod:`mmjudge.metrics.expert.reading` describes;
* the explanation (``explain=True``) continues the same conversation: the smoothed score as the assistant's
  answer (``str(score) + "</s>"``), then the explanation prompt; the image is attached to the first turn only.

The judge must list the exact probability of given tokens at every generated position
(:class:`~mmjudge.judges.requests.ScoredGenerationRequest` with ``token_probs``: the ``transformers`` backend).

>>> from PIL import Image
>>> expert = EXPERT(judge="dummy", cache=False)  # a hash-based stand-in: it prints no score
>>> out = expert.compute(predictions=["A dog on a beach."], images=[Image.new("RGB", (32, 32))], progress=False)
>>> out["score"], out["score_status"], expert.primary
([nan], ['no_rating'], 'score')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mmjudge.errors import check_bool, check_positive_int
from mmjudge.images import DEFAULT_MAX_PIXELS, MAX_ASPECT_RATIO
from mmjudge.inputs import DEFAULT_MAX_TEXT_CHARS
from mmjudge.judges.base import Judge
from mmjudge.judges.requests import GenerationRequest, ScoredGenerationRequest, ScoredText, Turn
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import CacheOption, build_text_judge, set_text_limits
from mmjudge.metrics.expert.reading import explanation_parts, printed_number, smoothed
from mmjudge.metrics.fleur.smoothing import DIGITS
from mmjudge.metrics.spec import EXPLAIN, PREDICTIONS, PROGRESS, ChunkScores, InputSpec, Item, MetricSpec, OutputSpec
from mmjudge.metrics.statuses import NO_RATING, OK
from mmjudge.prompts import load_prompt_file

DEFAULT_MODEL = "llava-hf/llava-1.5-13b-hf"
DEFAULT_ADAPTER = "hjkim811/EXPERT-llava-13b-lora"
_PROMPTS = load_prompt_file("expert")
PROMPT_VERSION = _PROMPTS["version"]
SCORE_PROMPT = _PROMPTS["score"]
EXPLANATION_PROMPT = _PROMPTS["explanation"]
# The stop string of each LLaVA conversation format, as LLaVA's scripts pick it (`conv.sep`, or `conv.sep2`
# for the two-separator style).
STOPS = {"llava_v0": ("###",), "llava_v1": ("</s>",)}
# LLaVA's `expand2square` background: CLIP's mean, as `tuple(int(x * 255) for x in image_processor.image_mean)`.
PAD_COLOR = (122, 116, 104)
PARTS = ("fluency", "relevance", "descriptiveness")

_IMAGES = InputSpec(
    "images",
    "image",
    True,
    "image",
    "one image per prediction: PIL image, path or bytes",
    missing="EXPERT needs `images` (one per prediction): the judge rates the caption against the image.",
)
_OUTPUTS = (
    OutputSpec("score", "score", "smoothed score (NaN when the judge printed none EXPERT can read)", True, (0.0, 1.0)),
    OutputSpec("raw_score", "diagnostic", "the number EXPERT reads from the judge's answer", None, (0.0, 1.0), ()),
    OutputSpec("score_status", "text", "ok, or no_rating: no number in [0, 1] EXPERT can read", None, aggregates=()),
    OutputSpec("score_note", "text", "what the judge wrote instead", None, aggregates=()),
    OutputSpec("explanation", "text", "the judge's explanation (second turn)", None, aggregates=(), optional=True),
    *(
        OutputSpec(
            f"{p}_explanation", "text", f"the explanation's {p.capitalize()} part", None, aggregates=(), optional=True
        )
        for p in PARTS
    ),
)


def pad_to_square(image: Any, color: tuple[int, int, int] = PAD_COLOR) -> Any:
    """LLaVA's ``expand2square``: the image centred on a square of ``color`` (offset ``(long - short) // 2``).

    >>> from PIL import Image
    >>> padded = pad_to_square(Image.new("RGB", (4, 2), "white"))
    >>> padded.size, padded.getpixel((0, 0)), padded.getpixel((0, 1))
    ((4, 4), (122, 116, 104), (255, 255, 255))
    """
    from PIL import Image

    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    out = Image.new(image.mode, (side, side), color)
    out.paste(image, ((side - width) // 2, (side - height) // 2))
    return out


def normalise_caption(text: str) -> str:
    """The caption as the authors feed it: ``" ".join(caption.split())``."""
    return " ".join(str(text).split())


class EXPERT(Metric):
    """EXPERT: a fine-tuned LLaVA judge's smoothed 0–1 caption score, with explanations.

    Args:
        model: the base judge model; default ``llava-hf/llava-1.5-13b-hf`` (the authors' base, LLaVA-1.5-13B).
        adapter: the LoRA adapter merged into it: ``"auto"`` (default) is the authors'
            ``hjkim811/EXPERT-llava-13b-lora`` on the default base and none on another model; or a folder /
            Hub id (peft's layout or LLaVA's, :mod:`mmjudge.judges.local.adapters`); ``None``: none.
        judge: backend name (``"transformers"``, ``"dummy"``) or a ready judge (its adapter already merged).
        conversation: ``"llava_v0"`` (default: what the authors' script runs), ``"llava_v1"``, or ``None``
            (the processor's chat template).
        pad: pad the image to a square with CLIP's mean colour first (the authors' ``image_aspect_ratio="pad"``).
        explain: also generate the explanation turn.
        max_new_tokens: generation limit of each turn (512, as published).
        cache: ``True`` (default cache file), ``False`` or a path to an SQLite file.
        **judge_kwargs: passed to the backend (``batch_size``, ``device``, ``dtype``, ``revision``, …).
    """

    name = "expert"
    configs = ("expert",)
    max_aspect_ratio = MAX_ASPECT_RATIO

    def __init__(
        self,
        model: str | None = None,
        adapter: str | None = "auto",
        judge: Judge | str | None = None,
        conversation: str | None = "llava_v0",
        pad: bool = True,
        explain: bool = False,
        max_new_tokens: int = 512,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS,
        long_texts: str = "error",
        cache: CacheOption = True,
        **judge_kwargs: Any,
    ):
        from mmjudge.judges.conversations import CONVERSATIONS

        if conversation is not None and conversation not in CONVERSATIONS:
            raise ValueError(
                f"Expected argument `conversation` to be None or one of {sorted(CONVERSATIONS)}, but got "
                f"{conversation!r}."
            )
        self.conversation = conversation
        self.pad = check_bool(pad, "pad")
        self.explain = check_bool(explain, "explain")
        self.max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
        set_text_limits(self, max_pixels, max_text_chars, long_texts)
        local = judge is None or judge == "transformers"
        if adapter == "auto":
            adapter = DEFAULT_ADAPTER if local and model in (None, DEFAULT_MODEL) else None
        if adapter is not None:
            if not local:
                raise ValueError(
                    f"`adapter=` is merged into a local transformers judge, but judge={judge!r} was given: "
                    "pass adapter=None (a ready judge has its adapter already)."
                )
            judge_kwargs["adapter"] = adapter
        self.judge = build_text_judge(model, judge, cache, judge_kwargs, DEFAULT_MODEL)
        self.judge.require_images("EXPERT", "rates a caption against its image")
        for capability, why in (
            ("scores_generation", "it reads the digit probabilities at the positions it generated them"),
            ("full_distribution", "its smoothing sums digit probabilities of the full-vocabulary softmax"),
        ):
            self.judge.require(capability, "EXPERT", why)

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = cls.check_config(config_name)
        return MetricSpec(
            "expert",
            config,
            (PREDICTIONS, _IMAGES),
            _OUTPUTS,
            "score",
            "a fine-tuned LLaVA's smoothed 0-1 caption score, reference-free",
            label="EXPERT",
            judged=True,
            options=(EXPLAIN, PROGRESS),
        )

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.judge,)

    def signature_fields(self) -> dict[str, Any]:
        return dict(
            **self.judge.signature_fields(),
            prompt=f"expert@{PROMPT_VERSION}",
            conversation=self.conversation or "chat_template",
            image="pad-square" if self.pad else "as-is",
            smoothing="expert-digits",
            decoding=f"greedy-generate-{self.max_new_tokens}",
        )

    def prompt(self, text: str) -> str:
        """The published scoring prompt for one caption (whitespace-normalised as the authors do)."""
        return SCORE_PROMPT.format(caption=normalise_caption(text))

    def _score_chunk(self, items: list[Item], explain: bool = False, progress: bool = False) -> ChunkScores:
        pictures = [pad_to_square(it.image) if self.pad else it.image for it in items]
        digests = [None if self.pad else it.digest for it in items]  # a padded image is hashed anew
        stop = STOPS.get(self.conversation or "", ())
        requests = [
            ScoredGenerationRequest(
                [Turn("user", self.prompt(it.text))],
                image=picture,
                group="expert",
                conversation=self.conversation,
                image_digest=digest,
                max_new_tokens=self.max_new_tokens,
                top_logprobs=1,
                stop=stop,
                token_probs=DIGITS,
            )
            for it, picture, digest in zip(items, pictures, digests)
        ]
        answers = self.judge.generate_scored(requests, progress=progress)
        read = [_read(answer) for answer in answers]
        scores = [score for score, _, _ in read]
        out: dict[str, Any] = {
            "score": scores,
            "raw_score": [number for _, number, _ in read],
            "score_status": [OK if not math.isnan(s) else NO_RATING for s in scores],
            "score_note": [note for _, _, note in read],
        }
        if explain:
            captions = [normalise_caption(it.text) for it in items]
            out.update(self._explain(captions, requests, scores, progress))
        return ChunkScores(out)

    def _explain(
        self, captions: list[str], requests: list[ScoredGenerationRequest], scores: list[float], progress: bool
    ) -> dict:
        """The second turn: the smoothed score as the assistant's answer (the authors write ``str(score) + "</s>"``
        of a float32 value), then the explanation prompt; none for an item without a score."""
        asked = [k for k, s in enumerate(scores) if not math.isnan(s)]
        followups = []
        for k in asked:
            first = requests[k]
            answer = repr(float(np.float32(scores[k]))) + "</s>"
            turns = [
                *first.turns,
                Turn("assistant", answer),
                Turn("user", EXPLANATION_PROMPT.format(caption=captions[k])),
            ]
            followups.append(
                GenerationRequest(
                    turns,
                    image=first.image,
                    group="expert-explain",
                    conversation=first.conversation,
                    image_digest=first.image_digest,
                    max_new_tokens=first.max_new_tokens,
                    stop=first.stop,
                )
            )
        texts = self.judge.generate(followups, progress=progress) if followups else []
        out: dict[str, list] = {"explanation": [None] * len(scores)}
        out.update({f"{p}_explanation": [None] * len(scores) for p in PARTS})
        for k, text in zip(asked, texts):
            out["explanation"][k] = text
            parts = explanation_parts(text) or {}
            for p in PARTS:
                out[f"{p}_explanation"][k] = parts.get(p)
        return out


def _read(answer: ScoredText) -> tuple[float, float, str]:
    """``(score, printed number, note)`` of one generated answer (NaN, NaN and why when there is none)."""
    text = answer.text.strip()
    number = printed_number(text)
    if number is None:
        return (
            math.nan,
            math.nan,
            f"the judge wrote {_shortened(text)!r}: no number in [0, 1] once non-digits are dropped",
        )
    if any(t.probs is None for t in answer.tokens):
        return math.nan, number, "the judge did not report the digit tokens' probabilities"
    score = smoothed(number, [t.index for t in answer.tokens], [t.probs for t in answer.tokens])
    if score is None:
        return math.nan, number, f"the judge wrote {_shortened(text)!r}: its digits are not tokens EXPERT can read"
    return score, number, ""


def _shortened(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
