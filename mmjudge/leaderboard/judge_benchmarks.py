"""The board's copy of a benchmark of judges, for the Judges track (:mod:`mmjudge.leaderboard.tracks.judges`):
read from its data folder by the judge card's own readers (:func:`mmjudge.judge_card.pairs.read_pairs`,
:func:`mmjudge.judge_card.ratings.read_judgments`, :func:`mmjudge.judge_card.rankings.read_rankings`), so the
board's ids, subsets and labels are the ones the worker's judge card scores against. What a participant is shown of
an item (:meth:`JudgeBoardBenchmark.public_items`) never holds the human preference, score or ranking.

The demo's benchmark, ``demo-judge-pairs``, is 24 pairs written here (:func:`demo_pair_rows`: a drawn shape, a
question, a right and a wrong answer) in VL-RewardBench's upstream layout, read through the real VL-RewardBench
loader; :func:`demo_verdicts` and :func:`demo_card` are the demo's submissions.

>>> rows = demo_pair_rows()
>>> rows[0]["id"], rows[0]["response"], rows[0]["human_ranking"]
('demo-wildvision-1', ['A red circle on white.', 'A busy red street.'], [0, 1])
>>> sum(v["preferred"] == r["human_ranking"].index(0) for v, r in zip(demo_verdicts("careful"), rows)) / len(rows)
0.875
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS, PAIRS, RANKINGS, find_benchmarks
from mmjudge.judge_card.measures import FIELDS
from mmjudge.leaderboard.benchmarks import Benchmark, demo_image


@dataclass
class JudgeBoardBenchmark(Benchmark):
    """The board's copy of one benchmark of judges: read from its data folder by the judge card's own reader.

    Attributes:
        card_name: its name in :data:`~mmjudge.judge_card.benchmarks.JUDGE_BENCHMARKS` (and in a card's rows).
        kind: ``pairs``, ``ratings`` or ``rankings``; data_dir / options / limit: what the judge card reads.
        subsets: the subset names its figures are reported on (VL-RewardBench's groups and sources …).
        fingerprint: the items and their human labels, hashed (part of a board-scored row's signature).
    """

    card_name: str = ""
    kind: str = PAIRS
    data_dir: str | None = None
    options: dict = field(default_factory=dict)
    limit: int | None = None
    subsets: tuple[str, ...] = ()
    fingerprint: str = ""
    _public: Callable[[], list[dict]] | None = field(default=None, repr=False)

    def public_items(self) -> list[dict]:
        """What a judge is shown for each item — never the human preference or score."""
        return self._public() if self._public is not None else []


def load_judge_benchmark(loader: str, options: dict, board: str, track: str = "judges") -> JudgeBoardBenchmark:
    """The board's copy of the benchmark of judges ``loader`` (a judge-card name) as board benchmark ``board`` of
    ``track``: ``options`` hold ``data_dir`` (the folder ``mmjudge judge-card --data-dir`` reads), optionally
    ``limit`` (its first items) and loader options; ``demo: true`` writes the demo's own pairs instead
    (:func:`demo_pairs_folder`). Read by the judge card's own readers, images as file paths."""
    find_benchmarks(loader)  # an unknown name: one line with "did you mean"
    card = JUDGE_BENCHMARKS[loader]
    options = dict(options)
    demo = bool(options.pop("demo", False))
    data_dir = str(demo_pairs_folder()) if demo else options.pop("data_dir", None)
    limit = options.pop("limit", None)
    if not data_dir:
        raise ValueError(f'benchmark {board!r}: the Judges track needs "data_dir", a folder holding {card.needs}.')
    data_dir = str(Path(data_dir).expanduser())
    read = {PAIRS: _read_pairs, RANKINGS: _read_rankings}.get(card.kind, _read_ratings)
    public, labels, subsets, tasks = read(card, data_dir, options, limit)
    what = {
        PAIRS: "pairs with the response people preferred",
        RANKINGS: "sets of answers with the human ranking",
    }.get(card.kind, "captions or answers with human scores")
    return JudgeBoardBenchmark(
        board,
        track,
        "Demo judge pairs (VL-RewardBench layout, made up)" if demo else f"{loader} (judges)",
        (
            f"{len(public)} pairs written for the demo in VL-RewardBench's layout (three groups); the figures "
            "mean nothing"
            if demo
            else f"the board's copy of {loader}: {len(public)} {what}"
        )
        + f"; submit your judge's verdict on every item, or its judge card. Scored as: {card.source}.",
        [it["id"] for it in public],
        tasks,
        demo=demo,
        card_name=loader,
        kind=card.kind,
        data_dir=data_dir,
        options=options,
        limit=None if limit is None else int(limit),
        subsets=tuple(subsets),
        fingerprint=hashlib.sha256(json.dumps([loader, labels], default=str).encode()).hexdigest()[:12],
        _public=lambda: public,
    )


def _read_pairs(card: Any, data_dir: str, options: dict, limit: Any) -> tuple[list, list, list, list]:
    from mmjudge.judge_card.pairs import read_pairs

    pairs = read_pairs(card, data_dir, options, None if limit is None else int(limit))
    public = []
    for p in pairs:
        item = {"id": p.id, "task": p.task, "image": p.image, "question": p.query, "responses": list(p.responses)}
        if p.criterion is not None:
            item["criterion"] = p.criterion
        public.append(item)
    labels = [(p.id, p.preferred, sorted(p.subsets.items()), p.criterion) for p in pairs]
    subsets = sorted({p.subsets[k] for p in pairs for k in card.rules.subsets if p.subsets.get(k)})
    return public, labels, subsets, list(dict.fromkeys(p.task for p in pairs))


def _read_ratings(card: Any, data_dir: str, options: dict, limit: Any) -> tuple[list, list, list, list]:
    from mmjudge.judge_card.ratings import read_judgments

    judgments = read_judgments(card, data_dir, options, None if limit is None else int(limit))
    public = []
    for it in judgments.items:
        item = {"id": it["id"], "task": it.get("task") or card.task, "image": it.get("image"), "text": it.get("text")}
        if it.get("question"):  # MLLM-as-a-Judge's answers answer one
            item["question"] = it["question"]
        public.append(item)
    labels = [[r.get("id"), r.get("criterion"), r.get("score"), r.get("annotator")] for r in judgments.ratings]
    return public, labels, [], list(dict.fromkeys(it["task"] for it in public))


def _read_rankings(card: Any, data_dir: str, options: dict, limit: Any) -> tuple[list, list, list, list]:
    from mmjudge.judge_card.rankings import read_rankings

    rankings = read_rankings(card, data_dir, options, None if limit is None else int(limit))
    public = [
        {"id": r.id, "task": r.task, "image": r.image, "question": r.query, "responses": list(r.responses)}
        for r in rankings
    ]
    labels = [(r.id, list(r.human), sorted(r.subsets.items())) for r in rankings]
    subsets = sorted({r.subsets[k] for r in rankings for k in card.rules.subsets if r.subsets.get(k)})
    return public, labels, subsets, list(dict.fromkeys(r.task for r in rankings))


# ------------------------------------------------------------------------------------------ demo
# (query_source, id prefix, group): VL-RewardBench's sources as its cal.py groups them.
_DEMO_SOURCES = [
    ("WildVision", "wildvision", "general"),
    ("VLFeedback", "vlfeedback", "general"),
    ("POVID", "povid", "hallucination"),
    ("RLAIF-V", "rlaif", "hallucination"),
    ("MMMU-Pro", "mmmu", "reasoning"),
    ("MathVerse", "mathverse", "reasoning"),
]
_CORNERS = {"circle": 0, "square": 4, "triangle": 3}
_COLOURS = ["red", "blue", "green", "orange"]
DEMO_VERSION = "1"


def demo_pair_rows() -> list[dict]:
    """24 pairs in VL-RewardBench's columns, written for the demo: a drawn shape, a question, a right and a wrong
    answer (the right one first on even items), four per source."""
    rows = []
    for k in range(24):
        source, prefix, group = _DEMO_SOURCES[k % len(_DEMO_SOURCES)]
        colour, shape = _COLOURS[k % 4], list(_CORNERS)[k % 3]
        if group == "general":
            query, right, wrong = "Describe the picture.", f"A {colour} {shape} on white.", f"A busy {colour} street."
        elif group == "hallucination":
            query = "What is in the picture?"
            right, wrong = f"One {colour} {shape}, nothing else.", f"A {colour} {shape} and a small dog beside it."
        else:
            query = f"How many corners does the {shape} have?"
            right, wrong = f"{_CORNERS[shape]} corners.", f"{_CORNERS[shape] + 2} corners."
        first_right = k % 2 == 0
        rows.append(
            {
                "id": f"demo-{prefix}-{k // len(_DEMO_SOURCES) + 1}",
                "query": query,
                "response": [right, wrong] if first_right else [wrong, right],
                "image": None,
                "human_ranking": [0, 1] if first_right else [1, 0],
                "query_source": source,
                "_draw": (colour, shape),
            }
        )
    return rows


def demo_pairs_folder() -> Path:
    """The demo's pairs as VL-RewardBench's Hub Parquet file (``data/test-00000-of-00001.parquet``), written
    once under the mmjudge cache folder."""
    import io
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from mmjudge.paths import cache_dir

    folder = cache_dir() / "leaderboard-demo" / f"judge-pairs-v{DEMO_VERSION}"
    target = folder / "data" / "test-00000-of-00001.parquet"
    if target.is_file():
        return folder
    rows = []
    for row in demo_pair_rows():
        buffer = io.BytesIO()
        demo_image(*row.pop("_draw"), size=48).save(buffer, format="PNG")
        rows.append({**row, "image": {"bytes": buffer.getvalue(), "path": f"{row['id']}.png"}})
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.part")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, target)
    return folder


def demo_verdicts(style: str) -> list[dict]:
    """Verdict lines for the demo's pairs: ``careful`` (right but for one item per group), ``first-slot``
    (always the first response: right exactly where the right answer comes first)."""
    out = []
    for k, row in enumerate(demo_pair_rows()):
        right = row["human_ranking"].index(0)
        if style == "careful":
            said = 1 - right if k in (1, 2, 4) else right
        else:
            said = 0
        out.append({"id": row["id"], "preferred": said})
    return out


def demo_card() -> list[dict]:
    """A ``card.json`` as ``mmjudge judge-card`` writes one, with figures made up for the demo (a "reported"
    row set)."""
    figures = [("", "accuracy", 0.62, 0.59, 0.65, 1247), ("general", "accuracy", 0.55, 0.5, 0.6, 183)]
    figures += [("hallucination", "accuracy", 0.66, 0.62, 0.7, 749), ("reasoning", "accuracy", 0.58, 0.52, 0.63, 315)]
    figures += [("", "macro_accuracy", 0.597, 0.565, 0.628, 1247), ("", "no_answer", 0.0024, None, None, 1250)]
    return [dict(zip(FIELDS, ("vl_rewardbench", *f))) for f in figures]
