"""Human judgments in one shape, shared by the benchmark loaders and the meta-evaluation, and its JSON file.

A benchmark (:mod:`mmjudge.datasets`) turns its rows into :class:`HumanJudgments`; the meta-evaluation
(:mod:`mmjudge.metaeval`) joins a metric's per-item scores to it by ``id``. Keeping this contract in
one small module lets either side change without touching the other.

The same contract is a versioned JSON file (schema ``mmjudge.human_judgments``, version
:data:`SCHEMA_VERSION`; documented in ``docs/metaeval.md``): ``mmjudge dataset judgments NAME --out F.json``
writes it from any loader, ``mmjudge metaeval --judgments F.json`` reads it back, and a human study of
one's own written in it runs the same tables. :meth:`HumanJudgments.load` checks every record and names
the first wrong one in one line.

>>> hj = HumanJudgments(
...     name="toy",
...     items=[{"id": "a", "task": "ic", "text": "A dog."}, {"id": "b", "task": "ic", "text": "A cat."}],
...     ratings=[{"id": "a", "task": "ic", "criterion": "overall", "score": 4.0, "annotator": "0"}],
...     pairs=[{"better": "a", "worse": "b", "kind": "mine"}],
... )
>>> hj.ids()
['a', 'b']
>>> data = hj.to_dict()
>>> data["schema"], data["version"], HumanJudgments.from_dict(data) == hj
('mmjudge.human_judgments', 1, True)
>>> HumanJudgments.from_dict({**data, "pairs": [{"better": "a", "worse": "z"}]}, "study.json")
Traceback (most recent call last):
...
ValueError: study.json: pairs[0]: expected 'worse' to be an item id, but got 'z' (no item has it).
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "mmjudge.human_judgments"
SCHEMA_VERSION = 1
"""Bump when a field changes meaning or a required field is added; readers refuse newer versions."""

CORRELATIONS = ("tau_c", "tau_b", "pearson", "spearman", "accuracy")
# What each kind of record must and may hold in the file (other keys of a record are kept as they are).
REQUIRED = {
    "items": ("id",),
    "ratings": ("id", "score"),
    "pairs": ("better", "worse"),
    "choices": ("group", "candidates", "best"),
}
TOP_LEVEL = ("schema", "version", "name", "items", "ratings", "pairs", "choices", "correlation", "criteria", "metadata")


@dataclass
class HumanJudgments:
    """Everything a meta-evaluation needs from a benchmark.

    Attributes:
        name: benchmark name (``"mmhe"``, ``"flickr8k_expert"``, …).
        items: one dict per scored item with a unique string ``id`` and what a metric needs to score it
            on the fly: ``task``, ``text``, and where available ``image`` (PIL / path / bytes in memory; a
            path in the JSON file), ``image_path`` (the image as the benchmark names it, used to join
            score files by content), ``question``, ``box`` (COCO x, y, w, h), ``references`` (list of str).
        ratings: one dict per human judgment: ``id`` (item), ``task``, ``criterion`` (``"overall"`` or a
            criterion name such as ``"correctness"``), ``score`` (float), ``annotator`` (str or None).
            The Flickr8k "one row per judgment" protocol is exactly this list.
        choices: best-of-N choices: ``group`` (instance id), ``task``, ``candidates`` (list of item ids),
            ``annotator``, ``best`` (item id chosen), optional ``criterion``. MMHE has three annotators
            per instance; how they are combined into pairs is the meta-evaluation's option, not the loader's.
        pairs: ready-made preference pairs: ``task``, ``better`` and ``worse`` (item ids), ``kind``
            (``"pascal50s"``, ``"foil"``, …), optional ``category`` (e.g. Pascal-50S HC/HI/HM/MM),
            ``criterion`` (the human preference on one criterion; default ``"overall"``), ``group`` (pairs
            resampled together) and ``weight``. In the file a pair may instead hold the two texts and the
            human choice (the pair layout, :func:`expand_pair_layout`).
        correlation: the τ variant papers report for this benchmark (``"tau_c"`` or ``"tau_b"``), or
            ``"accuracy"`` for a benchmark of pairs only.
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

    def item(self, item_id: str) -> dict[str, Any] | None:
        for it in self.items:
            if it["id"] == item_id:
                return it
        return None

    # ------------------------------------------------------------------------------- the JSON file
    def to_dict(self) -> dict[str, Any]:
        """The file form (schema version :data:`SCHEMA_VERSION`). An item's ``image`` is kept when it is a
        path; an image held in memory (PIL, bytes) becomes ``null`` (write its path first, as
        ``mmjudge dataset judgments`` does)."""
        items = [{**it, "image": _image_field(it.get("image"))} if "image" in it else dict(it) for it in self.items]
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "name": self.name,
            "correlation": self.correlation,
            "criteria": list(self.criteria),
            "items": items,
            "ratings": [dict(r) for r in self.ratings],
            "pairs": [dict(p) for p in self.pairs],
            "choices": [dict(c) for c in self.choices],
            "metadata": dict(self.metadata),
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_dict` as JSON (UTF-8, NaN refused: a human score is a number)."""
        path = Path(path)
        path.write_text(
            json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False, indent=1) + "\n", encoding="utf-8"
        )
        return path

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "judgments") -> HumanJudgments:
        """Check ``data`` against the schema and build the judgments; ``where`` names the source in errors.

        A mapping without ``schema``/``version`` is read as version 1 (what ``dataclasses.asdict`` of this
        class gives). Raises ``ValueError`` naming the first wrong record, e.g. ``F.json: ratings[3]: …``.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object with 'name' and 'items', but got {type(data).__name__}.")
        _check_header(data, where)
        data = expand_pair_layout(data, where)
        items = _records(data, "items", where)
        ids: set[str] = set()
        for n, item in enumerate(items):
            item_id = item["id"]
            if not isinstance(item_id, str) or not item_id:
                raise ValueError(f"{where}: items[{n}]: expected 'id' to be a non-empty string, but got {item_id!r}.")
            if item_id in ids:
                raise ValueError(f"{where}: items[{n}]: duplicate id {item_id!r}; every item needs its own id.")
            ids.add(item_id)
        ratings = _records(data, "ratings", where)
        for n, rating in enumerate(ratings):
            _known(rating, "id", ids, f"{where}: ratings[{n}]")
            score = rating["score"]
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise ValueError(
                    f"{where}: ratings[{n}] (id {rating['id']!r}): expected 'score' to be a finite number, "
                    f"but got {score!r}."
                )
        pairs = _records(data, "pairs", where)
        for n, pair in enumerate(pairs):
            _known(pair, "better", ids, f"{where}: pairs[{n}]")
            _known(pair, "worse", ids, f"{where}: pairs[{n}]")
        choices = _records(data, "choices", where)
        for n, choice in enumerate(choices):
            candidates = choice["candidates"]
            if not isinstance(candidates, list) or len(candidates) < 2:
                raise ValueError(
                    f"{where}: choices[{n}]: expected 'candidates' to list two or more item ids, "
                    f"but got {candidates!r}."
                )
            unknown = [c for c in candidates if not isinstance(c, str) or c not in ids]
            if unknown:
                raise ValueError(
                    f"{where}: choices[{n}]: expected 'candidates' to be item ids, but {unknown[0]!r} is none."
                )
            if choice["best"] not in candidates:
                raise ValueError(
                    f"{where}: choices[{n}]: expected 'best' to be one of its candidates, but got {choice['best']!r}."
                )
        correlation = data.get("correlation", "tau_c")
        if correlation not in CORRELATIONS:
            raise ValueError(
                f"{where}: expected 'correlation' to be one of {list(CORRELATIONS)}, but got {correlation!r}."
            )
        criteria = data.get("criteria") or []
        if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
            raise ValueError(f"{where}: expected 'criteria' to be a list of names, but got {criteria!r}.")
        if not (ratings or pairs or choices):
            raise ValueError(f"{where}: no ratings, pairs or choices: nothing to meta-evaluate.")
        return cls(
            name=str(data["name"]),
            items=items,
            ratings=ratings,
            choices=choices,
            pairs=pairs,
            correlation=correlation,
            criteria=list(criteria),
            metadata=dict(data.get("metadata") or {}),
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> HumanJudgments:
        """Read a judgments file; relative image paths are taken relative to the file's folder."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"Judgments file {str(path)!r} does not exist.")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: not a judgments JSON file ({err}).") from None
        hj = cls.from_dict(data, str(path))
        for item in hj.items:
            image = item.get("image")
            if isinstance(image, str) and image and not os.path.isabs(image):
                item["image"] = str(path.parent / image)
        return hj


CHOICES = ("a", "b", "tie")
PAIR_ITEM_FIELDS = ("task", "image", "image_path", "question", "box", "references")


def expand_pair_layout(data: Mapping[str, Any], where: str = "judgments") -> Mapping[str, Any]:
    """``data`` with every pair written in the **pair layout** turned into two items and their preference
    pairs (the form the meta-evaluation reads); pairs in the id layout (``better``/``worse``) are kept.

    The pair layout holds the two texts and the human choice in one record: ``text_a``, ``text_b``,
    ``choice`` (``"a"``, ``"b"`` or ``"tie"``), optional ``criteria`` (criterion → choice), ``id`` (default
    ``pair<n>``), and the pair's ``task``, ``image``, ``question``, ``box``, ``references``, ``kind``,
    ``category``. It becomes the items ``<id>-a`` and ``<id>-b`` and one pair per choice that is not a tie
    (overall, then one per criterion); a tie is no preference and yields no pair.

    >>> data = {"name": "mine", "pairs": [{"id": "p1", "text_a": "A dog.", "text_b": "A cat.", "choice": "b",
    ...                                   "criteria": {"fluency": "tie", "correctness": "a"}, "image": "1.jpg"}]}
    >>> out = expand_pair_layout(data)
    >>> [item["id"] for item in out["items"]], [(p["better"], p.get("criterion")) for p in out["pairs"]]
    (['p1-a', 'p1-b'], [('p1-b', None), ('p1-a', 'correctness')])
    """
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not any(isinstance(p, dict) and "text_a" in p for p in pairs):
        return data
    items = list(data.get("items") or [])
    out_pairs: list[dict[str, Any]] = []
    for n, pair in enumerate(pairs):
        if not isinstance(pair, dict) or "text_a" not in pair:
            out_pairs.append(pair)
            continue
        at = f"{where}: pairs[{n}]"
        for key in ("text_a", "text_b"):
            if not isinstance(pair.get(key), str) or not pair[key].strip():
                raise ValueError(f"{at}: expected {key!r} to be a non-empty text, but got {pair.get(key)!r}.")
        choices = {None: pair.get("choice"), **_criterion_choices(pair.get("criteria"), at)}
        for criterion, choice in choices.items():
            if choice not in CHOICES:
                what = "'choice'" if criterion is None else f"criteria[{criterion!r}]"
                raise ValueError(f"{at}: expected {what} to be one of {list(CHOICES)}, but got {choice!r}.")
        pair_id = str(pair.get("id") or f"pair{n}")
        shared = {k: pair[k] for k in PAIR_ITEM_FIELDS if pair.get(k) is not None}
        ids = {side: f"{pair_id}-{side}" for side in ("a", "b")}
        items += [{**shared, "id": ids[side], "text": pair[f"text_{side}"]} for side in ("a", "b")]
        extra = {k: pair[k] for k in ("task", "kind", "category", "weight") if pair.get(k) is not None}
        for criterion, choice in choices.items():
            if choice == "tie":
                continue
            better, worse = (ids["a"], ids["b"]) if choice == "a" else (ids["b"], ids["a"])
            record = {**extra, "better": better, "worse": worse, "group": pair_id}
            out_pairs.append(record if criterion is None else {**record, "criterion": criterion})
    return {**data, "items": items, "pairs": out_pairs}


def _criterion_choices(criteria: Any, at: str) -> dict[str, Any]:
    if criteria is None:
        return {}
    if not isinstance(criteria, dict) or not all(isinstance(c, str) for c in criteria):
        raise ValueError(f"{at}: expected 'criteria' to map criterion names to choices, but got {criteria!r}.")
    return dict(criteria)


def _image_field(image: Any) -> str | None:
    if isinstance(image, (str, os.PathLike)):
        return str(image)
    return None


def _check_header(data: Mapping[str, Any], where: str) -> None:
    unknown = [k for k in data if k not in TOP_LEVEL]
    if unknown:
        close = difflib.get_close_matches(unknown[0], TOP_LEVEL, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{where}: unknown key {unknown[0]!r}{hint}; a judgments file holds {', '.join(TOP_LEVEL)}.")
    schema = data.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise ValueError(f"{where}: expected 'schema' to be {SCHEMA!r}, but got {schema!r}.")
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{where}: expected 'version' to be a positive integer, but got {version!r}.")
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{where}: written with schema version {version}, but this mmjudge reads up to "
            f"{SCHEMA_VERSION}; upgrade mmjudge."
        )
    if not isinstance(data.get("name"), str) or not data["name"]:
        raise ValueError(
            f"{where}: expected 'name' (the benchmark's name) to be a non-empty string, but got {data.get('name')!r}."
        )


def _records(data: Mapping[str, Any], kind: str, where: str) -> list[dict[str, Any]]:
    records = data.get(kind, [] if kind != "items" else None)
    if not isinstance(records, list) or (kind == "items" and not records):
        raise ValueError(
            f"{where}: expected {kind!r} to be a {'non-empty ' if kind == 'items' else ''}list, "
            f"but got {type(records).__name__ if records is not None else 'nothing'}."
        )
    out = []
    for n, record in enumerate(records):
        if not isinstance(record, dict):
            raise ValueError(f"{where}: {kind}[{n}]: expected an object, but got {type(record).__name__}.")
        missing = [k for k in REQUIRED[kind] if k not in record]
        if missing:
            raise ValueError(
                f"{where}: {kind}[{n}]: missing {', '.join(repr(k) for k in missing)} "
                f"(each of {kind} needs {', '.join(REQUIRED[kind])})."
            )
        out.append(dict(record))
    return out


def _known(record: Mapping[str, Any], key: str, ids: set, where: str) -> None:
    if not isinstance(record[key], str) or record[key] not in ids:
        raise ValueError(f"{where}: expected {key!r} to be an item id, but got {record[key]!r} (no item has it).")
