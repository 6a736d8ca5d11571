"""Pairs benchmarks on a card: the benchmark's pairs read once (images as file paths, no bytes held), then
either the judge's head-to-head preferences (both orders, HarmonicEval's criteria; a resumable, sharded,
cached run like ``mmjudge score``) or a verdict file's, each turned into :class:`~.measures.Item` s.

>>> from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS
>>> pair = Pair("q1", None, "How many?", ("Two.", "Three."), 0.0, {"group": "reasoning"}, None, None, "vqa")
>>> pair_item(pair)["text_a"], pair_item(pair)["question"]
('Two.', 'How many?')
>>> items = verdict_items([pair], {"q1": 1.0})
>>> items[0].human, items[0].judge    # the judge preferred the second response: P(first better) = 0
(0.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.judge_card.benchmarks import JudgeBenchmark
from mmjudge.judge_card.measures import Item, number


@dataclass(frozen=True)
class Pair:
    """One human-judged pair as a card reads it (from :func:`mmjudge.datasets.judge_pairs`): ``preferred`` is
    the index of the better response (0 or 1; ½ for a tie), ``image`` a file path or ``None``."""

    id: str
    image: str | None
    query: str | None
    responses: tuple[str, str]
    preferred: float
    subsets: Mapping[str, str]
    prompt: str | None
    criterion: str | None
    task: str


def read_pairs(
    bench: JudgeBenchmark, data_dir: str | None, options: Mapping[str, Any], limit: int | None
) -> list[Pair]:
    """The benchmark's pairs (the first ``limit``), images spilled to files so the pairs hold paths."""
    from mmjudge.datasets import load_dataset
    from mmjudge.datasets._judge_pairs import iter_judge_pairs
    from mmjudge.reproduce.scoring import with_image_paths

    kwargs = {"expected_counts": {}, **options}  # a partial copy is scored, its size shown as n
    if bench.config:
        kwargs.setdefault("config_name", bench.config)
    dataset = load_dataset(bench.dataset, split=bench.split, data_dir=data_dir, **kwargs)
    dataset = with_image_paths(dataset, data_dir)
    out = []
    for found in iter_judge_pairs(bench.dataset, dataset):
        if limit is not None and len(out) >= limit:
            break
        image = found.image.get("path") if isinstance(found.image, dict) else found.image
        out.append(
            Pair(
                str(found.id),
                None if image is None else str(image),
                found.query,
                (str(found.responses[0]), str(found.responses[1])),
                float(found.preferred),
                dict(found.subsets),
                found.subsets.get("prompt_id"),
                found.criterion,
                found.task or bench.task,
            )
        )
    if not out:
        raise ValueError(f"{bench.name}: the data folder holds no pairs.")
    return out


def pair_item(pair: Pair) -> dict[str, Any]:
    """The item the head-to-head metric compares: A = the first response, B = the second."""
    item: dict[str, Any] = {"id": pair.id, "task": pair.task, "text_a": pair.responses[0], "text_b": pair.responses[1]}
    if pair.image is not None:
        item["image"] = pair.image
    if pair.query:
        item["question"] = pair.query
    return item


def verdict_items(pairs: Sequence[Pair], verdicts: Mapping[str, float], limit: int | None = None) -> list[Item]:
    """Items from a verdict file: the index of the better response becomes P(first ≻ second) (0 → 1, 1 → 0,
    ½ → ½); a pair without a verdict has no answer.

    Raises:
        ValueError: verdicts for ids the pairs do not have (:func:`~.verdicts.check_known`; ``limit``: the pairs
            are the benchmark's first ``limit``).
    """
    from mmjudge.judge_card.verdicts import check_known

    check_known(verdicts, (p.id for p in pairs), limit)
    return [_item(p, 1.0 - verdicts[p.id] if p.id in verdicts else math.nan) for p in pairs]


def judged_items(pairs: Sequence[Pair], rows: Iterator[Mapping[str, Any]], bench: JudgeBenchmark) -> list[Item]:
    """Items from a judge run's rows (joined by id): the overall preference, or, for a benchmark that names a
    criterion per pair (Multi-Crit), the HarmonicEval criterion that judges it (``bench.criteria``)."""
    table = {str(row.get("id")): row for row in rows}
    out = []
    for pair in pairs:
        row = table.get(pair.id, {})
        key = "overall"
        if pair.criterion is not None:
            key = _criterion(pair.criterion, bench.criteria) or "overall"
        out.append(_item(pair, number(row.get(key)) if not row.get("error") else math.nan))
    return out


def _criterion(name: str, mapping: Mapping[str, str]) -> str | None:
    """The HarmonicEval criterion for a benchmark's criterion name (matched on words: "Factuality / No
    Hallucination" → correctness)."""
    text = name.lower().replace("_", " ").replace("-", " ")
    for words, criterion in mapping.items():
        if words in text:
            return criterion
    return None


def _item(pair: Pair, preference: float) -> Item:
    return Item(pair.id, pair.preferred, preference, pair.subsets, pair.prompt)
