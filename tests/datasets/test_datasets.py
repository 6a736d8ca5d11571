"""The benchmark builders on fixtures written here in each upstream layout (a few instances, PIL images)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

import mmjudge.datasets as md
from benchmark_releases import CRITERIA, SMALL_MMHE, load, mmhe_instance, same_rows
from mmjudge.datasets._base import DataError
from repo_paths import ROOT

CRITERIA_IN_THE_PAPER = CRITERIA  # HarmonicEval, in its order


# --- MMHE ------------------------------------------------------------------------------------------
def test_mmhe_rows_and_judgments(mmhe_dir, tmp_path):
    ds = load("mmhe", mmhe_dir, tmp_path, expected_counts=SMALL_MMHE)["test"]
    assert ds.num_rows == 24 and len(set(ds["id"])) == 24
    row = ds[0]
    assert row["id"] == "mmhe-reg-0-0" and row["box"] == [1.0, 2.0, 3.0, 4.0]
    assert row["correctness"] == [1, 2, 5] and row["chosen_by"] == [False, False, True]
    assert row["image"].size == (8, 6)
    hj = md.human_judgments("mmhe", ds)
    assert len(hj.items) == 24 and len(hj.ratings) == 24 * 5 * 3
    assert len(hj.choices) == 8 * 3  # instances x annotators
    first = hj.choices[0]
    assert first["candidates"] == ["mmhe-reg-0-0", "mmhe-reg-0-1", "mmhe-reg-0-2"]
    assert [c["best"] for c in hj.choices[:3]] == ["mmhe-reg-0-2", "mmhe-reg-0-2", "mmhe-reg-0-0"]
    assert {i["task"] for i in hj.items} == {"reg", "vqa", "vdu", "ic"}


def test_mmhe_criteria_and_tasks_follow_the_prompt_set():
    # Criteria are read from the HarmonicEval prompt set, not typed again; the file's task names map onto
    # the prompt set's tasks, so a renamed criterion or task shows up here rather than as a KeyError later.
    from mmjudge.datasets import _sources as src
    from mmjudge.datasets.mmhe import CRITERIA, MMHE
    from mmjudge.prompts import load_prompt_set

    prompts = load_prompt_set("harmonic_eval")
    assert CRITERIA == prompts.criteria == CRITERIA_IN_THE_PAPER
    assert sorted(src.MMHE_TASKS.values()) == sorted(prompts.tasks)
    assert all(c in MMHE.FEATURES for c in CRITERIA)


def test_mmhe_default_counts_reject_small_release(mmhe_dir, tmp_path):
    with pytest.raises(DataError, match="REG instances: expected 100, but read 2"):
        load("mmhe", mmhe_dir, tmp_path)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda d: d[0]["candidates"].pop(), "expected 3 candidates"),
        (lambda d: d[0]["candidates"][1]["ratings"].__setitem__("clarity", [1, 6, 2]), "clarity ratings in 1-5"),
        (lambda d: d[0].__setitem__("best", [0, 3, 1]), "candidate indices 0-2"),
        (lambda d: d.append(mmhe_instance("VQA", 0)), "duplicate id"),
    ],
)
def test_mmhe_validation_errors(mmhe_dir, tmp_path, corrupt, message):
    data = json.loads((mmhe_dir / "mmhe.json").read_text())
    corrupt(data)
    (mmhe_dir / "mmhe.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=message):
        load("mmhe", mmhe_dir, tmp_path, expected_counts={})


def test_truncated_or_broken_files_fail(mmhe_dir, tmp_path):
    text = (mmhe_dir / "mmhe.json").read_text()
    (mmhe_dir / "mmhe.json").write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match="not valid JSON"):
        load("mmhe", mmhe_dir, tmp_path, expected_counts={})
    (mmhe_dir / "mmhe.json").write_text(text)
    (mmhe_dir / "images" / "a.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(DataError, match="cannot be decoded"):
        load("mmhe", mmhe_dir, tmp_path, expected_counts={})


# --- LongCap-Arena -----------------------------------------------------------------------------------
def longcap_rows(prefix="dci_val", n=3, drop=None):
    """Our content, one table per criterion: ``{short: [row]}`` with the Parquet layout's columns. Texts carry
    what a CSV must quote (commas, double quotes, an apostrophe, a line break)."""
    buf = io.BytesIO()
    Image.new("RGB", (5, 5), (0, 90, 0)).save(buf, format="PNG")
    return {
        short: [
            {
                "file_name": f"img{i}.jpg",
                "image": {"bytes": buf.getvalue(), "path": f"img{i}.jpg"},
                "refs": [f"long reference {i}, with a comma", f'it\'s the "second" one of {prefix}'],
                "cand": f"candidate {i} of {prefix}" + (', "quoted",\nand on a second line' if i == 1 else ""),
                "score": base + i + 0.25,
            }
            for i in range(n)
            if not (drop == short and i == 0)
        ]
        for short, base in (("desc", 1.0), ("rel", 2.0), ("flu", 3.0))
    }


def write_longcap(root: Path, prefix="dci_val", n=3, drop=None, readme_counts=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    for short, rows in longcap_rows(prefix, n, drop).items():
        pq.write_table(pa.Table.from_pylist(rows), root / f"{prefix}.{short}-00000-of-00001.parquet")
    if readme_counts:
        yaml = "".join(f"  - name: {k}\n    num_bytes: 10\n    num_examples: {v}\n" for k, v in readme_counts.items())
        (root / "README.md").write_text(f"---\ndataset_info:\n  splits:\n{yaml}---\n")


def write_longcap_csv(root: Path, prefix="dci_val", n=3, images=True):
    """The same content in the authors' CSV layout, where CaptionEvalKit finds it: ``<root>/test/desc_dci_val.csv``
    (``imgid``, ``mt``, ``refs`` as a Python list literal, ``score``), images in ``<root>/images/``; one image id
    bare (``img2``: the reader finds ``img2.jpg``)."""
    import csv

    (root / "test").mkdir(parents=True, exist_ok=True)
    for short, rows in longcap_rows(prefix, n).items():
        with (root / "test" / f"{short}_{prefix}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["imgid", "mt", "refs", "score"])
            for row in rows:
                imgid = row["file_name"].removesuffix(".jpg") if row["file_name"] == "img2.jpg" else row["file_name"]
                writer.writerow([imgid, row["cand"], repr(row["refs"]), repr(row["score"])])
        if images:
            for row in rows:
                (root / "images").mkdir(exist_ok=True)
                (root / "images" / row["file_name"]).write_bytes(row["image"]["bytes"])


def test_longcap_joins_three_criteria(tmp_path):
    write_longcap(tmp_path / "lc")
    write_longcap(tmp_path / "lc", prefix="dci_test", n=2)
    ds = load("longcap_arena", tmp_path / "lc", tmp_path)
    assert set(ds) == {"testA", "testB"} and ds["testA"].num_rows == 3 and ds["testB"].num_rows == 2
    row = ds["testA"][1]
    assert (row["descriptiveness"], row["relevance"], row["fluency"]) == (2.25, 3.25, 4.25)
    assert row["references"] == ["long reference 1, with a comma", 'it\'s the "second" one of dci_val']
    assert row["image"].size == (5, 5)
    hj = md.human_judgments("longcap_arena", ds)
    assert len(hj.items) == 5 and len(hj.ratings) == 15 and hj.criteria == ["descriptiveness", "relevance", "fluency"]


def test_longcap_missing_candidate_in_one_criterion_fails(tmp_path):
    write_longcap(tmp_path / "lc", drop="rel")
    with pytest.raises(DataError, match="descriptiveness and relevance disagree on 1"):
        load("longcap_arena", tmp_path / "lc", tmp_path)


def test_longcap_csv_layout_gives_the_parquet_layouts_rows_and_ids(tmp_path):
    """The authors' CSV files (what CaptionEvalKit reads locally) and the Hub Parquet files, written from the same
    content, load to the same rows: ids, references, candidates, the three scores, TestA = dci_val and
    TestB = dci_test, and the images."""
    for prefix, n in (("dci_val", 3), ("dci_test", 2)):
        write_longcap(tmp_path / "parquet", prefix=prefix, n=n)
        write_longcap_csv(tmp_path / "csv" / "longcaparena", prefix=prefix, n=n)
    from_parquet = load("longcap_arena", tmp_path / "parquet", tmp_path)
    from_csv = load("longcap_arena", tmp_path / "csv", tmp_path)
    assert set(from_csv) == set(from_parquet) == {"testA", "testB"}
    for split in ("testA", "testB"):
        same_rows(from_parquet[split], from_csv[split])
        assert [r.size for r in from_csv[split]["image"]] == [r.size for r in from_parquet[split]["image"]]
    row = from_csv["testA"][1]
    assert row["text"] == 'candidate 1 of dci_val, "quoted",\nand on a second line'
    assert row["references"] == ["long reference 1, with a comma", 'it\'s the "second" one of dci_val']
    assert (row["descriptiveness"], row["relevance"], row["fluency"]) == (2.25, 3.25, 4.25)
    assert from_csv["testA"]["image_name"] == ["img0.jpg", "img1.jpg", "img2.jpg"]  # img2 was a bare id
    assert from_csv["testB"][0]["text"] == "candidate 0 of dci_test"
    hj = md.human_judgments("longcap_arena", from_csv)
    assert len(hj.items) == 5 and len(hj.ratings) == 15


def test_longcap_layout_is_chosen_or_named(tmp_path):
    write_longcap(tmp_path / "both")
    write_longcap_csv(tmp_path / "both", n=2)
    assert load("longcap_arena", tmp_path / "both", tmp_path)["testA"].num_rows == 3  # the Parquet files first
    assert load("longcap_arena", tmp_path / "both", tmp_path, layout="csv")["testA"].num_rows == 2
    with pytest.raises(DataError, match=r"`layout` to be one of \['parquet', 'csv'\] for LongCap-Arena"):
        load("longcap_arena", tmp_path / "both", tmp_path, layout="json")
    with pytest.raises(DataError, match=r"the csv layout needs `desc_dci_val.csv` or"):
        load("longcap_arena", (tmp_path / "nothing-here").mkdir() or tmp_path / "nothing-here", tmp_path)


def test_longcap_csv_without_images_and_with_bad_cells(tmp_path):
    write_longcap_csv(tmp_path / "lc", images=False)
    ds = load("longcap_arena", tmp_path / "lc", tmp_path)["testA"]
    assert ds["image"] == [None, None, None] and ds["image_name"] == ["img0.jpg", "img1.jpg", "img2.jpg"]
    path = tmp_path / "lc" / "test" / "rel_dci_val.csv"
    path.write_text(path.read_text().replace("['long reference 0", "__import__('os')#['long reference 0", 1))
    with pytest.raises(DataError, match=r"rel_dci_val.csv:2: references .*are not a list of strings"):
        load("longcap_arena", tmp_path / "lc", tmp_path / "again")


def test_longcap_row_count_checked_against_hub_metadata(tmp_path):
    write_longcap(tmp_path / "lc", readme_counts={"dci_val.desc": 4})
    with pytest.raises(DataError, match=r"dci_val.desc rows \(Hub metadata\): expected 4, but read 3"):
        load("longcap_arena", tmp_path / "lc", tmp_path)


# --- Flickr8k --------------------------------------------------------------------------------------
def expert_json(root: Path) -> None:
    """The CLIPScore-style flickr8k.json written from the same judgments."""

    def entry(img, refs, cap, ratings):
        return {
            "image_path": f"Flicker8k_Dataset/{img}",
            "ground_truth": refs,
            "human_judgement": [
                {"image_id": img[:-4], "image_path": f"Flicker8k_Dataset/{img}", "caption": cap, "rating": r}
                for r in ratings
            ],
        }

    data = {
        "a": entry("a.jpg", ["A dog runs .", "A brown  dog ."], "A cat sits .", [1, 2, 1]),
        "b": entry("b.jpg", ["A cat sits .", "Two cats ."], "A brown dog .", [4, 3, 4]),
    }
    (root / "flickr8k.json").write_text(json.dumps(data))


def test_flickr8k_expert_both_layouts_agree(f8k_dir, tmp_path):
    counts = {"test": 2, "judgments": 6}
    original = load("flickr8k_expert", f8k_dir, tmp_path, expected_counts=counts)["test"]
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    expert_json(json_dir)
    from_json = load("flickr8k_expert", json_dir, tmp_path, expected_counts=counts)["test"]
    drop = ["image"]
    assert original.remove_columns(drop).to_list() == from_json.remove_columns(drop).to_list()
    assert original[0]["ratings"] == [1.0, 2.0, 1.0] and original[1]["references"] == ["A cat sits .", "Two cats ."]
    assert original[0]["image"] is not None and from_json[0]["image"] is None  # no image folder there
    hj = md.human_judgments("flickr8k_expert", original)
    assert len(hj.ratings) == 6 and hj.correlation == "tau_c"
    assert [r["score"] for r in hj.ratings[:3]] == [1.0, 2.0, 1.0]
    with pytest.raises(DataError, match="judgments: expected 16992, but read 6"):
        load("flickr8k_expert", f8k_dir, tmp_path, expected_counts={"judgments": 16992})


def test_flickr8k_cf_reads_shares_and_removes_judged_refs(f8k_dir, tmp_path):
    ds = load("flickr8k_cf", f8k_dir, tmp_path)["test"]
    assert ds["score"] == [0.0, 1.0, 0.25]
    assert ds[0]["references"] == ["A brown dog ."]  # a.jpg's judged own caption removed
    (f8k_dir / "CrowdFlowerAnnotations.txt").write_text("a.jpg\tb.jpg#0\t0.5\t0\t3\n")
    with pytest.raises(DataError, match="disagrees with 0 yes / 3 no"):
        load("flickr8k_cf", f8k_dir, tmp_path, download_mode="force_redownload")


def test_flickr8k_incomplete_image_folder_fails(f8k_dir, tmp_path):
    (f8k_dir / "Flicker8k_Dataset" / "b.jpg").unlink()
    with pytest.raises(DataError, match="missing"):
        load("flickr8k_expert", f8k_dir, tmp_path, expected_counts={})


# --- Composite, THumB, Pascal-50S, FOIL --------------------------------------------------------------
def test_composite(tmp_path):
    root = tmp_path / "comp"
    root.mkdir()
    header = (
        "Input.image_url;Input.text1;Input.text2;Input.text3;Answer.Q1Answer;Answer.Q2Answer;Answer.Q3Answer;Other\n"
    )
    (root / "8k_correctness.csv").write_text(
        header + "http://x/a.jpg;one;two;three;5;1;3;z\nhttp://x/b.jpg;x;y;z;;2;2;z\n"
    )
    ds = load("composite", root, tmp_path)["test"]
    assert ds["score"] == [5.0, 1.0, 3.0] and ds[1]["references"] == ["one", "three"]  # empty row dropped
    assert md.human_judgments("composite", ds).ratings[0]["score"] == 5.0
    (root / "8k_correctness.csv").write_text(header + "http://x/a.jpg;one;two;three;5;9;3;z\n")
    with pytest.raises(DataError, match=r"in \[1, 5\], but got '9'"):
        load("composite", root, tmp_path, download_mode="force_redownload")


def test_thumb(tmp_path):
    root = tmp_path / "thumb"
    root.mkdir()
    lines = [
        {
            "seg_id": s,
            "set_id": s,
            "SYS": sys,
            "hyp": f"{sys} caption {s}",
            "image": f"COCO_{s}.jpg",
            "P": 4,
            "R": 3,
            "Flu": -0.5,
            "Con": 0,
            "Inc": 0,
            "human_score": 3.0,
        }
        for sys in ("up", "human")
        for s in (1, 2)
    ]
    (root / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "mscoco_references.jsonl").write_text(
        "".join(json.dumps({"seg_id": s, "refs": [f"ref {s}"]}) + "\n" for s in (1, 2))
    )
    ds = load("thumb", root, tmp_path, expected_counts={"per_system": 2})["test"]
    assert ds.num_rows == 4 and ds[0]["total"] == 3.0 and ds[0]["references"] == ["ref 1"]
    hj = md.human_judgments("thumb", ds)
    assert {r["criterion"] for r in hj.ratings} == {
        "precision",
        "recall",
        "fluency",
        "conciseness",
        "inclusive",
        "overall",
    }
    with pytest.raises(DataError, match="rows of system 'up': expected 500, but read 2"):
        load("thumb", root, tmp_path)
    lines[0]["human_score"] = 4.0
    (root / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DataError, match=r"human_score 4.0 != \(P\+R\)/2"):
        load("thumb", root, tmp_path, expected_counts={}, download_mode="force_redownload")


def write_pascal(root: Path, flip_vote=False):
    from scipy.io import savemat

    root.mkdir(parents=True, exist_ok=True)
    pairs = [("p0.jpg", "a man rides", "a dog sits"), ("p1.jpg", "two birds", "a red car")]
    new_input = np.empty((1, 2), dtype=object)
    for i, p in enumerate(pairs):
        cell = np.empty((1, 3), dtype=object)
        cell[0, :] = [np.array([s]) for s in p]
        new_input[0, i] = cell
    triplets = np.empty((1, 8), dtype=object)
    for j in range(8):
        _img, a, b = pairs[j // 4]
        winner = 1 if j % 4 < 3 else 2  # A gets 3 of 4 votes
        cell = np.empty((1, 4), dtype=object)
        cell[0, :] = [
            np.array([f"ref {j}"]),
            np.array([a if not flip_vote else "stray"]),
            np.array([b]),
            np.array([[winner]]),
        ]
        triplets[0, j] = cell
    savemat(root / "pair_pascal.mat", {"new_input": new_input, "category": np.array([[1, 3]])})
    savemat(root / "consensus_pascal.mat", {"triplets": triplets})


def test_pascal50s(tmp_path):
    write_pascal(tmp_path / "pas")
    small = {"test": 2, "votes_per_pair": 4, "per_category": None}
    ds = load("pascal50s", tmp_path / "pas", tmp_path, expected_counts=small)["test"]
    assert ds["category"] == ["HC", "HM"] and ds["votes_a"] == [3, 3] and ds["votes_b"] == [1, 1]
    assert ds[1]["references"] == ["ref 4", "ref 5", "ref 6", "ref 7"]
    assert ds["label"] == [0, 0] and ds[0]["id"].startswith("pascal50s-hc-") and ds[1]["id"].startswith("pascal50s-hm-")
    hj = md.human_judgments("pascal50s", ds)
    # The pair follows `label` (the vote share is in the rows, not the pair: pascal_50s.json has no votes).
    assert hj.pairs[0] == {
        "task": "ic",
        "better": f"{ds[0]['id']}-a",
        "worse": f"{ds[0]['id']}-b",
        "kind": "pascal50s",
        "category": "HC",
    }
    with pytest.raises(DataError, match="HC pairs: expected 1000, but read 1"):
        load("pascal50s", tmp_path / "pas", tmp_path, expected_counts={"votes_per_pair": 4, "per_category": 1000})
    write_pascal(tmp_path / "bad", flip_vote=True)
    with pytest.raises(DataError, match="not a caption of pair 0"):
        load("pascal50s", tmp_path / "bad", tmp_path, expected_counts=small)


def test_foil(tmp_path):
    root = tmp_path / "foil"
    root.mkdir()
    anns = [
        {
            "image_id": 7,
            "id": 1,
            "caption": "A dog on grass",
            "foil": False,
            "foil_word": "ORIG",
            "target_word": "ORIG",
            "foil_id": 10,
        },
        {
            "image_id": 7,
            "id": 1,
            "caption": "A cat on grass",
            "foil": True,
            "foil_word": "cat",
            "target_word": "dog",
            "foil_id": 11,
        },
    ]
    (root / "foilv1.0_test_2017.json").write_text(json.dumps({"annotations": anns}))
    coco = {"annotations": [{"image_id": 7, "caption": c} for c in ("A dog on grass", "A puppy outside")]}
    (root / "captions_val2014.json").write_text(json.dumps(coco))
    ds = load("foil", root, tmp_path)["test"]
    assert ds.num_rows == 1 and ds[0]["references"] == ["A puppy outside"] and ds[0]["foil_word"] == "cat"
    hj = md.human_judgments("foil", ds)
    row_id = ds[0]["id"]
    assert row_id.startswith("foil-") and hj.pairs == [
        {"task": "ic", "better": f"{row_id}-orig", "worse": f"{row_id}-foil", "kind": "foil", "weight": 1.0}
    ]
    (root / "foilv1.0_test_2017.json").write_text(json.dumps({"annotations": anns[1:]}))
    with pytest.raises(DataError, match="has no original caption"):
        load("foil", root, tmp_path, download_mode="force_redownload")


# --- export, registry, CLI ------------------------------------------------------------------------------
def test_parquet_export_round_trip(mmhe_dir, tmp_path):
    ds = load("mmhe", mmhe_dir, tmp_path, expected_counts=SMALL_MMHE)
    out = md.export_to_parquet("mmhe", tmp_path / "export", dataset=ds)
    files = sorted(str(p) for p in (out / "data").glob("*.parquet"))
    back = datasets.load_dataset("parquet", data_files={"test": files}, cache_dir=str(tmp_path / "c2"))["test"]
    # Exports follow the datasets convention for categorical columns: `task` becomes a ClassLabel.
    assert isinstance(back.features["task"], datasets.ClassLabel)
    names = back.features["task"].names
    decoded = back.map(lambda row: {"task": names[row["task"]]}, features=ds["test"].features)
    assert decoded.features == ds["test"].features
    assert decoded.remove_columns("image").to_list() == ds["test"].remove_columns("image").to_list()
    assert back[0]["image"].size == (8, 6)  # bytes embedded, the export is self-contained
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "path: data/test-*" in card and "| test | 24 |" in card
    again = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "c3"))  # the card's configs resolve
    assert again["test"].num_rows == 24


def test_unknown_names_defer_to_datasets(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    ds = md.load_dataset("csv", data_files=str(tmp_path / "x.csv"), split="train", cache_dir=str(tmp_path / "c"))
    assert ds.to_list() == [{"a": 1, "b": 2}]
    with pytest.raises(ValueError, match="Did you mean 'pascal50s'"):
        md.human_judgments("pascal50", dataset=[])


def test_missing_data_dir_explains(tmp_path):
    with pytest.raises(DataError, match="no verified public download: pass data_dir"):
        md.load_dataset("pascal50s", cache_dir=str(tmp_path))
    with pytest.raises(DataError, match="existing folder"):
        md.load_dataset("pascal50s", data_dir=str(tmp_path / "nope"), cache_dir=str(tmp_path))


def test_cli_export_and_committed_cards_are_current(mmhe_dir, tmp_path, capsys):
    from mmjudge.cli import main

    counts = json.dumps(SMALL_MMHE)
    assert (
        main(
            [
                "dataset",
                "export",
                "mmhe",
                "--data-dir",
                str(mmhe_dir),
                "--cache-dir",
                str(tmp_path / "c"),
                "--out",
                str(tmp_path / "o"),
                "--expected-counts",
                counts,
            ]
        )
        == 0
    )
    assert (tmp_path / "o" / "data" / "test-00000-of-00001.parquet").is_file()
    assert (
        main(
            [
                "dataset",
                "info",
                "mmhe",
                "--data-dir",
                str(mmhe_dir),
                "--cache-dir",
                str(tmp_path / "c"),
                "--expected-counts",
                counts,
            ]
        )
        == 0
    )
    assert "ratings: 360  choices: 24" in capsys.readouterr().out
    repo = ROOT
    for name in md.available_datasets():
        assert (repo / "datasets_scripts" / name / "README.md").read_text() == md.card(name), name
