"""Small benchmark releases written in their upstream layouts (a few instances, PIL images), shared by the
dataset tests and the judgments-file tests. The ``mmhe_dir`` and ``f8k_dir`` fixtures (tests/conftest.py)
write them into a test's tmp dir."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

import mmjudge.datasets as md

CRITERIA = ["correctness", "completeness", "clarity", "fluency", "conciseness"]


def png(path: Path, color=(200, 30, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), color).save(path)
    return path


def load(name, root, tmp_path, **kw):
    return md.load_dataset(name, data_dir=str(root), cache_dir=str(tmp_path / "cache"), **kw)


def same_rows(original, from_json, ignore=("image",)):
    """Both splits hold the same rows in the same order, every column but ``ignore`` compared."""
    assert original.num_rows == from_json.num_rows > 0
    cols = [c for c in original.column_names if c not in ignore]
    assert original.select_columns(cols).to_list() == from_json.select_columns(cols).to_list()


# --- MMHE ------------------------------------------------------------------------------------------
def mmhe_instance(task, n, image="images/a.png"):
    return {
        "task": task,
        "instance_id": str(n),
        "image": image,
        "question": "What is shown?" if task in ("VQA", "VDU") else None,
        "bbox": [1, 2, 3, 4] if task == "REG" else None,
        "candidates": [
            {"model": f"m{k}", "text": f"text {task} {n} {k}", "ratings": {c: [1 + k, 2, 5 - k] for c in CRITERIA}}
            for k in range(3)
        ],
        "annotators": ["A1", "A2", "A3"],
        "best": [2, 2, 0],
    }


def write_mmhe(root: Path) -> Path:
    """A two-instances-per-task MMHE release (``mmhe.json`` + one image) under ``root``."""
    png(root / "images" / "a.png")
    data = [mmhe_instance(t, n) for t in ("REG", "VQA", "VDU", "IC") for n in range(2)]
    (root / "mmhe.json").write_text(json.dumps(data))
    return root


SMALL_MMHE = {"test": 24, "instances_per_task": 2, "ratings": 24 * 15}


# --- Flickr8k --------------------------------------------------------------------------------------
def write_flickr8k(root: Path) -> Path:
    """The Flickr8k release (captions, Expert and CrowdFlower judgments, images) for two images under ``root``."""
    root.mkdir()
    captions = {"a.jpg": ["A dog runs .", "A brown  dog ."], "b.jpg": ["A cat sits .", "Two cats ."]}
    (root / "Flickr8k.token.txt").write_text(
        "".join(f"{img}#{k}\t{c}\n" for img, cs in captions.items() for k, c in enumerate(cs))
    )
    (root / "ExpertAnnotations.txt").write_text(
        "a.jpg\tb.jpg#0\t1\t2\t1\nb.jpg\ta.jpg#1\t4\t3\t4\nb.jpg\tb.jpg#1\t4\t4\t4\n"
    )  # last: own caption, dropped
    (root / "CrowdFlowerAnnotations.txt").write_text(
        "a.jpg\tb.jpg#0\t0.0\t0\t3\na.jpg\ta.jpg#0\t1.0\t3\t0\nb.jpg\ta.jpg#1\t0.25\t1\t3\n"
    )
    for name in captions:
        png(root / "Flicker8k_Dataset" / name)
    return root


def flickr8k_json(
    root: Path, judged: list[tuple[str, str, list[float]]], refs: dict[str, list[str]], name: str
) -> None:
    """flickr8k.json / crowdflower_flickr8k.json as CLIPScore's preprocessing writes them (one entry per image,
    one human_judgement per rating), with FLEUR's folder name Flickr8k_Dataset/ (not the release's Flicker8k_)."""
    data: dict = {}
    for image, caption, ratings in judged:
        entry = data.setdefault(
            image[:-4],
            {
                "image_id": image[:-4],
                "image_path": f"Flickr8k_Dataset/{image}",
                "ground_truth": refs[image],
                "human_judgement": [],
            },
        )
        entry["human_judgement"] += [
            {"image_id": image[:-4], "image_path": f"Flickr8k_Dataset/{image}", "caption": caption, "rating": r}
            for r in ratings
        ]
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(data))


# --- Pascal-50S --------------------------------------------------------------------------------------------
# (category code, image, caption A, caption B, votes for A out of 4); two identical MM pairs, as
# pascal_50s.json has, and a 2-2 tie.
PASCAL = [
    (3, "p0.jpg", "a man rides", "a dog sits", 3),
    (1, "p1.jpg", "two birds", "a red car", 1),
    (4, "p2.jpg", "a room", "a room with a desk", 2),
    (4, "p2.jpg", "a room", "a room with a desk", 0),
    (1, "p3.jpg", "a boat", "a ship", 4),
]
VOTES = 4


def pascal_refs(i: int) -> list[str]:
    return [f"reference {i}.{j}" for j in range(VOTES)]


def write_pascal_layout(root: Path, layout: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if layout == "original":
        from scipy.io import savemat

        new_input = np.empty((1, len(PASCAL)), dtype=object)
        triplets = np.empty((1, len(PASCAL) * VOTES), dtype=object)
        for i, (_cat, img, a, b, votes_a) in enumerate(PASCAL):
            cell = np.empty((1, 3), dtype=object)
            cell[0, :] = [np.array([s]) for s in (img, a, b)]
            new_input[0, i] = cell
            for j in range(VOTES):  # (reference, caption B, caption C, winner 1|2), in either caption order
                first, second = (a, b) if j % 2 else (b, a)
                wins_a = j < votes_a
                winner = 1 if (first == a) == wins_a else 2
                vote = np.empty((1, 4), dtype=object)
                vote[0, :] = [
                    np.array([pascal_refs(i)[j]]),
                    np.array([first]),
                    np.array([second]),
                    np.array([[winner]]),
                ]
                triplets[0, i * VOTES + j] = vote
        savemat(root / "pair_pascal.mat", {"new_input": new_input, "category": np.array([[c for c, *_ in PASCAL]])})
        savemat(root / "consensus_pascal.mat", {"triplets": triplets})
        return
    names = {1: "HC", 2: "HI", 3: "HM", 4: "MM"}
    data: dict = {"MM": [], "HM": [], "HC": []}  # FLEUR's file has its own key order
    for i, (cat, img, a, b, votes_a) in enumerate(PASCAL):
        label = 1 if VOTES - votes_a > votes_a else 0
        data[names[cat]].append(
            {"image": f"VOC2012/JPEGImages/{img}", "captions": [a, b], "label": label, "references": pascal_refs(i)}
        )
    (root / "pascal_50s.json").write_text(json.dumps(data))


SMALL_PASCAL = {"test": 5, "votes_per_pair": VOTES, "per_category": None}
