"""datasets conventions: exports carry DatasetInfo and ClassLabel tasks, read back with plain
`datasets.load_dataset("parquet", ...)`; cards carry the Hub's YAML; verification_mode="no_checks"."""

from __future__ import annotations

import json

import datasets
import pytest
import yaml

import mmjudge.datasets as md
from benchmark_releases import SMALL_MMHE
from mmjudge.datasets._base import DataError


def _export(data_dir, tmp_path):
    ds = md.load_dataset("mmhe", data_dir=str(data_dir), cache_dir=str(tmp_path / "c"), expected_counts=SMALL_MMHE)
    return ds, md.export_to_parquet("mmhe", tmp_path / "out", dataset=ds)


def test_export_round_trip_keeps_features_and_info(mmhe_dir, tmp_path):
    original, out = _export(mmhe_dir, tmp_path)
    files = sorted(str(p) for p in (out / "data").glob("*.parquet"))
    back = datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=str(tmp_path / "c2"))
    task = back.features["task"]
    assert isinstance(task, datasets.ClassLabel) and task.names == sorted(set(original["test"]["task"]))
    assert [task.int2str(v) for v in back["task"]] == original["test"]["task"]
    for column, feature in original["test"].features.items():
        if column != "task":
            assert back.features[column] == feature, column
    assert back["id"] == original["test"]["id"]
    info = md.export_info(files[0])
    cls = md.builder("mmhe").__class__
    assert (info.description, info.citation, info.license) == (cls.DESCRIPTION, cls.CITATION, cls.LICENSE)
    assert info.features == back.features


def test_export_card_has_hub_yaml(mmhe_dir, tmp_path):
    _, out = _export(mmhe_dir, tmp_path)
    text = (out / "README.md").read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    assert {"license", "license_link", "size_categories", "configs", "dataset_info"} <= set(front)
    assert front["size_categories"] == ["n<1K"]
    split = front["dataset_info"]["splits"][0]
    assert (split["name"], split["num_examples"]) == ("test", 24) and split["num_bytes"] > 0
    task = next(f for f in front["dataset_info"]["features"] if f["name"] == "task")
    assert "class_label" in task["dtype"]
    # The folder as a whole loads the datasets way, through the card's `configs`.
    again = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "c3"))
    assert isinstance(again.features["task"], datasets.ClassLabel) and again.num_rows == 24


def test_verification_mode_no_checks_skips_count_checks(mmhe_dir, tmp_path):
    wrong = dict(SMALL_MMHE, test=99)
    with pytest.raises(DataError):
        md.load_dataset("mmhe", data_dir=str(mmhe_dir), cache_dir=str(tmp_path / "a"), expected_counts=wrong)
    ds = md.load_dataset(
        "mmhe",
        data_dir=str(mmhe_dir),
        cache_dir=str(tmp_path / "b"),
        expected_counts=wrong,
        verification_mode="no_checks",
    )
    assert ds["test"].num_rows == 24
    assert json.dumps(SMALL_MMHE)  # the fixture's counts stay the source of truth for the checked path


def test_export_keeps_the_row_groups_datasets_writes(mmhe_dir, tmp_path, monkeypatch):
    # adding the info metadata used to rewrite each file with pq.write_table: one row group of everything
    import pyarrow.parquet as pq

    monkeypatch.setattr(datasets.config, "PARQUET_ROW_GROUP_SIZE_FOR_IMAGE_DATASETS", 2)
    monkeypatch.setattr(datasets.config, "MAX_ROW_GROUP_SIZE", "1KB")  # small groups whatever the features
    original, out = _export(mmhe_dir, tmp_path)
    for split, ds in original.items():
        exported = pq.ParquetFile(out / "data" / f"{split}-00000-of-00001.parquet")
        plain_path = tmp_path / f"plain-{split}.parquet"
        ds.to_parquet(str(plain_path))  # what datasets itself writes under the same config
        plain = pq.ParquetFile(plain_path)
        sizes = [exported.metadata.row_group(i).num_rows for i in range(exported.num_row_groups)]
        assert ds.num_rows > 2 and len(sizes) > 1 and sum(sizes) == ds.num_rows
        assert sizes == [plain.metadata.row_group(i).num_rows for i in range(plain.num_row_groups)]
        assert exported.metadata.row_group(0).column(0).compression == plain.metadata.row_group(0).column(0).compression
    assert md.export_info(out / "data" / f"{next(iter(original))}-00000-of-00001.parquet").license
