"""The leaderboard's Arena track (``mmjudge.leaderboard.arena_scoring``): a submission against the anchors,
figures relative to the anchors, and a worker killed mid-job losing nothing (scripted judge: known
preferences)."""

from __future__ import annotations

import math
import re

import pytest

from mmjudge import HarmonicEval
from mmjudge.leaderboard.arena_scoring import score_arena
from mmjudge.leaderboard.benchmarks import demo_outputs, get_benchmark
from mmjudge.testing import ScriptedJudge

SLOTS = re.compile(r"(?:Text|Caption|Answer|Expression) A: (.*)\n(?:Text|Caption|Answer|Expression) B: (.*)\n")


def longer_is_better(die_after: int | None = None) -> ScriptedJudge:
    """Prefers the longer text; raises (a killed worker) once more than ``die_after`` requests were asked."""

    def answer(request):
        if die_after is not None and len(judge.requests) > die_after:
            raise KeyboardInterrupt("worker killed")
        first, second = SLOTS.search(request.turns[0].text).groups()
        if len(first) == len(second):
            return [0.45, 0.45, 0.1]
        return [0.8, 0.2, 0.0] if len(first) > len(second) else [0.2, 0.8, 0.0]

    judge = ScriptedJudge(answer)
    return judge


def run(judge, folder, quality=3):
    bench = get_benchmark("demo-inputs")
    he = HarmonicEval(judge=judge, criteria=["correctness", "fluency"], cache=False)
    anchors = {"plain": demo_outputs(0), "clear": demo_outputs(1), "background": demo_outputs(2)}
    return score_arena(
        he.pairwise(),
        bench.inputs(),
        demo_outputs(quality),
        anchors,
        folder,
        bootstrap=200,
        items_per_pair=4,
        chunk_size=8,
    )


def test_a_submission_is_placed_against_the_anchors(tmp_path):
    signature, summary, rows = run(longer_is_better(), tmp_path / "job")
    # quality 3 adds " in the centre of the picture": longer than every anchor's text, so it wins every battle.
    assert summary["win_rate"] == pytest.approx(0.8) and summary["win_rates"]["fluency"] == pytest.approx(0.8)
    assert summary["strength"] > max(summary["anchors"].values()) and summary["ci_low"] > 0
    assert math.isclose(sum(summary["anchors"].values()), 0.0, abs_tol=1e-9)  # relative to the anchors' mean
    assert summary["battles"] == len(rows) >= 3 * 4 and all(
        "submission" in (r["system_a"], r["system_b"]) for r in rows
    )
    assert "config=pairwise" in signature and summary["no_preference"] == 0
    _, plain, _ = run(longer_is_better(), tmp_path / "other", quality=0)  # the same text as the anchor "plain"
    assert plain["strength"] < summary["strength"]


def test_a_worker_killed_mid_job_loses_nothing(tmp_path):
    _, whole, whole_rows = run(longer_is_better(), tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        run(longer_is_better(die_after=60), tmp_path / "job")  # killed inside round 0
    written = sum(  # rows only: a part file opens with its header line ({"_run": …}: what its rows were made from)
        1
        for p in (tmp_path / "job" / "rounds").glob("round-*.jsonl*")
        for line in p.read_text().splitlines()
        if not line.startswith('{"_run"')
    )
    assert written > 0
    second = longer_is_better()
    _, resumed, resumed_rows = run(second, tmp_path / "job")  # the next worker claims the re-queued job
    total_battles = whole["judged"]
    assert len(second.requests) == 2 * 2 * (total_battles - written)  # 2 criteria x 2 orders per missing battle
    assert resumed == whole and resumed_rows == whole_rows
