"""Multi-Crit's trade-off figures worked by hand: TOS (the judge's verdicts also oppose on a pair of criteria where
people's do) and CMR (every such pair resolved as people did), over six prompts — one fully matched, one opposed
the wrong way round, one without a conflict (a tie is none), one with an unanswered criterion inside its conflict
(left out), one opposed on one pair but not the other, one where a judge tie opposes nothing — through the engine,
through ``mmjudge judge-card --verdicts`` on the same prompts in Multi-Crit's Hub layout, and the board's card
check. Their bootstrap is prompt accuracy's: the same resamples of prompts for every judge.

By hand (tests/helpers/judge_benchmarks.py, MULTICRIT_TRADE_OFFS): prompts with a conflict and every conflicting
criterion answered: p-1, p-2, select-4, select-5 (n = 4; p-3 has none, p-6 an unanswered one).
TOS: p-1 yes, p-2 yes (wrong way round), select-4 yes (logic / factuality), select-5 no (a tie) = 3 / 4 = 0.75.
CMR: p-1 yes, p-2 no, select-4 no (conciseness), select-5 no = 1 / 4 = 0.25.
PAcc: p-1 right; p-3, select-4, select-5 wrong (a judge tie is half, not right); p-2 and p-6 have an unanswered
criterion and are left out = 1 / 4. Criterion accuracy: 9.5 right of the 14 answered (p-1 3, p-3 2, select-4 2,
select-5 1.5, p-6 1); no answer on 2 of 16.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judge_benchmarks import MULTICRIT_TRADE_OFFS, write_multi_crit
from mmjudge.cli import main
from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS
from mmjudge.judge_card.measures import Item, Prompts, Rules, figures, trade_off_figures

HUMAN = {"model_a": 0.0, "model_b": 1.0, "tie": 0.5}
P_FIRST = {0: 0.9, 1: 0.1, 0.5: 0.5, None: math.nan}  # the judge's verdict as P(first ≻ second)
RULES = Rules(subsets=("split", "criterion"), prompt_accuracy=True, trade_offs=True)
PROMPTS = ["chartDesc__p-1", "poster__p-2", "poster__p-3", "chartDesc__p-6", "visualPuzzles__select-4",
           "visualPuzzles__select-5"]  # fmt: skip
SCORED = np.array([1, 1, 0, 0, 1, 1], dtype=bool)  # a conflict, every conflicting criterion answered
OPPOSED = np.array([1, 1, 0, 0, 1, 0], dtype=float)
MATCHED = np.array([1, 0, 0, 0, 0, 0], dtype=float)


@pytest.fixture(autouse=True)
def private_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "judge.sqlite"))


def _by(rows, measure, subset=""):
    return next(r for r in rows if r["measure"] == measure and r["subset"] == subset)


def items(flip: str | None = None) -> list[Item]:
    """The hand-worked judge's items (``flip``: a prompt whose answered verdicts are swapped)."""
    out = []
    for split, rows in MULTICRIT_TRADE_OFFS.items():
        for prompt, criterion, human, said in rows:
            if prompt == flip and said in (0, 1):
                said = 1 - said
            subsets = {"split": split, "criterion": criterion}
            out.append(Item(f"{prompt}__{criterion}", HUMAN[human], P_FIRST[said], subsets, prompt))
    return out


def test_tos_and_cmr_are_the_shares_worked_by_hand():
    rows = figures("mc", items(), RULES, bootstrap=0)
    assert (_by(rows, "trade_off_sensitivity")["value"], _by(rows, "trade_off_sensitivity")["n"]) == (0.75, 4)
    assert (_by(rows, "conflict_matching_rate")["value"], _by(rows, "conflict_matching_rate")["n"]) == (0.25, 4)
    assert (_by(rows, "prompt_accuracy")["value"], _by(rows, "prompt_accuracy")["n"]) == (0.25, 4)
    assert _by(rows, "accuracy")["value"] == pytest.approx(9.5 / 14) and _by(rows, "accuracy")["n"] == 14
    assert (_by(rows, "no_answer")["value"], _by(rows, "no_answer")["n"]) == (2 / 16, 16)
    assert [r["measure"] for r in rows][-4:] == ["prompt_accuracy", "trade_off_sensitivity",
                                                 "conflict_matching_rate", "no_answer"]  # fmt: skip
    # Without the rule's flag a card has neither figure.
    plain = figures("mc", items(), Rules(prompt_accuracy=True), bootstrap=0)
    assert not [r for r in plain if r["measure"] in ("trade_off_sensitivity", "conflict_matching_rate")]


def test_flipping_one_prompt_moves_each_figure_as_worked_by_hand():
    """Swapping the judge's verdicts on p-2 makes it matched (CMR 2 / 4), still opposed (TOS 3 / 4); on p-1, it
    opposes the wrong way round (CMR 0 / 4, TOS 3 / 4)."""
    two = trade_off_figures(items("poster__p-2"), Prompts.of("mc", items()))
    assert [(r["measure"], r["value"], r["n"]) for r in two] == [
        ("trade_off_sensitivity", 0.75, 4), ("conflict_matching_rate", 0.5, 4)]  # fmt: skip
    one = trade_off_figures(items("chartDesc__p-1"), Prompts.of("mc", items()))
    assert [r["value"] for r in one] == [0.75, 0.0]


def test_no_prompt_with_a_conflict_gives_no_figure():
    agreeing = [Item("a", 0, 0.9, prompt="p"), Item("b", 0, 0.1, prompt="p"), Item("c", 0.5, 0.1, prompt="q"),
                Item("d", 1, 0.1, prompt="q")]  # fmt: skip
    rows = trade_off_figures(agreeing, Prompts.of("mc", agreeing, bootstrap=50))
    assert [(r["value"], r["low"], r["high"], r["n"]) for r in rows] == [(None, None, None, 0)] * 2


def test_their_bootstrap_is_over_prompts_with_prompt_accuracys_resamples():
    """Each replicate is the share over the resampled prompts that are scored, with the resamples prompt accuracy
    draws (seed and benchmark alone): recomputed here from the counts themselves."""
    from mmjudge.metaeval.bootstrap import percentile_interval, resample_counts, rng_for

    kept: dict = {}
    rows = figures("mc", items(), RULES, bootstrap=400, seed=7, replicates=kept)
    counts = resample_counts(len(PROMPTS), 400, rng_for(7, "judge_card", "mc", "prompts"))
    weights = counts * SCORED
    for measure, credit in (("trade_off_sensitivity", OPPOSED), ("conflict_matching_rate", MATCHED)):
        with np.errstate(invalid="ignore"):
            expected = (weights @ credit) / weights.sum(axis=1)
        values = kept[("mc", "", measure)]
        assert np.allclose(values, expected, equal_nan=True) and np.nanstd(values) > 0
        row = _by(rows, measure)
        assert (row["low"], row["high"]) == pytest.approx(percentile_interval(values, 0.95))
        assert row["low"] <= row["value"] <= row["high"]
    # Another judge on the same benchmark draws the same resamples: its replicates pair with these.
    other: dict = {}
    figures("mc", items("poster__p-2"), RULES, bootstrap=400, seed=7, replicates=other)
    gained = other[("mc", "", "conflict_matching_rate")] - kept[("mc", "", "conflict_matching_rate")]
    assert np.all(gained[np.isfinite(gained)] >= 0) and np.nanmax(gained) > 0


def test_the_cli_gives_the_figures_worked_by_hand_from_a_verdict_file(tmp_path, capsys):
    from types import SimpleNamespace

    from mmjudge.leaderboard.judge_uploads import read_judge_upload

    data = write_multi_crit(tmp_path / "mc", MULTICRIT_TRADE_OFFS)
    lines = [{"id": f"{prompt}__{criterion}", "preferred": said}
             for rows in MULTICRIT_TRADE_OFFS.values() for prompt, criterion, _, said in rows]  # fmt: skip
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "card"
    assert main(["judge-card", "--benchmarks", "multi_crit", "--data-dir", f"multi_crit={data}",
                 "--verdicts", f"multi_crit={verdicts}", "--out", str(out), "--bootstrap", "200"]) == 0  # fmt: skip
    rows = json.loads((out / "card.json").read_text())
    tos, cmr = _by(rows, "trade_off_sensitivity"), _by(rows, "conflict_matching_rate")
    assert (tos["value"], tos["n"], cmr["value"], cmr["n"]) == (0.75, 4, 0.25, 4)
    assert tos["low"] <= 0.75 <= tos["high"] and cmr["low"] <= 0.25 <= cmr["high"]
    assert (_by(rows, "prompt_accuracy")["value"], _by(rows, "accuracy")["value"]) == (0.25, pytest.approx(9.5 / 14))
    text = (out / "card.md").read_text()
    assert "| multi_crit | — | trade_off_sensitivity | 75.0 |" in text
    assert "| multi_crit | — | conflict_matching_rate | 25.0 |" in text
    assert "| multi_crit | — | trade_off_sensitivity | 75.0 |" in capsys.readouterr().out
    # The board takes the card as written: both figures are measures it knows for Multi-Crit.
    subsets = tuple(sorted({r["subset"] for r in rows if r["subset"]}))
    board = SimpleNamespace(card_name="multi_crit", kind="pairs", ids=[], subsets=subsets)
    assert read_judge_upload((out / "card.json").read_bytes(), board, None)["rows"] == rows
    assert JUDGE_BENCHMARKS["multi_crit"].rules.trade_offs
