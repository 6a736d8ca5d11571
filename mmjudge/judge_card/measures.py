r"""A judge card's figures from each item's human and judge preferences: accuracy overall and per subset, the
macro average over a subset's groups, prompt-level accuracy and Multi-Crit's trade-off figures, all with paired
bootstrap intervals; and the mean of any per-item figure (:func:`mean_figures`: a ranking's distance).

An item is a pair of responses to one input. The human preference ``h`` is 0 (the first response is better),
1 (the second) or ½ (a tie, where the benchmark has them); the judge's preference ``P`` is P(first ≻ second)
(NaN: no answer). The judge's verdict is 0 when ``P > ½``, 1 when ``P < ½``, ½ when ``P = ½``. An item's
outcome, by the benchmark's rule:

* ``tie_half`` (humans never tie): 1 when the verdict is ``h``, ½ when the judge ties, else 0;
* ``three_way`` (a human tie is an answer to match, as CapArena and MLLM-as-a-Judge "w. tie" count it):
  1 when the verdict is ``h``, else 0.

An item without an answer is left out of every figure (the card reports their share as ``no_answer``), as
VL-RewardBench's ``cal.py`` leaves out answers it cannot parse. Intervals: the items are resampled with
replacement (prompts, for the prompt-level figures) ``bootstrap`` times from a generator keyed by the seed and
the benchmark alone, so every judge scored on a benchmark is resampled alike and their differences mean
something; the interval is the percentile interval at ``confidence``. Because of that, two judges' figures can be
compared pair by pair: pass ``replicates={}`` and each figure's bootstrap values land there, keyed by
``(benchmark, subset, measure)`` (the leaderboard's Judges track says from them whether a row is separable from
the one above).

>>> items = [Item("1", 0, 0.9, {"source": "x"}), Item("2", 1, 0.8, {"source": "x"}),
...          Item("3", 1, 0.5, {"source": "y"}), Item("4", 0, float("nan"), {"source": "y"})]
>>> rows = figures("toy", items, Rules(subsets=("source",)), bootstrap=0)
>>> [(r["subset"], r["measure"], r["value"], r["n"]) for r in rows]
[('', 'accuracy', 0.5, 3), ('x', 'accuracy', 0.5, 2), ('y', 'accuracy', 0.5, 1), ('', 'no_answer', 0.25, 4)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mmjudge.metaeval.bootstrap import percentile_interval, resample_counts, rng_for

RULES = ("tie_half", "three_way")
FIELDS = ("benchmark", "subset", "measure", "value", "low", "high", "n")
# The measures a judge can be ranked by (agreement with people, and between the two orders), fractions in
# card.json; the other shares and diagnostics a card reports beside them.
AGREEMENT_MEASURES = (
    "accuracy",
    "agreement",
    "macro_accuracy",
    "macro_agreement",
    "accuracy_without_ties",
    "agreement_without_ties",
    "prompt_accuracy",
    "trade_off_sensitivity",
    "conflict_matching_rate",
    "tau_c",
    "tau_b",
    "pearson",
    "order_agreement",
)
SHARE_MEASURES = (*AGREEMENT_MEASURES, "no_answer", "position_bias")
# The measures a judge can be ranked by where lower is better (a distance from the human answer): the board ranks
# them smallest first, card.md shows them as they are (0-1), never x100 as a share of agreement.
DISTANCE_MEASURES = ("levenshtein",)


@dataclass(frozen=True)
class Item:
    """One judged pair: ``human`` 0 / 1 / ½, ``judge`` P(first ≻ second) or NaN, the subsets it belongs to
    (``{"query_source": "RLAIF-V", "group": "hallucination"}``) and, for prompt-level accuracy, its prompt."""

    id: str
    human: float
    judge: float
    subsets: Mapping[str, str] = field(default_factory=dict)
    prompt: str | None = None


@dataclass(frozen=True)
class Rules:
    """How a benchmark counts: the outcome ``rule`` (:data:`RULES`), the main ``measure``'s name, the subset
    keys reported one row per value, the key whose groups' accuracies are macro-averaged
    (``macro_accuracy``), whether accuracy without the human ties is reported too, whether prompt-level
    accuracy is (every item of a prompt right), and whether Multi-Crit's trade-off figures are
    (:func:`trade_off_figures`)."""

    rule: str = "tie_half"
    measure: str = "accuracy"
    subsets: tuple[str, ...] = ()
    macro_over: str | None = None
    without_ties: bool = False
    prompt_accuracy: bool = False
    trade_offs: bool = False

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"Expected argument `rule` to be one of {', '.join(RULES)}, but got {self.rule!r}.")


def verdict(preference: float) -> float:
    """0 (the first response), 1 (the second), ½ (a tie) or NaN (no answer).

    >>> verdict(0.8), verdict(0.2), verdict(0.5), verdict(float("nan"))
    (0.0, 1.0, 0.5, nan)
    """
    if preference != preference:
        return math.nan
    return 0.0 if preference > 0.5 else 1.0 if preference < 0.5 else 0.5


def outcome(human: float, preference: float, rule: str) -> float:
    """One item's credit under ``rule`` (see the module); NaN without an answer.

    >>> outcome(0, 0.9, "tie_half"), outcome(0, 0.5, "tie_half"), outcome(0.5, 0.5, "three_way")
    (1.0, 0.5, 1.0)
    """
    said = verdict(preference)
    if said != said:
        return math.nan
    if said == human:
        return 1.0
    return 0.5 if rule == "tie_half" and said == 0.5 else 0.0


def figures(
    benchmark: str,
    items: Sequence[Item],
    rules: Rules,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    replicates: dict | None = None,
) -> list[dict]:
    """The card rows of one benchmark (:data:`FIELDS`): the main measure overall and per subset value, the
    macro average, accuracy without human ties, prompt-level accuracy, the trade-off figures, and the share of
    items with no answer.
    Values are fractions (0–1); ``low``/``high`` are ``None`` without bootstrap. ``replicates``: a dict that
    receives each figure's bootstrap values (``(benchmark, subset, measure)`` → array)."""
    if not items:
        raise ValueError(f"{benchmark}: no items to score.")
    credit = np.array([outcome(it.human, it.judge, rules.rule) for it in items])
    answered = ~np.isnan(credit)
    credit = np.where(answered, credit, 0.0)
    counts = resample_counts(len(items), bootstrap, rng_for(seed, "judge_card", benchmark)) if bootstrap else None
    figure = _Figure(benchmark, credit, answered, counts, confidence, replicates)
    everything = np.ones(len(items), dtype=bool)
    rows = [figure.accuracy("", rules.measure, everything)]
    shown: dict[str, tuple[str, np.ndarray]] = {}  # a subset name -> the key and items of its row
    for key in rules.subsets:
        groups = _groups(items, key)
        for name, mask in groups.items():
            if name in shown:  # card.json and the board key a figure by (benchmark, subset, measure): one row
                _same_subset(benchmark, name, shown[name], (key, mask))
                continue
            shown[name] = (key, mask)
            rows.append(figure.accuracy(name, rules.measure, mask))
        if key == rules.macro_over:
            rows.append(figure.macro(f"macro_{rules.measure}", list(groups.values())))
    if rules.without_ties:
        rows.append(figure.accuracy("", f"{rules.measure}_without_ties", np.array([it.human != 0.5 for it in items])))
    if rules.prompt_accuracy or rules.trade_offs:
        prompts = Prompts.of(benchmark, items, bootstrap, seed, confidence, replicates)
        if rules.prompt_accuracy:
            rows.append(_prompt_accuracy(prompts, credit, answered))
        if rules.trade_offs:
            rows += trade_off_figures(items, prompts)
    missing = float(np.mean(~answered))
    rows.append(row(benchmark, "", "no_answer", missing, None, None, len(items)))
    return rows


def mean_figures(
    benchmark: str,
    measure: str,
    values: Sequence[float],
    subsets: Sequence[Mapping[str, str]],
    keys: Sequence[str] = (),
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    replicates: dict | None = None,
) -> list[dict]:
    """The card rows of a per-item figure (``values``, NaN: no answer; a ranking's distance from the human's):
    its mean over the answered items, overall and per value of each subset key in ``keys`` (``subsets``: each
    item's labels), then the share with no answer. The bootstrap resamples the items as :func:`figures` does
    (the same generator keying, so every judge on a benchmark is resampled alike).

    >>> rows = mean_figures("toy", "levenshtein", [0.5, 0.0, float("nan"), 0.25],
    ...                     [{"set": "x"}, {"set": "x"}, {"set": "y"}, {"set": "y"}], ("set",), bootstrap=0)
    >>> [(r["subset"], r["measure"], r["value"], r["n"]) for r in rows]  # doctest: +NORMALIZE_WHITESPACE
    [('', 'levenshtein', 0.25, 3), ('x', 'levenshtein', 0.25, 2), ('y', 'levenshtein', 0.25, 1),
     ('', 'no_answer', 0.25, 4)]
    """
    if not len(values):
        raise ValueError(f"{benchmark}: no items to score.")
    given = np.array(values, dtype=float)
    answered = ~np.isnan(given)
    counts = resample_counts(len(given), bootstrap, rng_for(seed, "judge_card", benchmark)) if bootstrap else None
    figure = _Figure(benchmark, np.where(answered, given, 0.0), answered, counts, confidence, replicates)
    rows = [figure.accuracy("", measure, np.ones(len(given), dtype=bool))]
    for key in keys:
        rows += [figure.accuracy(name, measure, mask) for name, mask in _groups_of(subsets, key).items()]
    rows.append(row(benchmark, "", "no_answer", float(np.mean(~answered)), None, None, len(given)))
    return rows


class _Figure:
    """Means of per-item credit (accuracies) over masks of one benchmark's items, each with its bootstrap replicates."""

    def __init__(self, benchmark: str, credit, answered, counts, confidence: float, kept: dict | None = None):
        self.benchmark, self.credit, self.answered, self.counts = benchmark, credit, answered, counts
        self.confidence, self.kept = confidence, kept

    def values(self, mask: np.ndarray) -> tuple[float, np.ndarray | None, int]:
        use = mask & self.answered
        n = int(use.sum())
        value = float(self.credit[use].sum() / n) if n else math.nan
        if self.counts is None:
            return value, None, n
        weights = self.counts[:, use]
        with np.errstate(invalid="ignore", divide="ignore"):
            replicates = (weights @ self.credit[use]) / weights.sum(axis=1)
        return value, replicates, n

    def accuracy(self, subset: str, measure: str, mask: np.ndarray) -> dict:
        value, replicates, n = self.values(mask)
        return self._finish(subset, measure, value, replicates, n)

    def macro(self, measure: str, masks: list[np.ndarray]) -> dict:
        """The unweighted mean of the groups' accuracies (a group without answers is left out)."""
        parts = [self.values(mask) for mask in masks]
        parts = [p for p in parts if p[2]]
        value = float(np.mean([p[0] for p in parts])) if parts else math.nan
        replicates = None
        if self.counts is not None and parts:
            replicates = np.mean(np.vstack([p[1] for p in parts]), axis=0)
        return self._finish("", measure, value, replicates, sum(p[2] for p in parts))

    def _finish(self, subset: str, measure: str, value: float, replicates, n: int) -> dict:
        low = high = None
        if replicates is not None and n:
            low, high = percentile_interval(replicates, self.confidence)
            if self.kept is not None:
                self.kept[(self.benchmark, subset, measure)] = replicates
        return row(self.benchmark, subset, measure, value, low, high, n)


@dataclass(frozen=True)
class Prompts:
    """The prompts of a benchmark's items (``groups``: each prompt's item indices, in first-seen order) and the
    bootstrap every prompt-level figure shares: resamples drawn over every prompt of the benchmark (not only the
    answered ones) from a generator keyed by the seed and the benchmark, so two judges' values pair up as the
    item figures' do. ``kept`` receives each figure's bootstrap values (as :func:`figures`' ``replicates``)."""

    benchmark: str
    groups: list[list[int]]
    counts: np.ndarray | None = None
    confidence: float = 0.95
    kept: dict | None = None

    @classmethod
    def of(cls, benchmark: str, items: Sequence[Item], bootstrap: int = 0, seed: int = 0, confidence: float = 0.95,
           kept: dict | None = None) -> Prompts:  # fmt: skip
        by_prompt: dict[str, list[int]] = {}
        for k, it in enumerate(items):
            by_prompt.setdefault(it.prompt or it.id, []).append(k)
        groups = list(by_prompt.values())
        rng = rng_for(seed, "judge_card", benchmark, "prompts")
        counts = resample_counts(len(groups), bootstrap, rng) if bootstrap else None
        return cls(benchmark, groups, counts, confidence, kept)

    def figure(self, measure: str, credit: Sequence[float], scored: Sequence[bool]) -> dict:
        """The share of the scored prompts with credit 1 (``n``: the prompts scored), with its interval."""
        figure = _Figure(self.benchmark, np.array(credit, dtype=float), np.array(scored, dtype=bool), self.counts,
                         self.confidence, self.kept)  # fmt: skip
        return figure.accuracy("", measure, np.ones(len(self.groups), dtype=bool))


def _prompt_accuracy(prompts: Prompts, credit, answered) -> dict:
    """Multi-Crit's PAcc: a prompt counts as right only when every criterion of it is judged right (credit 1);
    a prompt with an unanswered criterion is left out."""
    whole = [all(answered[k] for k in ks) for ks in prompts.groups]
    right = [float(all(credit[k] == 1.0 for k in ks)) for ks in prompts.groups]
    return prompts.figure("prompt_accuracy", right, whole)


def trade_off_figures(items: Sequence[Item], prompts: Prompts) -> list[dict]:
    """Multi-Crit's TOS and CMR (Xiong et al., arXiv 2511.21662), as we read them — the authors' scoring code
    could not be read here. A prompt's *conflicts* are the pairs of its items (criteria) where people preferred
    one response under one and the other response under the other (a tie on either side is no conflict); only
    prompts with a conflict count. ``trade_off_sensitivity`` (TOS): the share of them where, on at least one
    conflicting pair, the judge's verdicts also name different responses (the right or the wrong way round);
    ``conflict_matching_rate`` (CMR): the share where the judge's verdicts on both items of every conflicting
    pair are the human's. A prompt with an unanswered item among its conflicts is left out of both (``n``: the
    prompts scored). Bootstrap over prompts, with prompt accuracy's resamples (:class:`Prompts`).

    >>> items = [Item("a", 0, 0.9, prompt="p"), Item("b", 1, 0.2, prompt="p"),   # matched
    ...          Item("c", 0, 0.3, prompt="q"), Item("d", 1, 0.6, prompt="q"),   # opposed, the wrong way round
    ...          Item("e", 0, 0.7, prompt="r"), Item("f", 1, 0.8, prompt="r")]   # not opposed
    >>> rows = trade_off_figures(items, Prompts.of("toy", items))
    >>> [(r["measure"], round(r["value"], 4), r["n"]) for r in rows]
    [('trade_off_sensitivity', 0.6667, 3), ('conflict_matching_rate', 0.3333, 3)]
    """
    said = [verdict(it.judge) for it in items]
    scored, opposed, matched = [], [], []
    for ks in prompts.groups:
        conflicts = [
            (i, j) for a, i in enumerate(ks) for j in ks[a + 1 :] if {items[i].human, items[j].human} == {0.0, 1.0}
        ]
        involved = {k for pair in conflicts for k in pair}
        scored.append(bool(conflicts) and all(said[k] == said[k] for k in involved))  # NaN != NaN: no answer
        opposed.append(float(any({said[i], said[j]} == {0.0, 1.0} for i, j in conflicts)))
        matched.append(float(all(said[k] == items[k].human for k in involved)))
    return [
        prompts.figure("trade_off_sensitivity", opposed, scored),
        prompts.figure("conflict_matching_rate", matched, scored),
    ]


def _same_subset(benchmark: str, name: str, first: tuple[str, np.ndarray], again: tuple[str, np.ndarray]) -> None:
    """A subset name under two keys is one figure when it holds the same items (Multimodal RewardBench's
    unsplit categories are their own reporting category); other items under the same name are refused."""
    if not np.array_equal(first[1], again[1]):
        raise ValueError(
            f"{benchmark}: subset {name!r} is a value of both {first[0]!r} and {again[0]!r} with different items; "
            "its figures could not be told apart."
        )


def _groups(items: Sequence[Item], key: str) -> dict[str, np.ndarray]:
    return _groups_of([it.subsets for it in items], key)


def _groups_of(subsets: Sequence[Mapping[str, str]], key: str) -> dict[str, np.ndarray]:
    names = sorted({s[key] for s in subsets if s.get(key) not in (None, "")})
    return {name: np.array([s.get(key) == name for s in subsets]) for name in names}


def row(benchmark: str, subset: str, measure: str, value: float, low, high, n: int) -> dict:
    def clean(v: float | None) -> float | None:
        return None if v is None or v != v else float(v)

    return {
        "benchmark": benchmark,
        "subset": subset,
        "measure": measure,
        "value": clean(value),
        "low": clean(low),
        "high": clean(high),
        "n": int(n),
    }


def judge_diagnostics(benchmark: str, rows: Sequence[Mapping], criteria: Sequence[str]) -> list[dict]:
    """What the head-to-head rows of a judge run show beside accuracy, over every answered (pair, criterion):
    ``position_bias`` — the mean of β, the first slot's advantage whatever text sits there (0 = none, positive
    = the first slot favoured; :mod:`mmjudge.metrics.harmonic_eval.preference`); ``order_agreement`` — the
    share where the two orders' most probable answers did not name the same slot (1 − slot following: the
    verdict followed the texts, not their places).

    >>> rows = [{"fluency_position_bias": 0.1, "fluency_slot_following": 1.0},
    ...         {"fluency_position_bias": -0.05, "fluency_slot_following": 0.0}, {"fluency_position_bias": None}]
    >>> [(r["measure"], round(r["value"], 4), r["n"]) for r in judge_diagnostics("toy", rows, ["fluency"])]
    [('position_bias', 0.025, 2), ('order_agreement', 0.5, 2)]
    """
    bias, following = [], []
    for found in rows:
        for criterion in criteria:
            b, f = number(found.get(f"{criterion}_position_bias")), number(found.get(f"{criterion}_slot_following"))
            if b == b:
                bias.append(b)
            if f == f:
                following.append(f)
    out = []
    if bias:
        out.append(row(benchmark, "", "position_bias", float(np.mean(bias)), None, None, len(bias)))
    if following:
        out.append(row(benchmark, "", "order_agreement", 1.0 - float(np.mean(following)), None, None, len(following)))
    return out


def number(value: object) -> float:
    """A judge-run cell as a float: NaN for ``None``, a bool or anything that is not a number (a run's
    rows hold numbers or ``null``).

    >>> number(0.25), number(None), number(True), number("x")
    (0.25, nan, nan, nan)
    """
    try:
        return math.nan if value is None or isinstance(value, bool) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
