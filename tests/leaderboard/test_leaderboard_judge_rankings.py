"""The board's Judges track on MLLM-as-a-Judge's batch setting (rankings) and Multi-Crit's trade-off figures: ranking
verdicts go store → worker → ranked rows, the normalised Levenshtein distance ranked **smallest first** (a
distance: lower is better), the figures the judge card's own; a bad ranking is refused in one line; what a
participant is shown holds no human ranking. No judge is loaded: verdicts only."""

import json

import pytest

from judge_benchmarks import MLLMJ_RANKED, write_mllm_judge_ranked
from mmjudge.leaderboard import views
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.tracks.judges import MEASURES, JudgesTrack
from mmjudge.leaderboard.worker import Worker

SETTINGS = {**DEFAULTS, "judge": "dummy", "bootstrap": 200, "rate_limit": 1000}
BENCH = "mllm_judge_batch-judges"
# "close": the hand-worked verdicts of MLLMJ_RANKED, row 3 (ACB) given exactly: (0.5 + 0 + 0.5 + 0) / 4 = 0.25.
# "far": every answer in its given order: ABCD vs CDAB 4/4, ABC vs BCA 2/3, ABCD vs ABCD 0, ABC vs ACB 2/3:
# (1 + 2/3 + 0 + 2/3) / 4 = 7/12. Ranked by the larger value, "far" would come first.
CLOSE = {f"mllm_judge-batch-{row[0]}": row[4] or [0, 2, 1] for row in MLLMJ_RANKED}
FAR = {f"mllm_judge-batch-{i}": list(range(n)) for i, _, _, n, _, _ in MLLMJ_RANKED}


def jsonl(table) -> bytes:
    return "".join(json.dumps({"id": i, "ranking": v}) + "\n" for i, v in table.items()).encode()


@pytest.fixture
def registry(monkeypatch):
    from mmjudge.leaderboard import benchmarks

    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setattr(benchmarks, "_BUILT", dict(benchmarks._BUILT))


@pytest.fixture
def board(tmp_path, registry, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    data = str(write_mllm_judge_ranked(tmp_path / "repo"))
    settings = {**SETTINGS, "benchmarks": [{"name": "mllm_judge_batch", "track": "judges", "data_dir": data}]}
    store = Store(tmp_path / "board")
    return store, Worker(store, settings, progress=False), settings, data


def test_rankings_are_ranked_by_the_smallest_distance_with_the_cards_figures(board, tmp_path):
    from mmjudge.judge_card.run import Settings, judge_card

    store, worker, settings, data = board
    ids = {}
    for name, table in (("far", FAR), ("close", CLOSE)):
        receipt = submit(store, track="judges", benchmark=BENCH, name=name, submitter="ana", data=jsonl(table))
        assert receipt.accepted, receipt.message
        ids[name] = receipt.id
    assert worker.run(once=True) == 2
    [table] = views.tables(store, "judges", BENCH, settings=settings)
    assert table["measure"] == "levenshtein"
    assert [(r["name"], r["rank"]) for r in table["rows"]] == [("close", 1), ("far", 2)]
    values = {r["name"]: r["value"] for r in table["rows"]}
    assert values["close"] == pytest.approx(0.25) and values["far"] == pytest.approx(7 / 12)
    assert table["rows"][1]["separable"] in (True, False)
    # The measure filter names it too, and ranks the same way.
    [chosen] = views.tables(store, "judges", BENCH, {"measure": "levenshtein"}, settings)
    assert [r["name"] for r in chosen["rows"]] == ["close", "far"] and "levenshtein" in MEASURES
    [coco] = views.tables(store, "judges", BENCH, {"subset": "coco"}, settings)
    assert {r["name"]: r["value"] for r in coco["rows"]} == {"close": 0.25, "far": pytest.approx(5 / 6)}
    caption = views.track_view(store, "judges", BENCH, settings=settings).caption
    assert "ranked by **levenshtein** (lower is better, ranked smallest first)" in caption
    # The board's figures are the judge card's on the same verdicts.
    path = tmp_path / "close.jsonl"
    path.write_bytes(jsonl(CLOSE))
    card = judge_card(
        ["mllm_judge_batch"],
        Settings(data_dirs={"mllm_judge_batch": data}, verdicts={"mllm_judge_batch": str(path)}, bootstrap=200),
    )
    stored = store.result(ids["close"]).summary["figures"]
    assert [{k: v for k, v in r.items() if k != "replicates"} for r in stored] == card.rows


@pytest.mark.parametrize(
    "lines, message",
    [
        ([("mllm_judge-batch-1", [0, 1])], "line 1: `ranking` must list the 3 answers' indices (0-2) best first"),
        ([("mllm_judge-batch-0", "CDAB")], "line 1: `ranking` must list the 4 answers' indices (0-3) best first"),
        ([("mllm_judge-batch-7", [0, 1, 2])], "1 verdict(s) name ids the benchmark does not have"),
        (list(CLOSE.items())[:3], "missing 1 id(s) of the benchmark: 'mllm_judge-batch-3'"),
    ],
)
def test_a_bad_ranking_upload_is_refused_in_one_line(board, lines, message):
    store, _, _, _ = board
    data = "".join(json.dumps({"id": i, "ranking": v}) + "\n" for i, v in lines).encode()
    receipt = submit(store, track="judges", benchmark=BENCH, name="my-judge", submitter="ana", data=data)
    assert not receipt.accepted and receipt.message.startswith(f"invalid file: {message}"), receipt.message
    assert "\n" not in receipt.message


def test_the_items_and_guide_hold_no_human_ranking(board):
    from mmjudge.leaderboard.benchmarks import get_benchmark

    store, _, settings, _ = board
    bench = get_benchmark(BENCH)
    items = bench.public_items()
    assert [it["id"] for it in items] == [f"mllm_judge-batch-{i}" for i in range(4)] and bench.kind == "rankings"
    assert sorted(items[0]) == ["id", "image", "question", "responses", "task"] and len(items[0]["responses"]) == 4
    assert bench.subsets == ("chartqa", "coco")
    track = JudgesTrack()
    assert track.example_line(bench, items[1]) == {"id": "mllm_judge-batch-1", "ranking": [0, 1, 2]}
    assert "from best to worst" in track.line_fields(bench)["ranking"]


def test_a_multi_crit_card_with_tos_and_cmr_is_shown_and_a_bad_value_refused(tmp_path, registry):
    """A card.json's Multi-Crit trade-off rows are measures the board knows for Multi-Crit (a share in [0, 1]),
    and only for Multi-Crit."""
    from types import SimpleNamespace

    from mmjudge.leaderboard.judge_uploads import read_judge_upload
    from mmjudge.leaderboard.validation import SubmissionError

    rows = [
        {"benchmark": "multi_crit", "subset": "", "measure": m, "value": v, "low": None, "high": None, "n": 4}
        for m, v in (("accuracy", 0.68), ("trade_off_sensitivity", 0.75), ("conflict_matching_rate", 0.25))
    ]
    bench = SimpleNamespace(card_name="multi_crit", kind="pairs", ids=[], subsets=())
    assert read_judge_upload(json.dumps(rows).encode(), bench, None)["rows"] == rows
    with pytest.raises(SubmissionError, match=r"`value` must be a number in \[0, 1\], but got 1.5"):
        read_judge_upload(json.dumps([rows[0], {**rows[1], "value": 1.5}]).encode(), bench, None)
    vl = SimpleNamespace(card_name="vl_rewardbench", kind="pairs", ids=[], subsets=())
    other = [{**r, "benchmark": "vl_rewardbench"} for r in rows]
    with pytest.raises(SubmissionError, match="vl_rewardbench has no measure 'trade_off_sensitivity'"):
        read_judge_upload(json.dumps(other).encode(), vl, None)
