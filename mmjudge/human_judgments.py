"""Human judgments in one shape, shared by the benchmark loaders and the meta-evaluation.

A benchmark (:mod:`mmjudge.datasets`) turns its rows into :class:`HumanJudgments`; the meta-evaluation
(:mod:`mmjudge.metaeval`) joins a metric's per-item scores to it by ``id``. Keeping this contract in
one small module lets either side change without touching the other.

>>> hj = HumanJudgments(
...     name="toy",
...     items=[{"id": "a", "task": "ic", "text": "A dog."}, {"id": "b", "task": "ic", "text": "A cat."}],
...     ratings=[{"id": "a", "task": "ic", "criterion": "overall", "score": 4.0, "annotator": "0"}],
... )
>>> hj.ids()
['a', 'b']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class HumanJudgments:
    """Everything a meta-evaluation needs from a benchmark.

    Attributes:
        name: benchmark name (``"mmhe"``, ``"flickr8k_expert"``, …).
        items: one dict per scored item with a unique string ``id`` and what a metric needs to score it
            on the fly: ``task``, ``text``, and where available ``image`` (PIL / path / bytes),
            ``question``, ``box`` (COCO x, y, w, h), ``references`` (list of str).
        ratings: one dict per human judgment: ``id`` (item), ``task``, ``criterion`` (``"overall"`` or a
            criterion name such as ``"correctness"``), ``score`` (float), ``annotator`` (str or None).
            The Flickr8k "one row per judgment" protocol is exactly this list.
        choices: best-of-N choices: ``group`` (instance id), ``task``, ``candidates`` (list of item ids),
            ``annotator``, ``best`` (item id chosen). MMHE has three annotators per instance; how
            they are combined into pairs is the meta-evaluation's option, not the loader's.
        pairs: ready-made preference pairs: ``task``, ``better`` and ``worse`` (item ids), ``kind``
            (``"pascal50s"``, ``"foil"``, …), optional ``category`` (e.g. Pascal-50S HC/HI/HM/MM) and
            ``weight`` (e.g. the share of votes).
        correlation: the τ variant papers report for this benchmark (``"tau_c"`` or ``"tau_b"``).
        criteria: criteria with human scores (MMHE: the five HarmonicEval criteria).
    """

    name: str
    items: list[dict[str, Any]]
    ratings: list[dict[str, Any]] = field(default_factory=list)
    choices: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    correlation: str = "tau_c"
    criteria: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def ids(self) -> list[str]:
        return [item["id"] for item in self.items]

    def item(self, item_id: str) -> Optional[dict[str, Any]]:
        for it in self.items:
            if it["id"] == item_id:
                return it
        return None
