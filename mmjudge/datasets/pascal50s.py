"""Pascal-50S (Vedantam et al. 2015): 4,000 caption pairs (1,000 each of HC, HI, HM, MM) for PASCAL
images, each judged by 48 workers against one of 50 reference sentences ("which caption is more similar
to the reference?"). One row per pair with both vote counts and the 48 references.

>>> from mmjudge.datasets.pascal50s import flatten
>>> import numpy as np
>>> flatten(np.array([[np.array(["a.jpg"])], [np.array([[1]])]], dtype=object))
['a.jpg', 1]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import numpy as np

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, check_count, find_file, image_folder, squash
from mmjudge.datasets._judgments import rows_of
from mmjudge.human_judgments import HumanJudgments

CATEGORIES = src.PASCAL50S_CATEGORIES


class Pascal50S(BenchmarkBuilder):
    PRETTY_NAME = "Pascal-50S"
    DESCRIPTION = (
        "Pascal-50S triplet judgments from the CIDEr paper: for 1,000 UIUC PASCAL images, pairs of candidate "
        "captions in four categories — HC (two correct human captions), HI (human correct vs human for another "
        "image), HM (human vs machine), MM (two machine captions) — each judged by 48 workers."
    )
    CITATION = """@inproceedings{vedantam2015cider,
  title={CIDEr: Consensus-based Image Description Evaluation},
  author={Vedantam, Ramakrishna and Zitnick, C. Lawrence and Parikh, Devi},
  booktitle={CVPR}, pages={4566--4575}, year={2015}
}"""
    HOMEPAGE = src.PASCAL50S_HOMEPAGE
    LICENSE = "research use; images under the PASCAL VOC terms"
    SOURCE_FILES = "`pair_pascal.mat` and `consensus_pascal.mat` (pyCIDErConsensus); VOC images in `JPEGImages/` (optional)"
    KNOWN_ISSUES = (
        "Human ties (24 vs 24 votes) are kept: `better` is then caption A with weight 0.5; public code breaks "
        "them at random, which makes accuracies differ slightly between papers.",
        "References are the 48 sentences the workers compared against (one per vote).",
    )
    FEATURES = datasets.Features({
        "id": datasets.Value("string"),
        "category": datasets.Value("string"),
        "image": datasets.Image(),
        "image_path": datasets.Value("string"),
        "text_a": datasets.Value("string"),
        "text_b": datasets.Value("string"),
        "votes_a": datasets.Value("int32"),
        "votes_b": datasets.Value("int32"),
        "references": datasets.Sequence(datasets.Value("string")),
    })
    DEFAULT_COUNTS = {"test": src.PASCAL50S_COUNTS["test"], "per_category": src.PASCAL50S_COUNTS["per_category"],
                      "votes_per_pair": src.PASCAL50S_COUNTS["votes_per_pair"]}

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        from scipy.io import loadmat

        pairs_mat = loadmat(str(find_file(source, src.PASCAL50S_FILES["pairs"], "the Pascal-50S pairs")))
        votes_mat = loadmat(str(find_file(source, src.PASCAL50S_FILES["votes"], "the Pascal-50S votes")))
        for mat, key in ((pairs_mat, "new_input"), (pairs_mat, "category"), (votes_mat, "triplets")):
            if key not in mat:
                raise DataError(f"Pascal-50S: field {key!r} is missing from the .mat files.")
        pairs = [flatten(p) for p in np.asarray(pairs_mat["new_input"]).reshape(-1)]
        categories = [int(c) for c in np.asarray(pairs_mat["category"]).reshape(-1)]
        triplets = [flatten(t) for t in np.asarray(votes_mat["triplets"]).reshape(-1)]
        if len(categories) != len(pairs):
            raise DataError(f"Pascal-50S: {len(pairs)} pairs but {len(categories)} categories.")
        per_pair = self.expected_counts.get("votes_per_pair") or (len(triplets) // max(len(pairs), 1))
        check_count("Pascal-50S votes", len(triplets), per_pair * len(pairs))
        images = image_folder(source, src.PASCAL50S_FILES["images"])
        rows = []
        for i, (pair, category) in enumerate(zip(pairs, categories)):
            if len(pair) != 3 or category not in CATEGORIES:
                raise DataError(f"Pascal-50S pair {i}: expected (image, caption A, caption B) and category 1-4, got {pair!r}, {category!r}.")
            image_name, text_a, text_b = (squash(x) for x in pair)
            votes = {text_a: 0, text_b: 0}
            refs = []
            for j in range(i * per_pair, (i + 1) * per_pair):
                if len(triplets[j]) != 4:
                    raise DataError(f"Pascal-50S vote {j}: expected (reference, B, C, winner), got {triplets[j]!r}.")
                ref, cand_b, cand_c, winner = triplets[j]
                chosen = squash(cand_b if int(winner) == 1 else cand_c)
                if chosen not in votes:
                    raise DataError(f"Pascal-50S vote {j} is for {chosen[:40]!r}, not a caption of pair {i}: files out of sync.")
                votes[chosen] += 1
                refs.append(squash(ref))
            rows.append({"id": f"pascal50s-{i:04d}", "category": CATEGORIES[category],
                         "image": self.image(images / image_name) if images else None,
                         "image_path": f"{src.PASCAL50S_FILES['images']}/{image_name}",
                         "text_a": text_a, "text_b": text_b, "votes_a": votes[text_a], "votes_b": votes[text_b],
                         "references": refs})
        per_category = self.expected_counts.get("per_category")
        if per_category is not None:
            for code, label in CATEGORIES.items():
                check_count(f"Pascal-50S {label} pairs", sum(c == code for c in categories), per_category)
        return {"test": rows}


def flatten(value: Any) -> list[Any]:
    """Strings and numbers inside MATLAB cell/struct arrays as loaded by scipy, in order."""
    if isinstance(value, (str, bytes)):
        return [value if isinstance(value, str) else value.decode("utf-8")]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "US":
            return [str(v) for v in value.reshape(-1)]
        if value.dtype.kind in "iuf" and value.size == 1:
            number = value.reshape(-1)[0].item()
            return [int(number) if float(number).is_integer() else number]
        if value.dtype.names:  # struct array
            return [x for rec in value.reshape(-1) for name in value.dtype.names for x in flatten(rec[name])]
        return [x for v in value.reshape(-1) for x in flatten(v)]
    if isinstance(value, np.void) and value.dtype.names:
        return [x for name in value.dtype.names for x in flatten(value[name])]
    if isinstance(value, (np.integer, int)):
        return [int(value)]
    if isinstance(value, (np.floating, float)):
        return [int(value) if float(value).is_integer() else float(value)]
    return [value]


def to_human_judgments(dataset: Any) -> HumanJudgments:
    items, pairs = [], []
    for _split, row in rows_of(dataset):
        a, b = f"{row['id']}-a", f"{row['id']}-b"
        for item_id, text in ((a, row["text_a"]), (b, row["text_b"])):
            items.append({"id": item_id, "task": "ic", "text": text, "image": row["image"],
                          "references": list(row["references"])})
        total = max(row["votes_a"] + row["votes_b"], 1)
        better, worse, share = (a, b, row["votes_a"]) if row["votes_a"] >= row["votes_b"] else (b, a, row["votes_b"])
        pairs.append({"task": "ic", "better": better, "worse": worse, "kind": "pascal50s",
                      "category": row["category"], "weight": share / total})
    return HumanJudgments(name="pascal50s", items=items, pairs=pairs, correlation="accuracy")
