"""Soak test on loopback: 100 concurrent uploads (valid and invalid mixed) through the running app's
HTTP API while a worker process scores them and is killed with SIGKILL mid-job and restarted three
times; a second worker then joins to drain the queue. Afterwards every valid submission is DONE exactly
once, every invalid one was refused with its reason, and the database passes ``PRAGMA integrity_check``.
Bounded: it gives up after ``DEADLINE_S`` and always stops its workers. The dummy judge scores (plumbing,
not quality)."""

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
from repo_paths import ROOT  # noqa: E402

N_SUBMISSIONS = 100
KILLS = 3
DEADLINE_S = 300.0  # a bound against hanging (shared CI machines start a board in 30 s+), not a speed claim
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
        out.append(
            {
                "track": "metrics",
                "benchmark": "demo-judgments",
                "body": jsonl(demo_scores(0.2 + k / 10, seed=k)),
                "valid": True,
            }
        )
    good = demo_outputs(0)
    invalid = [
        (jsonl(good[:-1]), "missing 1 id(s) of the benchmark"),
        (jsonl(good + [{"id": "nope", "text": "x"}]), "id(s) are not in the benchmark"),
        (jsonl(good + [good[0]]), "duplicate id"),
        (jsonl(good[:1]) + '{"id": "demo-ic-2", "text": \n', "not valid JSON"),
        (jsonl([{**good[0], "text": " "}] + good[1:]), "'text' is empty"),
        (
            jsonl(demo_scores(0.1))[:-2].replace('"score": ', '"score": NaN, "x": ', 1) + "}\n",
            "scores must be finite numbers",
        ),
    ]
    for k in range(30):
        body, reason = invalid[k % len(invalid)]
        track = "metrics" if "NaN" in body else "models"
        out.append(
            {
                "track": track,
                "benchmark": "demo-judgments" if track == "metrics" else "demo-inputs",
                "body": body.replace("}\n", f', "pad": "{k}"}}\n', 1) if k >= len(invalid) else body,
                "valid": False,
                "reason": reason,
            }
        )
    rng.shuffle(out)
    return out


def start_worker(data_dir: Path, name: str, log) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "mmjudge.cli",
        "leaderboard-worker",
        "--data-dir",
        str(data_dir),
        "--poll",
        "0.2",
        "--lease",
        str(LEASE_S),
        "--worker-id",
        name,
    ]
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT))


def wait_until_drained(store, deadline: float) -> None:
    """Until no job is pending or running, or ``deadline`` (time.monotonic()) passes."""
    while time.monotonic() < deadline:
        counts = store.counts()
        if counts["PENDING"] == 0 and counts["RUNNING"] == 0:
            return
        time.sleep(0.5)


@pytest.mark.slow
def test_soak_concurrent_submissions_with_killed_worker(tmp_path):
    from mmjudge.leaderboard.app import build_app, launch

    data_dir = tmp_path / "board"
    settings = {
        **DEFAULTS,
        "demo": True,
        "judge": "dummy",
        "bootstrap": 20,
        "rate_limit": 1000,
        "batch_size": 1,
        "explain_examples": 1,
    }
    save_settings(data_dir, settings)
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    store = Store(data_dir)
    started = time.monotonic()
    log = open(tmp_path / "workers.log", "w")  # noqa: SIM115 - the workers write to it until the finally below
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
            return client.predict(
                f["track"],
                f["benchmark"],
                f"sub-{k}",
                f"user-{k % 7}",
                "",
                "",
                gradio_client.handle_file(str(f["path"])),
                api_name="/submit",
            )

        with ThreadPoolExecutor(max_workers=16) as pool:
            pending = [pool.submit(send, k) for k in range(len(files))]
            # Kill the victim while it holds a job, restart it, repeat — while uploads are still coming in.
            while kills < KILLS and time.monotonic() - started < DEADLINE_S / 2:
                held = (
                    store.connect()
                    .execute("SELECT id FROM submissions WHERE status='RUNNING' AND worker=?", (f"victim-{kills}",))
                    .fetchone()
                )
                if held is None:
                    time.sleep(0.05)
                    continue
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait(timeout=10)
                if store.get(held["id"]).worker == f"victim-{kills}":
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
                assert message.startswith("❌ Not accepted — invalid file: ") and f["reason"] in message.replace(
                    "&#x27;", "'"
                ), message
                refused += 1

        wait_until_drained(store, started + DEADLINE_S)
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
    figures = dict(
        submissions=len(files),
        valid=len(valid_ids),
        invalid=refused,
        kills=kills,
        orphaned_jobs=orphaned,
        jobs_retried=retried,
        done=counts["DONE"],
        failed=counts["FAILED"],
        results=counts["results"],
        lost=lost,
        duplicates=duplicates,
        integrity=store.integrity_check(),
        seconds=round(elapsed, 1),
    )
    print("SOAK " + " ".join(f"{k}={v}" for k, v in figures.items()))
    print((tmp_path / "workers.log").read_text()[-1500:])

    assert len(valid_ids) == 70 and refused == 30 and len(store.rejections()) == 30
    assert kills == KILLS and orphaned >= 1
    assert lost == 0 and duplicates == 0 and counts["FAILED"] == 0
    assert sorted(result_ids) == sorted(valid_ids) and counts["DONE"] == 70
    assert figures["integrity"] == "ok"
    rows = [len(store.result(sid).rows) for sid in valid_ids if store.get(sid).track == "models"]
    assert rows == [8] * 56


def start_server(data_dir: Path, port: int, log) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "mmjudge.cli",
        "leaderboard",
        "--data-dir",
        str(data_dir),
        "--no-worker",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT))


def wait_until_serving(url: str, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    import urllib.request

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the board exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/config", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the board did not start in time")


@pytest.mark.slow
def test_soak_server_and_worker_killed_while_200_uploads_arrive(tmp_path):
    """200 concurrent uploads (140 valid, 60 invalid) to a board running as its own process, which is
    SIGKILLed twice mid-stream and restarted, while a worker is SIGKILLed once. Clients retry an upload
    whose reply never came (the server died), as any uploader would. Afterwards: every valid file is in
    the board exactly once (a retry of a file whose first attempt had committed gets that attempt's
    receipt back: the same 32-character id), every one is DONE once, nothing refused was stored,
    integrity_check is ok."""
    import socket

    from mmjudge.leaderboard.store import content_hash

    data_dir = tmp_path / "board"
    save_settings(
        data_dir,
        {
            **DEFAULTS,
            "demo": True,
            "judge": "dummy",
            "bootstrap": 20,
            "rate_limit": 100_000,
            "batch_size": 2,
            "explain_examples": 0,
        },
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "processes.log", "w")  # noqa: SIM115 - the processes write to it until the finally below
    files = uploads(random.Random(1)) + uploads(random.Random(2))
    for k, f in enumerate(files):  # every valid body unique across the two batches (a text field: not a score)
        if f["valid"]:
            f["body"] = f["body"].replace("}\n", f', "tag": "upload {k}"}}\n', 1)
        f["path"] = tmp_path / f"upload-{k}.jsonl"
        f["path"].write_text(f["body"], encoding="utf-8")
    valid_hashes = {content_hash(f["body"].encode()) for f in files if f["valid"]}
    assert len(files) == 200 and len(valid_hashes) == 140
    server = start_server(data_dir, port, log)
    workers = [start_worker(data_dir, "w-a", log), start_worker(data_dir, "w-b", log)]
    started = time.monotonic()
    server_kills = worker_kills = retries = 0
    try:
        wait_until_serving(url, server)

        def send(k: int) -> tuple[str, int]:
            f, attempts = files[k], 0
            while time.monotonic() - started < DEADLINE_S * 2:
                attempts += 1
                try:
                    client = gradio_client.Client(url, verbose=False)
                    return client.predict(
                        f["track"],
                        f["benchmark"],
                        f"sub-{k}",
                        f"user-{k % 7}",
                        "",
                        "",
                        gradio_client.handle_file(str(f["path"])),
                        api_name="/submit",
                    ), attempts
                except Exception:
                    time.sleep(0.3)
            return "", attempts

        with ThreadPoolExecutor(max_workers=16) as pool:
            pending = [pool.submit(send, k) for k in range(len(files))]
            for when in (0.25, 0.6):  # kill the server after a quarter and after 60% of the replies
                while sum(p.done() for p in pending) < when * len(files) and time.monotonic() - started < DEADLINE_S:
                    time.sleep(0.05)
                server.send_signal(signal.SIGKILL)
                server.wait(timeout=10)
                server_kills += 1
                if server_kills == 1:
                    workers[0].send_signal(signal.SIGKILL)
                    workers[0].wait(timeout=10)
                    worker_kills += 1
                    workers[0] = start_worker(data_dir, "w-a2", log)
                server = start_server(data_dir, port, log)
                wait_until_serving(url, server)
            results = [p.result(timeout=DEADLINE_S * 2) for p in pending]
        store = Store(data_dir)
        wait_until_drained(store, started + DEADLINE_S * 2)
        elapsed = time.monotonic() - started
    finally:
        for proc in [server, *workers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        log.close()

    db = store.connect()
    rows = [dict(r) for r in db.execute("SELECT id, content_hash, status, track FROM submissions")]
    result_ids = [r[0] for r in db.execute("SELECT submission_id FROM results")]
    stored_hashes = [r["content_hash"] for r in rows]
    id_of = {r["content_hash"]: r["id"] for r in rows}
    received, recovered, refused, unanswered = 0, 0, 0, 0
    for f, (reply, attempts) in zip(files, results):
        retries += attempts - 1
        if not reply:
            unanswered += 1
        elif f["valid"]:
            # Every valid upload's reply names its stored submission by the full id, whether its first
            # attempt's reply arrived or a retry got that attempt's receipt back.
            assert reply.startswith("✅ received: submission ") and id_of[content_hash(f["body"].encode())] in reply
            received += "had arrived before" not in reply
            recovered += "had arrived before" in reply
        else:
            assert reply.startswith("❌ Not accepted — invalid file: ") and f["reason"] in reply, reply
            refused += 1
    lost = len(valid_hashes - set(stored_hashes))
    duplicated = len(stored_hashes) - len(set(stored_hashes))
    figures = dict(
        uploads=len(files),
        valid=len(valid_hashes),
        received=received,
        recovered_by_retry=recovered,
        refused=refused,
        unanswered=unanswered,
        client_retries=retries,
        server_kills=server_kills,
        worker_kills=worker_kills,
        stored=len(rows),
        done=sum(r["status"] == "DONE" for r in rows),
        results=len(result_ids),
        lost=lost,
        duplicated=duplicated,
        integrity=store.integrity_check(),
        seconds=round(elapsed, 1),
    )
    print("SOAK-SERVER " + " ".join(f"{k}={v}" for k, v in figures.items()))
    assert unanswered == 0 and lost == 0 and duplicated == 0
    assert set(stored_hashes) == valid_hashes and len(rows) == len(valid_hashes)  # nothing refused was stored
    assert received + recovered == len(valid_hashes) and refused == len(files) - len(valid_hashes)
    assert all(r["status"] == "DONE" for r in rows) and sorted(result_ids) == sorted(r["id"] for r in rows)
    assert server_kills == 2 and worker_kills == 1 and figures["integrity"] == "ok"
