"""Each caption benchmark reads the original release and the preprocessed JSON layout (the files FLEUR's and
PAC-S's evaluation code reads) into the same rows and ids.

The JSON fixtures are written here from the same judgments as the original-layout fixtures, in the shape the
public loading code reads: FLEUR's fleur_pascal.py / fleur_com.py (pascal_50s.json, composite.json; foil.json
is assumed to share pascal_50s.json's shape), PAC-S's data/dataset.py and CLIPScore's Flickr8k preprocessing
(flickr8k.json, crowdflower_flickr8k.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mmjudge.datasets as md
from benchmark_releases import (
    SMALL_PASCAL,
    flickr8k_json,
    load,
    png,
    same_rows,
    write_pascal_layout,
)
from mmjudge.datasets._base import DataError


# --- Flickr8k-Expert / CF --------------------------------------------------------------------------------
def test_flickr8k_expert_layouts_give_the_same_rows(f8k_dir, tmp_path):
    counts = {"test": 2, "judgments": 6}
    original = load("flickr8k_expert", f8k_dir, tmp_path, expected_counts=counts)["test"]
    refs = {"a.jpg": ["A dog runs .", "A brown  dog ."], "b.jpg": ["A cat sits .", "Two cats ."]}
    flickr8k_json(
        tmp_path / "json",
        [("a.jpg", "A cat sits .", [1, 2, 1]), ("b.jpg", "A brown dog .", [4, 3, 4])],
        refs,
        "flickr8k.json",
    )
    for name in refs:  # FLEUR's folder name: images are found there too
        png(tmp_path / "json" / "Flickr8k_Dataset" / name)
    from_json = load("flickr8k_expert", tmp_path / "json", tmp_path, expected_counts=counts)["test"]
    same_rows(original, from_json)
    assert from_json["image_path"] == ["Flicker8k_Dataset/a.jpg", "Flicker8k_Dataset/b.jpg"]  # one name either way
    assert from_json[0]["image"].size == original[0]["image"].size == (8, 6)


def test_flickr8k_cf_layouts_give_the_same_rows(f8k_dir, tmp_path):
    original = load("flickr8k_cf", f8k_dir, tmp_path)["test"]
    # CrowdFlowerAnnotations.txt of the fixture: (a.jpg, b.jpg#0, 0.0), (a.jpg, a.jpg#0, 1.0), (b.jpg, a.jpg#1, 0.25);
    # the JSON drops every judged caption of an image from that image's references.
    refs = {"a.jpg": ["A brown  dog ."], "b.jpg": ["A cat sits .", "Two cats ."]}
    judged = [("a.jpg", "A cat sits .", [0.0]), ("a.jpg", "A dog runs .", [1.0]), ("b.jpg", "A brown  dog .", [0.25])]
    flickr8k_json(tmp_path / "json", judged, refs, "crowdflower_flickr8k.json")
    from_json = load("flickr8k_cf", tmp_path / "json", tmp_path)["test"]
    same_rows(original, from_json)
    assert from_json["score"] == [0.0, 1.0, 0.25] and from_json[0]["references"] == ["A brown dog ."]
    hj = md.human_judgments("flickr8k_cf", from_json)
    assert hj.correlation == "tau_b" and [r["score"] for r in hj.ratings] == [0.0, 1.0, 0.25]


# --- Composite -----------------------------------------------------------------------------------------
COMPOSITE = {  # subset -> [(image, [captions], [ratings])]; the coco image is judged in two CSV rows
    "flickr8k": [("a.jpg", ["one", "two", "three"], [5, 1, 3]), ("b.jpg", ["x", "y", "z"], [None, 2, 2])],
    "coco": [
        ("COCO_val2014_000000000007.jpg", ["c1", "c2", "c3", "c4"], [2, 2, 4, 5]),
        ("COCO_val2014_000000000007.jpg", ["c5", "c1", "c6", "c7"], [1, 3, 3, 3]),
    ],
}


def write_composite(root: Path, layout: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if layout == "original":
        for subset, file_name, n in (("flickr8k", "8k_correctness.csv", 3), ("coco", "coco_correctness.csv", 4)):
            head = ";".join(
                [
                    "Input.image_url",
                    *(f"Input.text{i}" for i in range(1, n + 1)),
                    *(f"Answer.Q{i}Answer" for i in range(1, n + 1)),
                    "Other",
                ]
            )
            lines = [
                ";".join([f"http://x/{img}", *caps, *("" if r is None else str(r) for r in ratings), "z"])
                for img, caps, ratings in COMPOSITE[subset]
            ]
            (root / file_name).write_text("\n".join([head, *lines]) + "\n")
        return
    # composite.json as FLEUR's fleur_com.py reads it; rows with an empty rating are not in it, as the CSV
    # reader drops them; FLEUR's folder names, not the CSV layout's.
    folder = {"flickr8k": "Flickr8k_Dataset", "coco": "val2014"}
    data = {
        subset: [
            {"image": f"{folder[subset]}/{img}", "caption": cap, "human": r}
            for img, caps, ratings in rows
            if None not in ratings
            for cap, r in zip(caps, ratings)
        ]
        for subset, rows in reversed(COMPOSITE.items())
    }  # key order differs from the CSV layout's on purpose
    (root / "composite.json").write_text(json.dumps(data))


def test_composite_layouts_give_the_same_rows(tmp_path):
    write_composite(tmp_path / "csv", "original")
    write_composite(tmp_path / "json", "json")
    original = load("composite", tmp_path / "csv", tmp_path)["test"]
    from_json = load("composite", tmp_path / "json", tmp_path)["test"]
    same_rows(original, from_json)
    assert original["score"] == [5, 1, 3, 2, 2, 4, 5, 1, 3, 3, 3]  # b.jpg's row had an empty rating: dropped
    assert original[0]["image_path"] == "Flicker8k_Dataset/a.jpg" and original[0]["references"] == ["two", "three"]
    # The coco image was judged in two CSV rows: its references are every other caption judged for it;
    # caption c1 was judged twice, so the second judgment gets its own id (suffix -2) and keeps c1 as a reference.
    c1 = [r for r in original.to_list() if r["text"] == "c1"]
    assert [r["score"] for r in c1] == [2, 3] and c1[1]["id"] == c1[0]["id"] + "-2"
    assert c1[0]["references"] == ["c2", "c3", "c4", "c5", "c1", "c6", "c7"]


def test_composite_json_drops_unrated_captions(tmp_path):
    write_composite(tmp_path / "json", "json")
    data = json.loads((tmp_path / "json" / "composite.json").read_text())
    data["flickr8k"][1]["human"] = None
    (tmp_path / "json" / "composite.json").write_text(json.dumps(data))
    ds = load("composite", tmp_path / "json", tmp_path)["test"]
    assert ds.num_rows == 10 and "two" not in ds["text"]
    data["flickr8k"][1]["human"] = 7
    (tmp_path / "json" / "composite.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"composite.json: flickr8k\[1\]: expected a number in \[1, 5\], but got 7"):
        load("composite", tmp_path / "json", tmp_path, download_mode="force_redownload")


# --- Pascal-50S (PASCAL and write_pascal_layout: benchmark_releases.py) ------------------------------------
def test_pascal50s_layouts_give_the_same_rows_and_pairs(tmp_path):
    write_pascal_layout(tmp_path / "mat", "original")
    write_pascal_layout(tmp_path / "json", "json")
    original = load("pascal50s", tmp_path / "mat", tmp_path, expected_counts=SMALL_PASCAL)["test"]
    from_json = load("pascal50s", tmp_path / "json", tmp_path, expected_counts=SMALL_PASCAL)["test"]
    same_rows(original, from_json, ignore=("image", "votes_a", "votes_b"))
    assert from_json["votes_a"] == [None] * 5 and original["votes_a"] == [1, 4, 3, 2, 0]  # the JSON has no votes
    assert original["category"] == ["HC", "HC", "HM", "MM", "MM"]  # one order: HC, HI, HM, MM, then file order
    # votes -> label: 1 of 4 for A prefers B; the 2-2 tie counts for A (label 0)
    assert original["label"] == [1, 0, 0, 0, 1]
    assert original[4]["id"] == original[3]["id"] + "-2"  # the repeated MM pair
    assert md.human_judgments("pascal50s", original).pairs == md.human_judgments("pascal50s", from_json).pairs


def test_pascal50s_json_with_a_bad_label_names_the_entry(tmp_path):
    write_pascal_layout(tmp_path / "json", "json")
    data = json.loads((tmp_path / "json" / "pascal_50s.json").read_text())
    data["HC"][1]["label"] = 2
    (tmp_path / "json" / "pascal_50s.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"pascal_50s.json: HC\[1\]: expected 'label' 0 or 1"):
        load("pascal50s", tmp_path / "json", tmp_path, expected_counts=SMALL_PASCAL)


def test_a_folder_with_both_layouts_reads_the_original_unless_told(tmp_path):
    write_pascal_layout(tmp_path / "both", "original")
    write_pascal_layout(tmp_path / "both", "json")
    write_pascal_layout(tmp_path / "mat_only", "original")
    original = load("pascal50s", tmp_path / "both", tmp_path, expected_counts=SMALL_PASCAL)["test"]
    assert original["votes_a"][0] == 1
    from_json = load("pascal50s", tmp_path / "both", tmp_path, expected_counts=SMALL_PASCAL, layout="json")["test"]
    assert from_json["votes_a"][0] is None and from_json["id"] == original["id"]
    with pytest.raises(DataError, match=r"Expected argument `layout` to be one of \['original', 'json'\]"):
        load("pascal50s", tmp_path / "both", tmp_path, expected_counts=SMALL_PASCAL, layout="mat")
    with pytest.raises(DataError, match="Expected the json layout of Pascal-50S under .*: `pascal_50s.json`"):
        load("pascal50s", tmp_path / "mat_only", tmp_path, expected_counts=SMALL_PASCAL, layout="json")


# --- FOIL ----------------------------------------------------------------------------------------------------
FOIL = [
    (7, "A dog on the grass", [("A cat on the grass", "dog", "cat"), ("A dog on the snow", "grass", "snow")]),
    (9, "A teddy bear on a bed", [("A dog on a bed", "teddy bear", "dog")]),
]
COCO = {7: ["A dog on the grass", "A puppy outside"], 9: ["A teddy bear on a bed", "A toy on a blanket", "Bedroom"]}


def write_foil(root: Path, layout: str, references: bool = True) -> None:
    root.mkdir(parents=True, exist_ok=True)
    coco = {"annotations": [{"image_id": i, "caption": c} for i, caps in COCO.items() for c in caps]}
    (root / "captions_val2014.json").write_text(json.dumps(coco))
    if layout == "original":
        anns, foil_id = [], 100
        for k, (image_id, original, foils) in enumerate(FOIL):
            anns.append(
                {
                    "image_id": image_id,
                    "id": k,
                    "caption": original,
                    "foil": False,
                    "target_word": "ORIG",
                    "foil_word": "ORIG",
                    "foil_id": foil_id,
                }
            )
            for foil, target, word in foils:
                foil_id += 1
                anns.append(
                    {
                        "image_id": image_id,
                        "id": k,
                        "caption": foil,
                        "foil": True,
                        "target_word": target,
                        "foil_word": word,
                        "foil_id": foil_id,
                    }
                )
        (root / "foilv1.0_test_2017.json").write_text(json.dumps({"annotations": anns}))
        return
    samples = []
    for n, (image_id, original, foils) in enumerate(FOIL):
        for m, (foil, _target, _word) in enumerate(foils):
            label = (n + m) % 2  # the correct caption on either side
            captions = [original, foil] if label == 0 else [foil, original]
            sample = {"image": f"val2014/COCO_val2014_{image_id:012d}.jpg", "captions": captions, "label": label}
            if references:
                sample["references"] = [c for c in COCO[image_id] if c != original]
            samples.append(sample)
    (root / "foil.json").write_text(json.dumps({"FOIL": samples}))


@pytest.mark.parametrize("references_in_json", [True, False])
def test_foil_layouts_give_the_same_rows(tmp_path, references_in_json):
    write_foil(tmp_path / "orig", "original")
    write_foil(tmp_path / "json", "json", references=references_in_json)
    if not references_in_json:  # then they come from captions_val2014.json, as in the original layout
        assert "references" not in json.loads((tmp_path / "json" / "foil.json").read_text())["FOIL"][0]
    original = load("foil", tmp_path / "orig", tmp_path)["test"]
    from_json = load("foil", tmp_path / "json", tmp_path)["test"]
    same_rows(original, from_json)
    assert from_json["foil_word"] == ["cat", "snow", "dog"] and from_json["target_word"] == [
        "dog",
        "grass",
        "teddy bear",
    ]
    assert from_json[2]["references"] == ["A toy on a blanket", "Bedroom"]


# --- a folder holding none of the layouts -------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, needs",
    [
        (
            "pascal50s",
            ["`pair_pascal.mat` + `consensus_pascal.mat`", "`pascal_50s.json`", "pyCIDErConsensus", "Yebin46/FLEUR"],
        ),
        (
            "flickr8k_expert",
            ["`ExpertAnnotations.txt` + `Flickr8k.token.txt`", "`flickr8k.json`", "aimagelab/pacscore"],
        ),
        ("flickr8k_cf", ["`CrowdFlowerAnnotations.txt` + `Flickr8k.token.txt`", "`crowdflower_flickr8k.json`"]),
        ("composite", ["`8k_correctness.csv` or `30k_correctness.csv` or `coco_correctness.csv`", "`composite.json`"]),
        ("foil", ["`foilv1.0_test_2017.json`", "`foil.json`", "foilunitn.github.io"]),
    ],
)
def test_a_folder_with_no_layout_is_one_line_naming_each_layout(tmp_path, name, needs):
    (tmp_path / "stray.txt").write_text("not a benchmark file")
    with pytest.raises(DataError) as info:
        load(name, tmp_path, tmp_path)
    message = str(info.value)
    assert "\n" not in message and "holds none of its layouts" in message and str(tmp_path) in message
    assert "the original release needs" in message and "the json layout needs" in message
    for text in needs:
        assert text in message, text


def test_the_users_report_now_loads_and_the_cli_error_is_one_line(tmp_path, capsys):
    """Issue 22: `pascal_50s.json` alone in a folder loads; an empty folder is one line from the CLI."""
    from mmjudge.cli import main

    write_pascal_layout(tmp_path / "D", "json")
    ds = md.load_dataset(
        "pascal50s", data_dir=str(tmp_path / "D"), cache_dir=str(tmp_path / "c"), expected_counts=SMALL_PASCAL
    )
    assert ds["test"].num_rows == 5
    (tmp_path / "empty").mkdir()
    capsys.readouterr()  # the build's progress bars
    code = main(
        ["dataset", "info", "pascal50s", "--data-dir", str(tmp_path / "empty"), "--cache-dir", str(tmp_path / "c")]
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "pascal_50s.json" in err[0] and "pair_pascal.mat" in err[0]
