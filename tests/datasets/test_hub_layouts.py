"""The Hub Parquet copies of the caption benchmarks load with the same rows and ids as the layouts already
read, and the two Hub-only benchmarks (Nebula, with its published test-score correction, and Polaris) load.

Fixtures are ours (synthetic captions, tiny PNGs), written in the columns the code that reads these copies uses
(CaptionEvalKit's ``capevalkit/infrastructure/benchmarks/legacy.py``): ``imgid``/``file_name``, ``img``/``image``
(``{bytes, path}``), ``cand``/``mt``, ``refs`` (a list or its Python literal), ``human_score``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import mmjudge.datasets as md  # noqa: E402
from benchmark_releases import flickr8k_json, load, same_rows  # noqa: E402
from mmjudge.datasets._base import DataError  # noqa: E402


def png_bytes(color=(10, 120, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buffer, format="PNG")
    return buffer.getvalue()


def write_parquet(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


# --- Flickr8k-EX / CF: yuwd/Flickr8k-HumanEval, configurations expert and crowdflower ----------------------
def flickr8k_hub_rows(judged, refs, literal_refs=False):
    """One row per judgment (as the JSON layout lists them), images inside."""
    return [
        {
            "imgid": image[:-4],  # a bare id: the reader adds .jpg
            "img": {"bytes": png_bytes(), "path": image},
            "cand": caption,
            "refs": repr(refs[image]) if literal_refs else refs[image],
            "human_score": rating,
        }
        for image, caption, ratings in judged
        for rating in ratings
    ]


def test_flickr8k_expert_parquet_gives_the_json_layouts_rows_and_ids(f8k_dir, tmp_path):
    counts = {"test": 2, "judgments": 6}
    refs = {"a.jpg": ["A dog runs .", "A brown  dog ."], "b.jpg": ["A cat sits .", "Two cats ."]}
    judged = [("a.jpg", "A cat sits .", [1, 2, 1]), ("b.jpg", "A brown dog .", [4, 3, 4])]
    original = load("flickr8k_expert", f8k_dir, tmp_path, expected_counts=counts)["test"]
    hub = tmp_path / "hub"
    write_parquet(hub / "expert" / "test-00000-of-00001.parquet", flickr8k_hub_rows(judged, refs, literal_refs=True))
    # The other configuration in the same snapshot must not be read as expert judgments.
    write_parquet(hub / "crowdflower" / "test-00000-of-00001.parquet", flickr8k_hub_rows(judged, refs)[:1])
    from_hub = load("flickr8k_expert", hub, tmp_path, expected_counts=counts)["test"]
    same_rows(original, from_hub)
    assert from_hub["ratings"] == [[1, 2, 1], [4, 3, 4]] and from_hub[0]["references"] == [
        "A dog runs .",
        "A brown dog .",
    ]
    assert from_hub[0]["image"].size == (8, 6)  # the embedded image, decoded by datasets
    hj = md.human_judgments("flickr8k_expert", from_hub)
    assert len(hj.ratings) == 6 and hj.correlation == "tau_c"


def test_flickr8k_cf_parquet_gives_the_json_layouts_rows_and_ids(f8k_dir, tmp_path):
    refs = {"a.jpg": ["A brown  dog ."], "b.jpg": ["A cat sits .", "Two cats ."]}
    judged = [("a.jpg", "A cat sits .", [0.0]), ("a.jpg", "A dog runs .", [1.0]), ("b.jpg", "A brown  dog .", [0.25])]
    flickr8k_json(tmp_path / "json", judged, refs, "crowdflower_flickr8k.json")
    from_json = load("flickr8k_cf", tmp_path / "json", tmp_path)["test"]
    write_parquet(tmp_path / "hub" / "crowdflower-test.parquet", flickr8k_hub_rows(judged, refs))
    from_hub = load("flickr8k_cf", tmp_path / "hub", tmp_path)["test"]
    same_rows(from_json, from_hub)
    assert from_hub["score"] == [0.0, 1.0, 0.25]


# --- Composite: yuwd/Composite ---------------------------------------------------------------------------
COMPOSITE = [  # (subset, image, caption, rating); the flickr8k image has 3 judged captions, coco 2, flickr30k 1
    ("flickr8k", "1000268201_693b08cb0e.jpg", "a girl climbs stairs", 4),
    ("flickr8k", "1000268201_693b08cb0e.jpg", "a dog sleeps on a mat", 1),
    ("coco", "COCO_val2014_000000000042.jpg", "two zebras graze", 5),
    ("flickr8k", "1000268201_693b08cb0e.jpg", "a child in a pink dress", 3),
    ("flickr30k", "36979.jpg", "people at a market", 2),
    ("coco", "COCO_val2014_000000000042.jpg", "a red bus", 1),
]


def test_composite_parquet_gives_the_json_layouts_rows_and_ids(tmp_path):
    import json

    folder = {"flickr8k": "Flickr8k_Dataset", "flickr30k": "flickr30k_images", "coco": "val2014"}
    data: dict = {}
    for subset, image, caption, rating in COMPOSITE:
        data.setdefault(subset, []).append({"image": f"{folder[subset]}/{image}", "caption": caption, "human": rating})
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "composite.json").write_text(json.dumps(data))
    from_json = load("composite", tmp_path / "json", tmp_path)["test"]
    hub_rows = [
        {
            "imgid": image,
            "img": {"bytes": png_bytes(), "path": image},
            "cand": caption,
            "refs": ["ignored"],
            "human_score": r,
        }
        for _, image, caption, r in COMPOSITE
    ]
    write_parquet(tmp_path / "hub" / "data" / "test-00000-of-00001.parquet", hub_rows)
    from_hub = load("composite", tmp_path / "hub", tmp_path)["test"]
    same_rows(from_json, from_hub)
    assert from_hub["subset"] == ["flickr8k"] * 3 + ["flickr30k"] + ["coco"] * 2  # the other layouts' order
    assert from_hub[0]["references"] == ["a dog sleeps on a mat", "a child in a pink dress"]  # not the file's refs


def test_composite_parquet_with_an_image_of_no_known_subset_is_one_line(tmp_path):
    row = {
        "imgid": "photo.jpg",
        "img": {"bytes": png_bytes(), "path": "photo.jpg"},
        "cand": "x",
        "refs": [],
        "human_score": 3,
    }
    write_parquet(tmp_path / "hub" / "test.parquet", [row])
    with pytest.raises(DataError, match="cannot tell the Composite subset of image 'photo.jpg'"):
        load("composite", tmp_path / "hub", tmp_path)


# --- Nebula (Ka2ukiMatsuda/Nebula) with Spica's correction, and Polaris (yuwd/Polaris) ----------------------
def nebula_rows(split: str) -> list[dict]:
    return [
        {
            "file_name": f"{split}_{k}.jpg",
            "image": {"bytes": png_bytes((k * 40, 0, 0)), "path": f"{split}_{k}.jpg"},
            "refs": [f"a scene number {k}", "a photo"],
            "mt": f"a  caption {k}",
            "human_score": k / 4,
        }
        for k in range(3)
    ]


def write_nebula(root: Path, spica: bool = True) -> None:
    for split in ("train", "test"):
        write_parquet(root / "data" / f"{split}-00000-of-00001.parquet", nebula_rows(split))
    if spica:
        (root / "spica").mkdir(parents=True)
        # test_1 is corrected by two rows (mean 0.9); test_0's caption differs in case: not the same key; a train
        # row of Spica for a train image changes nothing (only the test split is corrected).
        (root / "spica" / "spica_test.csv").write_text(
            "imgid,mt,score\ntest_1.jpg,a caption 1,0.8\ntest_0,A caption 0,0.0\n"
        )
        (root / "spica" / "spica_val.csv").write_text("imgid,mt,score\ntest_1,a caption   1,1.0\n")
        (root / "spica" / "spica_train.csv").write_text("imgid,mt,score\ntrain_2,a caption 2,0.0\n")


def test_nebula_test_scores_take_spicas_mean_and_nothing_else_changes(tmp_path):
    write_nebula(tmp_path / "nebula")
    ds = load("nebula", tmp_path / "nebula", tmp_path)
    test, train = ds["test"], ds["train"]
    assert test["nebula_score"] == [0.0, 0.25, 0.5] and test["score"] == pytest.approx([0.0, 0.9, 0.5])
    assert test["corrected"] == [False, True, False]
    assert train["score"] == train["nebula_score"] == [0.0, 0.25, 0.5]  # train is never corrected
    assert test[0]["text"] == "a caption 0" and test[0]["references"] == ["a scene number 0", "a photo"]
    uncorrected = load("nebula", tmp_path / "nebula", tmp_path / "again", spica=False)["test"]
    assert uncorrected["score"] == [0.0, 0.25, 0.5] and uncorrected["id"] == test["id"]  # same ids either way
    hj = md.human_judgments("nebula", test)
    assert hj.correlation == "tau_c" and [r["score"] for r in hj.ratings] == pytest.approx([0.0, 0.9, 0.5])


def test_nebula_without_spica_warns_or_refuses_when_required(tmp_path, caplog):
    write_nebula(tmp_path / "nebula", spica=False)
    assert load("nebula", tmp_path / "nebula", tmp_path)["test"]["corrected"] == [False] * 3
    assert "no Spica CSVs" in caplog.text
    with pytest.raises(DataError, match="spica=True, but none of spica_train.csv"):
        load("nebula", tmp_path / "nebula", tmp_path / "c2", spica=True)


def test_polaris_loads_per_split_with_stable_ids(tmp_path):
    rows = [
        {"refs": ["a dog", "a puppy"], "cand": "a dog runs", "img": {"bytes": png_bytes(), "path": "p1.jpg"}},
        {"refs": ["a cat"], "cand": "a cat", "img": {"bytes": png_bytes(), "path": "p2.jpg"}},
    ]
    write_parquet(
        tmp_path / "polaris" / "test" / "0000.parquet", [{**r, "human_score": 0.25 * k} for k, r in enumerate(rows)]
    )
    # A copy whose references are the list's Python literal (CaptionEvalKit reads both).
    write_parquet(
        tmp_path / "polaris" / "validation" / "0000.parquet", [{**rows[0], "refs": "['a dog']", "human_score": 1.0}]
    )
    ds = load("polaris", tmp_path / "polaris", tmp_path)
    assert sorted(ds) == ["test", "validation"] and ds["test"]["image_path"] == ["p1.jpg", "p2.jpg"]
    assert ds["test"]["score"] == [0.0, 0.25] and ds["validation"][0]["references"] == ["a dog"]
    assert ds["test"][0]["image"].size == (8, 6)
    again = load("polaris", tmp_path / "polaris", tmp_path / "other")["test"]
    assert again["id"] == ds["test"]["id"] and len(set(again["id"])) == 2
    assert ds["validation"]["id"][0] != ds["test"]["id"][0]  # ids name the split
