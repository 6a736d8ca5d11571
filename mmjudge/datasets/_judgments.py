"""From a benchmark's rows to the meta-evaluation's :class:`~mmjudge.human_judgments.HumanJudgments`.

Each benchmark module has a ``to_human_judgments(dataset)``; :func:`human_judgments` finds it by name,
and the caption sets share :func:`caption_judgments`.
"""

from __future__ import annotations

from typing import Any, Optional

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


def caption_judgments(name: str, dataset: Any, correlation: str, per_rating: bool,
                      criteria: Optional[list[str]] = None) -> HumanJudgments:
    """Shared by the caption sets: one item per row; one rating per human judgment (``per_rating``,
    the Flickr8k protocol) or one rating per row and criterion (``criteria``, e.g. THumB)."""
    items, ratings = [], []
    for _split, row in rows_of(dataset):
        items.append({"id": row["id"], "task": "ic", "text": row["text"], "image": row.get("image"),
                      "references": list(row.get("references") or [])})
        if criteria:
            for criterion in criteria:
                ratings.append({"id": row["id"], "task": "ic", "criterion": criterion,
                                "score": float(row[criterion]), "annotator": None})
        elif per_rating:
            for k, value in enumerate(row["ratings"]):
                ratings.append({"id": row["id"], "task": "ic", "criterion": "overall", "score": float(value),
                                "annotator": str(k) if len(row["ratings"]) > 1 else None})
        else:
            ratings.append({"id": row["id"], "task": "ic", "criterion": "overall", "score": float(row["score"]),
                            "annotator": None})
    return HumanJudgments(name=name, items=items, ratings=ratings, correlation=correlation,
                          criteria=list(criteria or []))
