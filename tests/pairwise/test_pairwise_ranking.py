"""Ranking many systems from pairs: Bradley–Terry on synthetic battles with known strengths, the adaptive
schedule, and the resumable arena run (scripted judges: exact, known preferences)."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from mmjudge import HarmonicEval
from mmjudge.cli import main
from mmjudge.pairwise.arena import rank_systems
from mmjudge.pairwise.bradley_terry import fit_bradley_terry, strengths_from_wins, win_rates
from mmjudge.testing import ScriptedJudge
from ranking_simulation import simulate_ranking


def test_bradley_terry_recovers_known_strengths_of_20_systems_from_hard_battles():
    rng = np.random.default_rng(1)
    true = rng.normal(0, 1.5, 20)
    a, b = rng.integers(0, 20, 6000), rng.integers(0, 20, 6000)
    keep = a != b
    a, b = a[keep], b[keep]
    wins = (rng.random(len(a)) < 1 / (1 + np.exp(-(true[a] - true[b])))).astype(float)  # a 0/1 verdict each
    fit = fit_bradley_terry(a, b, wins, np.arange(len(a)), 20, bootstrap=200)
    assert spearmanr(fit.strength, true)[0] >= 0.95
    assert np.corrcoef(fit.strength, true - true.mean())[0, 1] > 0.98
    inside = (fit.low <= true - true.mean()) & (true - true.mean() <= fit.high)
    assert inside.mean() >= 0.8  # 95% intervals cover the truth for most systems


def test_bradley_terry_closed_forms_and_win_rates():
    # Two systems, 3 wins to 1: θ differ by ln 3 exactly (no prior).
    theta = strengths_from_wins(np.array([[0.0, 3.0], [1.0, 0.0]]), prior=0)
    assert math.isclose(theta[0] - theta[1], math.log(3), rel_tol=1e-9)
    rates = win_rates(np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([0.75, 1.0, np.nan]), 3)
    assert rates[0, 1] == 0.75 and rates[1, 0] == 0.25 and rates[0, 2] == 1.0 and math.isnan(rates[1, 2])
    # A NaN battle (no preference) is not a battle.
    fit = fit_bradley_terry(np.array([0, 1]), np.array([1, 0]), np.array([1.0, np.nan]), np.array([0, 1]), 2, 0)
    assert fit.battles.tolist() == [1, 1]


def test_the_adaptive_schedule_separates_20_systems_with_a_quarter_of_all_pairs():
    run = simulate_ranking()
    theta, plan, history = run.theta, run.plan, run.history
    fit = plan.fit(history)
    order = np.argsort(fit.strength)
    assert all(fit.separable(int(x), int(y)) for x, y in zip(order[:-1], order[1:]))
    assert len(history) <= 0.25 * 190 * 500
    assert spearmanr(fit.strength, theta)[0] == 1.0
    # Only pairs around overlaps were judged after round 0: far fewer pairs of systems than all 190.
    met = {(int(a), int(b)) for a, b in zip(history.a, history.b)}
    assert len(met) < 190


def test_the_schedule_is_a_function_of_its_settings_and_the_battles_before():
    first = simulate_ranking(n_systems=8, n_items=100, items_per_pair=8).history
    again = simulate_ranking(n_systems=8, n_items=100, items_per_pair=8).history
    assert np.array_equal(first.a, again.a) and np.array_equal(first.item, again.item)
    # A pair never meets on an item twice.
    keys = list(zip(first.a.tolist(), first.b.tolist(), first.item.tolist()))
    assert len(keys) == len(set(keys))


# ------------------------------------------------------------------------------------------- arena
QUALITY = re.compile(r"Text A: .*quality (\S+)\nText B: .*quality (\S+)\n")


def quality_judge(fail_after: int | None = None) -> ScriptedJudge:
    """Prefers the text whose embedded quality is higher, softly; raises once more than ``fail_after`` requests
    were asked (a killed worker)."""

    def answer(request):
        if fail_after is not None and len(judge.requests) > fail_after:
            raise KeyboardInterrupt("killed")
        x, y = map(float, QUALITY.search(request.turns[0].text).groups())
        p = 1 / (1 + math.exp(-(x - y)))
        return [p, 1 - p, 0.0]

    judge = ScriptedJudge(answer)
    return judge


@pytest.fixture
def systems(tmp_path):
    rng = np.random.default_rng(0)
    out = {}
    for s, strength in enumerate([0.0, 1.0, -1.0, 2.0, -2.0, 0.5]):
        path = tmp_path / f"sys{s}.jsonl"
        with open(path, "w") as f:
            for k in range(40):
                text = f"output {k} of quality {strength + rng.normal(0, 0.7):.3f}"
                f.write(json.dumps({"id": f"i{k}", "text": text}) + "\n")
        out[f"sys{s}"] = str(path)
    return out


def arena(judge, systems, folder, **options):
    he = HarmonicEval(judge=judge, criteria=["fluency"], cache=False)
    return rank_systems(he.pairwise(), systems, folder, items_per_pair=8, bootstrap=200, chunk_size=8, **options)


def test_the_arena_ranks_by_strength_and_writes_its_files(systems, tmp_path):
    ranking = arena(quality_judge(), systems, tmp_path / "run")
    assert [ranking.systems[i] for i in ranking.order()] == ["sys3", "sys1", "sys5", "sys0", "sys2", "sys4"]
    saved = json.loads((tmp_path / "run" / "ranking.json").read_text())
    assert saved["judged"] == ranking.judged and saved["possible"] == 15 * 40
    assert [r["system"] for r in saved["ranking"]][0] == "sys3" and "win_rate_fluency" in saved["ranking"][0]
    rates = ranking.win_rates
    finite = np.isfinite(rates)
    assert np.allclose(rates[finite] + rates.T[finite], 1.0)
    with open(tmp_path / "run" / "win_rates.csv", encoding="utf-8", newline="") as f:
        table = list(csv.reader(f))
    assert table[0][:3] == ["system", "sys0", "sys1"] and len(table) == 7 and {len(row) for row in table} == {7}


def test_the_arena_survives_a_killed_worker_with_nothing_lost(systems, tmp_path):
    whole = arena(quality_judge(), systems, tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        arena(quality_judge(fail_after=whole.judged), systems, tmp_path / "cut")  # dies half way (2 requests a battle)
    parts = (tmp_path / "cut").glob("round-*.jsonl*")
    lines = [line for p in parts for line in p.read_text().splitlines() if line.strip()]
    written = sum(1 for line in lines if not line.startswith('{"_run": '))  # a part's header line is not a row
    assert 0 < written < whole.judged
    resumed_judge = quality_judge()
    resumed = arena(resumed_judge, systems, tmp_path / "cut")
    assert len(resumed_judge.requests) == 2 * (whole.judged - written)  # the written rows were not judged again
    assert resumed.judged == whole.judged
    assert np.array_equal(resumed.strength, whole.strength) and np.array_equal(resumed.low, whole.low)
    for path in sorted((tmp_path / "whole").glob("round-*.jsonl")):
        assert path.read_text() == (tmp_path / "cut" / path.name).read_text()


def test_the_arena_refuses_to_mix_runs_with_other_settings(systems, tmp_path):
    arena(quality_judge(), systems, tmp_path / "run")
    with pytest.raises(ValueError, match="holds a ranking run with another items_per_pair"):
        he = HarmonicEval(judge=quality_judge(), criteria=["fluency"], cache=False)
        rank_systems(he.pairwise(), systems, tmp_path / "run", items_per_pair=4, bootstrap=200)


def test_the_arena_refuses_to_mix_runs_on_edited_system_outputs(systems, tmp_path):
    # Issue 41: the same systems and ids with other texts would reuse the finished rounds' battles of the old ones.
    arena(quality_judge(), systems, tmp_path / "run")
    path = Path(systems["sys2"])
    path.write_text(path.read_text().replace("output 0 of", "an edited output 0 of"))
    with pytest.raises(ValueError, match="holds a ranking run on other system outputs .* pass --overwrite"):
        arena(quality_judge(), systems, tmp_path / "run")
    assert arena(quality_judge(), systems, tmp_path / "run", overwrite=True).judged > 0


def test_cli_ranking_and_its_mistakes(systems, tmp_path, capsys):
    base = ["compare", "--judge", "dummy", "--no-cache", "--criteria", "fluency", "--bootstrap", "50"]
    args = [*base, *(f"--system={name}={path}" for name, path in systems.items()), "--output-dir", str(tmp_path / "o")]
    assert main([*args, "--items-per-pair", "4", "--max-rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "| Rank | System |" in out and (tmp_path / "o" / "ranking.md").exists()
    two = [*base, "--system", f"x={systems['sys0']}", "--system", f"y={systems['sys1']}", "--output-dir", "o"]
    assert main(two) == 2
    assert "give three or more systems" in capsys.readouterr().err
    short = tmp_path / "short.jsonl"
    short.write_text('{"id": "i0", "text": "only one"}\n')
    assert main([*args, "--system", f"short={short}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--system short has no item 'i1'" in err[0]
