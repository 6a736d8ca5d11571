"""Small releases of the benchmarks of judges, written in their upstream layouts and columns with our own made-up
content (tiny PNG images): VL-RewardBench and Multi-Crit as Hub Parquet files, Multimodal RewardBench as its
``data/all_data.json`` + ``data/images/``, MLLM-as-a-Judge as ``Dataset/Benchmark/*.jsonl`` + ``Dataset/image/``,
CapArena as ``data/eval/caparena_annots_eval.json`` + DOCCI-named images. Each writer returns the folder to pass
as ``data_dir``."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image


def png_bytes(color=(10, 120, 30), size=(6, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def image_file(path: Path, color=(200, 30, 30)) -> Path:
    """A tiny image at ``path``, in the format its suffix names (``.jpg`` a JPEG)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (6, 4), color).save(path)
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


# --- VL-RewardBench: data/test-00000-of-00001.parquet -------------------------------------------------------------
# (id, query_source, human_ranking): one row per source, and one whose source cal.py does not know (the id decides).
VLRB_ROWS = [
    ("RLAIF-V-fx-1", "RLAIF-V", [0, 1]),
    ("hallucination_pair-fx-2", "POVID", [1, 0]),
    ("wildvision-battle-fx-3", "WildVision", [0, 1]),
    ("mathverse_fx-4", "MathVerse", [1, 0]),
    ("mmmu-pro_fx-5", "MMMU-Pro", [0, 1]),
    ("svit_fx-6", None, [1, 0]),
]


def vlrb_row(row_id: str, source: str | None, ranking: list[int], k: int) -> dict:
    return {
        "id": row_id,
        "query": f"How many red blocks are in picture {k}?",
        "response": [f"There are {k} red blocks.", f"There are {k + 2} red blocks and a green ball."],
        "image": {"bytes": png_bytes((20 * k, 0, 0)), "path": f"{row_id}.png"},
        "human_ranking": ranking,
        "models": [f"model-{k}a", f"model-{k}b"],
        "judge": "human",
        "rationale": "The second answer counts wrong.",
        "query_source": source,
        "meta": "{}",
        "ground_truth": str(k),
    }


def write_vl_rewardbench(root: Path) -> Path:
    rows = [vlrb_row(row_id, source, ranking, k) for k, (row_id, source, ranking) in enumerate(VLRB_ROWS, 1)]
    write_parquet(root / "data" / "test-00000-of-00001.parquet", rows)
    return root


# --- Multimodal RewardBench: data/all_data.json + data/images/<source>/ ---------------------------------------------
MMRB_RECORDS = [
    ("nocaps_101", "images/nocaps/101.png", "Output2", "open_generation/correctness_task"),
    ("pairs_7", "images/pairs/7.png", "Output1", "safety"),
    ("memes_2", "images/memes/2.png", "Output2", "safety"),
    ("mathvista_12", "images/mathvista/12.png", "Output1", "reasoning"),
    ("EMMA-Coding_5", "images/EMMA-Coding/5_0.png", "Output2", "reasoning"),
]


def mmrb_record(record_id: str, image: str, better: str, category: str, with_text: bool = True) -> dict:
    record = {
        "ID": record_id,
        "Image": image,
        "Output1": f"First answer about {record_id}.",
        "Output2": f"Second answer about {record_id}.",
        "Better": better,
        "Category": category,
    }
    if with_text:
        record = {"ID": record_id, "Text": f"What does image {record_id} show?", **record}
    return record


def write_mm_rewardbench(root: Path, release_only: bool = False) -> Path:
    """The repository after scripts/0_download_data.py: all_data.json (prompts filled) beside the committed
    all_data_release.json (no prompt for nocaps), images under data/images/."""
    data = root / "data"
    release = [mmrb_record(*r, with_text=not r[0].startswith("nocaps")) for r in MMRB_RECORDS]
    write_json(data / "all_data_release.json", release)
    if not release_only:
        write_json(data / "all_data.json", [mmrb_record(*r) for r in MMRB_RECORDS])
    for k, (_id, image, _better, _category) in enumerate(MMRB_RECORDS):
        image_file(data / image, (0, 40 * k, 0))
    return root


# --- MLLM-as-a-Judge: Dataset/Benchmark/{pair,score,batch}.jsonl + Dataset/image/ -----------------------------------
def mllmj_common(instruction_id: int) -> dict:
    return {
        "id": instruction_id,
        "image_path": f"{instruction_id}.jpg",
        "original_dataset": "coco" if instruction_id < 2 else "chartqa",
        "instruction": f"Please analyse this figure in detail: what is object {instruction_id}?",
    }


MLLMJ_PAIRS = [  # (instruction id, pair id, human label, label field)
    (0, 5, "A", "human"),
    (1, 8, "B", "human"),
    (2, 16, "C", "human_answer"),  # a tie, in the Lite / HQ spelling
]
MLLMJ_SCORES = [(0, 3, 4), (2, 9, "2")]  # (instruction id, score id, human score as the files write it)
MLLMJ_BATCHES = [(0, "CDAB", 4), (1, "BCA", 3)]  # (instruction id, human ranking, number of answers)


def write_mllm_judge(root: Path) -> Path:
    bench = root / "Dataset" / "Benchmark"
    pairs = [
        {
            **mllmj_common(i),
            "pair_id": pair_id,
            "answer1": {"name": "gpt4", "answer": f"Object {i} is a kettle."},
            "answer2": {"name": "llava", "answer": f"Object {i} is a teapot."},
            field: label,
        }
        for i, pair_id, label, field in MLLMJ_PAIRS
    ]
    write_jsonl(bench / "pair.jsonl", pairs)
    scores = [
        {"score_id": score_id, "name": "cogvlm", "answer": f"It is object {i}.", **mllmj_common(i), "human": human}
        for i, score_id, human in MLLMJ_SCORES
    ]
    write_jsonl(bench / "score.jsonl", scores)
    models = ["llava", "cogvlm", "gpt4", "gemini"]
    batches = [
        {
            **mllmj_common(i),
            "image_path": f"image/{i}.jpg",  # batch rows name the image relative to Dataset/
            "answers": [{"name": m, "answer": f"{m} says object {i}."} for m in models[:n]],
            "human_answer": label,
        }
        for i, label, n in MLLMJ_BATCHES
    ]
    write_jsonl(bench / "batch.jsonl", batches)
    for i in range(3):
        image_file(root / "Dataset" / "image" / f"{i}.jpg", (0, 0, 60 * i))
    return root


# Four ranked rows for the card's batch setting: (instruction id, image, human ranking, number of answers, a verdict's
# ranking, its normalised Levenshtein distance worked by hand). CDAB vs CADB: 2 edits of 4; BCA vs BCA: 0; ABCD vs
# BACD: 2 of 4; ACB: no verdict.
MLLMJ_RANKED = [
    (0, 0, "CDAB", 4, [2, 0, 3, 1], 0.5),
    (1, 1, "BCA", 3, [1, 2, 0], 0.0),
    (2, 2, "ABCD", 4, [1, 0, 2, 3], 0.5),
    (3, 2, "ACB", 3, None, None),
]


def write_mllm_judge_ranked(root: Path) -> Path:
    """The MLLM-as-a-Judge fixture with :data:`MLLMJ_RANKED` as its batch.jsonl (answers by llava, cogvlm, gpt4,
    gemini, in that order)."""
    write_mllm_judge(root)
    models = ["llava", "cogvlm", "gpt4", "gemini"]
    records = [
        {
            **mllmj_common(i),
            "image_path": f"image/{image}.jpg",
            "answers": [{"name": m, "answer": f"{m} says object {i}."} for m in models[:n]],
            "human_answer": label,
        }
        for i, image, label, n, _, _ in MLLMJ_RANKED
    ]
    write_jsonl(root / "Dataset" / "Benchmark" / "batch.jsonl", records)
    return root


# --- Multi-Crit: data/open_ended-*.parquet, data/reasoning-*.parquet ----------------------------------------------
MULTICRIT_ROWS = {  # split -> (prompt id, criterion, preference)
    "open_ended": [
        ("chartDesc__p-1", "completeness", "model_a"),
        ("chartDesc__p-1", "visual_grounding", "model_b"),
        ("poster__p-2", "clarity", "tie"),
    ],
    "reasoning": [("visualPuzzles__select-1", "efficiency", "model_b")],
}


def multicrit_row(split: str, prompt_id: str, criterion: str, preference: str) -> dict:
    return {
        "image": {"bytes": png_bytes((0, 90, 90)), "path": f"{prompt_id}.png"},
        "question_id": f"{prompt_id}__{criterion}",
        "image_path": f"{prompt_id.split('__')[0]}/images/{prompt_id}.png",
        "question": f"Describe {prompt_id} for a newcomer.",
        "pred_a": f"A short reply to {prompt_id}.",
        "pred_b": f"A long, careful reply to {prompt_id}.",
        "model_a": "model-x",
        "model_b": "model-y",
        "split": split,
        "criterion": criterion,
        "preference": preference,
        "prompt_id": prompt_id,
    }


# Six prompts for Multi-Crit's trade-off figures (TOS, CMR), each criterion's human preference beside the verdict
# of a made-up judge (the index it prefers; None: no answer), worked by hand in tests/judge_card/test_trade_offs.py.
MULTICRIT_TRADE_OFFS = {  # split -> (prompt id, criterion, human preference, judge's verdict)
    "open_ended": [
        ("chartDesc__p-1", "completeness", "model_a", 0),  # conflicts with visual grounding, both matched
        ("chartDesc__p-1", "visual_grounding", "model_b", 1),
        ("chartDesc__p-1", "clarity", "model_a", 0),  # conflicts with visual grounding too, matched
        ("poster__p-2", "completeness", "model_a", 1),  # opposed to factuality, the wrong way round
        ("poster__p-2", "factuality", "model_b", 0),
        ("poster__p-2", "clarity", "tie", None),  # no answer, but in no conflict: p-2 still counts
        ("poster__p-3", "completeness", "model_a", 0),  # a tie is no conflict: p-3 has none
        ("poster__p-3", "clarity", "model_a", 1),
        ("poster__p-3", "creativity", "tie", 0.5),
        ("chartDesc__p-6", "completeness", "model_a", None),  # no answer inside its conflict: p-6 left out
        ("chartDesc__p-6", "visual_grounding", "model_b", 1),
    ],
    "reasoning": [
        ("visualPuzzles__select-4", "logic", "model_a", 0),  # opposed to factuality as people are ...
        ("visualPuzzles__select-4", "conciseness", "model_b", 0),  # ... but not to conciseness: not matched
        ("visualPuzzles__select-4", "factuality", "model_b", 1),
        ("visualPuzzles__select-5", "visual_grounding", "model_b", 0.5),  # a judge tie opposes nothing
        ("visualPuzzles__select-5", "reflection", "model_a", 0),
    ],
}


def write_multi_crit(root: Path, rows_by_split: dict | None = None) -> Path:
    """The Hub Parquet files of ``rows_by_split`` (split -> (prompt id, criterion, preference, ...)), by default
    :data:`MULTICRIT_ROWS`."""
    for split, rows in (rows_by_split or MULTICRIT_ROWS).items():
        parquet = [multicrit_row(split, *r[:3]) for r in rows]
        write_parquet(root / "data" / f"{split}-00000-of-00001.parquet", parquet)
    return root


# --- CapArena: data/eval/caparena_annots_eval.json + the DOCCI images --------------------------------------------
CAPARENA_BATTLES = [  # (image, source1, source2, winner, cluster)
    ("test_00012.jpg", "GPT-4o-0806", "LLaVA-1.6-34B", "GPT-4o-0806", "level 1"),
    ("test_00012.jpg", "Qwen2-VL-72B", "GPT-4o-0806", "GPT-4o-0806", "level 3"),
    ("test_00407.jpg", "InternVL2-26B", "MiniCPM-V2.6-8B", "tie", "level 4"),
    ("test_00407.jpg", "human", "Gemini-1.5-pro-002", "human", "level 2"),
]


def caparena_battle(img: str, source1: str, source2: str, winner: str, cluster: str) -> dict:
    return {
        "img": img,
        "source1": source1,
        "caption1": f"{source1} describes {img}: a quiet street with two parked bicycles.",
        "source2": source2,
        "caption2": f"{source2} describes {img}: a street, bicycles and a red door.",
        "winner": winner,
        "cluster": cluster,
        "in-400": img == "test_00012.jpg",
        "ref": f"DOCCI's description of {img}.",
    }


def write_caparena(root: Path) -> Path:
    write_json(root / "data" / "eval" / "caparena_annots_eval.json", [caparena_battle(*b) for b in CAPARENA_BATTLES])
    for k, name in enumerate(sorted({b[0] for b in CAPARENA_BATTLES})):
        image_file(root / "data" / "eval" / "images" / name, (90 * k, 90, 0))
    return root
