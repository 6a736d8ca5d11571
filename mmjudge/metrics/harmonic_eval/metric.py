"""HarmonicEval: criterion-wise VLM ratings with score smoothing and harmonic weighting.

Each text is rated 1–5 on each criterion by one forward pass of the judge; the criterion score is the
expected rating, σ its spread, and the overall score weights criteria by σ^(−2(1−γ)/γ)
(:mod:`mmjudge.metrics.harmonic_eval.scoring`). Prompts come from a versioned prompt file (:mod:`mmjudge.prompts`).

Example (the ``dummy`` judge is a hash-based stand-in; use a real VLM for meaningful numbers):

>>> from mmjudge import HarmonicEval
>>> from PIL import Image
>>> he = HarmonicEval(judge="dummy", cache=False)
>>> out = he.compute(predictions=["A dog runs on the beach."], images=[Image.new("RGB", (32, 32))], task="ic")
>>> he.primary, [round(out[c][0], 4) for c in ("overall", "correctness", "fluency")]
('overall', [2.841, 3.428, 3.2931])
>>> round(sum(out[f"{c}_weight"][0] for c in he.criteria), 6)
1.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge.errors import check_bool
from mmjudge.images import DEFAULT_MAX_PIXELS, MAX_ASPECT_RATIO, draw_box
from mmjudge.inputs import DEFAULT_MAX_TEXT_CHARS
from mmjudge.judges.base import Judge, JudgeCapabilityError
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import CacheOption, build_text_judge, set_text_limits
from mmjudge.metrics.harmonic_eval.pairwise import DEFAULT_PAIR_PROMPTS, PairwiseHarmonicEval
from mmjudge.metrics.harmonic_eval.scoring import DEFAULT_GAMMA, aggregate, check_gamma
from mmjudge.metrics.harmonic_eval.spec import harmonic_eval_spec
from mmjudge.metrics.spec import ChunkScores, Item, MetricSpec
from mmjudge.metrics.statuses import (
    DEFAULT_MIN_MASS,
    NEEDS_IMAGE,
    NEEDS_IMAGE_NOTE,
    OK,
    check_min_mass,
    rating_status,
)
from mmjudge.prompts import PromptSet, load_prompt_set

DEFAULT_MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def unrated_criteria(criteria: Sequence[str], image_criteria: Sequence[str] | set, judge: Judge) -> list[str]:
    """The criteria ``judge`` cannot rate: those that see the image, when it cannot see images (a text-only
    model). A judge that could rate none of ``criteria`` is refused in one sentence.

    >>> from mmjudge.judges import load_judge
    >>> unrated_criteria(["correctness", "fluency"], {"correctness"}, load_judge("dummy", sees_images=False))
    ['correctness']
    >>> unrated_criteria(["correctness"], {"correctness"}, load_judge("dummy", sees_images=False))
    Traceback (most recent call last):
    mmjudge.judges.base.JudgeCapabilityError: HarmonicEval: every criterion asked for (correctness) looks at ...
    ... cannot see images (a text-only model); ask for a criterion that reads the text only (e.g. fluency) or ...
    """
    if judge.capabilities.sees_images:
        return []
    unrated = [c for c in criteria if c in image_criteria]
    if unrated and len(unrated) == len(criteria):
        raise JudgeCapabilityError(
            f"HarmonicEval: every criterion asked for ({', '.join(unrated)}) looks at the image, and the judge "
            f"{judge.describe()} cannot see images (a text-only model); ask for a criterion that reads the text only "
            "(e.g. fluency) or use a vision-language judge."
        )
    return unrated


class HarmonicEval(Metric):
    """Reference-free, per-criterion evaluation of VLM outputs (IC, VQA, VDU, REG).

    Args:
        model: judge model (Hub id or local folder); default ``Qwen/Qwen2.5-VL-7B-Instruct``.
        judge: backend name (``"transformers"``, ``"dummy"``) or a ready :class:`~mmjudge.judges.Judge`.
        task: default task, ``"ic"``, ``"vqa"``, ``"vdu"`` or ``"reg"`` (overridable per call and per item).
        criteria: subset of the prompt set's criteria (default: all five).
        prompts: bundled prompt-set name or path to a ``.toml`` prompt file (custom criteria).
        gamma: harmonic weighting γ in (0, 1]; 1 = uniform, 0.5 = inverse variance.
        smoothing: expected rating (``True``) or most probable rating (``False``, ablation).
        image_criteria: criteria that see the image; default from the prompt file (Correctness and
            Completeness, as in the paper's appendix C.4).
        explain: also generate one explanation per criterion ("Why? Tell me the reason."); overridable
            per call (``compute(..., explain=True)``).
        max_explanation_tokens: token limit of each explanation.
        box_format: REG boxes as ``"xywh"`` (COCO/RefCOCO) or ``"xyxy"``.
        max_pixels: larger images are refused as possible decompression bombs.
        min_mass: a rating on which the judge put less probability than this (summed over the scale) is no
            rating: its score is NaN with status ``low_mass`` (default 0.5; only exact masses are held to it,
            a top-k API's mass being a lower bound). No mass at all is ``no_rating`` whatever this is.
        partial_overall: ``False`` (default): ``overall`` is NaN when a criterion it weighs has no score.
            ``True``: ``overall`` is the harmonic weighting over the criteria that answered, renormalised
            (recorded in the signature as ``overall=partial``).

            A judge that cannot see images (a text-only model such as ``model="smollm2"``) is not asked the
            criteria that look at the image: they get status ``needs_image`` (NaN, not a failure) in every
            row, and ``overall`` weighs the criteria it rates (:attr:`rated_criteria`), renormalised — the
            same rule as ``partial_overall`` but for every item alike; the signature names them
            (``unrated=correctness,completeness``), so such results are never ranked with a VLM's.
        max_text_chars: longest text judged, in characters (default 20,000); ``None`` for no limit.
        long_texts: ``"error"`` (default: refuse, naming the item) or ``"truncate"`` (cut, with a
            warning naming the item) for texts over ``max_text_chars``.
        cache: ``True`` (default cache file), ``False`` or a path to an SQLite file.
        **judge_kwargs: passed to the backend (``batch_size``, ``device``, ``dtype``, ``revision``, …).
    """

    name = "harmonic_eval"
    configs = ("harmonic_eval",)
    config_name = "harmonic_eval"
    max_aspect_ratio = MAX_ASPECT_RATIO

    def __init__(
        self,
        model: str | None = None,
        judge: Judge | str | None = None,
        task: str = "ic",
        criteria: Sequence[str] | None = None,
        prompts: str = "harmonic_eval",
        gamma: float = DEFAULT_GAMMA,
        smoothing: bool = True,
        image_criteria: Sequence[str] | None = None,
        explain: bool = False,
        max_explanation_tokens: int = 128,
        box_format: str = "xywh",
        max_pixels: int = DEFAULT_MAX_PIXELS,
        max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS,
        long_texts: str = "error",
        min_mass: float = DEFAULT_MIN_MASS,
        partial_overall: bool = False,
        cache: CacheOption = True,
        **judge_kwargs: Any,
    ):
        self.prompt_set: PromptSet = load_prompt_set(prompts)
        self.min_mass = check_min_mass(min_mass)
        self.partial_overall = check_bool(partial_overall, "partial_overall")
        self.default_task = self.prompt_set.check_task(task)
        self.criteria = self.prompt_set.check_criteria(list(criteria) if criteria is not None else None)
        self.gamma = check_gamma(gamma)
        self.smoothing = check_bool(smoothing, "smoothing")
        if image_criteria is None:
            self.image_criteria = {c for c in self.criteria if self.prompt_set.sees_image(c)}
        else:
            self.image_criteria = set(self.prompt_set.check_criteria(list(image_criteria))) if image_criteria else set()
        self.explain = check_bool(explain, "explain")
        self.max_explanation_tokens = int(max_explanation_tokens)
        if box_format not in ("xywh", "xyxy"):
            raise ValueError(f"Expected argument `box_format` to be 'xywh' or 'xyxy', but got {box_format!r}.")
        self.box_format = box_format
        set_text_limits(self, max_pixels, max_text_chars, long_texts)
        self.judge = build_text_judge(model, judge, cache, judge_kwargs, DEFAULT_MODEL)
        self.unrated_criteria = unrated_criteria(self.criteria, self.image_criteria, self.judge)
        # explain=True needs a generating judge: checked per call, where the effective `explain` is known

    @property
    def task(self) -> str:
        """The default task."""
        return self.default_task

    @property
    def rated_criteria(self) -> list[str]:
        """The criteria this judge rates (all of them, unless it cannot see images: then the text criteria)."""
        return [c for c in self.criteria if c not in self.unrated_criteria]

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        cls.check_config(config_name)
        prompt_set = load_prompt_set("harmonic_eval")
        return harmonic_eval_spec(
            prompt_set, prompt_set.criteria, [c for c in prompt_set.criteria if prompt_set.sees_image(c)]
        )

    def _build_spec(self) -> MetricSpec:
        # A text-only judge rates no criterion that looks at the image: images are then optional.
        return harmonic_eval_spec(
            self.prompt_set, self.criteria, [c for c in self.rated_criteria if c in self.image_criteria]
        )

    @property
    def ratings(self) -> list[float]:
        return [float(s) for s in self.prompt_set.scale]

    @property
    def decoding(self) -> str:
        """How the rating distribution is read: at a teacher-forced "Score: " position in one forward pass,
        or (judges that cannot force a prefix, e.g. chat APIs) at the first rating the judge generates."""
        return "forced-prefix-1pass" if self.judge.capabilities.teacher_forcing else "first-rating-token"

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.judge,)

    def signature_fields(self) -> dict[str, Any]:
        scale = self.prompt_set.scale
        return dict(
            **self.judge.signature_fields(),
            prompts=self.prompt_set.id,
            criteria=self.criteria,
            image_criteria=[c for c in self.criteria if c in self.image_criteria] or "none",
            gamma=self.gamma,
            smoothing="expectation" if self.smoothing else "argmax",
            scale=f"{scale[0]}-{scale[-1]}",
            decoding=self.decoding,
            mass="exact" if self.judge.capabilities.exact_mass else "top-k-lower-bound",
            min_mass=self.min_mass,
            overall="partial" if self.partial_overall else None,
            unrated=self.unrated_criteria or None,
        )

    # ---------------------------------------------------------------------------------------- scoring
    def compare(
        self,
        a: Sequence[str],
        b: Sequence[str],
        images: Sequence[Any] | None = None,
        questions: Sequence[str] | None = None,
        boxes: Sequence[Sequence[float]] | None = None,
        task: str | None = None,
        explain: bool | None = None,
        progress: bool = True,
    ) -> dict[str, Any]:
        """Head to head: is ``a[i]`` better than ``b[i]`` (two systems' texts about the same image, question,
        box), per criterion? Each pair is judged in both orders (2 × criteria requests per pair) and the
        answer probabilities combined so that ``compare(a, b)`` is exactly ``1 − compare(b, a)``
        (:mod:`mmjudge.metrics.harmonic_eval.preference`).

        Returns:
            ``overall`` and, per criterion ``c``: ``c`` = P(A is better), ``c_tie``, ``c_position_bias``,
            ``c_slot_following``, ``c_weight``, ``c_mass``, ``c_verdict``, ``c_status``, ``c_note``
            (``c_explanation`` if asked); ``verdict``; means; ``scored``, ``failures``, ``signature``.
        """
        return self.pairwise().compute(
            a, b, images=images, questions=questions, boxes=boxes, task=task, explain=explain, progress=progress
        )

    def pairwise(self, prompts: str = DEFAULT_PAIR_PROMPTS) -> PairwiseHarmonicEval:
        """The head-to-head metric on this instance's judge, criteria and options
        (:class:`~mmjudge.metrics.harmonic_eval.pairwise.PairwiseHarmonicEval`; ``prompts``: the pairwise prompt
        set), built once."""
        built = self.__dict__.setdefault("_pairwise", {})
        if prompts not in built:
            built[prompts] = PairwiseHarmonicEval(self, prompts)
        return built[prompts]

    def _prepare_item(self, item: Item) -> Item:
        """REG: the target box drawn in red on (a copy of) the image, as MMHE shows it to annotators."""
        if item.task in self.prompt_set.tasks_needing("box"):
            item.image = draw_box(
                item.image, item.box, where=item.where(self.spec.input("boxes")), box_format=self.box_format
            )
        return item

    def _score_chunk(self, items: list[Item], explain: bool = False, progress: bool = False) -> ChunkScores:
        rated = self.rated_criteria
        requests = []
        for criterion in rated:
            sees = criterion in self.image_criteria
            for item in items:
                prompt = self.prompt_set.render(criterion, item.task, text=item.text, question=item.question)
                image = item.image if sees else None
                requests.append(
                    RatingRequest(
                        turns=[Turn("user", prompt)],
                        image=image,
                        choices=tuple(self.prompt_set.scale),
                        answer_prefix=self.prompt_set.answer_prefix,
                        group=criterion,
                        image_digest=item.digest if image is not None else None,
                    )
                )
        results = self.judge.rate(requests, progress=progress)
        n, k = len(items), len(rated)
        raw = np.array([r.raw for r in results], dtype=np.float64).reshape(k, n, -1).transpose(1, 0, 2)
        mass = raw.sum(axis=-1)
        statuses = [rating_status(r, self.min_mass) for r in results]  # criterion-major, as the requests
        answered = np.array([s == OK for s, _ in statuses]).reshape(k, n).T
        agg = aggregate(
            raw,
            gamma=self.gamma,
            ratings=self.ratings,
            smoothing=self.smoothing,
            answered=answered,
            partial=self.partial_overall,
        )
        out: dict[str, Any] = {"overall": agg.overall.tolist()}
        for criterion in self.criteria:
            if criterion not in rated:  # not asked (the judge cannot see the image): not a failure, never a number
                for suffix in ("", "_sigma", "_weight", "_mass"):
                    out[criterion + suffix] = [math.nan] * n
                out[f"{criterion}_status"] = [NEEDS_IMAGE] * n
                out[f"{criterion}_note"] = [NEEDS_IMAGE_NOTE] * n
                continue
            j = rated.index(criterion)
            out[criterion] = agg.scores[:, j].tolist()
            out[f"{criterion}_sigma"] = agg.sigmas[:, j].tolist()
            out[f"{criterion}_weight"] = agg.weights[:, j].tolist()
            out[f"{criterion}_mass"] = mass[:, j].tolist()
            out[f"{criterion}_status"] = [s for s, _ in statuses[j * n : (j + 1) * n]]
            out[f"{criterion}_note"] = [note for _, note in statuses[j * n : (j + 1) * n]]
        if explain:
            self._explain(requests, raw, answered, out, progress)
        return ChunkScores(out)

    def _explain(
        self, requests: list[RatingRequest], raw: np.ndarray, answered: np.ndarray, out: dict, progress: bool
    ) -> None:
        """The paper's follow-up turn: after the assistant's rating (the most probable one), ask why. A
        criterion without a rating has nothing to explain (``None``)."""
        n = raw.shape[0]
        follow_ups, asked = [], []
        for idx, request in enumerate(requests):
            j, i = divmod(idx, n)
            if not answered[i, j]:
                continue
            asked.append(idx)
            rating = self.prompt_set.scale[int(np.argmax(raw[i, j]))]
            follow_ups.append(request.follow_up(rating, self.prompt_set.explain_turn, self.max_explanation_tokens))
        texts: list = [None] * len(requests)
        for idx, text in zip(asked, self.judge.generate(follow_ups, progress=progress) if follow_ups else []):
            texts[idx] = text
        rated = self.rated_criteria
        for criterion in self.criteria:
            j = rated.index(criterion) if criterion in rated else None
            out[f"{criterion}_explanation"] = texts[j * n : (j + 1) * n] if j is not None else [None] * n
