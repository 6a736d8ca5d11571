"""Soak test on loopback: 100 concurrent uploads (valid and invalid mixed) through the running app's
HTTP API while a worker process scores them and is killed with SIGKILL mid-job and restarted three
times; a second worker then joins to drain the queue. Afterwards every valid submission is DONE exactly once, every invalid one was refused
with its reason, and the database passes ``PRAGMA integrity_check``. Bounded: it gives up after
``DEADLINE_S`` and always stops its workers. The dummy judge scores (plumbing, not quality)."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from mmjudge.leaderboard.benchmarks import demo_outputs, demo_scores  # noqa: E402
from mmjudge.leaderboard.settings import DEFAULTS, save_settings  # noqa: E402
from mmjudge.leaderboard.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
N_SUBMISSIONS = 100
KILLS = 3
DEADLINE_S = 90.0
LEASE_S = 2.0


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def uploads(rng: random.Random) -> list[dict]:
    """100 uploads: 56 valid model outputs, 14 valid metric scores, 30 invalid of six kinds."""
    out = []
    for k in range(56):
        rows = [{**r, "text": f"{r['text']} Variant {k}."} for r in demo_outputs(k)]
        out.append({"track": "models", "benchmark": "demo-inputs", "body": jsonl(rows), "valid": True})
    for k in range(14):
        out.append({"track": "metrics", "benchmark": "demo-judgments", "body": jsonl(demo_scores(0.2 + k / 10, seed=k)), "valid": True})
    good = demo_outputs(0)
    invalid = [
        (jsonl(good[:-1]), "missing 1 id(s) of the benchmark"),
        (jsonl(good + [{"id": "nope", "text": "x"}]), "id(s) are not in the benchmark"),
        (jsonl(good + [good[0]]), "duplicate id"),
        (jsonl(good[:1]) + '{"id": "demo-ic-2", "text": \n', "not valid JSON"),
        (jsonl([{**good[0], "text": " "}] + good[1:]), "'text' is empty"),
        (jsonl(demo_scores(0.1))[:-2].replace('"score": ', '"score": NaN, "x": ', 1) + "}\n", "scores must be finite numbers"),
    ]
    for k in range(30):
        body, reason = invalid[k % len(invalid)]
        track = "metrics" if "NaN" in body else "models"
        out.append({"track": track, "benchmark": "demo-judgments" if track == "metrics" else "demo-inputs",
                    "body": body.replace("}\n", f', "pad": "{k}"}}\n', 1) if k >= len(invalid) else body,
                    "valid": False, "reason": reason})  # fmt: skip
    rng.shuffle(out)
    return out


def start_worker(data_dir: Path, name: str, log) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "mmjudge.cli", "leaderboard-worker", "--data-dir", str(data_dir), "--poll", "0.2",
           "--lease", str(LEASE_S), "--worker-id", name]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT))


@pytest.mark.slow
def test_soak_concurrent_submissions_with_killed_worker(tmp_path):
    from mmjudge.leaderboard.app import build_app, launch

    data_dir = tmp_path / "board"
    settings = {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20, "rate_limit": 1000, "batch_size": 1,
                "explain_examples": 1}  # fmt: skip
    save_settings(data_dir, settings)
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    store = Store(data_dir)
    started = time.monotonic()
    log = open(tmp_path / "workers.log", "w")
    steady = None  # joins after the kills, so the victim always finds queued jobs to be killed over
    victim = start_worker(data_dir, "victim-0", log)
    kills = orphaned = 0
    try:
        client = gradio_client.Client(url, verbose=False)
        files = uploads(random.Random(0))
        for k, f in enumerate(files):
            f["path"] = tmp_path / f"upload-{k}.jsonl"
            f["path"].write_text(f["body"], encoding="utf-8")

        def send(k: int) -> str:
            f = files[k]
            return client.predict(f["track"], f["benchmark"], f"sub-{k}", f"user-{k % 7}", "", "",
                                  gradio_client.handle_file(str(f["path"])), api_name="/submit")  # fmt: skip

        with ThreadPoolExecutor(max_workers=16) as pool:
            pending = [pool.submit(send, k) for k in range(len(files))]
            # Kill the victim while it holds a job, restart it, repeat — while uploads are still coming in.
            while kills < KILLS and time.monotonic() - started < DEADLINE_S / 2:
                held = store.connect().execute(
                    "SELECT id FROM submissions WHERE status='RUNNING' AND worker=?", (f"victim-{kills}",)).fetchone()  # fmt: skip
                if held is None:
                    time.sleep(0.05)
                    continue
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait(timeout=10)
                if store.get(held["id"])["worker"] == f"victim-{kills}":
                    orphaned += 1  # killed with the job in hand: only the lease can bring it back
                kills += 1
                victim = start_worker(data_dir, f"victim-{kills}", log)
            steady = start_worker(data_dir, "steady", log)  # several workers at once from here on
            messages = [p.result(timeout=DEADLINE_S) for p in pending]

        valid_ids, refused = [], 0
        for f, message in zip(files, messages):
            if f["valid"]:
                match = re.search(r"received: submission ([0-9a-f]{32})", message)
                assert match, message
                valid_ids.append(match.group(1))
            else:
                assert message.startswith("❌ Not accepted — invalid file: ") and f["reason"] in message.replace("&#x27;", "'"), message
                refused += 1

        while time.monotonic() - started < DEADLINE_S:
            counts = store.counts()
            if counts["PENDING"] == 0 and counts["RUNNING"] == 0:
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - started
    finally:
        for proc in (steady, victim):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        demo.close()

    counts = store.counts()
    db = store.connect()
    statuses = {r[0]: r[1] for r in db.execute("SELECT id, status FROM submissions")}
    result_ids = [r[0] for r in db.execute("SELECT submission_id FROM results")]
    lost = sum(1 for sid in valid_ids if statuses.get(sid) != "DONE")
    duplicates = len(result_ids) - len(set(result_ids))
    retried = db.execute("SELECT COUNT(*) FROM submissions WHERE attempts > 1").fetchone()[0]
    figures = dict(submissions=len(files), valid=len(valid_ids), invalid=refused, kills=kills, orphaned_jobs=orphaned,
                   jobs_retried=retried, done=counts["DONE"], failed=counts["FAILED"], results=counts["results"], lost=lost,
                   duplicates=duplicates, integrity=store.integrity_check(), seconds=round(elapsed, 1))  # fmt: skip
    print("SOAK " + " ".join(f"{k}={v}" for k, v in figures.items()))
    print((tmp_path / "workers.log").read_text()[-1500:])

    assert len(valid_ids) == 70 and refused == 30 and len(store.rejections()) == 30
    assert kills == KILLS and orphaned >= 1
    assert lost == 0 and duplicates == 0 and counts["FAILED"] == 0
    assert sorted(result_ids) == sorted(valid_ids) and counts["DONE"] == 70
    assert figures["integrity"] == "ok"
    rows = [len(store.result(sid)["rows"]) for sid in valid_ids if store.get(sid)["track"] == "models"]
    assert rows == [8] * 56
