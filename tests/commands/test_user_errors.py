"""Every kind of user mistake, through the CLI and the Python API: one clear line, never a traceback.

Table-driven: each CASE is one kind of bad input with
* ``cli``: the ``mmjudge`` arguments (``{d}`` is a folder of prepared bad files), run in-process; the
  command must exit 2 and print exactly one stderr line ``mmjudge <cmd>: error: …`` naming ``expect``;
* ``api``: the same mistake through Python, which must raise ``ValueError``/``FileNotFoundError`` (or
  a subclass) whose message names ``expect``.
ACCEPTED lists inputs that are not errors and must be handled properly instead (a BOM, 16-bit images).
Everything runs offline with the ``dummy`` judge or before any model is loaded.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

import mmjudge
from mmjudge.cli import main

D = "--judge dummy --no-cache"


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """A folder of bad (and good) inputs."""
    root = tmp_path_factory.mktemp("bad")
    Image.new("RGB", (64, 48), "white").save(root / "img.png")
    Image.new("RGB", (2000, 5), "white").save(root / "strip.png")
    (root / "broken.png").write_bytes(b"not a png at all")
    (root / "folder").mkdir()
    (root / "empty_model").mkdir()
    (root / "not_sqlite.txt").write_text("hello, I am not a database\n")
    (root / "array.jsonl").write_text('{"text": "a dog"}\n[1, 2, 3]\n')
    (root / "string.jsonl").write_text('"just a string"\n')
    (root / "invalid.jsonl").write_text('{"text": "a dog",}\n')
    (root / "latin1.jsonl").write_bytes('{"text": "caf\u00e9"}\n'.encode("latin-1"))
    (root / "no_text.jsonl").write_text('{"image": "img.png"}\n')
    (root / "dupes.jsonl").write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n')
    (root / "empty.jsonl").write_text("\n")
    (root / "ok.jsonl").write_text('{"id": "a", "text": "a dog runs"}\n')
    (root / "bom.csv").write_bytes("\ufeffid,text\nx1,a dog runs\n".encode("utf-8"))
    (root / "scores_bom.csv").write_bytes("\ufeffid,score\na,1.0\n".encode("utf-8"))
    (root / "long.jsonl").write_text(json.dumps({"text": "a" * 200_000}) + "\n")
    return root


def img(d):
    return [str(d / "img.png")]


# (kind, cli args or None, api callable(d) or None, text the message must contain)
CASES = [
    # ---------------------------------------------------------------------------- setup mistakes
    (
        "cache path is a folder",
        "score --text x --judge dummy --cache {d}/folder",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=d / "folder"),
        "is a folder",
    ),
    (
        "cache file is not SQLite",
        "score --text x --judge dummy --cache {d}/not_sqlite.txt",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=d / "not_sqlite.txt"),
        "not an SQLite file",
    ),
    (
        "cache path under a file (not writable)",
        "score --text x --judge dummy --cache {d}/not_sqlite.txt/c.sqlite",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=d / "not_sqlite.txt" / "c.sqlite"),
        "is a file, not a folder",
    ),
    (
        "model folder does not exist",
        "score --text x --no-cache --model ./no/such/model",
        lambda d: mmjudge.load("harmonic_eval", model="./no/such/model", cache=False),
        "does not exist",
    ),
    (
        "model folder is empty",
        "score --text x --no-cache --model {d}/empty_model",
        lambda d: mmjudge.load("harmonic_eval", model=str(d / "empty_model"), cache=False),
        "holds no model files",
    ),
    (
        "default model while offline",
        "score --text x --no-cache",
        lambda d: mmjudge.load("harmonic_eval", cache=False),
        "offline mode is on",
    ),
    (
        "judge switch that is not true/false",
        "score --text x --no-cache --model tiny-random --set prefetch=no",
        lambda d: mmjudge.load("harmonic_eval", model="tiny-random", cache=False, prefetch="no"),
        "Expected argument `prefetch` to be true or false, but got 'no'",
    ),
    (
        "vela compile that is not true/false",
        "score --metric vela --text x --no-cache --set allow_untrained=true --set compile=maybe",
        lambda d: mmjudge.load("vela", allow_untrained=True, compile="maybe"),
        "Expected argument `compile` to be true or false, but got 'maybe'",
    ),
    (
        "dtype float17",
        "score --text x --no-cache --model tiny-random --dtype float17",
        lambda d: mmjudge.load("harmonic_eval", model="tiny-random", dtype="float17", cache=False),
        "float17",
    ),
    (
        "unknown option --set foo=1",
        f"score --text x {D} --set foo=1",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, foo=1),
        "unknown option 'foo' for harmonic_eval",
    ),
    (
        "misspelt keyword",
        f"score --text x {D} --set gama=0.5",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, gama=0.5),
        "did you mean 'gamma'",
    ),
    (
        "misspelt keyword, other metric",
        "score --metric fleur --text x --no-cache --judge dummy --set explian=true",
        lambda d: mmjudge.load("fleur", judge="dummy", cache=False, explian=True),
        "did you mean 'explain'",
    ),
    (
        "unknown judge backend",
        "score --text x --no-cache --judge dumy",
        lambda d: mmjudge.load("harmonic_eval", judge="dumy", cache=False),
        "Did you mean 'dummy'",
    ),
    ("unknown metric", "score --metric harmonic --text x", lambda d: mmjudge.load("harmonic"), "Unknown metric"),
    ("--set without '='", f"score --text x {D} --set gamma", None, "KEY=VALUE"),
    ("--output into a missing folder", f"score --text x {D} --output {{d}}/nowhere/out.jsonl", None, "does not exist"),
    ("--output is a folder", f"score --text x {D} --output {{d}}/folder", None, "is a folder"),
    (
        "metaeval --out is a file",
        "metaeval --dataset mmhe --scores {d}/ok.jsonl --out {d}/not_sqlite.txt",
        None,
        "is a file",
    ),
    ("--input missing", f"score {D} --input {{d}}/missing.jsonl", None, "no such file"),
    ("--input is a folder", f"score {D} --input {{d}}/folder", None, "is a folder"),
    (
        "unknown dataset name offline",
        "dataset info no_such_set",
        lambda d: mmjudge.load_dataset("no_such_set"),
        "Unknown dataset 'no_such_set'",
    ),
    (
        "unknown task",
        f"score --text x {D} --task captioning",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, task="captioning"),
        "Unknown task",
    ),
    (
        "gamma out of range",
        f"score --text x {D} --gamma 0",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, gamma=0),
        "gamma",
    ),
    (
        "--criteria empty",
        f"score --text x {D} --criteria ''",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, criteria=[]),
        "criteri",
    ),
    (
        "unknown criterion",
        f"score --text x {D} --criteria fluncy",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, criteria=["fluncy"]),
        "fluncy",
    ),
    (
        "smoothing='no'",
        f"score --text x {D} --set smoothing=no",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False, smoothing="no"),
        "smoothing",
    ),
    (
        "explain='maybe'",
        None,
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), explain="maybe"
        ),
        "explain",
    ),
    # --------------------------------------------------------------------- inputs that used to fail deep
    (
        "REG box in 0-1 coordinates",
        f"score --task reg --image {{d}}/img.png --box 0.1,0.2,0.3,0.4 --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), boxes=[[0.1, 0.2, 0.3, 0.4]], task="reg"
        ),
        "boxes[0]: bounding box",
    ),
    (
        "REG box outside the image",
        None,
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), boxes=[[-1, 2, 3, 4]], task="reg"
        ),
        "boxes[0]",
    ),
    (
        "--box a,b,c,d",
        f"score --task reg --image {{d}}/img.png --box a,b,c,d --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), boxes=[["a", "b", "c", "d"]], task="reg"
        ),
        "box",
    ),
    ("--box -1,2,3,4", f"score --task reg --image {{d}}/img.png --box=-1,2,3,4 --text x {D}", None, "negative"),
    (
        "--box -1,2,3,4 without '='",
        f"score --task reg --image {{d}}/img.png --box -1,2,3,4 --text x {D}",
        None,
        "--box=-1,2,3,4",
    ),
    ("unknown flag", f"score --text x {D} --temperature 2", None, "unrecognized arguments: --temperature"),
    ("misspelt flag", f"score --text x {D} --criterias fluency", None, "did you mean --criteria?"),
    (
        "--box with 3 numbers",
        f"score --task reg --image {{d}}/img.png --box 1,2,3 --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), boxes=[[1, 2, 3]], task="reg"
        ),
        "box",
    ),
    (
        "REG without a box",
        f"score --task reg --image {{d}}/img.png --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), task="reg"
        ),
        "boxes",
    ),
    (
        "extreme aspect ratio",
        f"score --image {{d}}/strip.png --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=[str(d / "strip.png")]
        ),
        "images[0]: aspect ratio",
    ),
    (
        "image file missing",
        f"score --image {{d}}/nope.png --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=[str(d / "nope.png")]
        ),
        "images[0]",
    ),
    (
        "image file corrupt",
        f"score --image {{d}}/broken.png --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=[str(d / "broken.png")]
        ),
        "images[0]: cannot read image",
    ),
    (
        "VQA without a question",
        f"score --task vqa --image {{d}}/img.png --text x {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["x"], images=img(d), task="vqa"
        ),
        "questions",
    ),
    (
        "JSONL line is an array",
        f"score {D} --criteria fluency --strict --input {{d}}/array.jsonl",
        None,
        "array.jsonl:2: expected a JSON object",
    ),
    (
        "JSONL line is a string",
        f"score {D} --strict --input {{d}}/string.jsonl",
        None,
        "string.jsonl:1: expected a JSON object",
    ),
    (
        "JSONL line not valid JSON",
        f"score {D} --strict --input {{d}}/invalid.jsonl",
        None,
        "invalid.jsonl:1: not valid JSON",
    ),
    ("JSONL not UTF-8", f"score {D} --strict --input {{d}}/latin1.jsonl", None, "latin1.jsonl:1: not UTF-8"),
    ("JSONL item without text", f"score {D} --strict --input {{d}}/no_text.jsonl", None, "no_text.jsonl:1: text"),
    (
        "duplicate ids in --input",
        f"score {D} --criteria fluency --strict --input {{d}}/dupes.jsonl",
        None,
        "dupes.jsonl:3: its id 'a' is already the id of input item 0 (counting from 0)",
    ),
    ("empty --input", f"score {D} --input {{d}}/empty.jsonl", None, "no items"),
    (
        "--chunk-size below 1",
        f"score {D} --criteria fluency --input {{d}}/dupes.jsonl --chunk-size 0",
        lambda d: list(
            mmjudge.load("harmonic_eval", judge="dummy", cache=False).stream([{"text": "x"}], chunk_size=-3)
        ),
        "`chunk_size` (--chunk-size) to be a whole number of items, at least 1",
    ),
    ("no text given", f"score {D}", None, "give --text"),
    (
        "empty text",
        f"score --text '  ' {D}",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(predictions=["  "], images=img(d)),
        "predictions[0]: the text is empty",
    ),
    (
        "text not a string",
        None,
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["a", None], images=img(d) * 2
        ),
        "predictions[1]",
    ),
    (
        "200,000-character text",
        f"score {D} --strict --input {{d}}/long.jsonl",
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["a" * 200_000], images=img(d)
        ),
        "the text has 200000 characters",
    ),
    (
        "200,000-character text, FLEUR",
        None,
        lambda d: mmjudge.load("fleur", judge="dummy", cache=False).compute(predictions=["a" * 200_000], images=img(d)),
        "predictions[0]: the text has 200000 characters",
    ),
    (
        "lengths differ",
        None,
        lambda d: mmjudge.load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["a", "b"], images=img(d)
        ),
        "one entry per prediction",
    ),
    ("metaeval without a benchmark", "metaeval --scores {d}/ok.jsonl", None, "--dataset"),
    ("metaeval score file missing", "metaeval --dataset mmhe --scores {d}/missing.jsonl", None, "does not exist"),
    ("metaeval --save-scores without --out", "metaeval --dataset mmhe --metric bleu --save-scores", None, "--out"),
]


def _run_cli(argv: str, d, capsys) -> tuple[int, str]:
    import shlex

    capsys.readouterr()
    try:
        rc = main(shlex.split(argv.format(d=d)))
    except SystemExit as stop:  # argparse's own errors
        rc = stop.code
    return rc, capsys.readouterr().err


@pytest.fixture(autouse=True)
def _offline(offline):
    """conftest.py's offline, for every test here: its private HF_HOME surely does not hold the default model."""


@pytest.mark.parametrize("kind,cli,api,expect", [c for c in CASES if c[1]], ids=[c[0] for c in CASES if c[1]])
def test_cli_one_line(kind, cli, api, expect, d, capsys):
    rc, err = _run_cli(cli, d, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    command = cli.split()[0]
    assert rc == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mmjudge {command}: error: "), lines[0]
    assert "Traceback" not in err
    assert expect in lines[0], lines[0]


@pytest.mark.parametrize("kind,cli,api,expect", [c for c in CASES if c[2]], ids=[c[0] for c in CASES if c[2]])
def test_python_api_clear_exception(kind, cli, api, expect, d):
    with pytest.raises((ValueError, FileNotFoundError)) as info:
        api(d)
    assert expect in str(info.value)
    assert type(info.value).__name__ not in ("TypeError", "KeyError", "AttributeError")


def test_debug_flag_shows_the_traceback(d):
    with pytest.raises(ValueError, match="float17"):
        main(["--debug", "score", "--text", "x", "--no-cache", "--model", "tiny-random", "--dtype", "float17"])


def test_cuda_without_gpu(d, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc, err = _run_cli("score --text x --no-cache --model tiny-random --device cuda", d, capsys)
    assert rc == 2 and err.count("\n") == 1 and "no CUDA GPU" in err
    with pytest.raises(ValueError, match="no CUDA GPU"):
        mmjudge.load("harmonic_eval", model="tiny-random", device="cuda", cache=False)


# ----------------------------------------------------------------------------- accepted, handled well
def test_csv_input_with_byte_order_mark(d, capsys):
    rc = main(
        [
            "score",
            "--judge",
            "dummy",
            "--no-cache",
            "--input",
            str(d / "bom.csv"),
            "--format",
            "jsonl",
            "--quiet",
            "--criteria",
            "fluency,clarity",
        ]
    )
    assert rc == 0
    rc = main(
        [
            "score",
            "--judge",
            "dummy",
            "--no-cache",
            "--input",
            str(d / "bom.csv"),
            "--format",
            "jsonl",
            "--criteria",
            "fluency,clarity",
        ]
    )
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert rc == 0 and row["id"] == "x1" and row["signature"].startswith("mmjudge=")


def test_score_file_with_byte_order_mark(d):
    from mmjudge.metaeval import read_scores

    assert dict(read_scores(d / "scores_bom.csv"))["a"]["score"] == 1.0


def test_long_text_truncated_on_request(d):
    he = mmjudge.load("harmonic_eval", judge="dummy", cache=False, max_text_chars=100, long_texts="truncate")
    with pytest.warns(UserWarning, match=r"predictions\[1\]: the text has 150 characters; only the first 100"):
        out = he.compute(predictions=["short", "b" * 150], images=img(d) * 2, progress=False)
    cut = he.compute(predictions=["short", "b" * 100], images=img(d) * 2, progress=False)
    assert out["overall"] == cut["overall"]  # the judge saw exactly the first 100 characters


def test_high_bit_depth_images_are_scaled_not_clipped(tmp_path):
    from mmjudge.images import load_image

    ramp16 = np.arange(64, dtype=np.uint16).reshape(8, 8) * 1024 + 1023  # 1023 … 65535
    Image.fromarray(ramp16).save(tmp_path / "ramp16.png")
    got = np.asarray(load_image(str(tmp_path / "ramp16.png")))[..., 0]
    np.testing.assert_array_equal(got, np.round(ramp16 / 65535 * 255).astype(np.uint8))
    ramp_f = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
    Image.fromarray(ramp_f, "F").save(tmp_path / "ramp.tiff")
    got = np.asarray(load_image(str(tmp_path / "ramp.tiff")))[..., 0]
    np.testing.assert_array_equal(got, np.round(ramp_f.astype(np.float64) * 255).astype(np.uint8))
    assert got.max() == 255 and got.min() == 0  # a float TIFF is no longer black
    wide = np.linspace(-5, 20, 64, dtype=np.float32).reshape(8, 8)  # outside [0, 1]: min-max stretched
    got = np.asarray(load_image(Image.fromarray(wide, "F")))[..., 0]
    assert got.min() == 0 and got.max() == 255


def test_outputs_are_checked_before_scoring(d, monkeypatch, capsys):
    """--output into a missing folder fails before the metric is even built."""

    def boom(*args, **kwargs):
        raise AssertionError("the metric was loaded before --output was checked")

    monkeypatch.setattr(mmjudge, "load", boom)
    rc, err = _run_cli(f"score --text x {D} --output {{d}}/nowhere/out.jsonl", d, capsys)
    assert rc == 2 and "does not exist" in err


def test_every_kind_is_named_once_and_tried_one_way_at_least():
    """A repeated kind name would hide a case in the report; a case with neither a CLI nor an API form
    would test nothing."""
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert all(c[1] or c[2] for c in CASES)


def test_meteor_without_java_says_how_to_install_it(d, capsys, monkeypatch):
    from mmjudge.metrics.baselines import meteor

    monkeypatch.setattr(meteor.shutil, "which", lambda name: None)
    rc, err = _run_cli("score --metric baselines --config meteor --text 'a dog' --references 'a dog runs'", d, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "apt-get install default-jre-headless" in err


def test_read_only_output_file_is_refused_before_scoring(d, monkeypatch, capsys, tmp_path):
    """An existing --output file that cannot be written fails at once, not after all the scoring.
    (os.access is stubbed: these tests may run as root, for whom a 0o444 file is still writable.)"""
    import os

    from mmjudge.commands import score

    locked = tmp_path / "locked.jsonl"
    locked.write_text("old results\n")
    real_access = os.access
    monkeypatch.setattr(score.os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    monkeypatch.setattr(mmjudge, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("scored first")))
    rc, err = _run_cli(f"score --text x {D} --output {locked}", d, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert (
        lines[0] == f"mmjudge score: error: --output {locked}: the file exists and is not writable; "
        "give another name or make it writable."
    )
    assert locked.read_text() == "old results\n"


@pytest.mark.parametrize("main_process", [True, False])
def test_notes_are_printed_by_the_main_process_only(main_process, d, monkeypatch, capsys):
    """Under a launcher every process runs the command; the notes (on stderr, which is not silenced) once."""
    from mmjudge import distributed

    monkeypatch.setattr(distributed, "is_main", lambda: main_process)
    rc, err = _run_cli(f"score --text x {D} --model tiny-random --criteria fluency --format jsonl", d, capsys)
    assert rc == 0
    assert ("NOTE: 'tiny-random' is a model with RANDOM weights" in err) == main_process, err
