"""FOIL (Shekhar et al. 2017): MSCOCO captions with one word swapped for a wrong but plausible one.
One row per (original, foil) pair; a metric should score the original higher.

>>> from mmjudge.datasets.foil import FOIL
>>> FOIL.PRETTY_NAME
'FOIL'
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, find_file, image_folder, squash
from mmjudge.datasets._judgments import rows_of
from mmjudge.human_judgments import HumanJudgments


class FOIL(BenchmarkBuilder):
    PRETTY_NAME = "FOIL"
    DESCRIPTION = (
        "FOIL-COCO test set: each foil caption replaces one word of an MSCOCO caption with a wrong but "
        "plausible one; pairs (original, foil) test whether a metric prefers the correct caption. References "
        "are the image's other MSCOCO captions (the original excluded), as in CLIPScore's 4-reference setting."
    )
    CITATION = """@inproceedings{shekhar2017foil,
  title={FOIL it! Find One mismatch between Image and Language caption},
  author={Shekhar, Ravi and Pezzelle, Sandro and Klimovich, Yauhen and Herbelot, Aur{\\'e}lie and Nabi, Moin and Sangineto, Enver and Bernardi, Raffaella},
  booktitle={ACL}, pages={255--265}, year={2017}
}"""
    HOMEPAGE = src.FOIL_HOMEPAGE
    LICENSE = "see the FOIL page; MSCOCO annotations CC BY 4.0"
    SOURCE_FILES = "`foilv1.0_test_2017.json`, MSCOCO `captions_val2014.json` (for references, optional); images in `val2014/` (optional)"
    KNOWN_ISSUES = (
        "Without captions_val2014.json the references column is empty (reference-based metrics cannot run).",
        "No upstream count could be verified here; every foil must have its original caption, or loading fails.",
    )
    FEATURES = datasets.Features({
        "id": datasets.Value("string"),
        "image_id": datasets.Value("int64"),
        "image": datasets.Image(),
        "image_path": datasets.Value("string"),
        "original": datasets.Value("string"),
        "foil": datasets.Value("string"),
        "target_word": datasets.Value("string"),
        "foil_word": datasets.Value("string"),
        "references": datasets.Sequence(datasets.Value("string")),
    })

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        foil_path = find_file(source, src.FOIL_FILES["foil"], "the FOIL test annotations")
        annotations = _load(foil_path).get("annotations")
        if not isinstance(annotations, list) or not annotations:
            raise DataError(f"{foil_path.name}: no 'annotations' list.")
        refs: dict[int, list[str]] = defaultdict(list)
        try:
            coco = _load(find_file(source, src.FOIL_FILES["coco_captions"], "MSCOCO captions"))
            for ann in coco["annotations"]:
                refs[int(ann["image_id"])].append(squash(ann["caption"]))
        except DataError as err:
            if "Expected" not in str(err):
                raise
        originals: dict[int, dict] = {}
        foils = []
        for ann in annotations:
            if ann.get("foil"):
                foils.append(ann)
            else:
                originals[int(ann["id"])] = ann
        images = image_folder(source, src.FOIL_FILES["images"])
        rows = []
        for n, ann in enumerate(foils):
            original = originals.get(int(ann["id"]))
            if original is None:
                raise DataError(f"{foil_path.name}: foil caption {ann.get('foil_id', n)!r} has no original caption with id {ann['id']!r}.")
            image_id = int(ann["image_id"])
            name = src.FOIL_IMAGE_NAME.format(image_id)
            text = squash(original["caption"])
            rows.append({"id": f"foil-{ann.get('foil_id', n)}", "image_id": image_id,
                         "image": self.image(images / name) if images else None,
                         "image_path": f"{src.FOIL_FILES['images']}/{name}", "original": text,
                         "foil": squash(ann["caption"]), "target_word": str(ann.get("target_word", "")),
                         "foil_word": str(ann.get("foil_word", "")),
                         "references": [r for r in refs.get(image_id, []) if r != text]})
        return {"test": rows}


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path.name} is not valid JSON ({err}); truncated download?") from None


def to_human_judgments(dataset: Any) -> HumanJudgments:
    items, pairs = [], []
    for _split, row in rows_of(dataset):
        good, bad = f"{row['id']}-orig", f"{row['id']}-foil"
        for item_id, text in ((good, row["original"]), (bad, row["foil"])):
            items.append({"id": item_id, "task": "ic", "text": text, "image": row["image"],
                          "references": list(row["references"])})
        pairs.append({"task": "ic", "better": good, "worse": bad, "kind": "foil", "weight": 1.0})
    return HumanJudgments(name="foil", items=items, pairs=pairs, correlation="accuracy")
