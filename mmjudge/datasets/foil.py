"""FOIL (Shekhar et al. 2017): MSCOCO captions with one word swapped for a wrong but plausible one.
One row per (original, foil) pair; a metric should score the original higher. Read from the release's
``foilv1.0_test_2017.json`` or from FLEUR's ``foil.json`` (layout assumed, see ``_sources.FOIL_JSON``).

>>> from mmjudge.datasets.foil import FOIL
>>> FOIL.PRETTY_NAME
'FOIL'
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import (
    BenchmarkBuilder,
    DataError,
    ImageLocator,
    content_ids,
    default_configs,
    json_kind,
    load_json,
    squash,
)
from mmjudge.datasets._judgments import caption_item, rows_of
from mmjudge.human_judgments import HumanJudgments

JSON = src.FOIL_JSON


class FOIL(BenchmarkBuilder):
    # 1.1.0: the same rows from the original release or the preprocessed JSON (ids from content)
    BUILDER_CONFIGS = default_configs("1.1.0")
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
}"""  # noqa: E501 - the card's citation, as published
    HOMEPAGE = src.FOIL_HOMEPAGE
    LICENSE = "see the FOIL page; MSCOCO annotations CC BY 4.0"
    SOURCE_FILES = (
        "`foilv1.0_test_2017.json` or `foil.json`; MSCOCO `captions_val2014.json` (for references, "
        "optional); images in `val2014/` (optional)"
    )
    KNOWN_ISSUES = (
        "Without references in the file or captions_val2014.json the references column is empty "
        "(reference-based metrics cannot run).",
        "No upstream count could be verified here; every foil must have its original caption, or loading fails.",
        "foil.json (FLEUR's annotations/) is in no public mirror: its layout is ASSUMED to be pascal_50s.json's "
        "({category: [{image, captions, label, references}]}, label = the correct caption), the shape FLEUR's "
        "pair-accuracy script reads; target_word / foil_word are then read from where the captions differ.",
        "Ids come from (image, original, foil), so both layouts give the same ids; a repeated pair gets `-2`.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image_id": datasets.Value("int64"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "original": datasets.Value("string"),
            "foil": datasets.Value("string"),
            "target_word": datasets.Value("string"),
            "foil_word": datasets.Value("string"),
            "references": datasets.Sequence(datasets.Value("string")),
        }
    )

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        layout, paths = self.detect_layout(source)
        if layout.name == "original":
            pairs = self.read_original(paths[src.FOIL_FILES["foil"]])
        else:
            pairs = self.read_json(paths[JSON["file"]])
        coco_refs: dict[int, list[str]] = defaultdict(list)
        if src.FOIL_FILES["coco_captions"] in paths:
            captions = paths[src.FOIL_FILES["coco_captions"]]
            for ann in _annotations(captions, ("image_id", "caption"), "MSCOCO's captions file"):
                coco_refs[int(ann["image_id"])].append(squash(ann["caption"]))
        locate = ImageLocator(source, (src.FOIL_FILES["images"],), "MSCOCO val2014 images")
        ids = content_ids("foil", [(p["image_id"], p["original"], p["foil"]) for p in pairs])
        rows = []
        for row_id, pair in zip(ids, pairs):
            name = src.FOIL_IMAGE_NAME.format(pair["image_id"])
            refs = pair.pop("references")
            if refs is None:  # not in the file: the image's other MSCOCO captions, the original excluded
                refs = [r for r in coco_refs.get(pair["image_id"], []) if r != pair["original"]]
            rows.append(
                {
                    "id": row_id,
                    **pair,
                    "references": refs,
                    "image": self.image(locate(name)),
                    "image_path": f"{src.FOIL_FILES['images']}/{name}",
                }
            )
        return {"test": rows}

    def read_original(self, path: Path) -> list[dict[str, Any]]:
        annotations = _annotations(path, ("id", "image_id", "caption"), "FOIL's release")
        if not annotations:
            raise DataError(f"{path.name}: no 'annotations' list.")
        originals: dict[int, dict] = {}
        foils = []
        for ann in annotations:
            if ann.get("foil"):
                foils.append(ann)
            else:
                originals[int(ann["id"])] = ann
        pairs = []
        for n, ann in enumerate(foils):
            original = originals.get(int(ann["id"]))
            if original is None:
                raise DataError(
                    f"{path.name}: foil caption {ann.get('foil_id', n)!r} has no original caption with id "
                    f"{ann['id']!r}."
                )
            pairs.append(
                {
                    "image_id": int(ann["image_id"]),
                    "original": squash(original["caption"]),
                    "foil": squash(ann["caption"]),
                    "target_word": str(ann.get("target_word", "")),
                    "foil_word": str(ann.get("foil_word", "")),
                    "references": None,
                }
            )
        return pairs

    def read_json(self, path: Path) -> list[dict[str, Any]]:
        data = load_json(path)
        groups = list(data.values()) if isinstance(data, dict) else [data]
        if not data or not all(isinstance(g, list) for g in groups):
            raise DataError(
                f"{path.name}: expected {{category: [pairs]}} (the pascal_50s.json shape), but got "
                f"{type(data).__name__}."
            )
        pairs = []
        for group_name, group in zip(data if isinstance(data, dict) else ["pairs"], groups):
            for n, sample in enumerate(group):
                where = f"{path.name}: {group_name}[{n}]"
                captions = sample.get(JSON["captions"]) if isinstance(sample, dict) else None
                label = sample.get(JSON["label"]) if isinstance(sample, dict) else None
                if (
                    not isinstance(captions, list)
                    or len(captions) != 2
                    or label not in (0, 1)
                    or isinstance(label, bool)
                ):
                    raise DataError(
                        f"{where}: expected {JSON['image']!r}, two {JSON['captions']!r} and {JSON['label']!r} "
                        f"0 or 1 (the correct caption), but got {str(sample)[:80]!r}."
                    )
                original, foil = squash(captions[label]), squash(captions[1 - label])
                target, foil_word = swapped_words(original, foil)
                refs = sample.get(JSON["references"])
                pairs.append(
                    {
                        "image_id": coco_image_id(str(sample.get(JSON["image"], "")), where),
                        "original": original,
                        "foil": foil,
                        "target_word": target,
                        "foil_word": foil_word,
                        "references": [squash(r) for r in refs] if isinstance(refs, list) else None,
                    }
                )
        return pairs


def coco_image_id(image: str, where: str) -> int:
    """The MSCOCO image id in a file name such as ``val2014/COCO_val2014_000000123456.jpg``.

    >>> coco_image_id("val2014/COCO_val2014_000000123456.jpg", "x")
    123456
    """
    digits = re.findall(r"\d+", Path(image).stem)
    if not digits:
        raise DataError(f"{where}: expected an MSCOCO image file name (COCO_val2014_<id>.jpg), but got {image!r}.")
    return int(digits[-1])


def swapped_words(original: str, foil: str) -> tuple[str, str]:
    """The words a foil caption replaced (FOIL's ``target_word`` and ``foil_word``), read from the one span
    where the two captions differ; empty when they differ in more than one place.

    >>> swapped_words("A dog on the grass", "A cat on the grass")
    ('dog', 'cat')
    >>> swapped_words("A teddy bear on a bed", "A dog on a bed")
    ('teddy bear', 'dog')
    """
    a, b = original.split(), foil.split()
    changes = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(changes) != 1 or changes[0][0] != "replace":
        return "", ""
    _, i1, i2, j1, j2 = changes[0]
    return " ".join(a[i1:i2]), " ".join(b[j1:j2])


def to_human_judgments(dataset: Any) -> HumanJudgments:
    items, pairs = [], []
    for _split, row in rows_of(dataset):
        good, bad = f"{row['id']}-orig", f"{row['id']}-foil"
        items += [caption_item(row, good, row["original"]), caption_item(row, bad, row["foil"])]
        pairs.append({"task": "ic", "better": good, "worse": bad, "kind": "foil", "weight": 1.0})
    return HumanJudgments(name="foil", items=items, pairs=pairs, correlation="accuracy")


def _annotations(path: Path, keys: tuple[str, ...], what: str) -> list[dict]:
    """The ``annotations`` list of a COCO-style JSON file (``{"annotations": [{...}, …]}``), each entry checked
    to be an object with ``keys``: a file of another shape is one line naming it and what was expected."""
    data = load_json(path, dict, f'an object {{"annotations": [...]}} ({what})')
    annotations = data.get("annotations", [])
    if not isinstance(annotations, list):
        raise DataError(f"{path.name}: expected 'annotations' to be a list, but got {json_kind(annotations)}.")
    for n, ann in enumerate(annotations):
        if not isinstance(ann, dict) or any(k not in ann for k in keys):
            raise DataError(
                f"{path.name}: annotations[{n}]: expected an object with {', '.join(keys)}, but got {str(ann)[:80]!r}."
            )
    return annotations
