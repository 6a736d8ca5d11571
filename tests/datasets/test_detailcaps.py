"""DetailCaps-4870 from a Parquet file in the upstream columns (our content: synthetic captions, tiny PNGs):
one row per scored (image, candidate), the three references, GPT-4's scores from the GPT4_Eval JSON."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import mmjudge.datasets as md  # noqa: E402
from benchmark_releases import load  # noqa: E402
from mmjudge.datasets._base import DataError  # noqa: E402


def png(color) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buffer, format="PNG")
    return buffer.getvalue()


def upstream_row(image: str, color, scores, **override) -> dict:
    row = {
        "image": image,
        "source": "COCO",
        "binary": png(color),
        "GT_Caption_GPT4O": f"A detailed scene of {image} with a red car.",
        "GT_Caption_GPT4V": "A red car is parked  near a tall building.",
        "GT_Caption_Gemini15Pro": "The image shows a car and a building.",
        "CogVLM": "A red car near a building.",
        "ShareCaptioner": "A car parked on a street under a blue sky.",
        "LLaVA_v15": "A vehicle.",
        "GPT4_Eval": None if scores is None else json.dumps(scores),
    }
    return {**row, **override}


def write(root, rows):
    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "DetailCaps-4870.parquet")


def test_detailcaps_gives_one_row_per_scored_candidate(tmp_path):
    write(
        tmp_path / "dc",
        [
            upstream_row("coco/0001.jpg", (200, 0, 0), {"CogVLM": 4, "ShareCaptioner": 2.5, "LLaVA_v15": 1}),
            upstream_row("http://x/y/sam_7.jpg", (0, 0, 200), {"CogVLM": 3, "ShareCaptioner": 5}),
            upstream_row("flickr/9.jpg", (0, 200, 0), None),
        ],
    )
    ds = load("detailcaps", tmp_path / "dc", tmp_path)["test"]
    assert ds.num_rows == 5  # the third image has no scores, the second none for LLaVA_v15
    assert ds["model"] == ["CogVLM", "ShareCaptioner", "LLaVA_v15", "CogVLM", "ShareCaptioner"]
    assert ds["score"] == [4.0, 2.5, 1.0, 3.0, 5.0]
    assert ds["image_path"][3] == "http://x/y/sam_7.jpg" and ds[3]["image"].getpixel((0, 0)) == (0, 0, 200)
    assert ds[0]["references"] == [
        "A detailed scene of coco/0001.jpg with a red car.",
        "A red car is parked near a tall building.",  # whitespace squashed
        "The image shows a car and a building.",
    ]
    assert len(set(ds["id"])) == 5 and load("detailcaps", tmp_path / "dc", tmp_path / "again")["test"]["id"] == ds["id"]
    hj = md.human_judgments("detailcaps", ds)
    assert hj.correlation == "tau_b" and [r["score"] for r in hj.ratings] == [4.0, 2.5, 1.0, 3.0, 5.0]
    assert hj.items[1]["text"] == "A car parked on a street under a blue sky." and len(hj.items[1]["references"]) == 3


@pytest.mark.parametrize(
    "override, message",
    [
        ({"GPT4_Eval": "{not json"}, r"DetailCaps-4870.parquet:0: GPT4_Eval '\{not json' is not JSON"),
        ({"GPT4_Eval": json.dumps({"CogVLM": "high"})}, r"GPT4_Eval score 'high' of CogVLM is not a number"),
    ],
)
def test_bad_upstream_rows_are_one_line(tmp_path, override, message):
    write(tmp_path / "dc", [upstream_row("a.jpg", (1, 2, 3), {}, **override)])
    with pytest.raises(DataError, match=message):
        load("detailcaps", tmp_path / "dc", tmp_path)


def test_a_missing_column_is_named(tmp_path):
    row = upstream_row("a.jpg", (1, 2, 3), {"CogVLM": 1})
    del row["GT_Caption_GPT4V"]
    write(tmp_path / "dc", [row])
    with pytest.raises(DataError, match=r"missing columns \['GT_Caption_GPT4V'\]"):
        load("detailcaps", tmp_path / "dc", tmp_path)


def test_each_image_is_checked_once_and_only_when_a_candidate_is_kept(tmp_path, monkeypatch):
    import mmjudge.datasets._base as base

    checked = []
    real = base.check_decodes
    monkeypatch.setattr(base, "check_decodes", lambda data, what: checked.append(what) or real(data, what))
    write(
        tmp_path / "dc",
        [
            upstream_row("coco/0001.jpg", (200, 0, 0), {"CogVLM": 4, "ShareCaptioner": 2.5, "LLaVA_v15": 1}),
            upstream_row("broken.jpg", (0, 0, 0), None, binary=b"not an image"),  # no candidate kept: not read
        ],
    )
    ds = load("detailcaps", tmp_path / "dc", tmp_path)["test"]
    assert checked == ["The image of coco/0001.jpg"]  # one check for its three rows
    assert ds.num_rows == 3 and {ds[k]["image"].getpixel((0, 0)) for k in range(3)} == {(200, 0, 0)}
