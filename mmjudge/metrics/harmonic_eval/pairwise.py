"""Head to head on HarmonicEval's criteria: which of two texts about the same input is better, per criterion.

:class:`PairwiseHarmonicEval` is what :meth:`HarmonicEval.compare <mmjudge.metrics.harmonic_eval.HarmonicEval.compare>`
runs: for each pair and criterion the judge is asked in both orders (2 × criteria requests per pair) which
text is better; the answer distribution is read from the probabilities of the answer letters with the same
rules and statuses as ratings (:mod:`mmjudge.metrics.statuses`), and the two orders are combined
(:mod:`.preference`). It is a :class:`~mmjudge.metrics.base.Metric` over items holding two
texts (``text_a``, ``text_b``), so the stream, the part files, resuming and sharding of ``score`` run it
unchanged (:func:`mmjudge.stream.score_file`).

>>> from mmjudge import HarmonicEval
>>> from mmjudge.testing import ScriptedJudge
>>> judge = ScriptedJudge(lambda r: [0.5, 0.25, 0.25] if r.choices == ("A", "B", "C") else [0, 0, 1, 0, 0])
>>> he = HarmonicEval(judge=judge, criteria=["fluency", "clarity"], cache=False)
>>> out = he.compare(["A dog runs."], ["A dog run."], progress=False)
>>> out["overall"], out["fluency"], out["fluency_position_bias"], out["fluency_verdict"]
([0.5], [0.5], [0.125], ['tie'])
>>> len(judge.requests)   # both orders of each criterion
4
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmjudge.inputs import check_text, check_text_length
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.metrics.base import Metric
from mmjudge.metrics.harmonic_eval.pair_prompts import PairPrompts, load_pair_prompts
from mmjudge.metrics.harmonic_eval.preference import combine_orders, verdict
from mmjudge.metrics.harmonic_eval.spec import harmonic_eval_spec
from mmjudge.metrics.spec import EXPLAIN, PROGRESS, TASK, ChunkScores, InputSpec, Item, MetricSpec, OutputSpec
from mmjudge.metrics.statuses import NEEDS_IMAGE, NEEDS_IMAGE_NOTE, OK, failure_line, rating_status
from mmjudge.prompts import load_prompt_set

DEFAULT_PAIR_PROMPTS = "harmonic_eval_pairwise"
A_TEXTS = InputSpec("a", "text", True, "text_a", "the texts of system A (one per item)")
B_TEXTS = InputSpec("b", "text", True, "text_b", "the texts of system B, about the same items")


def criterion_outputs(criterion: str) -> list[OutputSpec]:
    """The per-pair outputs of one criterion (its preference under its own name, then diagnostics)."""
    c = criterion
    return [
        OutputSpec(c, "score", f"{c}: P(A is better), both orders combined", True, (0.0, 1.0)),
        OutputSpec(f"{c}_tie", "diagnostic", f"{c}: the judge's probability of a tie", None, (0.0, 1.0)),
        OutputSpec(
            f"{c}_position_bias", "diagnostic", f"{c}: the first slot's advantage, whatever text is there", None
        ),
        OutputSpec(
            f"{c}_slot_following",
            "diagnostic",
            f"{c}: 1 where the verdict followed the slot in both orders, not the text",
            None,
            (0.0, 1.0),
        ),
        OutputSpec(f"{c}_weight", "diagnostic", f"{c}: weight in the overall preference", None, (0.0, 1.0), ()),
        OutputSpec(f"{c}_mass", "diagnostic", f"{c}: the smaller answer mass of the two orders", None, (0.0, 1.0), ()),
        OutputSpec(f"{c}_verdict", "text", f"{c}: a, b or tie", None, aggregates=()),
        OutputSpec(f"{c}_status", "text", f"{c}: ok, or why there is no preference", None, aggregates=()),
        OutputSpec(f"{c}_note", "text", f"{c}: what the judge said instead, and in which order", None, aggregates=()),
        OutputSpec(
            f"{c}_explanation", "text", f"{c}: the judge's explanation (order AB)", None, aggregates=(), optional=True
        ),
    ]


def pairwise_spec(rating: MetricSpec, criteria: Sequence[str]) -> MetricSpec:
    """The declaration of head-to-head judging over ``criteria``, with the inputs and tasks of the rating
    metric declared by ``rating``."""
    outputs = [
        OutputSpec("overall", "score", "P(A is better): criterion preferences weighted by certainty", True, (0, 1)),
        OutputSpec("verdict", "text", "a, b or tie (from overall)", None, aggregates=()),
    ]
    for criterion in criteria:
        outputs += criterion_outputs(criterion)
    shared = tuple(i for i in rating.inputs if i.name != "predictions")
    return MetricSpec(
        "harmonic_eval",
        "pairwise",
        (A_TEXTS, B_TEXTS, *shared),
        tuple(outputs),
        "overall",
        "which of two texts is better, per HarmonicEval criterion, judged in both orders",
        rating.tasks,
        label="HarmonicEval head to head",
        judged=True,
        options=(TASK, EXPLAIN, PROGRESS),
    )


@dataclass
class PairItem(Item):
    """An item with the two texts: ``text`` is A's, ``text_b`` B's."""

    text_b: str = ""


class PairwiseHarmonicEval(Metric):
    """Head-to-head judging with a :class:`~mmjudge.metrics.harmonic_eval.HarmonicEval`'s judge, criteria,
    tasks, γ, ``min_mass``, ``partial_overall``, image criteria and text limits.

    Args:
        rater: the HarmonicEval instance (its judge and its cache are shared).
        prompts: the pairwise prompt set: a bundled name or a ``.toml`` path (default
            ``harmonic_eval_pairwise``).
    """

    name = "harmonic_eval"
    configs = ("pairwise",)
    config_name = "pairwise"

    def __init__(self, rater: Any, prompts: str = DEFAULT_PAIR_PROMPTS):
        self.rater = rater
        self.judge = rater.judge
        self.criteria = list(rater.criteria)
        self.prompts: PairPrompts = load_pair_prompts(prompts, rater.prompt_set)
        self.prompts.check_criteria(self.criteria, "criteria of this HarmonicEval")
        self.default_task = rater.default_task
        self.explain = rater.explain
        self.max_explanation_tokens = rater.max_explanation_tokens
        for limit in ("max_text_chars", "long_texts", "max_pixels", "max_aspect_ratio"):
            setattr(self, limit, getattr(rater, limit))

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        cls.check_config(config_name)
        prompt_set = load_prompt_set("harmonic_eval")
        criteria = prompt_set.criteria
        rating = harmonic_eval_spec(prompt_set, criteria, [c for c in criteria if prompt_set.sees_image(c)])
        return pairwise_spec(rating, criteria)

    def _build_spec(self) -> MetricSpec:
        return pairwise_spec(self.rater.spec, self.rater.criteria)

    def cached_parts(self) -> tuple[Any, ...]:
        return (self.judge,)

    def signature_fields(self) -> dict[str, Any]:
        fields = dict(self.rater.signature_fields())
        fields.pop("smoothing", None)  # ratings' expectation vs argmax: no meaning for a preference
        fields.pop("scale", None)
        fields["prompts"] = f"{fields['prompts']}+{self.prompts.id}"
        fields["orders"] = "both"
        fields["answers"] = ",".join(self.prompts.choices)
        return fields

    # ------------------------------------------------------------------------------------- checking
    def check_item(self, raw: Any, index: int, task: str | None = None, source: str | None = None) -> PairItem:
        """Both texts checked like any text (the base checks every declared input; A's is read again,
        as the base keeps one ``text``)."""
        item = super().check_item(raw, index, task, source)
        where = item.where(A_TEXTS)
        text_a = check_text_length(check_text(raw.get("text_a"), where), where, self.max_text_chars, self.long_texts)
        return PairItem(**{**vars(item), "text": text_a, "text_b": item.text})

    def _prepare_item(self, item: Item) -> Item:
        return self.rater._prepare_item(item)

    def _failure_line(self, counts: dict[str, dict[str, int]], failed: int, total: int) -> str:
        return failure_line(counts, failed, total, unit="pair", judged="preference")

    # ------------------------------------------------------------------------------------- scoring
    def compute(
        self, a: Sequence[str] | None = None, b: Sequence[str] | None = None, **keywords: Any
    ) -> dict[str, Any]:
        """The base's ``compute`` (inputs ``a``, ``b``, ``images``, ``questions``, ``boxes``; options ``task``,
        ``explain``, ``progress``) with the two texts also positional, as :meth:`HarmonicEval.compare` takes them."""
        return super().compute(a=a, b=b, **keywords)

    def _score_chunk(self, items: list[Item], explain: bool = False, progress: bool = False) -> ChunkScores:
        requests, swapped = self._requests(items)
        results = self.judge.rate(requests, progress=progress)
        rated = self.rater.rated_criteria  # a judge that cannot see images is not asked the image criteria
        n, k = len(items), len(rated)
        raw = np.array([r.raw for r in results], dtype=np.float64).reshape(k, n, 2, 3)
        statuses = [rating_status(r, self.rater.min_mass) for r in results]
        # Requests go in a canonical order per pair (the text that sorts first in the first slot), so
        # compare(a, b) and compare(b, a) send the same requests: map them back to the AB / BA orders.
        ab_slot = np.where(swapped, 1, 0)
        cols = np.arange(n)
        ab = raw[:, cols, ab_slot].transpose(1, 0, 2)
        ba = raw[:, cols, 1 - ab_slot].transpose(1, 0, 2)
        mass = np.minimum(ab.sum(-1), ba.sum(-1))
        status, note = self._statuses(statuses, swapped, n, k)
        answered = np.array([[s == OK for s in row] for row in status])
        combined = combine_orders(ab, ba, answered, gamma=self.rater.gamma, partial=self.rater.partial_overall)
        out: dict[str, Any] = {
            "overall": combined.overall.tolist(),
            "verdict": [verdict(v) for v in combined.overall.tolist()],
        }
        for criterion in self.criteria:
            if criterion not in rated:  # not asked: not a failure, never a number (as HarmonicEval's ratings)
                for suffix in ("", "_tie", "_position_bias", "_slot_following", "_weight", "_mass"):
                    out[criterion + suffix] = [math.nan] * n
                out[f"{criterion}_verdict"] = [None] * n
                out[f"{criterion}_status"] = [NEEDS_IMAGE] * n
                out[f"{criterion}_note"] = [NEEDS_IMAGE_NOTE] * n
                continue
            j = rated.index(criterion)
            out[criterion] = combined.preference[:, j].tolist()
            out[f"{criterion}_tie"] = combined.tie[:, j].tolist()
            out[f"{criterion}_position_bias"] = combined.position_bias[:, j].tolist()
            out[f"{criterion}_slot_following"] = combined.slot_following[:, j].tolist()
            out[f"{criterion}_weight"] = combined.weights[:, j].tolist()
            out[f"{criterion}_mass"] = mass[:, j].tolist()
            out[f"{criterion}_verdict"] = [verdict(v) for v in combined.preference[:, j].tolist()]
            out[f"{criterion}_status"] = [status[i][j] for i in range(n)]
            out[f"{criterion}_note"] = [note[i][j] for i in range(n)]
        if explain:
            self._explain(requests, raw, swapped, answered, out, progress)
        return ChunkScores(out)

    def _requests(self, items: list[Item]) -> tuple[list[RatingRequest], np.ndarray]:
        """Criterion-major, then item, then the two orders (canonical: the smaller text first)."""
        swapped = np.array([item.text > item.text_b for item in items], dtype=bool)  # type: ignore[attr-defined]
        requests = []
        for criterion in self.rater.rated_criteria:
            sees = criterion in self.rater.image_criteria
            for item, swap in zip(items, swapped):
                first, second = (item.text_b, item.text) if swap else (item.text, item.text_b)  # type: ignore[attr-defined]
                for text_1, text_2 in ((first, second), (second, first)):
                    prompt = self.prompts.render(criterion, item.task, text_1, text_2, item.question, sees)
                    image = item.image if sees else None
                    requests.append(
                        RatingRequest(
                            turns=[Turn("user", prompt)],
                            image=image,
                            choices=self.prompts.choices,
                            answer_prefix=self.prompts.answer_prefix,
                            group=criterion,
                            image_digest=item.digest if image is not None else None,
                        )
                    )
        return requests, swapped

    def _statuses(
        self, statuses: list[tuple[str, str]], swapped: np.ndarray, n: int, k: int
    ) -> tuple[list[list[str]], list[list[str]]]:
        """Per pair and criterion: ``ok`` when both orders answered, else the first failed order's status,
        with its note saying which order it was."""
        status = [[OK] * k for _ in range(n)]
        note = [[""] * k for _ in range(n)]
        for j in range(k):
            for i in range(n):
                base = (j * n + i) * 2
                first, second = statuses[base], statuses[base + 1]
                ab, ba = (second, first) if swapped[i] else (first, second)
                for order, (state, said) in (("AB", ab), ("BA", ba)):
                    if state != OK:
                        status[i][j] = state
                        note[i][j] = f"order {order}: {said}" if said else f"order {order}"
                        break
        return status, note

    def _explain(
        self,
        requests: list[RatingRequest],
        raw: np.ndarray,
        swapped: np.ndarray,
        answered: np.ndarray,
        out: dict,
        progress: bool,
    ) -> None:
        """One explanation per criterion, in order AB: after the judge's most probable verdict, ask why."""
        n = len(swapped)
        rated = self.rater.rated_criteria
        asked, follow_ups = [], []
        for j in range(len(rated)):
            for i in range(n):
                if not answered[i, j]:
                    continue
                slot = 1 if swapped[i] else 0
                request = requests[(j * n + i) * 2 + slot]
                answer = self.prompts.choices[int(np.argmax(raw[j, i, slot]))]
                asked.append((i, j))
                follow_ups.append(request.follow_up(answer, self.prompts.explain_turn, self.max_explanation_tokens))
        texts = self.judge.generate(follow_ups, progress=progress) if follow_ups else []
        table: list[list[Any]] = [[None] * n for _ in rated]
        for (i, j), text in zip(asked, texts):
            table[j][i] = text
        for criterion in self.criteria:
            out[f"{criterion}_explanation"] = table[rated.index(criterion)] if criterion in rated else [None] * n
