"""Pairwise accuracy: does the metric score the human-preferred text strictly higher?

Preference pairs come from best-of-N choices (MMHE's best-of-three triplets, :func:`pairs_from_choices`)
or ready-made pairs (Pascal-50S, FOIL: ``HumanJudgments.pairs``). A tie in the metric's scores is
wrong by default (the Pascal-50S convention) or half right with ``ties="half"``.

>>> choices = [
...     {"group": "g1", "task": "ic", "candidates": ["a", "b", "c"], "annotator": str(k), "best": best}
...     for k, best in enumerate(["a", "a", "b"])
... ]
>>> [(p["better"], p["worse"]) for p in pairs_from_choices(choices, best_of="majority")]
[('a', 'b'), ('a', 'c')]
>>> len(pairs_from_choices(choices, best_of="unanimous")), len(pairs_from_choices(choices, best_of="per_annotator"))
(0, 6)
>>> pair_outcomes([("a", "b"), ("a", "c"), ("b", "d")], {"a": 0.9, "b": 0.1, "c": 0.9, "d": float("nan")}).tolist()
[1.0, 0.0, nan]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

BEST_OF = ("majority", "unanimous", "per_annotator")
"""How best-of-N choices of several annotators become pairs:

- ``majority``: the candidate chosen by more than half of the annotators (≥ 2 of 3) is the best;
  a group without such a candidate is skipped.
- ``unanimous``: only groups where every annotator chose the same candidate yield pairs.
- ``per_annotator``: each annotator's choice yields its own best-vs-other pairs (3 annotators of a
  triplet give 6 pairs; contradicting pairs are both kept).
"""

TIES = ("wrong", "half")


def check_option(value: str, allowed: Sequence[str], name: str) -> str:
    if value not in allowed:
        raise ValueError(f"Expected argument `{name}` to be one of {list(allowed)}, but got {value!r}.")
    return value


def pairs_from_choices(choices: Iterable[Mapping[str, Any]], best_of: str = "majority") -> list[dict[str, Any]]:
    """Best-vs-other preference pairs from best-of-N choices (``HumanJudgments.choices`` rows).

    Each returned pair has ``task``, ``group``, ``criterion`` (``"overall"`` unless the choice names one),
    ``better``, ``worse``, ``kind="best_of_n"``. Choices are grouped by (group, criterion); groups keep their
    first-seen order; within a group, candidates keep their listed order.

    Raises:
        ValueError: unknown ``best_of``; a group whose rows disagree on the candidates, or whose
            ``best`` is not one of them; one annotator choosing twice in a group.
    """
    check_option(best_of, BEST_OF, "best_of")
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for n, row in enumerate(choices):
        for key in ("group", "candidates", "best"):
            if key not in row:
                raise ValueError(f"choices[{n}]: missing key {key!r}.")
        groups.setdefault((str(row["group"]), str(row.get("criterion") or "overall")), []).append(row)
    pairs: list[dict[str, Any]] = []
    for (group, criterion), rows in groups.items():
        candidates = [str(c) for c in rows[0]["candidates"]]
        annotators = [r.get("annotator") for r in rows]
        if None not in annotators and len(set(annotators)) != len(annotators):
            raise ValueError(f"choices of group {group!r}: an annotator chose more than once ({annotators}).")
        for r in rows:
            if [str(c) for c in r["candidates"]] != candidates:
                raise ValueError(f"choices of group {group!r}: rows list different candidates.")
            if str(r["best"]) not in candidates:
                raise ValueError(f"choices of group {group!r}: best {r['best']!r} is not one of {candidates}.")
        task = rows[0].get("task", "")
        if best_of == "per_annotator":
            winners = [str(r["best"]) for r in rows]
        else:
            votes = Counter(str(r["best"]) for r in rows)
            top, count = votes.most_common(1)[0]
            needed = len(rows) if best_of == "unanimous" else len(rows) // 2 + 1
            winners = [top] if count >= needed else []
        for winner in winners:
            for other in candidates:
                if other != winner:
                    pairs.append(
                        {
                            "task": task,
                            "group": group,
                            "criterion": criterion,
                            "better": winner,
                            "worse": other,
                            "kind": "best_of_n",
                        }
                    )
    return pairs


def pair_outcomes(pairs: Sequence[tuple[str, str]], scores: Mapping[str, float], ties: str = "wrong") -> np.ndarray:
    """1.0 where ``scores[better] > scores[worse]``, 0.0 where lower, and for equal scores 0.0
    (``ties="wrong"``) or 0.5 (``ties="half"``); NaN where a side has no score (a failed item, NaN), so
    the caller can leave the pair out.

    Raises:
        ValueError: unknown ``ties``, or a pair naming an id without a score.
    """
    check_option(ties, TIES, "ties")
    out = np.empty(len(pairs))
    tie_value = 0.5 if ties == "half" else 0.0
    for k, (better, worse) in enumerate(pairs):
        for item in (better, worse):
            if item not in scores:
                raise ValueError(f"pair {k} ({better!r} > {worse!r}): no score for id {item!r}.")
        a, b = scores[better], scores[worse]
        out[k] = np.nan if a != a or b != b else 1.0 if a > b else (tie_value if a == b else 0.0)  # x != x: NaN
    return out
