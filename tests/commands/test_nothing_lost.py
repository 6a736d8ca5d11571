"""Nothing lost, nothing run, nothing stuck (issue 41): the holes a hostile user found in the CLI, each tried as
reported, and the same class of hole beside it.

- an output that IS an input (the same path, a symbolic link, a hard link, a part-file name, a file inside an
  input folder) is refused in one line before anything is touched, by every command that writes;
- a resumed run checks that its rows were made from the same input and settings, naming what differs;
- a folder of data files with different columns, two items sharing one missing image, a closed pipe
  (``| head -3``), another id in ``--b``, a symbolic link loop: one line or a recorded row, never a traceback.

The judge is the hash-based ``dummy`` (cache off) and the text metric ROUGE-L: plumbing, not quality.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mmjudge.cli import main
from repo_paths import ROOT

D = ["--judge", "dummy", "--no-cache"]
ROUGE = ["--metric", "baselines", "--config", "rouge_l"]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def _jsonl(path: Path, items: list[dict]) -> str:
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return str(path)


def _items(texts: list[str], **extra) -> list[dict]:
    return [{"id": f"i{k}", "text": t, "references": ["a dog runs on the beach"], **extra} for k, t in enumerate(texts)]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if "error" in line]


# --------------------------------------------------------------------- 1. an output that is the input
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "part"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_an_output_that_is_the_input_is_refused_before_anything_is_touched(tmp_path, capsys, how, overwrite):
    source = tmp_path / "s.jsonl"
    text = "".join(json.dumps(it) + "\n" for it in _items(["a dog runs", "a cat sits"]))
    source.write_text(text)
    out = {
        "same": source,
        "symlink": tmp_path / "link.jsonl",
        "hardlink": tmp_path / "hard.jsonl",
        "part": tmp_path / "o.jsonl",
    }[how]
    if how == "symlink":
        out.symlink_to(source)
    elif how == "hardlink":
        os.link(source, out)
    elif how == "part":  # the input is named as a part file of the output (--overwrite deletes every part)
        source = source.rename(tmp_path / "o.jsonl.part-0-of-1.jsonl")
    args = ["score", *ROUGE, "--input", str(source), "--output", str(out), "--quiet"]
    assert main(args + (["--overwrite"] if overwrite else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "writing it would destroy the input; give another --output." in err[0], err
    expected = {"same": "is the same file as", "symlink": "is a symbolic link to", "hardlink": "is a hard link to"}
    assert expected.get(how, "the part file") in err[0]
    assert source.read_text() == text  # untouched: not deleted, not truncated, not "complete already"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"same": ["s.jsonl"], "symlink": ["s.jsonl", "link.jsonl"], "hardlink": ["s.jsonl", "hard.jsonl"]}.get(
            how, ["o.jsonl.part-0-of-1.jsonl"]
        )
    )


def test_an_output_that_is_the_image_or_the_judge_cache_is_refused(tmp_path, capsys):
    # Before: `--image photo.png --output photo.png --overwrite` deleted the photo, and an --output over the judge
    # cache replaced the SQLite file with rows when the run completed.
    photo = tmp_path / "photo.png"
    Image.new("RGB", (24, 20), (200, 40, 40)).save(photo)
    before = photo.read_bytes()
    args = ["score", "--text", "A red square.", "--image", str(photo), "--judge", "dummy", "--no-cache"]
    assert main([*args, "--output", str(photo), "--overwrite"]) == 2
    [err] = _error_lines(capsys)
    assert f"--output {photo} is the same file as --image {photo}: writing it would destroy the input" in err
    assert photo.read_bytes() == before
    cache = tmp_path / "judge.sqlite"
    a, b = _jsonl(tmp_path / "a.jsonl", _items(["a dog"])), _jsonl(tmp_path / "b.jsonl", _items(["a cat"]))
    main(["compare", "--a", a, "--b", b, "--judge", "dummy", "--cache", str(cache), "--quiet"])
    assert cache.is_file()
    capsys.readouterr()
    args = ["compare", "--a", a, "--b", b, "--judge", "dummy", "--cache", str(cache), "--output", str(cache)]
    assert main(args) == 2
    [err] = _error_lines(capsys)
    assert f"--output {cache} is the same file as --cache {cache}" in err
    assert cache.read_bytes()[:16] == b"SQLite format 3\x00" and not list(tmp_path.glob("judge.sqlite.*"))


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_output_that_is_a_fifo_or_a_device_is_refused(tmp_path, capsys, overwrite):
    # Before: `--output /dev/null` said "complete already; nothing to do", and with --overwrite deleted the special
    # file (as root: /dev/null itself) and renamed the rows into its place. A FIFO stands in for the device here.
    source = _jsonl(tmp_path / "s.jsonl", _items(["a dog runs"]))
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    assert (
        main(["score", *ROUGE, "--input", source, "--output", str(fifo), *(["--overwrite"] if overwrite else [])]) == 2
    )
    [err] = _error_lines(capsys)
    assert f"--output {fifo}: is a named pipe (FIFO), not a regular file; the rows are written beside it" in err
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.jsonl"]
    import mmjudge  # the library path refuses it too
    from mmjudge.stream import score_file

    with pytest.raises(ValueError, match="is a named pipe"):
        score_file(mmjudge.load("baselines", "rouge_l"), source, str(fifo), overwrite=True)
    assert fifo.is_fifo()


def test_an_output_inside_an_input_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    _jsonl(folder / "items.jsonl", _items(["a dog runs"]))
    assert main(["score", *ROUGE, "--input", str(folder), "--output", str(folder / "s.jsonl")]) == 2
    [err] = _error_lines(capsys)
    assert f"--output {folder / 's.jsonl'} lies inside the --input folder {folder}" in err
    assert sorted(p.name for p in folder.iterdir()) == ["items.jsonl"]


def test_compare_refuses_an_output_that_is_one_of_its_inputs(tmp_path, capsys):
    a = _jsonl(tmp_path / "a.jsonl", _items(["a dog"]))
    b = tmp_path / "b.jsonl"
    _jsonl(b, _items(["a cat"]))
    before = b.read_text()
    assert main(["compare", "--a", a, "--b", str(b), "--output", str(b), "--overwrite", *D]) == 2
    [err] = _error_lines(capsys)
    assert f"--output {b} is the same file as --b {b}" in err and b.read_text() == before


def test_metaeval_and_reproduce_refuse_an_out_file_that_is_an_input(tmp_path, capsys):
    from repo_paths import FIXTURES

    fixture = ["--data-dir", str(FIXTURES / "flickr8k_expert"), "--expected-counts", "{}"]
    judgments = tmp_path / "j.json"
    args = ["dataset", "judgments", "flickr8k_expert", *fixture, "--cache-dir", str(tmp_path / "hf")]
    assert main([*args, "--out", str(judgments)]) == 0
    ids = [item["id"] for item in json.loads(judgments.read_text())["items"]]
    out = tmp_path / "out"
    out.mkdir()
    scores = out / "records.csv"  # a score file kept where the tables go, under a name metaeval writes
    text = "id,score\n" + "".join(f"{i},{k % 7 / 7}\n" for k, i in enumerate(ids))
    scores.write_text(text)
    capsys.readouterr()
    args = ["metaeval", "--judgments", str(judgments), "--scores", str(scores), "--bootstrap", "0"]
    assert main([*args, "--out", str(out)]) == 2  # today: the tables' records.csv replaces the scores
    [err] = _error_lines(capsys)
    assert f"--out {out} (its records.csv) is the same file as --scores {scores}" in err
    assert scores.read_text() == text

    cells = out / "cells.csv"
    cells.write_text("x")
    args = ["reproduce", "--table", "fleur_1", "--metrics", "fleur", "--benchmarks", "flickr8k_expert"]
    args += ["--data-dir", f"flickr8k_expert={FIXTURES / 'flickr8k_expert'}", "--scores", f"fleur={cells}"]
    assert main([*args, "--out", str(out)]) == 2
    [err] = _error_lines(capsys)
    assert f"--out {out} (its cells.csv) is the same file as --scores {cells}" in err and cells.read_text() == "x"


def test_dataset_judgments_and_export_refuse_to_overwrite_the_release_they_read(tmp_path, capsys):
    from benchmark_releases import write_flickr8k

    root = write_flickr8k(tmp_path / "f8k")
    token = root / "Flickr8k.token.txt"
    before = token.read_text()
    cache = ["--cache-dir", str(tmp_path / "hf"), "--expected-counts", "{}"]
    args = ["dataset", "judgments", "flickr8k_expert", "--data-dir", str(root), *cache, "--out", str(token)]
    assert main(args) == 2
    [err] = _error_lines(capsys)
    assert f"--out {token} is a file of the --data-dir folder {root}" in err and token.read_text() == before
    # export: its README.md would replace a file of the release folder given as --out
    (root / "README.md").write_text("the release's own notes")
    args = ["dataset", "export", "flickr8k_expert", "--data-dir", str(root), *cache, "--out", str(root)]
    assert main(args) == 2
    [err] = _error_lines(capsys)
    assert "README.md) is a file of the --data-dir folder" in err
    assert (root / "README.md").read_text() == "the release's own notes" and not (root / "data").exists()


def test_train_vela_refuses_an_out_whose_last_folder_is_an_input(tmp_path, capsys):
    clip = tmp_path / "run" / "last"
    clip.mkdir(parents=True)
    (clip / "config.json").write_text("{}")
    assert main(["train-vela", "--clip-model", str(clip), "--out", str(tmp_path / "run")]) == 2
    [err] = _error_lines(capsys)
    assert f"--clip-model {clip} lies inside --out {tmp_path / 'run'}'s last" in err
    assert (clip / "config.json").read_text() == "{}"
    assert main(["train-vela", "--clip-model", str(clip), "--out", str(clip)]) == 2
    assert "is the --clip-model folder" in _error_lines(capsys)[0]


def test_compare_ranking_refuses_an_output_dir_holding_a_system_file_it_writes(tmp_path, capsys):
    arena = tmp_path / "arena"
    arena.mkdir()
    systems = []
    for k, name in enumerate(["round-000.jsonl", "b.jsonl", "c.jsonl"]):
        _jsonl(arena / name, _items([f"text {k}"]))
        systems += ["--system", f"s{k}={arena / name}"]
    assert main(["compare", *systems, "--output-dir", str(arena), "--overwrite", *D]) == 2
    [err] = _error_lines(capsys)
    assert f"(its round-000.jsonl) is the same file as --system s0 {arena / 'round-000.jsonl'}" in err
    assert (arena / "round-000.jsonl").exists()


def test_compare_ranking_refuses_an_output_dir_inside_a_system_folder(tmp_path, capsys):
    # A system given as a folder is read as one table of all its data files: the rounds' rows written inside it
    # would be read as that system's outputs next time (before: the first run did so, the next could not read it).
    folder = tmp_path / "base"
    folder.mkdir()
    _jsonl(folder / "items.jsonl", _items(["a dog", "a cat"]))
    systems = ["--system", f"base={folder}"]
    for name in ("b", "c"):
        systems += ["--system", f"{name}={_jsonl(tmp_path / f'{name}.jsonl', _items(['a bird', 'a fish']))}"]
    assert main(["compare", *systems, "--output-dir", str(folder / "arena"), "--quiet", *D]) == 2
    [err] = _error_lines(capsys)
    assert f"lies inside the --system base folder {folder}, whose files are all read as the input" in err
    assert sorted(p.name for p in folder.iterdir()) == ["items.jsonl"]


# --------------------------------------------------------------------- 2. resuming from another input
def _killed_after(monkeypatch, rows: int) -> None:
    """The next run dies (Ctrl-C) once ``rows`` rows are in its part file."""
    from mmjudge.stream import outputs

    real, written = outputs.PartFile.write, [0]

    def write(self, row, index, *digest):
        if written[0] == rows:
            raise KeyboardInterrupt
        written[0] += 1
        real(self, row, index, *digest)

    monkeypatch.setattr(outputs.PartFile, "write", write)


def test_resuming_with_another_input_or_other_settings_is_refused_naming_what_differs(tmp_path, capsys, monkeypatch):
    image = tmp_path / "red.png"
    Image.new("RGB", (24, 20), (200, 40, 40)).save(image)
    first = _items(["A red square.", "A red box.", "Red.", "A square."], image=str(image))
    a = _jsonl(tmp_path / "a.jsonl", first)
    b = _jsonl(tmp_path / "b.jsonl", [{**it, "text": it["text"].upper()} for it in first])  # same ids
    out = tmp_path / "s.jsonl"
    run = ["score", "--output", str(out), "--chunk-size", "1", "--quiet", *D]
    with monkeypatch.context() as m:
        _killed_after(m, 2)
        assert main([*run, "--input", a]) == 130
    capsys.readouterr()

    assert main([*run, "--input", b]) == 2  # today: exit 0 with rows of both inputs
    [err] = _error_lines(capsys)
    assert f"{out}.part-0-of-1.jsonl holds rows made from another input: input item 0 ({b}:1, id 'i0')" in err
    assert f"(from {a})" in err and "pass --overwrite to start again" in err
    assert main([*run, "--input", a, "--task", "vqa", "--explain"]) == 2
    [err] = _error_lines(capsys)
    assert "holds rows made with other settings" in err and "task 'ic' then, 'vqa' now" in err
    assert "explain None then, True now" in err

    moved = tmp_path / "moved"
    moved.mkdir()
    os.link(a, moved / "a.jsonl")  # the same items from another path resume (image paths are absolute)
    assert main([*run, "--input", str(moved / "a.jsonl")]) == 0
    rows = _rows(out)
    assert [r["text"] for r in rows] == [it["text"] for it in first] and all(r["overall"] is not None for r in rows)
    assert not any(k.startswith("_") for r in rows for k in r)  # the part's digests and header stay in the part

    out.unlink()  # --overwrite starts again from the other input
    with monkeypatch.context() as m:
        _killed_after(m, 2)
        assert main([*run, "--input", a]) == 130
    assert main([*run, "--input", b, "--overwrite"]) == 0
    assert [r["text"] for r in _rows(out)] == [it["text"].upper() for it in first]


def test_a_shorter_input_than_the_rows_written_is_refused(tmp_path, capsys, monkeypatch):
    a = _jsonl(tmp_path / "a.jsonl", _items(["a dog", "a cat", "a cow"]))
    out = tmp_path / "s.jsonl"
    with monkeypatch.context() as m:
        _killed_after(m, 2)
        assert main(["score", *ROUGE, "--input", a, "--output", str(out), "--chunk-size", "1", "--quiet"]) == 130
    short = _jsonl(tmp_path / "short.jsonl", _items(["a dog"]))
    assert main(["score", *ROUGE, "--input", short, "--output", str(out), "--quiet"]) == 2
    [err] = _error_lines(capsys)
    assert "holds 2 rows but the input has only 1 items in this share" in err


# ------------------------------------------------------------- 9. a folder of files with other columns
def test_a_folder_of_data_files_with_different_columns_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    folder = tmp_path / "fold"
    folder.mkdir()
    _jsonl(folder / "one.jsonl", [{"id": "a", "text": "a dog runs"}])
    _jsonl(folder / "two.jsonl", [{"id": "b", "caption": "a cat sits", "extra": 1}])
    assert main(["score", *ROUGE, "--input", str(folder)]) == 2  # today: a datasets CastError traceback
    [err] = _error_lines(capsys)
    assert err == (
        f"mmjudge score: error: --input {folder}: its data files have different columns (a folder is read as one "
        "table: every file needs the same ones): two.jsonl has caption, extra, which one.jsonl lacks, and lacks "
        "text; give one file as --input, or give every file the same columns."
    )


# ------------------------------------------------------------ 10. two items sharing one missing image
def test_two_items_sharing_one_missing_image_each_record_their_error(tmp_path, capsys):
    items = [{"id": k, "text": f"A dog {k}.", "image": "gone.png"} for k in ("a", "b", "c")]
    path = _jsonl(tmp_path / "items.jsonl", items)
    out = tmp_path / "s.jsonl"
    assert main(["score", "--input", path, "--output", str(out), "--quiet", *D]) == 4  # today: AttributeError
    rows = _rows(out)
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    for n, row in enumerate(rows, 1):  # each row names its own line
        assert row["error"] == f"{path}:{n}: image: image file not found: {str(tmp_path / 'gone.png')!r}."


# ------------------------------------------------------------------------- 11. a reader that goes away
def _into_head(args: list[str], lines: int = 3) -> tuple[int, list[str], str]:
    """``mmjudge ARGS | head -LINES``: the first lines read, then the pipe closed; (status, lines, stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mmjudge.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    )
    got = [process.stdout.readline().decode() for _ in range(lines)]
    process.stdout.close()
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, got, err.decode()


@pytest.fixture
def many(tmp_path) -> str:
    # Enough rows to overflow a pipe's buffer (64 KiB) long after `head` has gone.
    return _jsonl(tmp_path / "many.jsonl", _items([f"a dog number {k} " + "runs " * 30 for k in range(800)]))


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "table"])
def test_a_closed_pipe_ends_quietly(many, fmt):
    code, lines, err = _into_head(["score", *ROUGE, "--input", many, "--format", fmt])
    assert code == 141 and "Traceback" not in err and "Error" not in err, err[-2000:]  # today: BrokenPipeError
    assert all(lines)


def test_a_closed_pipe_loses_nothing_of_an_output_run(many, tmp_path):
    out = tmp_path / "s.jsonl"
    code, lines, err = _into_head(["score", *ROUGE, "--input", many, "--output", str(out), "--format", "jsonl"])
    assert code == 0 and "Traceback" not in err, err[-2000:]
    assert [json.loads(line)["id"] for line in lines] == ["i0", "i1", "i2"]
    assert [r["id"] for r in _rows(out)] == [f"i{k}" for k in range(800)]  # the run went on to the end


def test_a_closed_stderr_loses_nothing_of_an_output_run(many, tmp_path):
    # `mmjudge score … --output s.jsonl 2>&1 | head -1`: before, the first note or progress bar written after the
    # reader left ended the run with 141, its output never merged.
    out = tmp_path / "s.jsonl"
    args = [sys.executable, "-m", "mmjudge.cli", "score", *ROUGE, "--input", many, "--output", str(out)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    process.stderr.close()  # gone before the first line
    assert process.wait(timeout=120) == 0
    assert [r["id"] for r in _rows(out)] == [f"i{k}" for k in range(800)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.jsonl", "s.jsonl"]


def test_compare_into_a_closed_pipe_ends_quietly(tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", _items([f"a dog {k} " + "runs " * 30 for k in range(300)]))
    b = _jsonl(tmp_path / "b.jsonl", _items([f"a cat {k} " + "sits " * 30 for k in range(300)]))
    code, lines, err = _into_head(["compare", "--a", a, "--b", b, "--format", "jsonl", *D])
    assert code == 141 and "Traceback" not in err and all(lines), err[-2000:]


# ----------------------------------------------------------------- compare: another id in --b
def test_a_pair_with_another_id_keeps_its_id_and_the_run_exits_4(tmp_path, capsys):
    image = tmp_path / "red.png"
    Image.new("RGB", (24, 20), (200, 40, 40)).save(image)
    a = _jsonl(tmp_path / "a.jsonl", [{"id": k, "text": f"A red {k}.", "image": str(image)} for k in ("a", "b")])
    b = _jsonl(tmp_path / "b.jsonl", [{"id": k, "text": f"Red {k}.", "image": str(image)} for k in ("x", "b")])
    out = tmp_path / "c.jsonl"
    assert main(["compare", "--a", a, "--b", b, "--output", str(out), "--quiet", *D]) == 4  # today: 0, id "0"
    rows = _rows(out)
    assert [r["id"] for r in rows] == ["a", "b"]
    assert "--a has id 'a' here but --b has id 'x'" in rows[0]["error"] and rows[0]["text_a"] == "A red a."
    assert "error" not in rows[1] and rows[1]["overall"] is not None


# --------------------------------------------------- a symbolic link loop, a device as a checkpoint
def test_a_symbolic_link_loop_is_named_as_such(tmp_path, capsys):
    loop_a, loop_b = tmp_path / "loopA", tmp_path / "loopB"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    assert main(["score", *ROUGE, "--input", str(loop_a)]) == 2  # today: "Couldn't reach 'loopA' on the Hub"
    assert _error_lines(capsys) == [
        f"mmjudge score: error: --input {loop_a}: a symbolic link loop; give the file it should lead to."
    ]
    assert main(["compare", "--a", str(loop_a), "--b", str(loop_b), *D]) == 2
    assert "--a " + str(loop_a) + ": a symbolic link loop" in _error_lines(capsys)[0]
    assert main(["metaeval", "--judgments", str(loop_a), "--scores", str(loop_b)]) == 2
    assert f"--scores {loop_b}: a symbolic link loop; give the score file." in _error_lines(capsys)[0]
    broken = tmp_path / "broken.jsonl"
    broken.symlink_to(tmp_path / "nowhere.jsonl")
    assert main(["score", *ROUGE, "--input", str(broken)]) == 2
    assert f"a broken symbolic link (to {str(tmp_path / 'nowhere.jsonl')!r})" in _error_lines(capsys)[0]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_as_a_checkpoint_is_named_as_such(tmp_path, capsys):
    from mmjudge.metrics.vela.loading import read_checkpoint

    for metric in ("pac_s", "polos"):
        assert (
            main(["score", "--metric", metric, "--set", "checkpoint=/dev/zero", "--text", "a dog", "--image", "x.png"])
            == 2
        )
        [err] = _error_lines(capsys)  # today: "… '/dev/zero' does not exist: download it from …"
        assert "'/dev/zero' is a character device, not a regular file: give the checkpoint file" in err, err
    with pytest.raises(ValueError, match="VELA checkpoint '/dev/zero' is a character device, not a regular file"):
        read_checkpoint("/dev/zero")
    loop = tmp_path / "loop.pth"
    loop.symlink_to(loop)
    assert (
        main(["score", "--metric", "pac_s", "--set", f"checkpoint={loop}", "--text", "a dog", "--image", "x.png"]) == 2
    )
    assert f"'{loop}' is a symbolic link loop" in _error_lines(capsys)[0]
