"""The judgments file (schema mmjudge.human_judgments, docs/metaeval.md): written from any loader, read back
by `mmjudge metaeval --judgments`, and every mistake in a hand-written file is one line naming the record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import mmjudge.datasets as md
from benchmark_releases import SMALL_MMHE, SMALL_PASCAL, flickr8k_json, png, write_pascal_layout
from mmjudge.cli import main
from mmjudge.human_judgments import SCHEMA_VERSION, HumanJudgments
from mmjudge.metaeval import MetaEvalResult
from repo_paths import ROOT

DOCS = ROOT / "docs" / "metaeval.md"


def test_written_from_a_loader_and_read_back_the_same(f8k_dir, tmp_path, capsys):
    out = tmp_path / "f8k.json"
    assert (
        main(
            [
                "dataset",
                "judgments",
                "flickr8k_expert",
                "--data-dir",
                str(f8k_dir),
                "--cache-dir",
                str(tmp_path / "c"),
                "--expected-counts",
                '{"test": 2, "judgments": 6}',
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "wrote" in capsys.readouterr().out and f'"version": {SCHEMA_VERSION}' in out.read_text()
    back = HumanJudgments.load(out)
    direct = md.human_judgments(
        "flickr8k_expert",
        data_dir=str(f8k_dir),
        cache_dir=str(tmp_path / "c"),
        expected_counts={"test": 2, "judgments": 6},
    )
    assert (back.name, back.correlation, back.ratings) == (direct.name, direct.correlation, direct.ratings)
    drop = lambda items: [{k: v for k, v in it.items() if k != "image"} for it in items]  # noqa: E731
    assert drop(back.items) == drop(direct.items)
    # images are paths to the files under --data-dir (the file names them, it does not copy them)
    assert [Path(it["image"]) for it in back.items] == [
        (f8k_dir / "Flicker8k_Dataset" / n).resolve() for n in ("a.jpg", "b.jpg")
    ]


def test_choices_and_criteria_round_trip(mmhe_dir, tmp_path):
    kwargs = dict(data_dir=str(mmhe_dir), cache_dir=str(tmp_path / "c"), expected_counts=SMALL_MMHE)
    written = md.write_judgments("mmhe", tmp_path / "mmhe.json", **kwargs)
    back = HumanJudgments.load(tmp_path / "mmhe.json")
    direct = md.human_judgments("mmhe", **kwargs)
    assert (back.choices, back.ratings, back.criteria) == (direct.choices, direct.ratings, direct.criteria)
    assert len(back.choices) == 24 and back.correlation == "tau_b" and back.items[0]["box"] == [1.0, 2.0, 3.0, 4.0]
    assert {it["image"] for it in written.items} == {str((mmhe_dir / "images" / "a.png").resolve())}


def test_images_are_found_by_name_when_a_copy_uses_another_folder(tmp_path):
    # flickr8k.json's images live in Flickr8k_Dataset/ while rows name Flicker8k_Dataset/: found by file name
    root = tmp_path / "json"
    flickr8k_json(root, [("a.jpg", "A cat sits .", [1, 2, 1])], {"a.jpg": ["A dog runs ."]}, "flickr8k.json")
    png(root / "Flickr8k_Dataset" / "a.jpg")
    hj = md.write_judgments(
        "flickr8k_expert", tmp_path / "j.json", data_dir=str(root), cache_dir=str(tmp_path / "c"), expected_counts={}
    )
    assert hj.items[0]["image_path"] == "Flicker8k_Dataset/a.jpg"
    assert HumanJudgments.load(tmp_path / "j.json").items[0]["image"] == str(
        (root / "Flickr8k_Dataset" / "a.jpg").resolve()
    )


def test_metaeval_from_the_file_equals_metaeval_from_the_loader(tmp_path, capsys):
    write_pascal_layout(tmp_path / "D", "json")
    counts = json.dumps(SMALL_PASCAL)
    assert (
        main(
            [
                "dataset",
                "judgments",
                "pascal50s",
                "--data-dir",
                str(tmp_path / "D"),
                "--cache-dir",
                str(tmp_path / "c"),
                "--expected-counts",
                counts,
                "--out",
                str(tmp_path / "p.json"),
            ]
        )
        == 0
    )
    items = HumanJudgments.load(tmp_path / "p.json").items
    scores = tmp_path / "s.jsonl"  # caption A always scores higher: right exactly where label is 0
    scores.write_text(
        "".join(json.dumps({"id": it["id"], "score": 1.0 if it["id"].endswith("-a") else 0.0}) + "\n" for it in items)
    )
    common = ["--scores", str(scores), "--bootstrap", "0"]
    assert main(["metaeval", "--judgments", str(tmp_path / "p.json"), *common, "--out", str(tmp_path / "f")]) == 0
    assert (
        main(
            [
                "metaeval",
                "--dataset",
                "pascal50s",
                "--data-dir",
                str(tmp_path / "D"),
                "--dataset-option",
                f"cache_dir={tmp_path / 'c'}",
                "--dataset-option",
                f"expected_counts={counts}",
                *common,
                "--out",
                str(tmp_path / "l"),
            ]
        )
        == 0
    )
    from_file = MetaEvalResult.load(tmp_path / "f" / "results.json")
    from_loader = MetaEvalResult.load(tmp_path / "l" / "results.json")
    assert from_file.records == from_loader.records
    # fixture labels HC [1, 0], HM [0], MM [0, 1]: caption A right 1 of 2, 1 of 1, 1 of 2
    assert [from_file.value("s", subset=s) for s in ("HC", "HM", "MM")] == [0.5, 1.0, 0.5]


def test_relative_image_paths_are_relative_to_the_file(tmp_path):
    png(tmp_path / "study" / "imgs" / "x.png")
    path = tmp_path / "study" / "mine.json"
    path.write_text(
        json.dumps(
            {
                "name": "mine",
                "items": [{"id": "a", "text": "a red square", "image": "imgs/x.png"}, {"id": "b", "text": "a dog"}],
                "pairs": [{"better": "a", "worse": "b"}],
            }
        )
    )
    hj = HumanJudgments.load(path)
    assert Path(hj.items[0]["image"]) == tmp_path / "study" / "imgs" / "x.png" and "image" not in hj.items[1]


def _docs_example() -> dict:
    """The example file in docs/metaeval.md (the block after the "Human judgments file" heading)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Human judgments file") :]
    return json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))


def test_the_documented_example_is_a_valid_file_and_runs(tmp_path, capsys):
    example = _docs_example()
    assert example["schema"] == "mmjudge.human_judgments" and example["version"] == SCHEMA_VERSION
    path = tmp_path / "study.json"
    path.write_text(json.dumps(example))
    hj = HumanJudgments.load(path)
    assert hj.ratings and hj.pairs and hj.criteria
    scores = tmp_path / "m.jsonl"
    scores.write_text(
        "".join(json.dumps({"id": it["id"], "score": k, "fluency": -k}) + "\n" for k, it in enumerate(hj.items))
    )
    assert main(["metaeval", "--judgments", str(path), "--scores", str(scores), "--bootstrap", "0"]) == 0
    assert "| m |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(rating=[]), r"unknown key 'rating' \(did you mean 'ratings'\?\)"),
        (
            lambda d: d.update(version=SCHEMA_VERSION + 1),
            f"schema version {SCHEMA_VERSION + 1}, but this mmjudge reads up to",
        ),
        (lambda d: d.update(schema="other"), "expected 'schema' to be 'mmjudge.human_judgments'"),
        (lambda d: d.pop("name"), "expected 'name'"),
        (lambda d: d.update(items=[]), "expected 'items' to be a non-empty list"),
        (lambda d: d["items"].append(dict(d["items"][0])), r"items\[\d+\]: duplicate id"),
        (lambda d: d["items"][1].pop("id"), r"items\[1\]: missing 'id'"),
        (
            lambda d: d["ratings"][2].update(id="ghost"),
            r"ratings\[2\]: expected 'id' to be an item id, but got 'ghost'",
        ),
        (
            lambda d: d["ratings"][0].update(score="good"),
            r"ratings\[0\] \(id '.*'\): expected 'score' to be a finite number",
        ),
        (lambda d: d["ratings"][0].update(score=float("nan")), r"ratings\[0\] .*finite number, but got nan"),
        (lambda d: d["pairs"][0].pop("worse"), r"pairs\[0\]: missing 'worse'"),
        (lambda d: d.update(correlation="kendall"), "expected 'correlation' to be one of"),
    ],
)
def test_mistakes_in_a_hand_written_file_are_one_line(tmp_path, capsys, change, message):
    data = _docs_example()
    change(data)
    path = tmp_path / "study.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message) as info:
        HumanJudgments.load(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
    (tmp_path / "s.jsonl").write_text('{"id": "x", "score": 1}\n')
    assert main(["metaeval", "--judgments", str(path), "--scores", str(tmp_path / "s.jsonl")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and re.search(message, err[0])


def test_a_legacy_dump_without_version_still_reads():
    import dataclasses

    hj = HumanJudgments(
        name="old", items=[{"id": "a"}, {"id": "b"}], pairs=[{"better": "a", "worse": "b", "kind": "x"}]
    )
    assert HumanJudgments.from_dict(dataclasses.asdict(hj)) == hj
