"""Rankings benchmarks on a card (MLLM-as-a-Judge's batch setting): three or four answers to one image
instruction and the human ranking of them, best first. The judge's ranking — a verdict file's, or one derived from
head-to-head comparisons — is scored by its normalised Levenshtein distance from the human's (lower is better).

**The distance.** The paper scores batch ranking by normalised Levenshtein distance; its authors publish no
scoring script, so this is our reading: the edit distance (insertions, deletions and substitutions, each 1) between
the two orders written as answer letters ("CDAB" against "CADB"), divided by their length (the number of answers):
0 is the human's order, 1 the most it can differ.

**The derived ranking** (a judge run; not the authors' batch prompt, which asks a judge to order every answer at
once): every two answers of a row are one head-to-head item, which the pairwise metric asks in both orders
(:class:`~mmjudge.metrics.harmonic_eval.pairwise.PairwiseHarmonicEval`, as for the pairs benchmarks); an answer's
wins are the sum of P(it ≻ the other) over its comparisons (P(j ≻ i) = 1 − P(i ≻ j)); answers are ranked by wins,
ties broken by the answer's index. A row with any comparison unanswered has no ranking (no answer).

>>> derived_ranking(3, {(0, 1): 0.2, (0, 2): 0.5, (1, 2): 0.9})   # wins: 0.7, 1.7, 0.6
[1, 0, 2]
>>> letters([2, 3, 0, 1]), levenshtein("CDAB", "CADB"), distance([2, 0, 3, 1], [2, 3, 0, 1])
('CDAB', 2, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.judge_card.benchmarks import JudgeBenchmark
from mmjudge.judge_card.measures import mean_figures, number

SEPARATOR = "::"  # a head-to-head item's id: <row id>::<i>-<j>


@dataclass(frozen=True)
class Ranking:
    """One human-ranked row as a card reads it: ``human`` the answers' indices best first, ``image`` a file path
    or ``None``, ``subsets`` the labels it is reported by (``original_dataset``)."""

    id: str
    image: str | None
    query: str | None
    responses: tuple[str, ...]
    human: tuple[int, ...]
    subsets: Mapping[str, str]
    task: str


def read_rankings(
    bench: JudgeBenchmark, data_dir: str | None, options: Mapping[str, Any], limit: int | None
) -> list[Ranking]:
    """The benchmark's ranked rows (the first ``limit``), images spilled to files so the rows hold paths."""
    import datasets

    from mmjudge.datasets import load_dataset
    from mmjudge.reproduce.scoring import with_image_paths

    kwargs = {"expected_counts": {}, **options}  # a partial copy is scored, its size shown as n
    if bench.config:
        kwargs.setdefault("config_name", bench.config)
    dataset = with_image_paths(load_dataset(bench.dataset, split=bench.split, data_dir=data_dir, **kwargs), data_dir)
    parts = list(dataset.values()) if isinstance(dataset, datasets.DatasetDict) else [dataset]
    out = []
    for row in (row for part in parts for row in part):  # one row at a time
        if limit is not None and len(out) >= limit:
            break
        if "ranking" not in row:
            raise ValueError(f"{bench.name}: the rows hold no human `ranking`; is this the batch configuration?")
        image = row.get("image")
        image = image.get("path") if isinstance(image, dict) else image
        out.append(
            Ranking(
                str(row["id"]),
                None if image is None else str(image),
                row.get("query"),
                tuple(str(r) for r in row["responses"]),
                tuple(int(k) for k in row["ranking"]),
                {k: str(row[k]) for k in bench.rules.subsets if row.get(k) not in (None, "")},
                bench.task,
            )
        )
    if not out:
        raise ValueError(f"{bench.name}: the data folder holds no ranked rows.")
    return out


def comparisons(n: int) -> list[tuple[int, int]]:
    """The head-to-head comparisons of ``n`` answers: every two, once (the metric asks each in both orders).

    >>> comparisons(3)
    [(0, 1), (0, 2), (1, 2)]
    """
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def head_to_head_items(rankings: Sequence[Ranking]) -> Iterator[dict[str, Any]]:
    """The items a judge run compares: for each row, every two answers (A = the lower index), id
    ``<row id>::<i>-<j>``."""
    for ranked in rankings:
        for i, j in comparisons(len(ranked.responses)):
            item: dict[str, Any] = {
                "id": f"{ranked.id}{SEPARATOR}{i}-{j}",
                "task": ranked.task,
                "text_a": ranked.responses[i],
                "text_b": ranked.responses[j],
            }
            if ranked.image is not None:
                item["image"] = ranked.image
            if ranked.query:
                item["question"] = ranked.query
            yield item


def derived_ranking(n: int, preferences: Mapping[tuple[int, int], float]) -> list[int] | None:
    """The answers' indices best first from P(i ≻ j) for every ``i < j`` (see the module); ``None`` when one is
    missing or NaN. Wins are compared to 9 decimals, so sums that differ only by rounding tie.

    >>> derived_ranking(3, {(0, 1): 0.5, (0, 2): 0.5, (1, 2): 0.5}), derived_ranking(2, {(0, 1): float("nan")})
    ([0, 1, 2], None)
    """
    wins = [0.0] * n
    for i, j in comparisons(n):
        p = preferences.get((i, j), math.nan)
        if p != p:
            return None
        wins[i] += p
        wins[j] += 1.0 - p
    return sorted(range(n), key=lambda k: (-round(wins[k], 9), k))


def judged_rankings(rankings: Sequence[Ranking], rows: Iterator[Mapping[str, Any]]) -> list[list[int] | None]:
    """Each row's derived ranking from a judge run's rows (joined by id; the overall preference; a failed
    comparison is missing)."""
    table = {str(row.get("id")): row for row in rows}
    out = []
    for ranked in rankings:
        found = {}
        for i, j in comparisons(len(ranked.responses)):
            row = table.get(f"{ranked.id}{SEPARATOR}{i}-{j}", {})
            found[(i, j)] = number(row.get("overall")) if not row.get("error") else math.nan
        out.append(derived_ranking(len(ranked.responses), found))
    return out


def verdict_rankings(
    rankings: Sequence[Ranking], verdicts: Mapping[str, Any], limit: int | None = None
) -> list[list[int] | None]:
    """Each row's ranking from a verdict file (read with ``sizes``, so every one orders the row's answers);
    ``None`` without one.

    Raises:
        ValueError: verdicts for ids the rows do not have (:func:`~.verdicts.check_known`).
    """
    from mmjudge.judge_card.verdicts import check_known

    check_known(verdicts, (r.id for r in rankings), limit)
    return [verdicts.get(r.id) for r in rankings]


def letters(ranking: Sequence[int]) -> str:
    """A ranking as upstream writes it: answer letters best first."""
    return "".join(chr(ord("A") + k) for k in ranking)


def levenshtein(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The edit distance of two sequences: insertions, deletions and substitutions, each 1.

    >>> levenshtein("kitten", "sitting"), levenshtein("", "ABC"), levenshtein("ABCD", "ABCD")
    (3, 3, 0)
    """
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def distance(judge: Sequence[int] | None, human: Sequence[int]) -> float:
    """The normalised Levenshtein distance of a judge's ranking from the human's (NaN: no ranking).

    >>> distance([0, 1, 2, 3], [2, 3, 0, 1]), distance(None, [0, 1])
    (1.0, nan)
    """
    if judge is None:
        return math.nan
    return levenshtein(letters(judge), letters(human)) / len(human)


def ranking_rows(
    bench: JudgeBenchmark,
    rankings: Sequence[Ranking],
    said: Sequence[Sequence[int] | None],
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    replicates: dict | None = None,
) -> list[dict]:
    """The card rows of a rankings benchmark: the mean distance overall and per subset (bootstrap over rows),
    then the share of rows with no ranking."""
    values = [distance(judge, ranked.human) for judge, ranked in zip(said, rankings)]
    subsets = [ranked.subsets for ranked in rankings]
    common = dict(bootstrap=bootstrap, seed=seed, confidence=confidence, replicates=replicates)
    return mean_figures(bench.name, bench.rules.measure, values, subsets, bench.rules.subsets, **common)
