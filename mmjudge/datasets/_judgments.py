"""From a benchmark's rows to the meta-evaluation's :class:`~mmjudge.human_judgments.HumanJudgments`.

Each benchmark module has a ``to_human_judgments(dataset)``; :func:`human_judgments` finds it by name,
and the caption sets share :func:`caption_judgments`. :func:`write_judgments` writes any benchmark as a
judgments file (``mmjudge dataset judgments``), with each item's image as a path under ``data_dir``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmjudge.datasets._loading import DATASETS, load_dataset
from mmjudge.human_judgments import HumanJudgments


def human_judgments(name: str, dataset: Any = None, **load_kwargs: Any) -> HumanJudgments:
    """The benchmark ``name`` as :class:`HumanJudgments` (loading it with ``load_kwargs`` unless given)."""
    import importlib

    module = importlib.import_module(DATASETS.module_name(name))
    if dataset is None:
        dataset = load_dataset(name, **load_kwargs)
    return module.to_human_judgments(dataset)


def rows_of(dataset: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(split, row)`` for a ``Dataset`` or every split of a ``DatasetDict``, images left undecoded
    as {bytes, path} dicts would be heavy; they are decoded lazily by ``datasets`` (PIL) on access."""
    import datasets

    if isinstance(dataset, datasets.DatasetDict):
        return [(split, row) for split, ds in dataset.items() for row in ds]
    return [(str(dataset.split or "test"), row) for row in dataset]


def caption_item(row: Mapping[str, Any], item_id: str, text: str) -> dict[str, Any]:
    """One image-captioning item of a benchmark row: ``text`` about the row's image, with its references.

    >>> caption_item({"image": None, "image_path": "a.jpg", "references": ("a dog",)}, "7-a", "a dog runs")
    {'id': '7-a', 'task': 'ic', 'text': 'a dog runs', 'image': None, 'image_path': 'a.jpg', 'references': ['a dog']}
    """
    return {
        "id": item_id,
        "task": "ic",
        "text": text,
        "image": row.get("image"),
        "image_path": row.get("image_path"),
        "references": list(row.get("references") or []),
    }


def caption_judgments(
    name: str, dataset: Any, correlation: str, per_rating: bool, criteria: list[str] | None = None
) -> HumanJudgments:
    """Shared by the caption sets: one item per row; one rating per human judgment (``per_rating``,
    the Flickr8k protocol) or one rating per row and criterion (``criteria``, e.g. THumB)."""
    items, ratings = [], []
    for _split, row in rows_of(dataset):
        items.append(caption_item(row, row["id"], row["text"]))
        if criteria:
            for criterion in criteria:
                ratings.append(
                    {
                        "id": row["id"],
                        "task": "ic",
                        "criterion": criterion,
                        "score": float(row[criterion]),
                        "annotator": None,
                    }
                )
        elif per_rating:
            for k, value in enumerate(row["ratings"]):
                ratings.append(
                    {
                        "id": row["id"],
                        "task": "ic",
                        "criterion": "overall",
                        "score": float(value),
                        "annotator": str(k) if len(row["ratings"]) > 1 else None,
                    }
                )
        else:
            ratings.append(
                {"id": row["id"], "task": "ic", "criterion": "overall", "score": float(row["score"]), "annotator": None}
            )
    return HumanJudgments(
        name=name, items=items, ratings=ratings, correlation=correlation, criteria=list(criteria or [])
    )


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


def write_judgments(
    name: str, out: str | os.PathLike, data_dir: str | None = None, dataset: Any = None, **load_kwargs: Any
) -> HumanJudgments:
    """Write benchmark ``name`` as a judgments file (:meth:`HumanJudgments.save`) and return what was written.

    Images are not copied: an item's ``image`` becomes the absolute path of its file under ``data_dir``
    (found at its ``image_path``, else by file name anywhere below), or ``null`` when the folder has no
    such file (Hub-only sets, or no image folder).
    """
    import datasets

    if dataset is None:
        dataset = load_dataset(name, data_dir=data_dir, **load_kwargs)
    # The images are only located, not read: keep them undecoded.
    undecoded = {
        split: ds.cast_column("image", datasets.Image(decode=False)) if "image" in ds.column_names else ds
        for split, ds in (dataset.items() if isinstance(dataset, datasets.DatasetDict) else [(None, dataset)])
    }
    dataset = datasets.DatasetDict(undecoded) if None not in undecoded else undecoded[None]
    hj = human_judgments(name, dataset)
    locate = _image_files(Path(os.path.expanduser(data_dir)) if data_dir else None)
    for item in hj.items:
        item["image"] = locate(item.get("image_path"))
    hj.save(out)
    return hj


def _image_files(root: Path | None):
    """``image_path -> absolute path or None`` under ``root``; the folder is listed once, when first needed."""
    by_name: dict[str, str] | None = None

    def locate(image_path: str | None) -> str | None:
        nonlocal by_name
        if root is None or not image_path:
            return None
        direct = root / image_path
        if direct.is_file():
            return str(direct.resolve())
        if by_name is None:
            by_name = {}
            for folder, _dirs, files in os.walk(root):
                for file in files:
                    if file.lower().endswith(IMAGE_SUFFIXES):
                        by_name.setdefault(file, str((Path(folder) / file).resolve()))
        return by_name.get(Path(image_path).name)

    return locate
