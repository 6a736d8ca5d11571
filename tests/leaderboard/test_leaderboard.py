"""Leaderboard engine: validation, ranking, the store's queue and recovery, protection, Hub sync, worker.

The worker tests use the hash-based ``dummy`` judge: they prove plumbing, never quality."""

import json
import math
import threading
import time
from dataclasses import replace

import pytest

from mmjudge.leaderboard.benchmarks import demo_outputs, demo_scores, get_benchmark
from mmjudge.leaderboard.hub_sync import HubSync
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.protection import AdminGuard, RateLimit, check_admin, safe_link
from mmjudge.leaderboard.ranking import competition_ranks, group_by_signature, rank_metrics, rank_models
from mmjudge.leaderboard.records import ScoredSubmission
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.validation import SubmissionError, validate_outputs, validate_scores
from mmjudge.leaderboard.worker import Worker
from mmjudge.report import markdown_text
from mmjudge.signature import Signature


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


IDS = ["a", "b", "c"]
GOOD = [{"id": "a", "text": "A dog."}, {"id": "b", "text": "A cat."}, {"id": "c", "text": "A cow."}]


# ------------------------------------------------------------------------------------- validation
def test_valid_outputs_come_back_in_benchmark_order():
    assert validate_outputs(jsonl(GOOD[::-1]), IDS) == GOOD


@pytest.mark.parametrize(
    "data, message",
    [
        (
            b"x" * 101,
            "the file is 101 bytes; this board accepts at most 100 bytes. Keep only the fields the track needs in each "
            'line: "id" and "text" (Models) or "id" and the scores (Metrics).',
        ),
        (b'{"id": "a", "text": "caf\xe9"}\n', "line 1: not UTF-8 (byte 24); save the file as UTF-8."),
        (b"", "the file holds no JSON lines."),
        (b'{"id": "a", "text": "x"}\n{"id": "b", "text": \n', "line 2: not valid JSON (Expecting value at column 21)."),
        (b'["a", "x"]\n', 'line 1: expected a JSON object like {"id": …}, but got list.'),
        (b'{"text": "x"}\n', "line 1: 'id' must be a non-empty string, but got None."),
        (b'{"id": 3, "text": "x"}\n', "line 1: 'id' must be a non-empty string, but got 3."),
    ],
)
def test_parse_rejections(data, message):
    with pytest.raises(SubmissionError) as err:
        validate_outputs(data, IDS, max_bytes=100)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "rows, message",
    [
        (GOOD[:2], "missing 1 id(s) of the benchmark: 'c'."),
        (GOOD + [{"id": "z", "text": "x"}], "line 4: 1 id(s) are not in the benchmark: 'z'."),
        (GOOD + [{"id": "a", "text": "again"}], "line 4: duplicate id 'a' (first on line 1)."),
        ([GOOD[0], {"id": "b", "text": "  "}, GOOD[2]], "line 2 (id 'b'): 'text' is empty."),
        (
            [GOOD[0], {"id": "b"}, GOOD[2]],
            'line 2 (id \'b\'): no \'text\'; each line needs {"id": "b", "text": "<your model\'s output>"}.',
        ),
        ([GOOD[0], {"id": "b", "text": 3}, GOOD[2]], "line 2 (id 'b'): 'text' must be a string, but got int."),
        (
            [GOOD[0], GOOD[1], {"id": "c", "text": "y" * 11}],
            "line 3 (id 'c'): 'text' has 11 characters; the limit is 10.",
        ),
    ],
)
def test_output_rejections(rows, message):
    with pytest.raises(SubmissionError) as err:
        validate_outputs(jsonl(rows), IDS, max_chars=10)
    assert str(err.value) == message


def test_a_file_sent_to_the_wrong_track_says_so():
    scores = jsonl([{"id": i, "score": 0.5} for i in IDS])
    with pytest.raises(
        SubmissionError, match=r"^line 1 \(id 'a'\): no 'text'. This looks like a Metrics-track score file"
    ):
        validate_outputs(scores, IDS)
    with pytest.raises(SubmissionError, match=r"This looks like a Models-track outputs file"):
        validate_scores(jsonl(GOOD), IDS)


def test_score_rejections():
    ok = [{"id": i, "score": 0.5, "fluency": 1} for i in IDS]
    assert validate_scores(jsonl(ok), IDS) == {i: {"score": 0.5, "fluency": 1.0} for i in IDS}
    cases = [
        (
            [{"id": i, "text": "x"} for i in IDS],
            'no numeric score column; each line needs e.g. {"id": …, "score": 0.5}. This looks '
            'like a Models-track outputs file ({"id", "text"}); to submit a model\'s outputs, choose the Models track.',
        ),
        (
            ok[:2],
            "no score for 1 id(s) of the benchmark: 'c'.",
        ),  # the ids are checked by the meta-evaluation's check_scores
        (ok + [{"id": "z", "score": 0.1, "fluency": 1}], "line 4: 1 id(s) are not in the benchmark: 'z'."),
        (ok + [{"id": "a", "score": 0.1, "fluency": 1}], "line 4: duplicate id 'a' (first on line 1)."),
        (ok[:2] + [{"id": "c", "score": 0.1}], "line 3 (id 'c'): missing score 'fluency' (other lines have it)."),
        (ok[:2] + [{"id": "c", "score": "high", "fluency": 1}], "line 3 (id 'c'): 'score' is 'high', not a number."),
        (ok[:2] + [{"id": "c", "score": True, "fluency": 1}], "line 3 (id 'c'): 'score' is True, not a number."),
    ]
    for rows, message in cases:
        with pytest.raises(SubmissionError) as err:
            validate_scores(jsonl(rows), IDS)
        assert str(err.value) == message
    for bad in (b"NaN", b"Infinity", b"-Infinity"):
        data = jsonl(ok[:2]) + b'{"id": "c", "score": ' + bad + b', "fluency": 1}\n'
        with pytest.raises(
            SubmissionError, match=r"line 3 \(id 'c'\): 'score' is (nan|inf|-inf); scores must be finite"
        ):
            validate_scores(data, IDS)


# ---------------------------------------------------------------------------------------- ranking
def entry(sid, name, overall, sig, created, criteria=None, tasks=None):
    return ScoredSubmission(
        id=sid,
        track="models",
        benchmark="b",
        name=name,
        submitter="s",
        signature=str(sig),
        created_at=created,
        summary={"overall": overall, "criteria": criteria or {}, "tasks": tasks or {}},
    )


def test_models_ranked_in_exact_order_within_signature_groups():
    s1 = Signature.make("harmonic_eval", judge="dummy", gamma=0.75)
    s1_newer = s1.with_fields(mmjudge="9.9.9")  # software version only: still comparable
    s2 = s1.with_fields(gamma=0.5)  # another γ: never ranked with s1
    entries = [
        entry("1", "low", 2.0, s1, 1, {"fluency": 4.9}, {"ic": {"overall": 2.0, "n": 1}}),
        entry("2", "high", 4.5, s2, 2),
        entry("3", "mid", 3.0, s1_newer, 3, {"fluency": 1.0}, {"ic": {"overall": 3.5, "n": 1}}),
        entry("4", "top", 4.0, s1, 4, {"fluency": 3.0}, {"ic": {"overall": 1.0, "n": 1}}),
        entry("5", "mid-too", 3.0, s1, 5, {"fluency": 2.0}),
    ]
    tables = rank_models(entries)
    assert [t["signature"] for t in tables] == [str(s1), str(s2)]
    assert [(r["rank"], r["name"]) for r in tables[0]["rows"]] == [(1, "top"), (2, "mid"), (2, "mid-too"), (4, "low")]
    assert [(r["rank"], r["name"]) for r in tables[1]["rows"]] == [(1, "high")]
    by_fluency = rank_models(entries, criterion="fluency")[0]["rows"]
    assert [r["name"] for r in by_fluency] == ["low", "top", "mid-too", "mid"]
    by_ic = rank_models(entries, task="ic")[0]["rows"]
    assert [(r["rank"], r["name"]) for r in by_ic] == [(1, "mid"), (2, "low"), (3, "top"), (None, "mid-too")]
    assert [len(g) for g in group_by_signature(entries)] == [4, 1]
    assert competition_ranks([1.0, 3.0, 3.0, 2.0]) == [4, 1, 1, 3]


# ------------------------------------------------------------------------------------------ store
def add(store, data=b"x", name="m"):
    return store.add_submission(track="models", benchmark="demo-inputs", name=name, submitter="s", data=data)


def test_submission_is_durable_before_receipt(tmp_path):
    store = Store(tmp_path)
    sid = add(store, b"payload")
    other = Store(tmp_path)  # a fresh connection (another process) sees the committed row and the file
    row = other.get(sid)
    assert row.status == "PENDING" and row.file_name == f"{sid}.jsonl"
    assert (tmp_path / "uploads" / row.file_name).read_bytes() == b"payload"
    assert other.connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_concurrent_claims_take_each_job_once(tmp_path):
    store = Store(tmp_path)
    ids = [add(store, str(i).encode()) for i in range(20)]
    claimed, lock = [], threading.Lock()

    def claimer(n):
        while True:
            job = store.claim(f"w{n}", lease_s=60)
            if job is None:
                return
            with lock:
                claimed.append(job.id)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(ids)
    assert store.counts()["RUNNING"] == 20


def test_expired_lease_requeues_and_stale_worker_cannot_commit(tmp_path):
    store = Store(tmp_path)
    sid = add(store)
    t0 = time.time()
    assert store.claim("dead", lease_s=10, now=t0).worker == "dead"
    assert store.claim("alive", lease_s=10, now=t0 + 5) is None  # lease still valid: nothing to take
    job = store.claim("alive", lease_s=10, now=t0 + 11)  # the dead worker's lease ran out
    assert job.id == sid and job.attempts == 2
    assert store.complete(sid, "dead", signature="s", summary={}, rows=[]) is False
    assert store.heartbeat(sid, "dead") is False
    assert store.complete(sid, "alive", signature="s", summary={"x": 1}, rows=[]) is True
    assert store.complete(sid, "alive", signature="s", summary={"x": 2}, rows=[]) is False  # DONE once
    assert store.counts()["results"] == 1 and store.result(sid).summary == {"x": 1}


def test_requeue_deletes_old_results(tmp_path):
    store = Store(tmp_path)
    sid = add(store)
    store.claim("w")
    store.complete(sid, "w", signature="s", summary={}, rows=[])
    assert store.requeue(sid) and store.get(sid).status == "PENDING" and store.result(sid) is None
    assert [q.position for q in store.queue()] == [1]


# ------------------------------------------------------------------------------------- protection
def test_escaping_and_links():
    assert markdown_text("<script>alert('x')</script>") == "&lt;script&gt;alert('x')&lt;/script&gt;"
    assert markdown_text("a\n# heading\n- item") == "a \\# heading - item"  # one line: no block can start
    assert (
        markdown_text("![x](http://e.x/i.png) <http://e.x> www.e.x")
        == "\\!\\[x\\](http\\://e.x/i.png) &lt;http\\://e.x&gt; www\\.e.x"
    )
    assert safe_link('https://x.org/"onmouseover="a') == ""
    assert safe_link("data:text/html,<b>") == ""


TOKEN = "s3cret-s3cret-s3cret"  # at least MIN_TOKEN_CHARS


def test_admin_token(monkeypatch):
    with pytest.raises(PermissionError, match="admin actions are disabled"):
        check_admin("anything", env={})
    with pytest.raises(PermissionError, match="wrong admin token"):
        check_admin("guess", env={"MMJUDGE_LEADERBOARD_ADMIN_TOKEN": TOKEN})
    check_admin(TOKEN, env={"MMJUDGE_LEADERBOARD_ADMIN_TOKEN": TOKEN})
    # A short token could be guessed (the right one is never throttled): admin actions stay off, saying why.
    with pytest.raises(PermissionError) as err:
        check_admin("s3cret", env={"MMJUDGE_LEADERBOARD_ADMIN_TOKEN": "s3cret"})
    assert str(err.value).startswith(
        "admin actions are disabled: MMJUDGE_LEADERBOARD_ADMIN_TOKEN holds 6 characters; set one of at least 16"
    )


def test_admin_guard_delay_grows_per_client_and_is_capped():
    clock = [100.0]
    guard = AdminGuard(
        base_delay_s=1.0, max_delay_s=5.0, clock=lambda: clock[0], env={"MMJUDGE_LEADERBOARD_ADMIN_TOKEN": TOKEN}
    )

    def attempt(token, client="ip:1"):
        try:
            guard.check(token, client)
            return "ok"
        except PermissionError as err:
            return str(err)

    waits = []
    for _ in range(5):  # each wrong token is tried as soon as the previous wait is over
        assert attempt("guess") == "wrong admin token."
        refused = attempt("another guess")
        waits.append(int(refused.split("wait ")[1].split(" s")[0]))
        clock[0] += waits[-1]
    assert waits == [1, 2, 4, 5, 5]  # doubling, capped at max_delay_s
    assert attempt("guess", "ip:2") == "wrong admin token."  # another client has its own record
    assert attempt(TOKEN) == "ok" and attempt("guess") == "wrong admin token."  # the right token clears it
    with pytest.raises(PermissionError, match="disabled"):
        AdminGuard(env={}).check("anything", "ip:1")


def test_the_right_admin_token_gets_through_while_wrong_ones_wait():
    """Issue 29.5 as found: after wrong tokens from an address, the right token was refused too while the
    delay ran, so anyone sharing the address could keep the admin out. Now only failures wait."""
    clock = [0.0]
    guard = AdminGuard(base_delay_s=60.0, clock=lambda: clock[0], env={"MMJUDGE_LEADERBOARD_ADMIN_TOKEN": TOKEN})
    for guess in ("a", "b", "c"):  # someone behind the same address keeps guessing
        with pytest.raises(PermissionError):
            guard.check(guess, "ip:10.0.0.1")
    with pytest.raises(PermissionError, match=r"wait 60 s before trying again"):
        guard.check("d", "ip:10.0.0.1")  # still inside the first wait: failures are throttled
    guard.check(TOKEN, "ip:10.0.0.1")  # the admin, same address, same instant: let in
    with pytest.raises(PermissionError, match=r"^wrong admin token\.$"):
        guard.check("e", "ip:10.0.0.1")  # and the record was cleared


def test_intake_refusals_are_logged_with_reason(tmp_path):
    store = Store(tmp_path)
    good = jsonl(demo_outputs(0))
    limit = RateLimit(max_submissions=3, window_s=3600)
    kw = dict(track="models", benchmark="demo-inputs", submitter="eve", rate_limit=limit, client="ip:10.0.0.9")
    first = submit(store, name="<b>bold</b>", data=good, **kw)
    assert first.accepted and store.get(first.id).name == "<b>bold</b>"  # stored as data
    dup = submit(store, name="again", data=good, **kw)
    assert not dup.accepted and dup.message.startswith(
        "duplicate: the same file was already submitted as '<b>bold</b>'"
    )
    bad = submit(store, name="bad", data=b"{", **kw)
    assert (
        bad.message
        == "invalid file: line 1: not valid JSON (Expecting property name enclosed in double quotes at column 2)."
    )
    limited = submit(store, name="more", data=jsonl(demo_outputs(1)), **kw)
    assert limited.message.startswith("rate limit: your address (10.0.0.9) sent 3 submissions in the last 60 minutes")
    wrong_track = submit(store, track="metrics", benchmark="demo-inputs", name="x", submitter="z", data=good)
    assert wrong_track.message == "benchmark 'demo-inputs' belongs to the models track, not metrics."
    reasons = [r.reason.split(":")[0] for r in store.rejections()]
    assert reasons == [
        "duplicate",
        "invalid file",
        "rate limit",
        "benchmark 'demo-inputs' belongs to the models track, not metrics.",
    ]


def test_rate_limit_counts_the_client_not_the_typed_name(tmp_path):
    store = Store(tmp_path)
    limit = RateLimit(max_submissions=2, window_s=3600)
    kw = dict(track="models", benchmark="demo-inputs", rate_limit=limit, client="ip:10.0.0.7")
    assert submit(store, name="a", submitter="ana", data=jsonl(demo_outputs(0)), **kw).accepted
    assert submit(store, name="b", submitter="bo", data=jsonl(demo_outputs(1)), **kw).accepted
    third = submit(store, name="c", submitter="cy", data=jsonl(demo_outputs(2)), **kw)
    assert third.message.startswith("rate limit: your address (10.0.0.7) sent 2 submissions")
    assert submit(
        store, name="c", submitter="cy", data=jsonl(demo_outputs(2)), **{**kw, "client": "ip:10.0.0.8"}
    ).accepted
    assert [r.submitter for r in store.submissions()] == ["ana", "bo", "cy"]  # the name stays display data


def test_rate_limit_is_decided_inside_the_inserting_transaction(tmp_path):
    from mmjudge.leaderboard.store import RateLimitedError

    store = Store(tmp_path)
    store.add_submission(
        track="models", benchmark="demo-inputs", name="m", submitter="s", data=b"1", client="c", rate=(1, 60)
    )
    with pytest.raises(RateLimitedError) as err:  # an upload that passed the early check while the first one committed
        store.add_submission(
            track="models", benchmark="demo-inputs", name="m", submitter="s", data=b"2", client="c", rate=(1, 60)
        )
    assert err.value.used == 1 and len(store.submissions()) == 1
    assert sorted(p.name for p in store.uploads.iterdir()) == [store.submissions()[0].file_name]


def test_store_made_before_the_client_column_is_migrated(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "leaderboard.sqlite")
    db.executescript(
        "CREATE TABLE submissions (id TEXT PRIMARY KEY, track TEXT NOT NULL, benchmark TEXT NOT NULL,"
        " name TEXT NOT NULL, link TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',"
        " submitter TEXT NOT NULL, content_hash TEXT NOT NULL, file_name TEXT NOT NULL, status TEXT NOT NULL,"
        " reason TEXT NOT NULL DEFAULT '', signature TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,"
        " updated_at REAL NOT NULL, started_at REAL, finished_at REAL, worker TEXT, lease_until REAL,"
        " attempts INTEGER NOT NULL DEFAULT 0, hidden INTEGER NOT NULL DEFAULT 0, synced_at REAL);"
    )
    db.close()
    store = Store(tmp_path)
    sid = store.add_submission(
        track="models", benchmark="demo-inputs", name="m", submitter="s", data=b"x", client="ip:1"
    )
    assert store.get(sid).client == "ip:1" and store.count_recent("ip:1", 0) == 1


def test_queue_position_of_one_submission(tmp_path):
    store = Store(tmp_path)
    sids = [
        store.add_submission(
            track="models", benchmark="demo-inputs", name="m", submitter="s", data=bytes([k]), now=100.0 + k
        )
        for k in range(4)
    ]
    store.claim("w")
    store.set_hidden(sids[2], True)
    assert [store.position(s) for s in sids] == [0, 1, None, 2]
    assert [q.position for q in store.queue()] == [0, 1, 2]  # the full listing agrees
    assert store.position("nope") is None


def test_listing_benchmarks_builds_none_and_configure_is_idempotent(monkeypatch):
    from mmjudge.leaderboard import benchmarks

    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setattr(benchmarks, "_BUILT", dict(benchmarks._BUILT))
    built = []
    benchmarks.register("lazy", "metrics", lambda: built.append(1) or get_benchmark("demo-judgments"))
    assert benchmarks.available_benchmarks("metrics") == ["demo-judgments", "lazy"] and built == []
    demo = get_benchmark("demo-judgments")
    entry = [{"name": "nowhere", "track": "metrics", "data_dir": "/does/not/exist"}]
    benchmarks.configure(entry)
    benchmarks.configure(entry)
    assert get_benchmark("demo-judgments") is demo  # configuring again dropped nothing already built
    assert benchmarks.available_benchmarks("metrics") == ["demo-judgments", "lazy", "nowhere"]


# ---------------------------------------------------------------------------------------- hub sync
class FakeHfApi:
    """Stand-in for huggingface_hub.HfApi: records uploads; can fail on demand."""

    def __init__(self):
        self.files, self.fail = {}, False

    def upload_file(self, *, path_or_fileobj, path_in_repo, repo_id, repo_type, commit_message):
        assert repo_type == "dataset"
        if self.fail:
            raise ConnectionError("hub down")
        self.files[(repo_id, path_in_repo)] = json.loads(path_or_fileobj)

    def list_repo_files(self, repo_id, repo_type):
        return [p for r, p in self.files if r == repo_id]


def test_hub_sync_pushes_status_changes_and_retries(tmp_path):
    store = Store(tmp_path)
    api = FakeHfApi()
    sync = HubSync.from_settings({"hub_requests_repo": "o/req", "hub_results_repo": "o/res"}, api=api)
    assert HubSync.from_settings({}) is None
    sid = add(store)
    api.fail = True
    assert sync.sync(store) == 0  # not marked synced: pushed next time
    api.fail = False
    assert sync.sync(store) == 1
    assert api.files[("o/req", f"requests/demo-inputs/{sid}.json")]["status"] == "PENDING"
    store.claim("w")
    store.complete(sid, "w", signature="sig", summary={"overall": 3.0}, rows=[])
    assert sync.sync(store) == 1
    assert api.files[("o/req", f"requests/demo-inputs/{sid}.json")]["status"] == "FINISHED"
    assert api.files[("o/res", f"results/demo-inputs/{sid}.json")]["summary"] == {"overall": 3.0}
    assert sync.remote_requests() == [f"requests/demo-inputs/{sid}.json"]


# ------------------------------------------------------------------------------------------ worker
def test_worker_scores_both_tracks_and_ranks_metrics(tmp_path):
    from mmjudge.metaeval import meta_evaluate

    store = Store(tmp_path)
    for q in range(2):
        assert submit(
            store, track="models", benchmark="demo-inputs", name=f"m{q}", submitter="s", data=jsonl(demo_outputs(q))
        ).accepted
    for noise in (0.0, 3.0):
        assert submit(
            store,
            track="metrics",
            benchmark="demo-judgments",
            name=f"noise{noise}",
            submitter="s",
            data=jsonl(demo_scores(noise, seed=1)),
        ).accepted
    worker = Worker(store, {"judge": "dummy", "bootstrap": 50, "batch_size": 3, "explain_examples": 1}, progress=False)
    assert worker.run(once=True) == 4
    assert store.counts()["DONE"] == 4 and store.counts()["results"] == 4
    # Models: the stored overall equals the mean of the stored per-item rows.
    done = store.done("models")
    rows = store.result(done[0].id).rows
    assert len(rows) == 8 and math.isclose(done[0].summary["overall"], sum(r["overall"] for r in rows) / 8)
    assert done[0].summary["examples"][0]["explanation"]
    # Metrics: the headline equals an independent meta-evaluation of the same scores, and ranks follow it.
    hj = get_benchmark("demo-judgments").judgments()
    tables = rank_metrics(store.done("metrics"))
    assert len(tables) == 1
    expected = {}
    for noise in (0.0, 3.0):
        scores = {r["id"]: {"score": r["score"]} for r in demo_scores(noise, seed=1)}
        expected[f"noise{noise}"] = meta_evaluate(hj, {"m": scores}, bootstrap=0).headline("m")["value"]
    got = {r["name"]: r["headline"] for r in tables[0]["rows"]}
    assert got == pytest.approx(expected)
    order = sorted(expected, key=lambda n: -expected[n])
    assert [r["name"] for r in tables[0]["rows"]] == order


def test_worker_fails_a_job_with_its_reason(tmp_path):
    store = Store(tmp_path)
    sid = store.add_submission(track="models", benchmark="demo-inputs", name="m", submitter="s", data=b"not json")
    Worker(store, {"judge": "dummy"}, progress=False).run_once()
    row = store.get(sid)
    assert (
        row.status == "FAILED" and row.reason == "scoring failed: line 1: not valid JSON (Expecting value at column 1)."
    )


def test_worker_scores_an_upload_the_board_accepted_above_the_default_limit(tmp_path):
    from mmjudge.leaderboard.validation import MAX_BYTES

    store = Store(tmp_path)
    data = jsonl(demo_outputs(0)) + b"\n" * MAX_BYTES  # blank lines: valid, but over validation's default size
    limit = len(data) + 1
    receipt = submit(
        store, track="models", benchmark="demo-inputs", name="big", submitter="s", data=data, max_bytes=limit
    )
    assert receipt.accepted
    Worker(store, {"judge": "dummy", "max_upload_bytes": limit, "explain_examples": 0}, progress=False).run_once()
    assert store.get(receipt.id).status == "DONE", store.get(receipt.id).reason


def test_worker_holds_its_lease_during_a_slow_hub_sync(tmp_path):
    store = Store(tmp_path)
    sid = submit(
        store, track="models", benchmark="demo-inputs", name="m", submitter="s", data=jsonl(demo_outputs(0))
    ).id
    requeued = []

    class SlowHub:
        def sync(self, store):
            if not requeued:  # the first sync (right after the claim) outlives the lease several times
                time.sleep(1.2)
                requeued.append(store.recover_expired())  # what another worker's claim would do
            return 0

    Worker(store, {"judge": "dummy", "explain_examples": 0}, lease_s=0.3, progress=False, hub=SlowHub()).run_once()
    assert requeued == [0] and store.get(sid).status == "DONE"


def test_worker_loads_the_judge_once_for_scores_and_explanations(tmp_path, monkeypatch):
    import mmjudge.judges.factory as base  # where build_judge looks the backend up

    loads = []
    real = base.load_judge
    monkeypatch.setattr(base, "load_judge", lambda *a, **k: loads.append(a) or real(*a, **k))
    store = Store(tmp_path)
    sid = submit(
        store, track="models", benchmark="demo-inputs", name="m", submitter="s", data=jsonl(demo_outputs(0))
    ).id
    Worker(store, {"judge": "dummy", "explain_examples": 2}, progress=False).run_once()
    assert store.get(sid).status == "DONE" and len(store.result(sid).summary["examples"]) > 0
    assert len(loads) == 1


def test_worker_stores_metaeval_records_as_strict_json(tmp_path):
    from mmjudge.metaeval import meta_evaluate

    store = Store(tmp_path)
    sid = submit(
        store, track="metrics", benchmark="demo-judgments", name="x", submitter="s", data=jsonl(demo_scores(0.5))
    ).id
    Worker(store, {"judge": "dummy", "bootstrap": 0}, progress=False).run_once()
    scores = {r["id"]: {"score": r["score"]} for r in demo_scores(0.5)}
    expected = meta_evaluate(get_benchmark("demo-judgments").judgments(), {"submission": scores}, bootstrap=0)
    assert store.result(sid).rows == json.loads(json.dumps(expected.to_dict()["records"], allow_nan=False))


def test_worker_cli_error_is_one_line(capsys, tmp_path):
    from mmjudge.cli import main

    assert main(["leaderboard-worker", "--data-dir", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.startswith("mmjudge leaderboard-worker: error: --data-dir ")


def test_cli_commands_are_registered():
    from mmjudge.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["leaderboard", "--demo", "--port", "7999", "--data-dir", "d", "--host", "0.0.0.0"])
    assert (args.demo, args.port, args.data_dir, args.host, args.worker) == (True, 7999, "d", "0.0.0.0", None)
    args = parser.parse_args(["leaderboard-worker", "--data-dir", "d", "--once", "--poll", "0.5", "--lease", "5"])
    assert (args.data_dir, args.once, args.poll, args.lease) == ("d", True, 0.5, 5.0)


# ------------------------------------------------------------------- intervals, pairs, judge failures
def items_entry(sid, name, values, created, failed_status=None, criteria=("fluency",)):
    """A DONE Models-track entry summarised from hand-made per-item rows (``None`` = the judge failed)."""
    from mmjudge.leaderboard.ranking import summarise_models

    rows = []
    for k, v in enumerate(values):
        row = {"id": f"i{k}", "task": "ic" if k % 2 else "vqa", "overall": v, **dict.fromkeys(criteria, v)}
        if v is None:
            row.update({f"{c}_status": failed_status or "no_rating" for c in criteria})
        rows.append(row)
    return ScoredSubmission(
        id=sid,
        track="models",
        benchmark="b",
        name=name,
        submitter="s",
        signature="mmjudge=0.1.0|metric=he",
        created_at=created,
        summary=summarise_models(rows, list(criteria)),
    )


def test_intervals_and_paired_separability_of_neighbouring_rows():
    import numpy as np

    rng = np.random.default_rng(0)
    difficulty = rng.uniform(1.5, 4.5, 60)  # items differ a lot; models differ by a steady margin
    strong = items_entry("s", "strong", list(difficulty + 0.3), 1)
    weak = items_entry("w", "weak", list(difficulty), 2)
    twin = items_entry("t", "twin", list(difficulty + rng.normal(0, 0.05, 60)), 3)
    table = rank_models([weak, strong, twin], bootstrap=500, seed=0)[0]
    rows = {r["name"]: r for r in table["rows"]}
    assert [r["name"] for r in table["rows"]][0] == "strong"
    for r in rows.values():
        assert r["ci_low"] < r["overall"] < r["ci_high"]
    # The unpaired intervals of strong and weak overlap (item difficulty dominates them) ...
    assert rows["strong"]["ci_low"] < rows["weak"]["ci_high"]
    # ... yet on the same items strong is better every time: the paired bootstrap separates them.
    second = table["rows"][1]
    assert second["separable"] is True and table["rows"][0]["separable"] is None
    assert table["rows"][2]["separable"] is False  # weak and twin differ by noise only
    # Same seed, same resamples: the figures do not move between two views of the board.
    assert rank_models([weak, strong, twin], bootstrap=500, seed=0)[0]["rows"] == table["rows"]


def test_judge_failures_are_counted_and_too_many_unrank_a_row():
    from mmjudge.leaderboard.ranking import summarise_models

    ok = [3.0] * 20
    five_percent = [4.0] * 19 + [None]  # 1 of 20 failed: ranked (the limit is "more than 5%")
    ten_percent = [4.5] * 18 + [None, None]  # 2 of 20: shown, not ranked
    entries = [
        items_entry("a", "ok", ok, 1),
        items_entry("b", "five", five_percent, 2, "low_mass"),
        items_entry("c", "ten", ten_percent, 3, "error"),
    ]
    assert entries[2].summary["failures"] == {"fluency": 2} and entries[2].summary["failed_items"] == 2
    assert entries[2].summary["overall"] == 4.5  # failed items are left out of the mean, never counted as a score
    rows = rank_models(entries, bootstrap=0)[0]["rows"]
    assert [(r["name"], r["rank"], r["failed"]) for r in rows] == [("five", 1, 1), ("ok", 2, 0), ("ten", None, 2)]
    assert (
        rows[2]["note"] == "not ranked: the judge failed on 2 of 20 items (10.0%: fluency 2), more than the 5% allowed"
    )
    # The threshold is a setting.
    assert [r["rank"] for r in rank_models(entries, bootstrap=0, max_failed_share=0.1)[0]["rows"]] == [1, 2, 3]
    # A criterion failing makes the item's overall fail too, whatever the row says.
    s = summarise_models(
        [{"id": "x", "task": "ic", "overall": 3.0, "fluency": None, "fluency_status": "no_rating"}], ["fluency"]
    )
    assert s["failed_items"] == 1 and s["failures"] == {"fluency": 1}
    # Rows scored before failures were recorded (no status, no counts) stay ranked, with no failure figure.
    old = replace(
        entries[0], summary={k: v for k, v in entries[0].summary.items() if k not in ("failures", "failed_items")}
    )
    assert rank_models([old], bootstrap=0)[0]["rows"][0]["failed"] is None


def test_worker_stores_judge_failures_as_null_and_the_board_says_why_a_row_is_unranked(tmp_path, monkeypatch):
    """The engine's contract: a criterion the judge gave no rating for is NaN with <c>_status, and the
    overall that needs it is NaN. The dummy judge puts no probability on the scale for one item's fluency."""
    from mmjudge.judges.dummy import DummyJudge
    from mmjudge.judges.requests import RatingResult
    from mmjudge.leaderboard import views

    real = DummyJudge._rate_batch
    target = next(o["text"] for o in demo_outputs(0) if o["id"] == "demo-vqa-2")

    def silent_on_one(self, requests):
        answers = real(self, requests)
        return [
            RatingResult(raw=[0.0] * 5, greedy=" I") if r.group == "fluency" and target in r.turns[0].text else a
            for r, a in zip(requests, answers)
        ]

    monkeypatch.setattr(DummyJudge, "_rate_batch", silent_on_one)
    store = Store(tmp_path)
    sid = submit(
        store, track="models", benchmark="demo-inputs", name="m", submitter="s", data=jsonl(demo_outputs(0))
    ).id
    Worker(store, {"judge": "dummy", "explain_examples": 0}, progress=False).run_once()
    result = store.result(sid)
    assert store.get(sid).status == "DONE"
    failed_row = next(r for r in result.rows if r["id"] == "demo-vqa-2")
    assert (
        failed_row["fluency"] is None and failed_row["overall"] is None and failed_row["fluency_status"] == "no_rating"
    )
    assert result.summary["failed_items"] == 1 and result.summary["failures"]["fluency"] == 1
    frame, caption, _ = views.models_view(store)
    assert frame["judge failures"].tolist() == ["1 (12.5%)"] and frame["rank"].isna().all()
    assert frame["note"].tolist()[0].startswith("not ranked: the judge failed on 1 of 8 items (12.5%: fluency 1)")
    page, breakdown = views.submission_view(store, sid)
    assert "**Judge failures:** 1 of 8 items (fluency 1)" in page and "not ranked" in page


def test_metric_rows_carry_the_headline_interval_and_paired_separability(tmp_path):
    store = Store(tmp_path)
    for name, noise in (("close", 0.0), ("close-too", 0.01), ("noisy", 3.0)):
        assert submit(
            store,
            track="metrics",
            benchmark="demo-judgments",
            name=name,
            submitter="s",
            data=jsonl(demo_scores(noise, seed=1)),
        ).accepted
    Worker(store, {"judge": "dummy", "bootstrap": 300}, progress=False).run(once=True)
    rows = rank_metrics(store.done("metrics"))[0]["rows"]
    assert [r["name"] for r in rows][-1] == "noisy"
    assert all(r["ci_low"] <= r["headline"] <= r["ci_high"] for r in rows)
    assert rows[0]["separable"] is None and rows[1]["separable"] is False and rows[2]["separable"] is True
    assert len(store.done("metrics")[0].summary["headline"]["resamples"]) == 300


def test_a_worker_restarted_under_its_id_takes_its_job_back_at_once_and_each_step_is_logged(tmp_path, caplog):
    """Issue 41 (board c): a job whose worker died waited out the whole lease (60 s), and no log line said it
    was recovered. A worker restarted under the same id re-queues its own RUNNING job at once (it was that
    worker's, and that worker is starting: nothing else is scoring it), and every job's claim, end and
    re-queueing is one log line."""
    import logging

    store = Store(tmp_path)
    data = jsonl(demo_outputs(0))
    held = submit(store, track="models", benchmark="demo-inputs", name="held", submitter="s", data=data).id
    assert store.claim("w1", lease_s=600).id == held  # w1 dies holding it: its lease runs for ten minutes
    caplog.set_level(logging.INFO, logger="mmjudge.leaderboard")
    started = time.monotonic()
    worker = Worker(store, {"judge": "dummy", "explain_examples": 0}, worker_id="w1", lease_s=600, progress=False)
    assert worker.run(once=True) == 1
    assert time.monotonic() - started < 60 and store.get(held).status == "DONE"
    lines = [r.getMessage() for r in caplog.records if held in r.getMessage()]
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"job {held} re-queued: its worker w1 restarted")
    assert lines[1].startswith(f"job {held} claimed by w1 (attempt 2)")
    assert lines[2].startswith(f"job {held} done by w1 in ")
    # A dead worker under another id: its job comes back when its (heartbeat-renewed, so short) lease ends.
    caplog.clear()
    other = submit(
        store, track="models", benchmark="demo-inputs", name="other", submitter="s", data=jsonl(demo_outputs(1))
    ).id
    assert store.claim("gone", lease_s=0.2).id == other
    time.sleep(0.3)
    assert Worker(store, {"judge": "dummy", "explain_examples": 0}, worker_id="w2", progress=False).run(once=True) == 1
    lines = [r.getMessage() for r in caplog.records if other in r.getMessage()]
    assert lines[0].startswith(f"job {other} re-queued: its worker gone stopped (lease expired") and len(lines) == 3
