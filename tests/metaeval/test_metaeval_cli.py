"""`mmjudge metaeval` end to end: score files, metrics run on the fly, the dataset glue, bad input."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import types

import pytest

from mmjudge.cli import main
from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval import MetaEvalResult
from toy_judgments import CRITERIA, toy_mmhe, write_scores


@pytest.fixture
def bench(tmp_path):
    from PIL import Image

    Image.new("RGB", (32, 24), (200, 30, 30)).save(tmp_path / "photo.png")
    hj, quality = toy_mmhe(image=str(tmp_path / "photo.png"))
    path = tmp_path / "mmhe.json"
    path.write_text(json.dumps(dataclasses.asdict(hj)))
    return hj, quality, str(path)


def test_two_score_files_one_table(bench, tmp_path, capsys):
    hj, quality, judgments = bench
    a = write_scores(tmp_path / "a.jsonl", quality, 0.05, 1)
    b = write_scores(tmp_path / "b.jsonl", quality, 1.0, 2)
    out = tmp_path / "out"
    code = main(
        [
            "metaeval",
            "--judgments",
            judgments,
            "--scores",
            a,
            "--scores",
            b,
            "--names",
            "Good",
            "Noisy",
            "--out",
            str(out),
            "--bootstrap",
            "100",
            "--seed",
            "3",
            "--format",
            "md,csv",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "| Metric | REG | VQA | VDU | IC | Avg. |" in printed
    assert "| Good |" in printed and "| Noisy |" in printed
    assert "Paired bootstrap vs the best (Good)" in printed
    assert (out / "accuracy.md").is_file() and (out / "criterion_correlation.csv").is_file()
    assert not (out / "accuracy.json").exists()  # --format md,csv
    assert (out / "heatmap.png").is_file() and (out / "records.csv").is_file()
    result = MetaEvalResult.load(out / "results.json")
    assert result.metrics == ["Good", "Noisy"] and result.options["bootstrap"] == 100
    assert result.value("Good", measure="accuracy", subset="avg") > result.value(
        "Noisy", measure="accuracy", subset="avg"
    )


def test_options_reach_the_computation(bench, tmp_path, capsys):
    hj, quality, judgments = bench
    a = write_scores(tmp_path / "a.jsonl", quality, 0.3, 1)
    out = tmp_path / "out"
    assert (
        main(
            [
                "metaeval",
                "--judgments",
                judgments,
                "--scores",
                a,
                "--out",
                str(out),
                "--bootstrap",
                "0",
                "--ties",
                "half",
                "--best-of",
                "unanimous",
                "--protocol",
                "averaged",
                "--measures",
                "tau_b,pearson",
            ]
        )
        == 0
    )
    result = MetaEvalResult.load(out / "results.json")
    assert {k: result.options[k] for k in ("ties", "best_of", "protocol", "bootstrap")} == {
        "ties": "half",
        "best_of": "unanimous",
        "protocol": "averaged",
        "bootstrap": 0,
    }
    assert {r["measure"] for r in result.records} == {"tau_b", "pearson", "accuracy"}
    assert result.metrics == ["a"]  # named after the file


def test_dataset_glue_calls_the_loader(bench, tmp_path, monkeypatch, capsys):
    hj, quality, _ = bench
    try:
        datasets_module = importlib.import_module("mmjudge.datasets")
    except ImportError:  # the loaders are another module; the glue only needs this one function
        datasets_module = types.ModuleType("mmjudge.datasets")
        monkeypatch.setitem(sys.modules, "mmjudge.datasets", datasets_module)
    calls = []

    def fake_human_judgments(name, **kwargs):
        calls.append((name, kwargs))
        return hj

    monkeypatch.setattr(datasets_module, "human_judgments", fake_human_judgments, raising=False)
    a = write_scores(tmp_path / "a.jsonl", quality, 0.3, 1)
    assert (
        main(
            [
                "metaeval",
                "--dataset",
                "mmhe",
                "--data-dir",
                "/data/mmhe",
                "--scores",
                a,
                "--out",
                str(tmp_path / "o"),
                "--bootstrap",
                "0",
            ]
        )
        == 0
    )
    assert calls == [("mmhe", {"data_dir": "/data/mmhe"})]


def test_metric_on_the_fly_with_criterion_columns(bench, tmp_path, capsys):
    hj, quality, judgments = bench
    out = tmp_path / "out"
    code = main(
        [
            "metaeval",
            "--judgments",
            judgments,
            "--metric",
            "harmonic_eval",
            "--judge",
            "dummy",
            "--no-cache",
            "--set",
            'criteria=["clarity","fluency"]',
            "--save-scores",
            "--out",
            str(out),
            "--bootstrap",
            "20",
        ]
    )
    assert code == 0, capsys.readouterr().err
    result = MetaEvalResult.load(out / "results.json")
    assert result.metrics == ["harmonic_eval"]
    keys = {r["criterion"]: r["score_key"] for r in result.records if r["measure"] == "tau_c" and r["task"] == "ic"}
    assert keys == {
        "correctness": "overall",
        "completeness": "overall",
        "clarity": "clarity",
        "fluency": "fluency",
        "conciseness": "overall",
    }
    saved = [json.loads(line) for line in (out / "scores_harmonic_eval.jsonl").read_text().splitlines()]
    assert len(saved) == len(hj.items) and {"id", "overall", "clarity", "fluency"} <= set(saved[0])


def test_combine_makes_the_benchmark_table(bench, tmp_path, capsys):
    hj, quality, judgments = bench
    a = write_scores(tmp_path / "A.jsonl", quality, 0.2, 1)
    assert (
        main(["metaeval", "--judgments", judgments, "--scores", a, "--out", str(tmp_path / "m"), "--bootstrap", "0"])
        == 0
    )
    f8k = HumanJudgments(
        name="flickr8k_expert",
        items=[{"id": i} for i in quality],
        correlation="tau_c",
        ratings=[{"id": i, "criterion": "overall", "score": 1 + round(3 * q)} for i, q in quality.items()],
    )
    (tmp_path / "f8k.json").write_text(json.dumps(dataclasses.asdict(f8k)))
    assert (
        main(
            [
                "metaeval",
                "--judgments",
                str(tmp_path / "f8k.json"),
                "--scores",
                a,
                "--out",
                str(tmp_path / "f"),
                "--bootstrap",
                "0",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "metaeval",
                "--combine",
                str(tmp_path / "m" / "results.json"),
                str(tmp_path / "f" / "results.json"),
                "--out",
                str(tmp_path / "t8"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| Metric | mmhe acc. | flickr8k_expert τ_c |" in printed
    table = json.loads((tmp_path / "t8" / "benchmarks.json").read_text())
    assert [row["metric"] for row in table["rows"]] == ["A"]


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--names", "X", "Y"], r"--names gives 2 name\(s\) for 1 --scores file"),
        (["--ties", "half", "--format", "html"], "Expected formats among"),
    ],
)
def test_bad_options_are_clear_errors(bench, tmp_path, capsys, extra, message):
    hj, quality, judgments = bench
    a = write_scores(tmp_path / "a.jsonl", quality, 0.3, 1)
    code = main(
        ["metaeval", "--judgments", judgments, "--scores", a, "--out", str(tmp_path / "o"), "--bootstrap", "0", *extra]
    )
    assert code == 2
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)


def test_bad_scores_name_the_id(bench, tmp_path, capsys):
    hj, quality, judgments = bench
    rows = [{"id": i, "score": 0.5} for i in quality]
    rows[3]["score"] = float("inf")  # NaN would be a failed item (test_failed_items_*), inf is a mistake
    path = tmp_path / "inf.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["metaeval", "--judgments", judgments, "--scores", str(path), "--out", str(tmp_path / "o")]) == 2
    assert f"(id {rows[3]['id']!r}) 'score': score is inf" in capsys.readouterr().err
    path.write_text("".join(json.dumps(r) + "\n" for r in [{"id": i, "score": 0.5} for i in list(quality)[:-1]]))
    assert main(["metaeval", "--judgments", judgments, "--scores", str(path), "--out", str(tmp_path / "o")]) == 2
    assert f"no score for 1 id(s) of the benchmark: {list(quality)[-1]!r}" in capsys.readouterr().err
    assert main(["metaeval", "--judgments", judgments, "--out", str(tmp_path / "o")]) == 2
    assert "give at least one --scores FILE or --metric NAME" in capsys.readouterr().err


def test_real_mmhe_loader_end_to_end(tmp_path, capsys):
    """The glue with the real MMHE builder, on a fixture in MMHE's release layout written here."""
    md = pytest.importorskip("mmjudge.datasets")
    if "mmhe" not in md.available_datasets():
        pytest.skip("the MMHE loader is not part of this checkout")
    from PIL import Image

    root = tmp_path / "mmhe"
    (root / "images").mkdir(parents=True)
    Image.new("RGB", (8, 6), (20, 120, 20)).save(root / "images" / "a.png")
    instances = []
    for task in ("REG", "VQA", "VDU", "IC"):
        for n in range(2):
            instances.append(
                {
                    "task": task,
                    "instance_id": str(n),
                    "image": "images/a.png",
                    "question": "What is shown?" if task in ("VQA", "VDU") else None,
                    "bbox": [1, 2, 3, 4] if task == "REG" else None,
                    "candidates": [
                        {
                            "model": f"m{k}",
                            "text": f"text {task} {n} {k}",
                            "ratings": {c: [1 + k, 2 + (k + n) % 3, 5 - k] for c in CRITERIA},
                        }
                        for k in range(3)
                    ],
                    "annotators": ["A1", "A2", "A3"],
                    "best": [2, 2, 0],
                }
            )
    (root / "mmhe.json").write_text(json.dumps(instances))
    counts = json.dumps({"test": 24, "instances_per_task": 2, "ratings": 24 * 15})
    # Candidate k of every instance scores k: the majority's best (candidate 2) always wins.
    scores = tmp_path / "s.jsonl"
    scores.write_text(
        "".join(
            json.dumps({"id": f"mmhe-{t}-{n}-{k}", "score": k}) + "\n"
            for t in ("reg", "vqa", "vdu", "ic")
            for n in range(2)
            for k in range(3)
        )
    )
    out = tmp_path / "out"
    code = main(
        [
            "metaeval",
            "--dataset",
            "mmhe",
            "--data-dir",
            str(root),
            "--dataset-option",
            f"expected_counts={counts}",
            "--dataset-option",
            f"cache_dir={tmp_path / 'cache'}",
            "--scores",
            str(scores),
            "--metric",
            "harmonic_eval",
            "--judge",
            "dummy",
            "--no-cache",
            "--names",
            "by-index",
            "dummy-he",
            "--out",
            str(out),
            "--bootstrap",
            "10",
        ]
    )
    assert code == 0, capsys.readouterr().err
    result = MetaEvalResult.load(out / "results.json")
    assert result.dataset == "mmhe" and result.tasks == ["reg", "vqa", "vdu", "ic"]
    assert result.value("by-index", measure="accuracy", subset="avg") == 1.0
    assert {r["n_rows"] for r in result.find("dummy-he", measure="tau_b") if r["task"] != "all"} == {18}
