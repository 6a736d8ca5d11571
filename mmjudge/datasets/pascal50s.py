"""Pascal-50S (Vedantam et al. 2015): 4,000 caption pairs (1,000 each of HC, HI, HM, MM) for PASCAL
images, each judged by 48 workers against one of 50 reference sentences ("which caption is more similar
to the reference?"). One row per pair, read from the release's ``.mat`` files (vote counts, 48
references) or from ``pascal_50s.json`` (FLEUR's ``annotations/``: the preferred caption's index, 5
references); both give the same ids, ``label`` and preference pair.

>>> from mmjudge.datasets.pascal50s import flatten
>>> import numpy as np
>>> flatten(np.array([[np.array(["a.jpg"])], [np.array([[1]])]], dtype=object))
['a.jpg', 1]
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import (
    BenchmarkBuilder,
    DataError,
    ImageLocator,
    check_count,
    content_ids,
    default_configs,
    load_json,
    squash,
)
from mmjudge.datasets._judgments import caption_item, rows_of
from mmjudge.human_judgments import HumanJudgments

logger = logging.getLogger(__name__)
CATEGORIES = src.PASCAL50S_CATEGORIES
JSON = src.PASCAL50S_JSON


class Pascal50S(BenchmarkBuilder):
    # 1.1.0: the same rows from the original release or the preprocessed JSON (ids from content)
    BUILDER_CONFIGS = default_configs("1.1.0")
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
    SOURCE_FILES = (
        "`pair_pascal.mat` and `consensus_pascal.mat` (pyCIDErConsensus), or `pascal_50s.json`; "
        "VOC images in `JPEGImages/` (optional)"
    )
    KNOWN_ISSUES = (
        "`label` is the caption humans preferred (0: text_a, 1: text_b). From the .mat files it is the majority of "
        "the 48 votes, and a 24–24 tie makes text_a the preferred caption (public code breaks ties at random, so "
        "accuracies differ slightly between papers; the number of ties is logged). pascal_50s.json carries the "
        "label its authors chose and no votes (votes_a / votes_b are then null).",
        "References: the 48 sentences the workers compared against (.mat), or the 5 of them that pascal_50s.json "
        "keeps — reference-based metrics score the two layouts differently.",
        "Ids come from (category, image, text_a, text_b), so both layouts give the same ids; pascal_50s.json "
        "repeats two MM pairs, whose second copies get `-2`.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "category": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "text_a": datasets.Value("string"),
            "text_b": datasets.Value("string"),
            "label": datasets.Value("int32"),
            "votes_a": datasets.Value("int32"),
            "votes_b": datasets.Value("int32"),
            "references": datasets.Sequence(datasets.Value("string")),
        }
    )
    DEFAULT_COUNTS = {
        "test": src.PASCAL50S_COUNTS["test"],
        "per_category": src.PASCAL50S_COUNTS["per_category"],
        "votes_per_pair": src.PASCAL50S_COUNTS["votes_per_pair"],
    }

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        layout, paths = self.detect_layout(source)
        if layout.name == "original":
            pairs = self.read_mat(paths[src.PASCAL50S_FILES["pairs"]], paths[src.PASCAL50S_FILES["votes"]])
        else:
            pairs = self.read_json(paths[JSON["file"]])
        per_category = self.expected_counts.get("per_category")
        if per_category is not None:
            for label in CATEGORIES.values():
                check_count(f"Pascal-50S {label} pairs", sum(p["category"] == label for p in pairs), per_category)
        # One order for both layouts: by category (HC, HI, HM, MM), each in its file's order.
        locate = ImageLocator(source, src.PASCAL50S_IMAGE_FOLDERS, "Pascal VOC images")
        rows = []
        for label in CATEGORIES.values():
            mine = [p for p in pairs if p["category"] == label]
            ids = content_ids(f"pascal50s-{label.lower()}", [(p["image_name"], p["text_a"], p["text_b"]) for p in mine])
            for row_id, pair in zip(ids, mine):
                image_name = pair.pop("image_name")
                rows.append(
                    {
                        "id": row_id,
                        **pair,
                        "image": self.image(locate(image_name)),
                        "image_path": f"{src.PASCAL50S_FILES['images']}/{image_name}",
                    }
                )
        return {"test": rows}

    def read_mat(self, pairs_path: Path, votes_path: Path) -> list[dict[str, Any]]:
        from scipy.io import loadmat

        pairs_mat, votes_mat = loadmat(str(pairs_path)), loadmat(str(votes_path))
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
        out, ties = [], 0
        for i, (pair, category) in enumerate(zip(pairs, categories)):
            if len(pair) != 3 or category not in CATEGORIES:
                raise DataError(
                    f"Pascal-50S pair {i}: expected (image, caption A, caption B) and category 1-4, got {pair!r}, "
                    f"{category!r}."
                )
            image_name, text_a, text_b = (squash(x) for x in pair)
            votes = {text_a: 0, text_b: 0}
            refs = []
            for j in range(i * per_pair, (i + 1) * per_pair):
                if len(triplets[j]) != 4:
                    raise DataError(f"Pascal-50S vote {j}: expected (reference, B, C, winner), got {triplets[j]!r}.")
                ref, cand_b, cand_c, winner = triplets[j]
                chosen = squash(cand_b if int(winner) == 1 else cand_c)
                if chosen not in votes:
                    raise DataError(
                        f"Pascal-50S vote {j} is for {chosen[:40]!r}, not a caption of pair {i}: files out of sync."
                    )
                votes[chosen] += 1
                refs.append(squash(ref))
            ties += votes[text_a] == votes[text_b]
            out.append(
                {
                    "category": CATEGORIES[category],
                    "image_name": image_name,
                    "text_a": text_a,
                    "text_b": text_b,
                    "label": preferred(votes[text_a], votes[text_b]),
                    "votes_a": votes[text_a],
                    "votes_b": votes[text_b],
                    "references": refs,
                }
            )
        if ties:
            logger.warning(
                "Pascal-50S: %d pairs have as many votes for each caption; text_a is taken as preferred.", ties
            )
        return out

    def read_json(self, path: Path) -> list[dict[str, Any]]:
        data = load_json(path)
        names = list(CATEGORIES.values())
        if not isinstance(data, dict) or not data or any(k not in names for k in data):
            got = list(data) if isinstance(data, dict) else type(data).__name__
            raise DataError(f"{path.name}: expected {{category: [pairs]}} with categories {names}, but got {got}.")
        out = []
        for category in names:
            for n, sample in enumerate(data.get(category, [])):
                where = f"{path.name}: {category}[{n}]"
                captions = sample.get(JSON["captions"]) if isinstance(sample, dict) else None
                if not isinstance(captions, list) or len(captions) != 2 or JSON["image"] not in sample:
                    raise DataError(
                        f"{where}: expected {JSON['image']!r} and two {JSON['captions']!r}, "
                        f"but got {str(sample)[:80]!r}."
                    )
                label = sample.get(JSON["label"])
                if label not in (0, 1) or isinstance(label, bool):
                    raise DataError(
                        f"{where}: expected {JSON['label']!r} 0 or 1 (the index of the preferred caption), "
                        f"but got {label!r}."
                    )
                out.append(
                    {
                        "category": category,
                        "image_name": Path(str(sample[JSON["image"]])).name,
                        "text_a": squash(captions[0]),
                        "text_b": squash(captions[1]),
                        "label": int(label),
                        "votes_a": None,
                        "votes_b": None,
                        "references": [squash(r) for r in sample.get(JSON["references"]) or []],
                    }
                )
        return out


def preferred(votes_a: int, votes_b: int) -> int:
    """The human label of a pair from its votes: 0 (caption A) or 1 (caption B); a tie counts for A.

    >>> preferred(30, 18), preferred(18, 30), preferred(24, 24)
    (0, 1, 0)
    """
    return 1 if votes_b > votes_a else 0


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
    """Two items per pair (``<id>-a``, ``<id>-b``) and one preference pair from ``label`` — the same from
    either layout."""
    items, pairs = [], []
    for _split, row in rows_of(dataset):
        a, b = f"{row['id']}-a", f"{row['id']}-b"
        items += [caption_item(row, a, row["text_a"]), caption_item(row, b, row["text_b"])]
        better, worse = (a, b) if row["label"] == 0 else (b, a)
        pairs.append({"task": "ic", "better": better, "worse": worse, "kind": "pascal50s", "category": row["category"]})
    return HumanJudgments(name="pascal50s", items=items, pairs=pairs, correlation="accuracy")
