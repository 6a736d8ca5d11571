"""A judge card's arithmetic, worked by hand: outcomes under each rule, subsets, the macro average, prompt-level
accuracy, the share without an answer, and the bootstrap's pairing across judges."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmjudge.judge_card.measures import Item, Rules, figures, judge_diagnostics, outcome


def _by(rows, measure, subset=""):
    return next(r for r in rows if r["measure"] == measure and r["subset"] == subset)


def vl_items():
    # (human preferred index, P(first better), query_source, group)
    spec = [
        (0, 0.9, "WildVision", "general"),  # right
        (1, 0.7, "WildVision", "general"),  # wrong
        (0, 0.6, "POVID", "hallucination"),  # right
        (1, 0.1, "RLAIF-V", "hallucination"),  # right
        (1, 0.5, "RLHF-V", "hallucination"),  # judge tie: half
        (0, 0.2, "MathVerse", "reasoning"),  # wrong
        (1, math.nan, "MMMU-Pro", "reasoning"),  # no answer
    ]
    return [Item(str(k), h, p, {"query_source": s, "group": g}) for k, (h, p, s, g) in enumerate(spec)]


def test_accuracy_subsets_and_macro_by_hand():
    rows = figures("vl", vl_items(), Rules(subsets=("query_source", "group"), macro_over="group"), bootstrap=0)
    assert _by(rows, "accuracy")["value"] == pytest.approx(3.5 / 6) and _by(rows, "accuracy")["n"] == 6
    assert _by(rows, "accuracy", "general")["value"] == 0.5
    assert _by(rows, "accuracy", "hallucination")["value"] == pytest.approx(2.5 / 3)
    assert _by(rows, "accuracy", "reasoning")["value"] == 0.0 and _by(rows, "accuracy", "reasoning")["n"] == 1
    assert _by(rows, "accuracy", "RLHF-V")["value"] == 0.5
    macro = _by(rows, "macro_accuracy")
    assert macro["value"] == pytest.approx((0.5 + 2.5 / 3 + 0.0) / 3) and macro["n"] == 6
    assert _by(rows, "no_answer")["value"] == pytest.approx(1 / 7) and _by(rows, "no_answer")["n"] == 7
    assert all(set(r) == {"benchmark", "subset", "measure", "value", "low", "high", "n"} for r in rows)


def test_three_way_rule_counts_a_tie_only_when_humans_tied():
    assert outcome(0.5, 0.5, "three_way") == 1.0 and outcome(0.5, 0.8, "three_way") == 0.0
    assert outcome(0, 0.5, "three_way") == 0.0 and outcome(0, 0.5, "tie_half") == 0.5
    items = [Item("a", 0.5, 0.5), Item("b", 0.0, 0.9), Item("c", 0.5, 0.2), Item("d", 1.0, 0.5)]
    rows = figures("arena", items, Rules(rule="three_way", measure="agreement", without_ties=True), bootstrap=0)
    assert _by(rows, "agreement")["value"] == 0.5
    without = _by(rows, "agreement_without_ties")
    assert without["value"] == 0.5 and without["n"] == 2  # b right, d (judge tie) wrong


def test_prompt_accuracy_needs_every_criterion_of_a_prompt_right():
    items = [
        Item("p1-a", 0, 0.9, prompt="p1"),
        Item("p1-b", 1, 0.1, prompt="p1"),  # p1 right
        Item("p2-a", 0, 0.9, prompt="p2"),
        Item("p2-b", 1, 0.8, prompt="p2"),  # p2 wrong
        Item("p3-a", 0, math.nan, prompt="p3"),  # p3 left out
    ]
    row = _by(figures("mc", items, Rules(prompt_accuracy=True), bootstrap=0), "prompt_accuracy")
    assert row["value"] == 0.5 and row["n"] == 2


def test_intervals_are_seeded_and_paired_across_judges():
    items = vl_items()
    one = figures("vl", items, Rules(), bootstrap=200, seed=3)
    again = figures("vl", items, Rules(), bootstrap=200, seed=3)
    assert one == again
    low, high = _by(one, "accuracy")["low"], _by(one, "accuracy")["high"]
    assert 0 <= low <= 3.5 / 6 <= high <= 1 and low < high
    # Another judge on the same benchmark: same resamples, so a judge that is right where this one is right and
    # also on item 1 has every bootstrap replicate at least as high.
    better = [Item(i.id, i.human, 1 - i.human if i.id == "1" else i.judge, i.subsets) for i in items]
    other = figures("vl", better, Rules(), bootstrap=200, seed=3)
    assert _by(other, "accuracy")["low"] >= low and _by(other, "accuracy")["high"] >= high


def test_no_items_is_one_line():
    with pytest.raises(ValueError, match=r"^vl: no items to score\.$"):
        figures("vl", [], Rules())


def test_diagnostics_skip_missing_values():
    rows = [{"a_position_bias": 0.2, "a_slot_following": 0.0, "b_position_bias": None, "b_slot_following": None}]
    out = judge_diagnostics("x", rows, ["a", "b"])
    assert [(r["measure"], r["value"], r["n"]) for r in out] == [("position_bias", 0.2, 1), ("order_agreement", 1.0, 1)]
    assert judge_diagnostics("x", [{}], ["a"]) == []
    assert np.isfinite(out[0]["value"])


def test_each_figure_keeps_its_bootstrap_values_and_every_judge_gets_the_same_resamples():
    """``replicates=`` receives the values each interval was read from; they come from resamples keyed by the seed
    and the benchmark alone, so a judge that always names the first response and one that always names the second
    get values summing to exactly 1 in every resample (the even and the odd items of the same resample)."""
    from mmjudge.metaeval.bootstrap import percentile_interval

    def judge(preference):
        return [Item(str(k), k % 2, preference, {"half": "a" if k < 6 else "b"}) for k in range(12)]

    kept_first, kept_second = {}, {}
    rules = Rules(subsets=("half",), macro_over="half")
    first = figures("toy", judge(0.9), rules, bootstrap=300, replicates=kept_first)
    figures("toy", judge(0.1), rules, bootstrap=300, replicates=kept_second)
    assert set(kept_first) == {("toy", "", "accuracy"), ("toy", "a", "accuracy"), ("toy", "b", "accuracy"),
                               ("toy", "", "macro_accuracy")}  # fmt: skip
    whole = kept_first[("toy", "", "accuracy")]
    assert whole.shape == (300,) and (_by(first, "accuracy")["low"], _by(first, "accuracy")["high"]) == tuple(
        percentile_interval(whole, 0.95)
    )
    assert np.allclose(whole + kept_second[("toy", "", "accuracy")], 1.0) and whole.std() > 0


def test_prompt_accuracy_keeps_its_bootstrap_values():
    """With a bootstrap, prompt-level accuracy gets an interval and hands its values to ``replicates`` (it once
    raised a TypeError: the dict was shadowed by the list of answered prompts)."""
    items = [Item(f"p{k}-{c}", 0, 0.9 if k % 3 else 0.1, prompt=f"p{k}") for k in range(9) for c in "ab"]
    kept: dict = {}
    row = _by(figures("mc", items, Rules(prompt_accuracy=True), bootstrap=100, replicates=kept), "prompt_accuracy")
    assert row["value"] == pytest.approx(6 / 9) and row["n"] == 9
    values = kept[("mc", "", "prompt_accuracy")]
    assert values.shape == (100,) and row["low"] < 6 / 9 < row["high"]


def test_prompt_accuracy_resamples_pair_up_across_judges_that_leave_out_different_prompts():
    """Prompt accuracy's resamples are drawn over every prompt, so a judge that gave no answer on one prompt is
    resampled like one that answered all: where they agree on every answered prompt, their values are equal in
    each resample that leaves the unanswered prompt out."""

    def judge(silent: bool):
        return [Item(f"p{k}-{c}", 0, math.nan if silent and k == 0 else (0.9 if k % 3 else 0.1), prompt=f"p{k}")
                for k in range(9) for c in "ab"]  # fmt: skip

    all_answered, one_silent = {}, {}
    figures("mc", judge(False), Rules(prompt_accuracy=True), bootstrap=200, replicates=all_answered)
    row = _by(figures("mc", judge(True), Rules(prompt_accuracy=True), bootstrap=200, replicates=one_silent),
              "prompt_accuracy")  # fmt: skip
    assert row["value"] == pytest.approx(6 / 8) and row["n"] == 8
    from mmjudge.metaeval.bootstrap import resample_counts, rng_for

    counts = resample_counts(9, 200, rng_for(0, "judge_card", "mc", "prompts"))
    without_p0 = counts[:, 0] == 0
    key = ("mc", "", "prompt_accuracy")
    assert without_p0.sum() > 10
    assert np.allclose(all_answered[key][without_p0], one_silent[key][without_p0])


def test_a_subset_name_under_two_keys_is_one_row():
    """Multimodal RewardBench reports by `reporting_category` and `category`, and an unsplit category is its own
    reporting category: one row for it (card.json and the board key a figure by benchmark, subset and measure);
    the same name holding other items under another key is refused in one line."""
    items = [
        Item("1", 0, 0.9, {"reporting": "safety/bias", "category": "safety"}),
        Item("2", 0, 0.1, {"reporting": "safety/toxicity", "category": "safety"}),
        Item("3", 1, 0.1, {"reporting": "correctness", "category": "correctness"}),
    ]
    rows = figures("mm", items, Rules(subsets=("reporting", "category")), bootstrap=0)
    assert [(r["subset"], r["value"], r["n"]) for r in rows if r["measure"] == "accuracy"] == [
        ("", 2 / 3, 3), ("correctness", 1.0, 1), ("safety/bias", 1.0, 1), ("safety/toxicity", 0.0, 1),
        ("safety", 0.5, 2),
    ]  # fmt: skip
    clash = [Item("1", 0, 0.9, {"a": "x", "b": "y"}), Item("2", 0, 0.9, {"a": "y", "b": "y"})]
    with pytest.raises(ValueError, match=r"^mm: subset 'y' is a value of both 'a' and 'b' with different items"):
        figures("mm", clash, Rules(subsets=("a", "b")), bootstrap=0)
