"""The benchmarks of judges (VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge, Multi-Crit, CapArena) load from
fixtures of our own content written in their upstream columns and layouts (tests/helpers/judge_benchmarks.py), give
one clear line for a missing image, a torn file and a wrong column, and read as the same JudgePair shape."""

from __future__ import annotations

import dataclasses
import io
import json
import logging

import pytest
from PIL import Image

import judge_benchmarks as jb
import mmjudge.datasets as md
from benchmark_releases import load
from mmjudge.datasets._base import DataError
from mmjudge.datasets._judge_pairs import JudgePair, judge_pairs
from mmjudge.datasets.vl_rewardbench import group_of
from repo_paths import ROOT

VLRB_COUNTS = {"test": 6}
MULTICRIT_COUNTS = {"open_ended": 3, "reasoning": 1}
CAPARENA_COUNTS = {"test": 4}


def without_images(pairs: list[JudgePair]) -> list[JudgePair]:
    """The pairs with their images checked (each opens as the fixture's 6x4 picture) and set aside."""
    for pair in pairs:
        assert Image.open(io.BytesIO(pair.image["bytes"])).size == (6, 4), pair.id
    return [dataclasses.replace(pair, image=None) for pair in pairs]


# --- VL-RewardBench -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source, row_id, group",
    [
        ("POVID", "hallucination_pair-1", "hallucination"),
        ("WildVision", "wildvision-battle-2", "general"),
        ("MathVerse", "mathverse_3", "reasoning"),
        ("MMMU-Pro", "mmmu-pro_4", "reasoning"),
        ("RLAIF-V", "RLAIF-V-5", "hallucination"),
        ("RLHF-V", "RLHF-V-6", "hallucination"),
        ("VLFeedback", "x_7", "general"),
        # a source cal.py does not know: its id prefix decides, as in cal.py (since the May 2025 POVID fix)
        (None, "hallucination_pair-8", "hallucination"),
        ("", "mmmu_9", "reasoning"),
        ("SomethingNew", "wildvision_10", "general"),
        (None, "svit_11", "general"),
    ],
)
def test_vl_rewardbench_groups_follow_the_authors_mapping(source, row_id, group):
    assert group_of(source, row_id) == group


def test_vl_rewardbench_rows_and_pairs(tmp_path):
    ds = load("vl_rewardbench", jb.write_vl_rewardbench(tmp_path / "vlrb"), tmp_path, expected_counts=VLRB_COUNTS)
    test = ds["test"]
    assert test.num_rows == 6 and test["id"] == [r[0] for r in jb.VLRB_ROWS]  # upstream ids kept
    assert test["preferred"] == [0, 1, 0, 1, 0, 1]
    assert test["group"] == ["hallucination", "hallucination", "general", "reasoning", "reasoning", "general"]
    row = test[1]
    assert row["query"] == "How many red blocks are in picture 2?" and row["query_source"] == "POVID"
    assert row["responses"] == ["There are 2 red blocks.", "There are 4 red blocks and a green ball."]
    assert row["human_ranking"] == [1, 0] and row["models"] == ["model-2a", "model-2b"]
    assert row["image"].size == (6, 4) and test[5]["query_source"] == ""
    pairs = without_images(judge_pairs("vl_rewardbench", ds))
    assert len(pairs) == 6 and pairs[1] == JudgePair(
        id="hallucination_pair-fx-2",
        image=None,
        query="How many red blocks are in picture 2?",
        responses=("There are 2 red blocks.", "There are 4 red blocks and a green ball."),
        preferred=1.0,
        subsets={"group": "hallucination", "query_source": "POVID"},
        task="vqa",
        criterion=None,
    )
    assert [p.subsets["group"] for p in pairs] == test["group"] and [p.preferred for p in pairs] == [0, 1, 0, 1, 0, 1]
    hj = md.human_judgments("vl_rewardbench", ds)
    assert len(hj.items) == 12 and hj.correlation == "accuracy"
    assert hj.pairs[1] == {
        "task": "vqa",
        "better": "hallucination_pair-fx-2-1",
        "worse": "hallucination_pair-fx-2-0",
        "kind": "vl_rewardbench",
        "category": "hallucination",
    }
    with pytest.raises(DataError, match="split 'test' rows: expected 1250, but read 6"):
        load("vl_rewardbench", tmp_path / "vlrb", tmp_path / "c2")


def test_vl_rewardbench_reads_only_the_columns_the_file_has(tmp_path):
    # The Hub file lost its optional columns over time: only id, query, response, image, human_ranking are needed.
    rows = [
        {k: jb.vlrb_row(*r, k=1)[k] for k in ("id", "query", "response", "image", "human_ranking")}
        for r in jb.VLRB_ROWS[:2]
    ]
    jb.write_parquet(tmp_path / "vlrb" / "data" / "train-like-name.parquet", rows)  # any *.parquet under data/
    test = load("vl_rewardbench", tmp_path / "vlrb", tmp_path, expected_counts={"test": 2})["test"]
    assert test["query_source"] == ["", ""] and test["models"] == [[], []]
    assert test["group"] == ["hallucination", "hallucination"]  # from the id prefixes RLAIF and hallucination


# --- Multimodal RewardBench ---------------------------------------------------------------------------------------
MMRB_PAIRS = [  # (id, preferred, reporting category, upstream category)
    ("nocaps_101", 1.0, "open_generation/correctness_task", "open_generation/correctness_task"),
    ("pairs_7", 0.0, "safety/bias", "safety"),
    ("memes_2", 1.0, "safety/toxicity", "safety"),
    ("mathvista_12", 0.0, "reasoning/math", "reasoning"),
    ("EMMA-Coding_5", 1.0, "reasoning/coding", "reasoning"),
]


def test_mm_rewardbench_rows_and_pairs(tmp_path):
    ds = load("mm_rewardbench", jb.write_mm_rewardbench(tmp_path / "repo"), tmp_path)
    test = ds["test"]
    assert test.num_rows == 5 and test["id"] == [r[0] for r in jb.MMRB_RECORDS]
    row = test[0]  # all_data.json (the prompts filled) is read, not all_data_release.json
    assert row["query"] == "What does image nocaps_101 show?" and row["image_path"] == "images/nocaps/101.png"
    assert row["responses"] == ["First answer about nocaps_101.", "Second answer about nocaps_101."]
    assert row["preferred"] == 1 and row["image"].size == (6, 4)
    assert test["reporting_category"] == [r[2] for r in MMRB_PAIRS] and test["category"] == [r[3] for r in MMRB_PAIRS]
    pairs = without_images(judge_pairs("mm_rewardbench", ds))
    assert [(p.id, p.preferred, p.subsets["reporting_category"], p.subsets["category"]) for p in pairs] == MMRB_PAIRS
    assert pairs[1] == JudgePair(
        id="pairs_7",
        image=None,
        query="What does image pairs_7 show?",
        responses=("First answer about pairs_7.", "Second answer about pairs_7."),
        preferred=0.0,
        subsets={"reporting_category": "safety/bias", "category": "safety"},
        task="vqa",
    )


def test_mm_rewardbench_release_file_alone_warns_about_missing_prompts(tmp_path, caplog):
    root = jb.write_mm_rewardbench(tmp_path / "repo", release_only=True)
    with caplog.at_level(logging.WARNING):
        test = load("mm_rewardbench", root, tmp_path)["test"]
    assert test["query"][:2] == ["", "What does image pairs_7 show?"]
    assert "1 of 5 records have no prompt (Text) in all_data_release.json" in caplog.text


# --- MLLM-as-a-Judge ----------------------------------------------------------------------------------------------
def test_mllm_judge_pair_config(tmp_path):
    ds = load("mllm_judge", jb.write_mllm_judge(tmp_path / "repo"), tmp_path)  # pair is the default
    test = ds["test"]
    assert test["id"] == ["mllm_judge-pair-5", "mllm_judge-pair-8", "mllm_judge-pair-16"]
    assert test["pair_id"] == [5, 8, 16] and test["instruction_id"] == ["0", "1", "2"]
    assert test["human"] == ["A", "B", "C"] and test["preferred"] == [0.0, 1.0, 0.5]
    assert test[0]["models"] == ["gpt4", "llava"] and test[0]["responses"] == [
        "Object 0 is a kettle.",
        "Object 0 is a teapot.",
    ]
    assert test[2]["original_dataset"] == "chartqa" and test[2]["image"].size == (6, 4)
    pairs = without_images(judge_pairs("mllm_judge", ds))
    assert pairs[2] == JudgePair(
        id="mllm_judge-pair-16",
        image=None,
        query="Please analyse this figure in detail: what is object 2?",
        responses=("Object 2 is a kettle.", "Object 2 is a teapot."),
        preferred=0.5,
        subsets={"original_dataset": "chartqa"},
        task="vqa",
    )
    hj = md.human_judgments("mllm_judge", ds)
    assert len(hj.pairs) == 2 and hj.metadata == {"ties": 1}  # the tie is counted, not made a pair


def test_mllm_judge_score_and_batch_configs(tmp_path):
    root = jb.write_mllm_judge(tmp_path / "repo")
    score = load("mllm_judge", root, tmp_path, config_name="score")["test"]
    assert score["id"] == ["mllm_judge-score-3", "mllm_judge-score-9"] and score["score"] == [4.0, 2.0]  # "2" read
    assert score[0]["response"] == "It is object 0." and score[0]["model"] == "cogvlm"
    assert [r["score"] for r in md.human_judgments("mllm_judge", score).ratings] == [4.0, 2.0]
    batch = load("mllm_judge", root, tmp_path, config_name="batch")["test"]
    assert batch["id"] == ["mllm_judge-batch-0", "mllm_judge-batch-1"]
    assert batch["ranking"] == [[2, 3, 0, 1], [1, 2, 0]]  # "CDAB": the third answer is the best
    assert batch[0]["models"] == ["llava", "cogvlm", "gpt4", "gemini"] and batch[1]["image_path"] == "image/1.jpg"
    hj = md.human_judgments("mllm_judge", batch)
    assert len(hj.pairs) == 6 + 3 and hj.pairs[0]["better"] == "mllm_judge-batch-0-2"
    with pytest.raises(DataError, match="these mllm_judge rows are its 'score' configuration, which holds no pairs"):
        judge_pairs("mllm_judge", score)
    with pytest.raises(DataError, match="these mllm_judge rows are its 'batch' configuration, which holds no pairs"):
        judge_pairs("mllm_judge", batch)


# --- Multi-Crit ---------------------------------------------------------------------------------------------------
def test_multi_crit_rows_and_pairs(tmp_path):
    ds = load("multi_crit", jb.write_multi_crit(tmp_path / "mc"), tmp_path, expected_counts=MULTICRIT_COUNTS)
    assert {s: ds[s].num_rows for s in ds} == {"open_ended": 3, "reasoning": 1}
    open_ended = ds["open_ended"]
    assert open_ended["id"] == [
        "chartDesc__p-1__completeness",
        "chartDesc__p-1__visual_grounding",
        "poster__p-2__clarity",
    ]
    assert open_ended["preferred"] == [0.0, 1.0, 0.5] and open_ended["prompt_id"][:2] == ["chartDesc__p-1"] * 2
    row = ds["reasoning"][0]
    assert (
        row["criterion"] == "efficiency" and row["preference"] == "model_b" and row["models"] == ["model-x", "model-y"]
    )
    assert row["image_path"] == "visualPuzzles/images/visualPuzzles__select-1.png" and row["image"].size == (6, 4)
    pairs = without_images(judge_pairs("multi_crit", ds))
    assert [(p.id, p.criterion, p.preferred) for p in pairs] == [
        ("chartDesc__p-1__completeness", "completeness", 0.0),
        ("chartDesc__p-1__visual_grounding", "visual_grounding", 1.0),
        ("poster__p-2__clarity", "clarity", 0.5),
        ("visualPuzzles__select-1__efficiency", "efficiency", 1.0),
    ]
    assert pairs[3] == JudgePair(
        id="visualPuzzles__select-1__efficiency",
        image=None,
        query="Describe visualPuzzles__select-1 for a newcomer.",
        responses=("A short reply to visualPuzzles__select-1.", "A long, careful reply to visualPuzzles__select-1."),
        preferred=1.0,
        subsets={"criterion": "efficiency", "prompt_id": "visualPuzzles__select-1", "split": "reasoning"},
        task="vqa",
        criterion="efficiency",
    )


# --- CapArena ------------------------------------------------------------------------------------------------------
def test_an_image_several_rows_show_is_read_and_checked_once(tmp_path, monkeypatch):
    """CapArena's battles share DOCCI images (the fixture: four battles over two): each file is read and verified
    once and its rows share the bytes, so a split held before it is written grows with its images, not its rows."""
    import datasets

    import mmjudge.datasets._base as base

    checked = []
    real = base.check_decodes
    monkeypatch.setattr(base, "check_decodes", lambda data, what: (checked.append(what), real(data, what)))
    test = load("caparena", jb.write_caparena(tmp_path / "ca"), tmp_path, expected_counts=CAPARENA_COUNTS)["test"]
    assert len(checked) == 2 and test.num_rows == 4
    cells = test.cast_column("image", datasets.Image(decode=False))["image"]
    assert [c["path"] for c in cells] == ["test_00012.jpg", "test_00012.jpg", "test_00407.jpg", "test_00407.jpg"]
    assert cells[0]["bytes"] == cells[1]["bytes"] != cells[2]["bytes"] == cells[3]["bytes"]


def test_caparena_rows_and_pairs(tmp_path):
    ds = load("caparena", jb.write_caparena(tmp_path / "ca"), tmp_path, expected_counts=CAPARENA_COUNTS)
    test = ds["test"]
    assert test.num_rows == 4 and len(set(test["id"])) == 4 and all(i.startswith("caparena-") for i in test["id"])
    assert test["preferred"] == [0.0, 1.0, 0.5, 0.0] and test["involves_human"] == [False, False, False, True]
    assert test["cluster"] == ["level 1", "level 3", "level 4", "level 2"] and test["in_400"] == [
        True,
        True,
        False,
        False,
    ]
    row = test[1]
    assert row["sources"] == ["Qwen2-VL-72B", "GPT-4o-0806"] and row["winner"] == "GPT-4o-0806"
    assert row["responses"][0] == "Qwen2-VL-72B describes test_00012.jpg: a quiet street with two parked bicycles."
    assert row["reference"] == "DOCCI's description of test_00012.jpg." and row["image"].size == (6, 4)
    again = load("caparena", tmp_path / "ca", tmp_path / "again", expected_counts=CAPARENA_COUNTS)["test"]
    assert again["id"] == test["id"]  # ids from content: stable
    pairs = without_images(judge_pairs("caparena", ds))
    assert [p.id for p in pairs] == test["id"][:3]  # the battle against the human caption is left out
    assert pairs[2] == JudgePair(
        id=test["id"][2],
        image=None,
        query=None,
        responses=(
            "InternVL2-26B describes test_00407.jpg: a quiet street with two parked bicycles.",
            "MiniCPM-V2.6-8B describes test_00407.jpg: a street, bicycles and a red door.",
        ),
        preferred=0.5,
        subsets={"cluster": "level 4"},
        task="ic",
    )
    with pytest.raises(DataError, match="split 'test' rows: expected 6523, but read 4"):
        load("caparena", tmp_path / "ca", tmp_path / "c3")


# --- one clear line for each broken copy ----------------------------------------------------------------------------
def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit_json(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _edit_jsonl(path, edit):
    records = [json.loads(line) for line in path.read_text().splitlines()]
    edit(records)
    jb.write_jsonl(path, records)


def _edit_parquet(path, edit):
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    jb.write_parquet(path, [edit(row) for row in rows])


def _renamed(old, new):
    return lambda row: {(new if k == old else k): v for k, v in row.items()}


VLRB_FILE = "vlrb/data/test-00000-of-00001.parquet"
MC_FILE = "mc/data/open_ended-00000-of-00001.parquet"
MMRB_FILE = "repo/data/all_data.json"
PAIR_FILE = "repo/Dataset/Benchmark/pair.jsonl"
CA_FILE = "ca/data/eval/caparena_annots_eval.json"
BROKEN = {
    "missing image": [
        (
            "mm_rewardbench",
            lambda r: (r / "repo/data/images/pairs/7.png").unlink(),
            r"Multimodal RewardBench: all_data.json: record 1 \('pairs_7'\): its image 'images/pairs/7.png' is missing "
            r"from '.*/data'; run the repository's scripts/0_download_data.py, which downloads the images",
        ),
        (
            "mllm_judge",
            lambda r: (r / "repo/Dataset/image/1.jpg").unlink(),
            r"MLLM-as-a-Judge: pair.jsonl:2: its image '1.jpg' is missing from Dataset/image/ under '.*'; clone the "
            r"repository with its images",
        ),
        (
            "caparena",
            lambda r: (r / "ca/data/eval/images/test_00407.jpg").unlink(),
            r"CapArena: caparena_annots_eval.json: battle 2: its image 'test_00407.jpg' is missing under '.*'; "
            r"download the DOCCI images",
        ),
        (
            "vl_rewardbench",
            lambda r: _edit_parquet(r / VLRB_FILE, lambda row: {**row, "image": None}),
            r"VL-RewardBench test-00000-of-00001.parquet:0 \('RLAIF-V-fx-1'\) has no image",
        ),
    ],
    "torn file": [
        (
            "vl_rewardbench",
            lambda r: _truncate(r / VLRB_FILE),
            r"VL-RewardBench: test-00000-of-00001.parquet cannot be read as Parquet \(.*\); truncated download\?",
        ),
        (
            "multi_crit",
            lambda r: _truncate(r / MC_FILE),
            r"Multi-Crit: open_ended-00000-of-00001.parquet cannot be read as Parquet \(.*\); truncated download\?",
        ),
        (
            "mm_rewardbench",
            lambda r: _truncate(r / MMRB_FILE),
            r"Multimodal RewardBench: all_data.json is not valid JSON \(.*\); truncated download\?",
        ),
        (
            "mllm_judge",
            lambda r: (r / PAIR_FILE).write_text((r / PAIR_FILE).read_text()[:-40]),
            r"MLLM-as-a-Judge: pair.jsonl:3 is not valid JSON \(.*\); truncated download\?",
        ),
        (
            "caparena",
            lambda r: _truncate(r / CA_FILE),
            r"CapArena: caparena_annots_eval.json is not valid JSON \(.*\); truncated download\?",
        ),
    ],
    "wrong column": [
        (
            "vl_rewardbench",
            lambda r: _edit_parquet(r / VLRB_FILE, _renamed("response", "responses")),
            r"VL-RewardBench: test-00000-of-00001.parquet has no column 'response' \(its columns: id, query, "
            r"responses, .*\); expected the columns id, query, response, image, human_ranking.",
        ),
        (
            "multi_crit",
            lambda r: _edit_parquet(r / MC_FILE, _renamed("preference", "label")),
            r"Multi-Crit: open_ended-00000-of-00001.parquet has no column 'preference'",
        ),
        (
            "mm_rewardbench",
            lambda r: _edit_json(r / MMRB_FILE, lambda d: d[0].update(Chosen=d[0].pop("Better"))),
            r"Multimodal RewardBench: all_data.json: record 0 \('nocaps_101'\) has no field 'Better' \(its fields: ID, "
            r"Text, Image, Output1, Output2, Category, Chosen\).",
        ),
        (
            "mllm_judge",
            lambda r: _edit_jsonl(r / PAIR_FILE, lambda d: d[1].pop("human")),
            r"MLLM-as-a-Judge: pair.jsonl:2 has no field 'human' or 'human_answer' \(its fields: id, image_path, ",
        ),
        (
            "caparena",
            lambda r: _edit_json(r / CA_FILE, lambda d: d[0].update(best=d[0].pop("winner"))),
            r"CapArena: caparena_annots_eval.json: battle 0 has no field 'winner'",
        ),
    ],
}
WRITERS = {
    "vl_rewardbench": lambda r: jb.write_vl_rewardbench(r / "vlrb"),
    "multi_crit": lambda r: jb.write_multi_crit(r / "mc"),
    "mm_rewardbench": lambda r: jb.write_mm_rewardbench(r / "repo"),
    "mllm_judge": lambda r: jb.write_mllm_judge(r / "repo"),
    "caparena": lambda r: jb.write_caparena(r / "ca"),
}


@pytest.mark.parametrize(
    "name, break_it, message",
    [case for cases in BROKEN.values() for case in cases],
    ids=[f"{kind}-{case[0]}" for kind, cases in BROKEN.items() for case in cases],
)
def test_a_broken_copy_is_one_clear_line(tmp_path, name, break_it, message):
    root = WRITERS[name](tmp_path / "data")
    break_it(tmp_path / "data")
    with pytest.raises(DataError, match=message) as err:
        load(name, root, tmp_path, expected_counts={})
    assert "\n" not in str(err.value)


def test_judge_pairs_refuses_a_benchmark_that_is_not_one_of_judges():
    with pytest.raises(ValueError, match="Expected argument `name` to be one of vl_rewardbench, .*, but got 'mmhe'"):
        judge_pairs("mmhe", [])


def test_the_committed_cards_describe_the_new_benchmarks():
    for name in ("vl_rewardbench", "mm_rewardbench", "mllm_judge", "multi_crit", "caparena"):
        text = (ROOT / "datasets_scripts" / name / "README.md").read_text()
        assert text == md.card(name)
    assert "Configuration `score`:" in (ROOT / "datasets_scripts" / "mllm_judge" / "README.md").read_text()


def test_cli_reads_a_configuration(tmp_path, capsys):
    from mmjudge.cli import main

    root = jb.write_mllm_judge(tmp_path / "repo")
    args = ["dataset", "info", "mllm_judge", "--data-dir", str(root), "--cache-dir", str(tmp_path / "c")]
    assert main([*args, "--config", "score"]) == 0
    out = capsys.readouterr().out
    assert "test: 2 rows" in out and "ratings: 2" in out and "pairs: 0" in out
    assert main([*args, "--config", "batch"]) == 0
    assert "pairs: 9" in capsys.readouterr().out
    assert main([*args, "--config", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "bogus" in err and "pair" in err and err.count("\n") == 1
