"""Batch mode and cost control of the ``openai`` judge, driven by the official ``openai`` client against a toy
of OpenAI's chat, Files and Batches endpoints (``toy_batch_api.py``, standard library): a batch answers what
the synchronous route answers, a killed run collects the batch it submitted, rejected lines are error rows
retried by the next run, an expired batch resubmits only what it left, and ``--dry-run`` / ``--max-cost``
send nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from mmjudge.judges.base import innermost
from mmjudge.judges.cached import CachedJudge
from mmjudge.judges.openai.cost import Estimate, image_tokens, load_prices
from mmjudge.judges.openai.judge import OpenAIJudge
from mmjudge.judges.requests import RatingRequest, Turn
from repo_paths import ROOT
from toy_api_servers import ToyServer, close_all
from toy_batch_api import BatchAPI

PRICED = "gpt-4o-2024-08-06"


@pytest.fixture
def toy():
    made: list[ToyServer] = []

    def make(kind: str = "openai", fail=None, **kwargs) -> ToyServer:
        server = ToyServer(kind, **kwargs)
        server.batch_api = BatchAPI(server, fail=fail)
        made.append(server)
        return server

    yield make
    close_all(made)


def _requests(n: int) -> list[RatingRequest]:
    return [RatingRequest([Turn("user", f"Rate caption {i}.")]) for i in range(n)]


def _items(tmp_path: Path, n: int, image: str | None = None) -> Path:
    path = tmp_path / "items.jsonl"
    rows = [{"id": f"item{i}", "text": f"A dog number {i}.", **({"image": image} if image else {})} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(url: str, items: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return [
        "score", "--input", str(items), "--output", str(out), "--judge", "openai", "--set", f"base_url={url}",
        "--criteria", "fluency", "--cache", str(cache), "--quiet", *extra,
    ]  # fmt: skip


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------------------- batch == sync
def test_batch_answers_equal_synchronous_ones_and_fill_the_cache(toy, tmp_path):
    server = toy()
    sync = CachedJudge(OpenAIJudge(base_url=server.url, max_concurrency=1), tmp_path / "sync.sqlite")
    batch = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "b.sqlite")
    expected = sync.rate(_requests(12), progress=False)
    chats = len(server.rating_requests())
    got = batch.rate(_requests(12), progress=False)
    assert [r.raw for r in got] == [r.raw for r in expected] and all(r.error is None for r in got)
    assert len(server.batch_api.created) == 1 and len(server.rating_requests()) - chats == 12  # the batch's 12
    assert batch.identity() == sync.identity()  # one cache key: a batch answer is the synchronous one
    assert batch.signature_fields() == {**sync.signature_fields(), "mode": "batch"}
    again = batch.rate(_requests(12), progress=False)  # all cached now: nothing submitted
    assert batch.hits == 12 and len(server.batch_api.created) == 1 and [r.raw for r in again] == [r.raw for r in got]
    report = batch.usage_report()
    assert report["batch_requests"] == 12 and report["requests"] == 0 and report["mode"] == "batch"


def test_cli_batch_run_has_the_synchronous_rows_and_reports_usage(toy, tmp_path, capsys):
    from mmjudge.cli import main

    server = toy()
    items = _items(tmp_path, 6)
    assert main(_score(server.url, items, tmp_path / "sync.jsonl", tmp_path / "s.sqlite")) == 0
    batch_args = _score(server.url, items, tmp_path / "batch.jsonl", tmp_path / "b.sqlite", "--set", "mode=batch")
    assert main([*batch_args, "--set", "poll_interval=0.01"]) == 0
    sync_rows, batch_rows = _rows(tmp_path / "sync.jsonl"), _rows(tmp_path / "batch.jsonl")
    assert len(server.batch_api.created) == 1  # the planning pass put the whole input in one batch
    for a, b in zip(sync_rows, batch_rows):
        assert [f for f in b["signature"].split("|") if f != "mode=batch"] == a["signature"].split("|")
        assert "mode=batch" in b["signature"].split("|")
        assert {k: v for k, v in a.items() if k != "signature"} == {k: v for k, v in b.items() if k != "signature"}
    assert [r["fluency_status"] for r in batch_rows] == ["ok"] * 6
    assert main([*batch_args, "--set", "poll_interval=0.01", "--overwrite"]) == 0  # a re-run: all cached
    assert len(server.batch_api.created) == 1 and _rows(tmp_path / "batch.jsonl") == batch_rows


def test_usage_line_reports_batch_tokens_at_batch_prices(toy, tmp_path, capsys):
    from mmjudge.cli import main

    server = toy(model=PRICED)
    args = ["score", "--text", "A dog runs.", "--judge", "openai", "--set", f"base_url={server.url}", "--criteria",
            "fluency", "--cache", str(tmp_path / "c.sqlite"), "--set", "mode=batch",
            "--set", "poll_interval=0.01"]  # fmt: skip
    assert main(args) == 0
    usage = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("usage:"))
    # the toy reports 12 prompt + 16 completion tokens per request; gpt-4o's batch prices are 1.25 / 5.00 US$ per M
    assert "batch: 1 requests, 12 + 16 tokens" in usage and f"about ${(12 * 1.25 + 16 * 5.0) / 1e6:.4f}" in usage


# ------------------------------------------------------------------------------- a killed run, re-run
def test_a_run_killed_while_its_batch_is_pending_collects_the_same_batch(toy, tmp_path):
    server = toy()
    server.batch_api.hold.set()  # the batch stays in progress
    items, out, cache = _items(tmp_path, 5), tmp_path / "out.jsonl", tmp_path / "c.sqlite"
    cmd = [sys.executable, "-m", "mmjudge.cli", *_score(server.url, items, out, cache, "--set", "mode=batch")]
    cmd += ["--set", "poll_interval=0.05"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(server.batch_api.retrieved) < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)  # killed while polling
    proc.wait(timeout=30)
    [submitted] = server.batch_api.created
    looked = len(server.batch_api.retrieved)
    server.batch_api.hold.clear()  # the batch finishes meanwhile
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert server.batch_api.created == [submitted]  # no second batch: nothing paid twice
    assert submitted in server.batch_api.retrieved[looked:]  # the re-run collected that one
    assert server.batch_api.lines_answered == 5 and [r["fluency_status"] for r in _rows(out)] == ["ok"] * 5


# --------------------------------------------------------------------------------- rejected lines
def test_three_rejected_lines_are_error_rows_and_a_rerun_retries_only_those(toy, tmp_path):
    from mmjudge.cli import main

    rejecting = {"on": True}

    def fail(body):
        text = json.dumps(body)
        if rejecting["on"] and any(f"number {i}." in text for i in (1, 4, 6)):
            return 400, "Invalid content: the image could not be read."
        return None

    server = toy(fail=fail)
    items, out, cache = _items(tmp_path, 8), tmp_path / "out.jsonl", tmp_path / "c.sqlite"
    args = [*_score(server.url, items, out, cache, "--set", "mode=batch"), "--set", "poll_interval=0.01"]
    assert main(args) == 0
    rows = _rows(out)
    assert [r["id"] for r in rows if r["fluency_status"] == "error"] == ["item1", "item4", "item6"]
    for row in (r for r in rows if r["fluency_status"] == "error"):
        assert "rejected it (HTTP 400: Invalid content: the image could not be read.)" in row["fluency_note"]
        assert row["fluency"] is None
    assert all(r["fluency_status"] == "ok" for r in rows if r["id"] not in ("item1", "item4", "item6"))
    rejecting["on"] = False
    assert main([*args, "--overwrite"]) == 0
    first, second = server.batch_api.created
    resent = server.batch_api.files[server.batch_api.batches[second]["input_file_id"]][1].decode().splitlines()
    assert len(resent) == 3 and all(any(f"number {i}." in line for i in (1, 4, 6)) for line in resent)
    assert [r["fluency_status"] for r in _rows(out)] == ["ok"] * 8


def test_an_expired_batch_resubmits_only_what_it_left(toy, tmp_path):
    server = toy()
    server.batch_api.expire_after = 4  # the first batch answers 4 of 10, then expires
    judge = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    results = judge.rate(_requests(10), progress=False)
    assert all(r.error is None for r in results)
    first, second = server.batch_api.created
    assert server.batch_api.batches[first]["status"] == "expired"
    resent = server.batch_api.files[server.batch_api.batches[second]["input_file_id"]][1].decode().splitlines()
    assert len(resent) == 6 and server.batch_api.lines_answered == 10


@pytest.mark.parametrize("kept", [150, 30], ids=["custom_id-readable", "custom_id-torn-off"])
def test_a_torn_output_line_is_an_error_row_and_the_next_run_resends_only_it(toy, tmp_path, kept):
    """Issue 41.8: one torn line in a batch's output file stopped the run ('Expecting ':' delimiter'), kept no
    row, and every re-run collected the same batch and stopped the same way. Now that request is an error row
    (named by its custom_id when the torn line still holds it, else as unanswered), the batch's other answers
    are kept, and the next run sends only that request again."""
    server = toy()
    server.batch_api.tear = (2, kept)
    judge = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    results = judge.rate(_requests(5), progress=False)
    failed = [k for k, r in enumerate(results) if r.error is not None]
    assert len(failed) == 1 and all(r.error is None for k, r in enumerate(results) if k not in failed)
    why = results[failed[0]].error
    assert ("damaged line" in why) if kept == 150 else ("without answering it" in why), why
    again = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    assert all(r.error is None for r in again.rate(_requests(5), progress=False))
    first, second = server.batch_api.created
    resent = server.batch_api.files[server.batch_api.batches[second]["input_file_id"]][1].decode().splitlines()
    assert len(resent) == 1 and server.batch_api.lines_answered == 6


def test_batch_mode_needs_the_cache_and_one_server(toy):
    server = toy()
    with pytest.raises(ValueError, match="mode='batch' needs the cache"):
        OpenAIJudge(base_url=server.url, mode="batch").rate(_requests(1), progress=False)
    with pytest.raises(ValueError, match="one of \\('sync', 'batch'\\)"):
        OpenAIJudge(base_url=server.url, mode="async")


# ------------------------------------------------------------------------------------------ cost
def test_image_tokens_follow_openais_published_examples():
    table = load_prices()
    gpt4o, mini = table.find("gpt-4o-2024-08-06")[1], table.find("gpt-4o-mini")[1]
    assert image_tokens(1024, 1024, gpt4o) == 765 and image_tokens(2048, 4096, gpt4o) == 1105
    assert image_tokens(1024, 1024, mini) == 2833 + 4 * 5667  # same price as gpt-4o's 765 at 1/16.7 the rate
    assert image_tokens(1800, 2400, table.find("gpt-4.1-mini")[1]) == 2353  # 1452 patches x 1.62
    assert table.find("gpt-4.1-2025-04-14")[0] == "gpt-4.1" and table.find("llama-3") is None


def test_batch_price_is_half_the_synchronous_price_for_every_model():
    table = load_prices()
    estimate = Estimate()
    estimate.add(123_456, 7_890, 5_000)
    assert table.as_of and table.source
    for name, price in table.models.items():
        assert estimate.cost(price, batch=True) == pytest.approx(estimate.cost(price) / 2, rel=1e-9), name


def test_dry_run_counts_uncached_requests_tokens_and_prices_sends_nothing(toy, tmp_path, capsys):
    from mmjudge.cli import main

    server = toy(model=PRICED)
    Image.new("RGB", (1024, 1024), (200, 30, 30)).save(tmp_path / "red.png")
    items = _items(tmp_path, 3, image=str(tmp_path / "red.png"))
    args = ["score", "--input", str(items), "--judge", "openai", "--set", f"base_url={server.url}", "--set",
            f"model={PRICED}", "--set", "prefill=none", "--set", "mass=top-k", "--cache", str(tmp_path / "c.sqlite"),
            "--dry-run"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert server.requests == []  # nothing sent, not even a server identification
    # HarmonicEval: 5 criteria per item, 2 of them (correctness, completeness) see the image: 765 tokens each
    assert "dry run: 15 requests to openai:gpt-4o-2024-08-06 the cache does not hold (0 it does)" in out
    assert f"({6 * 765:,} of them for images)" in out and "at most 240 completion tokens" in out
    sync, batch = (float(x) for x in __import__("re").findall(r"\$([0-9.]+)", out)[:2])
    assert batch == pytest.approx(sync / 2, abs=1e-4) and sync > 0
    assert "list prices as of 2025-06-01" in out and "dry run: nothing was sent." in out


def test_max_cost_below_the_estimate_sends_nothing_in_one_line(toy, tmp_path, capsys):
    from mmjudge.cli import main

    server = toy(model=PRICED)
    items = _items(tmp_path, 4)
    args = ["score", "--input", str(items), "--output", str(tmp_path / "o.jsonl"), "--judge", "openai", "--set",
            f"base_url={server.url}", "--set", f"model={PRICED}", "--set", "prefill=none", "--set", "mass=top-k",
            "--criteria", "fluency", "--cache", str(tmp_path / "c.sqlite"), "--max-cost", "0.000001"]  # fmt: skip
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "over --max-cost 1e-06: nothing was sent." in err[0] and "4 requests" in err[0], err
    assert server.requests == [] and not (tmp_path / "o.jsonl").exists()
    assert main([*args[:-1], "1.0"]) == 0  # under it: the run goes on
    assert [p for m, p in server.requests if m == "POST"] == ["/v1/chat/completions"] * 4


def test_input_is_split_at_the_request_and_byte_limits(toy, tmp_path):
    server = toy()
    judge = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    runner = innermost(judge)._batches()
    runner.max_requests = 4  # (50,000 at OpenAI)
    assert all(r.error is None for r in judge.rate(_requests(10), progress=False))
    sizes = [len(server.batch_api.files[server.batch_api.batches[b]["input_file_id"]][1].splitlines())
             for b in server.batch_api.created]  # fmt: skip
    assert sizes == [4, 4, 2]
    runner.max_requests, runner.max_bytes = 1000, 1500  # (200 MB at OpenAI): a line is ~500 bytes here
    judge.rate([RatingRequest([Turn("user", f"Rate caption {i} again.")]) for i in range(7)], progress=False)
    blobs = [
        server.batch_api.files[server.batch_api.batches[b]["input_file_id"]][1] for b in server.batch_api.created[3:]
    ]
    assert len(blobs) > 1 and all(len(b) <= 1500 for b in blobs) and sum(len(b.splitlines()) for b in blobs) == 7


def test_a_run_killed_between_upload_and_record_adopts_the_batch_it_made(toy, tmp_path):
    """The file was uploaded and recorded, the batch created, then the process died before recording its id:
    the next run finds the batch made from that file among the account's batches instead of creating another."""
    server = toy()
    judge = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    runner = innermost(judge)._batches()
    requests = _requests(3)
    entries = [runner.rating_entry(_key(judge, r), r) for r in requests]
    client = judge.servers[0].client
    uploaded = client.files.create(file=("in.jsonl", b"".join(e.line + b"\n" for e in entries)), purpose="batch")
    judge.store.batches.add(runner.owner, uploaded.id, [(e.key, e.meta) for e in entries])
    made = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    results = judge.rate(requests, progress=False)
    assert all(r.error is None for r in results) and server.batch_api.created == [made.id]


def test_each_answer_is_written_to_the_cache_once_as_its_batch_is_collected(toy, tmp_path):
    """Each collected batch's answers go to the cache once (through its on_batch), one write per batch, so a kill
    while a later batch is pending keeps them; answers in a batch the call did not ask for (an earlier run's)
    are stored all the same."""
    server = toy()
    judge = CachedJudge(OpenAIJudge(base_url=server.url, mode="batch", poll_interval=0.01), tmp_path / "c.sqlite")
    runner = innermost(judge)._batches()
    runner.max_requests = 4
    writes: list[list[str]] = []
    put_many = judge.store.put_many
    judge.store.put_many = lambda rows: (writes.append([k for k, _ in rows if k]), put_many(rows))[1]
    requests = _requests(10)
    assert all(r.error is None for r in judge.rate(requests, progress=False))
    written = [k for batch in writes for k in batch]
    assert sorted(written) == sorted(_key(judge, r) for r in requests)  # each key once
    assert [len(batch) for batch in writes if batch] == [4, 4, 2]  # as each batch was collected

    # A batch submitted by an earlier (killed) run for 3 requests; this call asks for 1 of them.
    earlier = [RatingRequest([Turn("user", f"Rate caption {i} later.")]) for i in range(3)]
    entries = [runner.rating_entry(_key(judge, r), r) for r in earlier]
    client = judge.servers[0].client
    uploaded = client.files.create(file=("in.jsonl", b"".join(e.line + b"\n" for e in entries)), purpose="batch")
    number = judge.store.batches.add(runner.owner, uploaded.id, [(e.key, e.meta) for e in entries])
    made = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    judge.store.batches.update(number, batch_id=made.id, state="submitted")
    writes.clear()
    assert judge.rate(earlier[:1], progress=False)[0].error is None
    assert sorted(k for batch in writes for k in batch) == sorted(e.key for e in entries)  # each once
    assert set(judge.store.get_many([e.key for e in entries])) == {e.key for e in entries}


def _key(judge, request) -> str:
    from mmjudge.judges.requests import request_key

    return request_key(judge.identity(), "rate", request)


def test_python_users_plan_a_whole_input_into_one_batch_round(toy, tmp_path):
    """The planning pass the CLI runs is a function: every chunk's requests in one batch, then compute() finds
    every answer in the cache (here 3 chunks of 2 items, which compute alone would send as 3 batches)."""
    import mmjudge
    from mmjudge.judges.openai.plan import plan_run

    server = toy()
    he = mmjudge.load("harmonic_eval", judge="openai", base_url=server.url, mode="batch", poll_interval=0.01,
                      criteria=["fluency"], image_criteria=[], cache=str(tmp_path / "c.sqlite"))  # fmt: skip
    he.chunk_size = 2
    texts = [f"A dog number {i}." for i in range(6)]
    plan = plan_run(he, lambda: he.compute(predictions=texts, progress=False), batch=True)
    assert plan.estimate.requests == 6 and server.batch_api.created == []  # planning sends nothing
    plan.submit(progress=False)
    plan.close()
    out = he.compute(predictions=texts, progress=False)
    assert len(server.batch_api.created) == 1 and out["fluency_status"] == ["ok"] * 6
    assert "mode=batch" in out["signature"]
