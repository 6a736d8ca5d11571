"""Scoring inputs of any size: streamed results equal compute(), a killed run resumes to the same output,
each torchrun process reads only its share, at most two chunks of images are alive, every input format
reads the same items, and a bad item in the middle of a long run is recorded, not fatal."""

from __future__ import annotations

import json
import math
import random
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path

import pytest
from PIL import Image

import mmjudge
from mmjudge.cli import main
from mmjudge.stream import score_file
from mmjudge.stream.sources import open_source
from repo_paths import ROOT

D = ["--judge", "dummy", "--no-cache"]


def _images(folder: Path, n: int) -> list[str]:
    paths = []
    for k in range(n):
        path = folder / f"img{k}.png"
        Image.new("RGB", (24 + k % 5, 20), (10 * k % 255, 80, 160)).save(path)
        paths.append(str(path))
    return paths


def _items(folder: Path, n: int, images: int = 7) -> list[dict]:
    paths = _images(folder, images)
    return [
        {"id": f"i{k}", "text": f"A picture number {k}" + " with words" * (k % 3), "image": paths[k % images]}
        for k in range(n)
    ]


def _jsonl(path: Path, items: list[dict]) -> str:
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return str(path)


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _same(a: dict, b: dict, keys) -> bool:
    return all((a[k] == b[k]) or (isinstance(a[k], float) and math.isnan(a[k]) and b[k] is None) for k in keys)


# ---------------------------------------------------------------------------------- engine stream
def test_streamed_results_equal_compute(tmp_path):
    items = _items(tmp_path, 11)
    he = mmjudge.load("harmonic_eval", judge="dummy", cache=False)
    whole = he.compute(predictions=[it["text"] for it in items], images=[it["image"] for it in items], progress=False)
    streamed = list(he.stream(items, chunk_size=3))
    assert [r.index for r in streamed] == list(range(11)) and [r.id for r in streamed] == [it["id"] for it in items]
    for name in ("overall", "correctness", "fluency_sigma", "clarity_weight", "conciseness_mass", "fluency_status"):
        assert [r.values[name] for r in streamed] == whole[name], name


def test_at_most_two_chunks_of_images_are_alive(tmp_path, monkeypatch):
    """Each chunk's images are decoded once and released with it: a counting loader never sees more than
    two chunks' worth alive (the one being scored, the next one decoding), however long the input."""
    import mmjudge.images

    paths = _images(tmp_path, 40)
    alive, peak, loaded = [0], [0], []
    real = mmjudge.images.load_image

    def counting(image, *args, **kwargs):
        decoded = real(image, *args, **kwargs)
        alive[0] += 1
        peak[0] = max(peak[0], alive[0])
        loaded.append(image)
        weakref.finalize(decoded, lambda: alive.__setitem__(0, alive[0] - 1))
        return decoded

    monkeypatch.setattr(mmjudge.images, "load_image", counting)
    items = [{"text": f"picture {k}", "image": paths[k % 40]} for k in range(120)]
    results = list(mmjudge.load("harmonic_eval", judge="dummy", cache=False).stream(items, chunk_size=8))
    assert len(results) == 120 and all(r.error is None for r in results)
    assert len(loaded) == 120  # 15 chunks of 8 distinct paths: each decoded once in its chunk
    assert peak[0] <= 16, peak[0]


def test_each_distinct_image_is_decoded_once_per_chunk(tmp_path, monkeypatch):
    import mmjudge.images

    paths = _images(tmp_path, 3)
    calls = []
    real = mmjudge.images.load_image
    monkeypatch.setattr(
        mmjudge.images, "load_image", lambda image, *a, **k: calls.append(image) or real(image, *a, **k)
    )
    items = [{"text": f"t{k}", "image": paths[k % 3]} for k in range(12)]
    list(mmjudge.load("harmonic_eval", judge="dummy", cache=False).stream(items, chunk_size=6))
    assert len(calls) == 6  # 2 chunks x 3 distinct images


def test_a_bad_item_fails_its_row_and_the_stream_goes_on(tmp_path):
    items = _items(tmp_path, 6)
    items[3]["image"] = str(tmp_path / "missing.png")
    results = list(
        mmjudge.load("harmonic_eval", judge="dummy", cache=False).stream(items, on_error="record", chunk_size=4)
    )
    assert [r.error is None for r in results] == [True, True, True, False, True, True]
    assert "images[3]: image file not found" in results[3].error and math.isnan(results[3].values["overall"])
    with pytest.raises(ValueError, match=r"images\[3\]: image file not found"):
        list(mmjudge.load("harmonic_eval", judge="dummy", cache=False).stream(items, chunk_size=4))


# ----------------------------------------------------------------------------------------- inputs
def test_parquet_csv_and_datasets_inputs_read_the_same_items(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    items = _items(tmp_path, 9)
    jsonl = _jsonl(tmp_path / "items.jsonl", items)
    renamed = [{"key": it["id"], "caption": it["text"], "picture": Path(it["image"]).read_bytes()} for it in items]
    pq.write_table(pa.Table.from_pylist(renamed), tmp_path / "items.parquet", row_group_size=4)
    (tmp_path / "items.csv").write_text(
        "id,text,image\n" + "".join(f"{it['id']},{it['text']},{it['image']}\n" for it in items)
    )
    datasets.Dataset.from_list(
        [{"id": it["id"], "text": it["text"], "image": it["image"]} for it in items]
    ).save_to_disk(str(tmp_path / "saved"))
    he = mmjudge.load("harmonic_eval", judge="dummy", cache=False, criteria=["correctness", "fluency"])
    outputs = {}
    for name, source, options in (
        ("jsonl", jsonl, {}),
        ("parquet", str(tmp_path / "items.parquet"), {"columns": {"id": "key", "text": "caption", "image": "picture"}}),
        ("csv", str(tmp_path / "items.csv"), {}),
        ("datasets", str(tmp_path / "saved"), {}),
    ):
        out = tmp_path / f"out-{name}.jsonl"
        summary = score_file(he, source, str(out), source_options=options)
        assert summary.written == 9 and summary.failed == 0, (name, summary)
        outputs[name] = _rows(out)
    for name, rows in outputs.items():
        assert [r["id"] for r in rows] == [it["id"] for it in items], name
        assert [r["correctness"] for r in rows] == [r["correctness"] for r in outputs["jsonl"]], name


def test_sources_shard_without_reading_the_others(tmp_path):
    items = _items(tmp_path, 10)
    path = _jsonl(tmp_path / "items.jsonl", items)
    shares = [open_source(path, shard=(r, 3)) for r in range(3)]
    ids = [[it["id"] for it in share] for share in shares]
    assert sum(ids, []) == [it["id"] for it in items]  # contiguous, every item once, in order
    assert [s.read for s in shares] == [len(i) for i in ids] and all(2 <= s.read <= 5 for s in shares)
    assert [s.first for s in shares] == [0, len(ids[0]), len(ids[0]) + len(ids[1])]
    assert [it["_i"] for it in open_source(path, shard=(2, 3))] == list(range(len(ids[0]) + len(ids[1]), 10))


# ------------------------------------------------------------------------------------------- CLI
def test_merging_parts_copies_each_row_exactly(tmp_path):
    # The JSON Lines merge copies lines instead of parsing them: rows whose text looks like the index, nested
    # dicts, non-ASCII, NaN and a line edited by hand (its index not last) come out as parsing would give them.
    from mmjudge.stream.outputs import PartFile, merge_parts

    out = str(tmp_path / "out.jsonl")
    rows = [
        {"id": "a", "text": 'ends like an index, "_i": 7}', "x": 1.5},
        {"id": "b", "meta": {"_i": 3}, "score": float("nan")},
        {"id": "c", "text": "un café {}"},
        {},
    ]
    parts = [PartFile(out, 0, 2, "sig"), PartFile(out, 1, 2, "sig")]
    for index, row in enumerate(rows):
        parts[index % 2].write(row, index)
    for part in parts:
        part.close()
    with open(f"{out}.part-1-of-2.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"_i": 4, "id": "e"}) + "\n")
    assert merge_parts(out, 2) == 5
    got = [json.loads(line) for line in Path(out).read_text(encoding="utf-8").splitlines()]
    assert got == [
        {"id": "a", "text": 'ends like an index, "_i": 7}', "x": 1.5},
        {"id": "b", "meta": {"_i": 3}, "score": None},
        {"id": "c", "text": "un café {}"},
        {},
        {"id": "e"},
    ]
    assert not list(tmp_path.glob("*.part-*"))


@pytest.mark.parametrize("damage", [b"garbage{", b"[1, 2]", b"\xff\xfe"])
def test_a_part_damaged_before_its_last_line_is_one_line_naming_it(tmp_path, capsys, monkeypatch, damage):
    # Before: "error: Expecting value: line 1 column 1 (char 0)" (no file named), an AttributeError traceback for
    # a JSON list, and "the input is not UTF-8 text" for the part's own bytes.
    import mmjudge.stream
    from mmjudge.cli import main

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    source = tmp_path / "items.jsonl"
    source.write_text(
        "".join(json.dumps({"id": f"i{k}", "text": "a dog", "references": ["a dog"]}) + "\n" for k in range(3))
    )
    args = ["score", "--metric", "baselines", "--config", "rouge_l", "--input", str(source), "--output"]
    args += [str(tmp_path / "s.jsonl"), "--quiet"]
    monkeypatch.setattr(mmjudge.stream, "merge_parts", stop)  # killed before the merge: the part stays
    assert main(args) == 130
    monkeypatch.undo()
    part = tmp_path / "s.jsonl.part-0-of-1.jsonl"
    lines = part.read_bytes().splitlines()  # the header, then three rows
    part.write_bytes(b"\n".join([*lines[:2], damage, *lines[3:]]) + b"\n")
    capsys.readouterr()
    assert main(args) == 2
    [err] = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert err.startswith(f"mmjudge score: error: {part}, line 3: not a row as mmjudge writes them (") and err.endswith(
        "so the part was changed by something else; pass --overwrite to start again, or give another --output."
    )


def test_a_second_run_into_an_output_being_written_is_refused(tmp_path, capsys):
    # Before: two runs into one --output appended to one part file; the merged output held every row twice
    # (6,000 rows for 3,000 items) and the other run failed on the merge file with a raw errno line.
    from mmjudge.cli import main
    from mmjudge.stream.outputs import PartFile

    source = tmp_path / "items.jsonl"
    source.write_text(
        "".join(json.dumps({"id": f"i{k}", "text": "a dog", "references": ["a dog"]}) + "\n" for k in range(3))
    )
    out = tmp_path / "s.jsonl"
    args = ["score", "--metric", "baselines", "--config", "rouge_l", "--input", str(source), "--output", str(out)]
    running = PartFile(str(out), 0, 1, "sig")  # the first run, still writing
    for extra in ([], ["--overwrite"]):
        assert main([*args, "--quiet", *extra]) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
        assert err == [
            f"mmjudge score: error: {out}: another run is writing it now (its part file s.jsonl.part-0-of-1.jsonl is "
            "in use); wait for that run to end, or give another --output."
        ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl", "s.jsonl.part-0-of-1.jsonl"]
    running.close()  # (it wrote nothing: the next run starts the part over with --overwrite)
    assert main([*args, "--quiet", "--overwrite"]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["i0", "i1", "i2"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_merge_cut_short_leaves_its_parts_and_no_merge_file(tmp_path, monkeypatch, fmt):
    # Before: Ctrl-C (or a full disk) during the merge left <output>.tmp beside the parts for good.
    from mmjudge.stream import outputs

    out = str(tmp_path / f"out.{fmt}")
    part = outputs.PartFile(out, 0, 1, "sig")
    for index in range(3):
        part.write({"id": f"i{index}", "x": index}, index)
    part.close()
    real = outputs._part_lines if fmt == "jsonl" else outputs._part_rows

    def cut(path):
        for n, pair in enumerate(real(path)):
            if n == 2 and Path(f"{out}.tmp").exists():  # while the merge file is written (not the column scan)
                raise KeyboardInterrupt
            yield pair

    monkeypatch.setattr(outputs, "_part_lines" if fmt == "jsonl" else "_part_rows", cut)
    with pytest.raises(KeyboardInterrupt):
        outputs.merge_parts(out, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out.{fmt}.part-0-of-1.jsonl"]
    monkeypatch.undo()
    assert outputs.merge_parts(out, 1) == 3 and sorted(p.name for p in tmp_path.iterdir()) == [f"out.{fmt}"]


def test_cli_writes_jsonl_csv_parquet_and_a_second_run_has_nothing_to_do(tmp_path, capsys, offline):
    import pyarrow.parquet as pq

    path = _jsonl(tmp_path / "items.jsonl", _items(tmp_path, 5))
    for suffix in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"s.{suffix}"
        assert main(["score", "--input", path, "--output", str(out), "--quiet", *D]) == 0
        assert not list(tmp_path.glob(f"s.{suffix}.part-*"))  # merged and removed
    assert [r["id"] for r in _rows(tmp_path / "s.jsonl")] == [f"i{k}" for k in range(5)]
    assert (tmp_path / "s.csv").read_text().splitlines()[0].startswith("id,task,text,primary,overall")
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == [f"i{k}" for k in range(5)]
    capsys.readouterr()
    assert main(["score", "--input", path, "--output", str(tmp_path / "s.jsonl"), *D]) == 0
    assert "is complete already; nothing to do" in capsys.readouterr().out


def test_cli_records_a_bad_line_and_strict_stops_there_keeping_the_rows_before(tmp_path, capsys):
    items = _items(tmp_path, 8)
    items[5]["image"] = str(tmp_path / "gone.png")
    path = _jsonl(tmp_path / "items.jsonl", items)
    out = tmp_path / "s.jsonl"
    assert main(["score", "--input", path, "--output", str(out), "--strict", "--chunk-size", "2", *D]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # (the rest: the progress bar)
    assert len(err) == 1 and "items.jsonl:6: image: image file not found" in err[0] and "Traceback" not in err[0]
    part = next(tmp_path.glob("s.jsonl.part-0-of-1.jsonl"))
    header, *lines = part.read_text().splitlines()  # the header records what the rows are made from
    assert json.loads(header)["_run"]["input"] == path
    assert [json.loads(line)["id"] for line in lines] == ["i0", "i1", "i2", "i3"]
    # Resumes and records the bad item; the exit status says that an item was not scored (rows all written).
    assert main(["score", "--input", path, "--output", str(out), "--chunk-size", "2", *D]) == 4
    text = capsys.readouterr().out
    assert "wrote 8 rows" in text and "(4 were there from an earlier run)" in text
    assert "1 of 8 items could not be scored" in text and "items.jsonl:6: image: image file not found" in text
    rows = _rows(out)
    assert [r["id"] for r in rows] == [f"i{k}" for k in range(8)] and rows[5]["overall"] is None and "error" in rows[5]


def test_items_without_ids_keep_their_input_position_across_a_resume_and_a_repeat_across_it_fails(tmp_path, capsys):
    # A strict run stops at a bad item; the input is mended and the run resumed. Items without an id are named
    # by their position in the whole input (3, 4, 5), not by their position in the resumed run (0, 1, 2), and an
    # id met before the stop still counts as taken after it.
    items = _items(tmp_path, 7)
    for item in items[:6]:
        del item["id"]
    items[6]["id"] = "1"  # the id an id-less item already has
    good = items[3]["image"]
    items[3]["image"] = str(tmp_path / "gone.png")
    path = tmp_path / "items.jsonl"
    _jsonl(path, items)
    out = tmp_path / "s.jsonl"
    assert main(["score", "--input", str(path), "--output", str(out), "--strict", "--chunk-size", "2", *D]) == 2
    items[3]["image"] = good
    _jsonl(path, items)
    assert main(["score", "--input", str(path), "--output", str(out), "--chunk-size", "2", *D]) == 4  # the repeat
    capsys.readouterr()
    rows = _rows(out)
    assert [r["id"] for r in rows] == ["0", "1", "2", "3", "4", "5", "1"]
    assert all(r["overall"] is not None for r in rows[:6])
    assert (
        rows[6]["overall"] is None
        and "its id '1' is already the id of input item 1 (counting from 0)" in rows[6]["error"]
    )


def test_resuming_drops_a_cut_off_line_and_remembers_the_ids_written(tmp_path):
    from mmjudge.stream.outputs import PartFile

    out = str(tmp_path / "out.jsonl")
    part = PartFile(out, 0, 1, "sig")
    for index in range(3):
        part.write({"id": f"x{index}", "signature": "sig"}, index)
    part.close()
    with open(f"{out}.part-0-of-1.jsonl", "a", encoding="utf-8") as f:
        f.write('{"id": "x3", "sig')  # killed while writing
    again = PartFile(out, 0, 1, "sig")
    again.close()
    assert again.done == 3 and Path(f"{out}.part-0-of-1.jsonl").read_text().endswith('"_i": 2}\n')
    assert [again.seen_ids.first_position(f"x{k}", 10 + k) for k in range(4)] == [0, 1, 2, None]
    with pytest.raises(ValueError, match="holds rows of another run"):
        PartFile(out, 0, 1, "other")


SLOW_CLI = textwrap.dedent(
    """
    import os, sys, time
    from mmjudge.judges.dummy import DummyJudge
    real = DummyJudge._rate_batch
    hang_after = int(os.environ.get("HANG_AFTER_BATCHES", "0"))
    batches = 0
    def slow(self, batch):
        global batches
        batches += 1
        time.sleep(0.01)
        if hang_after and batches > hang_after:
            time.sleep(600)  # wait here to be killed (one batch per criterion per chunk: 40 to 100 rows written)
        return real(self, batch)
    DummyJudge._rate_batch = slow
    from mmjudge.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_to_the_uninterrupted_output(tmp_path, offline_env):
    """SIGKILL at a random moment, run the same command again: every id exactly once, in input order,
    with the values of a run that was never interrupted."""
    path = _jsonl(tmp_path / "items.jsonl", _items(tmp_path, 120))
    script = tmp_path / "slow_cli.py"
    script.write_text(SLOW_CLI)
    env = offline_env

    def command(out):
        return [
            sys.executable,
            str(script),
            "score",
            "--input",
            path,
            "--output",
            str(out),
            "--quiet",
            "--chunk-size",
            "4",
            "--judge",
            "dummy",
            "--criteria",
            "fluency,clarity",
        ]

    whole = tmp_path / "whole.jsonl"
    assert subprocess.run(command(whole), env=env, timeout=300).returncode == 0
    out = tmp_path / "killed.jsonl"
    part = Path(f"{out}.part-0-of-1.jsonl")
    env["MMJUDGE_CACHE"] = str(tmp_path / "c2.sqlite")  # the whole run's cache would answer without judging
    proc = subprocess.Popen(command(out), env={**env, "HANG_AFTER_BATCHES": str(random.randint(20, 50))})
    deadline = time.time() + 120
    while time.time() < deadline and (not part.exists() or part.read_text().count("\n") < 30):
        time.sleep(0.02)
    time.sleep(random.random())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = part.read_text().count("\n")
    assert 30 <= written < 120 and not out.exists()  # killed in the middle
    assert subprocess.run(command(out), env=env, timeout=300).returncode == 0
    a, b = _rows(whole), _rows(out)
    assert [r["id"] for r in b] == [f"i{k}" for k in range(120)]
    assert all(_same(x, y, ("id", "overall", "fluency", "clarity", "fluency_status")) for x, y in zip(a, b))


TORCHRUN_SCORE = textwrap.dedent(
    """
    import json, os, sys
    import mmjudge
    from mmjudge import distributed
    from mmjudge.stream import score_file
    metric = mmjudge.load("harmonic_eval", judge="dummy", cache=False, criteria=["fluency", "correctness"])
    summary = score_file(metric, sys.argv[1], sys.argv[2])
    with open(os.path.join(sys.argv[3], f"rank{distributed.rank()}.json"), "w") as f:
        json.dump({"read": summary.read_by_process, "calls": metric.judge.calls, "written": summary.written}, f)
    """
)


@pytest.mark.slow
def test_two_torchrun_processes_each_read_half_and_equal_one_process(tmp_path, offline_env):
    items = _items(tmp_path, 20)
    for item in items[::3]:
        del item["id"]  # named by its input position, the same whichever process scores it
    path = _jsonl(tmp_path / "items.jsonl", items)
    script = tmp_path / "score.py"
    script.write_text(TORCHRUN_SCORE)
    env = offline_env
    outputs = {}
    for processes in (1, 2):
        out, stats = tmp_path / f"s{processes}.jsonl", tmp_path / f"stats{processes}"
        stats.mkdir()
        launch = (
            [sys.executable]
            if processes == 1
            else [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        )
        proc = subprocess.run(
            [*launch, str(script), path, str(out), str(stats)], env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs[processes] = (_rows(out), [json.loads((stats / f"rank{r}.json").read_text()) for r in range(processes)])
    (single, [one]), (double, ranks) = outputs[1], outputs[2]
    # Each process parsed only its share (byte ranges aligned to lines: about half each), none the whole.
    assert one["read"] == [20] and sum(ranks[0]["read"]) == 20 and all(8 <= n <= 12 for n in ranks[0]["read"])
    # Two criteria per item: each process judged exactly its own items, no request split or repeated.
    assert [r["calls"] for r in ranks] == [2 * n for n in ranks[0]["read"]] and one["calls"] == 40
    assert ranks[0]["written"] == 20
    assert (
        [r["id"] for r in double] == [r["id"] for r in single] == [str(k) if k % 3 == 0 else f"i{k}" for k in range(20)]
    )
    assert all(_same(a, b, ("overall", "fluency", "correctness")) for a, b in zip(single, double))


# ----------------------------------------------------------------------------------- evaluate door
def test_the_evaluate_door_keeps_images_out_of_arrow(tmp_path):
    """Images are never PNG-encoded into evaluate's buffer: the column keeps the path the user gave and the
    engine gets the very objects the caller passed."""
    import evaluate

    from mmjudge.testing import ScriptedJudge

    seen = []

    def script(request):
        if request.image is not None:
            seen.append(request.image)
        return [0.2] * 5

    he = evaluate.load(
        str(ROOT / "metrics" / "harmonic_eval"), judge=ScriptedJudge(script), cache=False, criteria=["correctness"]
    )
    assert str(he._info().features["images"]) == "Value('string')"
    picture = Image.new("RGB", (16, 12), "red")
    path = _images(tmp_path, 1)[0]
    he.add_batch(predictions=["a", "b"], images=[picture, path])
    assert he.compute()["correctness"] == [3.0, 3.0]
    assert seen[0] is picture  # the caller's object, not a decoded copy of a PNG in Arrow
