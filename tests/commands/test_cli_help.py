"""Every sub-command has a description and examples, every option a help text; score's output formats."""

import argparse
import json

import pytest

from mmjudge.cli import build_parser, main


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_command_and_option_is_documented():
    parser = build_parser()
    commands = _subparsers(parser)
    assert {"score", "metaeval", "dataset", "register"} <= set(commands)
    for name, sub in commands.items():
        assert sub.description, f"`mmjudge {name}` has no description"
        assert sub.epilog and "examples:" in sub.epilog and f"mmjudge {name}" in sub.epilog, (
            f"`mmjudge {name}` has no examples"
        )
        assert isinstance(sub.formatter_class, type) and issubclass(
            sub.formatter_class, argparse.RawDescriptionHelpFormatter
        )
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (
                f"mmjudge {name} {action.option_strings or action.dest}: no help"
            )
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            assert action.help, f"mmjudge {action.option_strings}: no help"


@pytest.mark.parametrize("name", ["score", "metaeval", "dataset", "register"])
def test_help_prints_examples(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"mmjudge {name}" in out


def test_score_formats_and_quiet(tmp_path, capsys, offline):
    """The same numbers in every format: the engine's own, for the same text, judge and criteria."""
    import csv
    import io

    from mmjudge import HarmonicEval

    base = ["score", "--judge", "dummy", "--no-cache", "--text", "A dog runs.", "--criteria", "fluency,clarity"]
    engine = HarmonicEval(judge="dummy", criteria=["fluency", "clarity"], cache=False)
    expected = engine.compute(predictions=["A dog runs."], progress=False)
    assert main(base + ["--format", "jsonl"]) == 0
    row = json.loads(capsys.readouterr().out.strip())
    assert row["primary"] == "overall" and row["signature"] == str(expected["signature"])
    for key in ("overall", "fluency", "clarity", "fluency_sigma", "clarity_weight"):
        assert row[key] == pytest.approx(expected[key][0], abs=1e-12), key
    assert row["fluency_status"] == expected["fluency_status"][0] == "ok"
    assert main(base + ["--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    [cells] = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert float(cells["overall"]) == pytest.approx(expected["overall"][0], abs=1e-12)
    assert cells["signature"] == row["signature"]
    out_file = tmp_path / "out.csv"
    assert main(base + ["--quiet", "--output", str(out_file)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    [written] = list(csv.DictReader(io.StringIO(out_file.read_text())))
    assert list(written)[0] == "id" and written["overall"] == cells["overall"]


def test_score_jsonl_writes_nan_as_null(tmp_path, capsys, offline):
    # FLEUR with the dummy judge prints no score: NaN, which JSON must carry as null.
    image = tmp_path / "img.png"
    from PIL import Image

    Image.new("RGB", (32, 32)).save(image)
    assert (
        main(
            [
                "score",
                "--metric",
                "fleur",
                "--judge",
                "dummy",
                "--no-cache",
                "--text",
                "a dog",
                "--image",
                str(image),
                "--format",
                "jsonl",
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "score",
                "--metric",
                "fleur",
                "--judge",
                "dummy",
                "--no-cache",
                "--text",
                "a dog",
                "--image",
                str(image),
                "--format",
                "jsonl",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "NaN" not in text
    row = json.loads(text.strip().splitlines()[-1])
    assert row["score"] is None and row["signature"]


def test_metaeval_prints_tables_without_out_and_skips_the_heatmap_without_matplotlib(tmp_path, capsys, monkeypatch):
    import dataclasses
    import sys

    from toy_judgments import toy_mmhe, write_scores

    hj, quality = toy_mmhe()
    judgments = tmp_path / "mmhe.json"
    judgments.write_text(json.dumps(dataclasses.asdict(hj)))
    scores = write_scores(tmp_path / "a.jsonl", quality, 0.05, 1)
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    assert main(["metaeval", "--judgments", str(judgments), "--scores", scores, "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "|" in out and "a" in out and "wrote" not in out
    assert set(tmp_path.iterdir()) == before  # nothing written without --out
    # matplotlib missing: the tables are written, the heatmap is skipped with one note.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert (
        main(
            [
                "metaeval",
                "--judgments",
                str(judgments),
                "--scores",
                scores,
                "--bootstrap",
                "0",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "matplotlib is not installed, so heatmap.png was skipped" in err
    assert not (tmp_path / "o" / "heatmap.png").exists() and (tmp_path / "o" / "results.json").is_file()
