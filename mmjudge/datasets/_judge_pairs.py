"""One shape for the benchmarks of judges: :class:`JudgePair` — an image, a query (none for a caption), two
responses and which one humans preferred — read from the rows of any of them by :func:`judge_pairs`, so what
runs a judge on them and scores its verdicts never looks at a benchmark's own columns.

``preferred`` is ``0.0`` (the first response), ``1.0`` (the second) or ``0.5`` (a tie: MLLM-as-a-Judge's "C",
CapArena's tie, a Multi-Crit tie). ``subsets`` are the labels each benchmark reports by (its first entry the
one its paper's table uses). What counts follows each benchmark's own scoring: CapArena's battles against the
human-written caption are left out, as its authors' agreement code skips them.

>>> rows = [{"id": "c1", "image": None, "responses": ["a dog", "a cat"], "sources": ["m1", "m2"], "preferred": 0.5,
...          "cluster": "level 2", "involves_human": False},
...         {"id": "c2", "image": None, "responses": ["x", "y"], "sources": ["m1", "human"], "preferred": 1.0,
...          "cluster": "level 1", "involves_human": True}]
>>> [pair] = judge_pairs("caparena", rows)
>>> pair.id, pair.responses, pair.preferred, pair.subsets, pair.task, pair.query
('c1', ('a dog', 'a cat'), 0.5, {'cluster': 'level 2'}, 'ic', None)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mmjudge.datasets._errors import DataError
from mmjudge.human_judgments import HumanJudgments

# benchmark -> the row columns that become a pair's `subsets` (the first: what the paper's table is split by)
SUBSETS: dict[str, tuple[str, ...]] = {
    "vl_rewardbench": ("group", "query_source"),
    "mm_rewardbench": ("reporting_category", "category"),
    "mllm_judge": ("original_dataset",),
    "multi_crit": ("criterion", "prompt_id", "split"),
    "caparena": ("cluster",),
    "pascal50s": ("category",),
}
CAPTION_SETS = ("caparena", "pascal50s")  # no query: the responses are captions of the image (task "ic")
PREFERENCES = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class JudgePair:
    """One human preference between two responses about one image.

    Attributes:
        id: the benchmark row's id (upstream's where it has one).
        image: the image as ``datasets`` stores it, undecoded (``{"bytes": ..., "path": ...}``: what
            :func:`mmjudge.images.load_image` and ``PIL.Image.open(io.BytesIO(image["bytes"]))`` read), or ``None``.
        query: the prompt the responses answer; ``None`` for a caption (CapArena).
        responses: the two responses, in the benchmark's order.
        preferred: ``0.0`` the first response, ``1.0`` the second, ``0.5`` a tie.
        subsets: labels to report by, e.g. ``{"group": "hallucination", "query_source": "RLAIF-V"}``.
        task: ``"vqa"`` when there is a query, ``"ic"`` for captions.
        criterion: the criterion the preference is about (Multi-Crit), else ``None`` (overall).
    """

    id: str
    image: Any = field(repr=False)  # the bytes would fill a screen
    query: str | None
    responses: tuple[str, str]
    preferred: float
    subsets: dict[str, str]
    task: str
    criterion: str | None = None


def judge_pairs(name: str, dataset: Any) -> list[JudgePair]:
    """Every :class:`JudgePair` of benchmark ``name``'s ``dataset`` (a ``Dataset``, a ``DatasetDict`` — every split —
    or rows as dicts), in row order. For a large set, :func:`iter_judge_pairs` holds one pair at a time.

    Raises:
        ValueError: ``name`` is not a benchmark of judges, or the rows are not its pairs (MLLM-as-a-Judge's
            ``score`` and ``batch`` configurations hold no pairs).
    """
    return list(iter_judge_pairs(name, dataset))


def iter_judge_pairs(name: str, dataset: Any) -> Iterator[JudgePair]:
    """:func:`judge_pairs` one pair at a time (images stay undecoded; memory does not grow with the set)."""
    key = str(name).replace("-", "_")
    if key not in SUBSETS:
        raise ValueError(f"Expected argument `name` to be one of {', '.join(SUBSETS)}, but got {name!r}.")
    for row in _rows(dataset):
        if key == "mllm_judge" and "preferred" not in row:
            config = "score" if "score" in row else "batch"
            raise DataError(
                f"judge_pairs: these mllm_judge rows are its {config!r} configuration, which holds no pairs; load "
                "load_dataset('mllm_judge', config_name='pair', ...) for its pairwise judgments."
            )
        if key == "caparena" and row.get("involves_human"):
            continue
        yield _pair(key, row)


def _pair(key: str, row: dict[str, Any]) -> JudgePair:
    if key == "pascal50s":  # the classic caption pairs: label 0 / 1 (the builder counts a vote tie for A)
        row = {**row, "responses": [row["text_a"], row["text_b"]], "preferred": row["label"]}
    responses = tuple(str(r) for r in row["responses"])
    if len(responses) != 2:
        raise DataError(f"{key} row {row['id']!r}: expected two responses, but got {len(responses)}.")
    preferred = float(row["preferred"])
    if preferred not in PREFERENCES:
        raise DataError(f"{key} row {row['id']!r}: expected `preferred` 0, 1 or 0.5, but got {row['preferred']!r}.")
    subsets = {c: str(row[c]) for c in SUBSETS[key] if row.get(c) is not None}
    caption = key in CAPTION_SETS
    return JudgePair(
        id=str(row["id"]),
        image=row.get("image"),
        query=None if caption else str(row.get("query") or ""),
        responses=responses,  # type: ignore[arg-type]  # checked: two
        preferred=preferred,
        subsets=subsets,
        task="ic" if caption else "vqa",
        criterion=str(row["criterion"]) if key == "multi_crit" else None,
    )


def _rows(dataset: Any) -> Iterator[dict[str, Any]]:
    """The rows of a ``DatasetDict`` (split after split), a ``Dataset`` or plain rows, images left undecoded."""
    import datasets

    if isinstance(dataset, datasets.DatasetDict):
        for ds in dataset.values():
            yield from _undecoded(ds)
    elif isinstance(dataset, datasets.Dataset):
        yield from _undecoded(dataset)
    else:
        yield from dataset


def _undecoded(ds: Any) -> Iterable[dict[str, Any]]:
    import datasets

    feature = ds.features.get("image")
    if isinstance(feature, datasets.Image) and feature.decode:
        ds = ds.cast_column("image", datasets.Image(decode=False))
    return ds


def pair_judgments(name: str, dataset: Any) -> HumanJudgments:
    """The pairs as the meta-evaluation's :class:`HumanJudgments`: two items per pair (``<id>-0``, ``<id>-1``, the
    responses as texts) and a preference pair unless humans tied (ties are counted in ``metadata["ties"]``);
    ``category`` is the first of the benchmark's subsets."""
    items: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    ties = 0
    for pair in iter_judge_pairs(name, dataset):
        ids = [f"{pair.id}-{k}" for k in range(2)]
        path = pair.image.get("path") if isinstance(pair.image, dict) else None
        for item_id, text in zip(ids, pair.responses):
            item = {"id": item_id, "task": pair.task, "text": text, "image": pair.image, "image_path": path}
            if pair.query is not None:
                item["question"] = pair.query
            items.append(item)
        if pair.preferred == 0.5:
            ties += 1
            continue
        better, worse = ids if pair.preferred == 0.0 else ids[::-1]
        record = {"task": pair.task, "better": better, "worse": worse, "kind": name}
        if pair.subsets:
            record["category"] = next(iter(pair.subsets.values()))
        pairs.append(record)
    return HumanJudgments(name=name, items=items, pairs=pairs, correlation="accuracy", metadata={"ties": ties})
