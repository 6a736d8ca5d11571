"""Two systems' outputs read as one stream of pairs: item ``k`` of file A against item ``k`` of file B.

Each file is an input ``score`` reads (JSON Lines, CSV, Parquet, a ``datasets`` dataset; :mod:`mmjudge.stream.sources`)
holding the same items in the same order, each with its system's ``text``. A pair item holds ``text_a``,
``text_b``, and the shared ``id``, ``image``, ``question``, ``box``, ``task`` (A's, or B's where A has none).
Where the two disagree (another id, image, question, box or task at the same position) the pair carries an
``_error`` saying so, and a long run records it and goes on. Under ``torchrun`` each process reads its
share of A (:func:`~mmjudge.stream.sources.open_source`) and the same positions of B, passing over B's earlier
lines without parsing them.

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> for name, texts in (("a.jsonl", ["a dog", "a cat"]), ("b.jsonl", ["two dogs", "a cat sleeping"])):
...     rows = [json.dumps({"id": f"x{k}", "text": t, "image": "p.jpg"}) for k, t in enumerate(texts)]
...     with open(os.path.join(d, name), "w") as f:
...         _ = f.write("\\n".join(rows) + "\\n")
>>> pairs = list(open_pairs(os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")))
>>> [(p["id"], p["text_a"], p["text_b"], os.path.basename(p["image"])) for p in pairs]
[('x0', 'a dog', 'two dogs', 'p.jpg'), ('x1', 'a cat', 'a cat sleeping', 'p.jpg')]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from mmjudge.stream.sources import ItemSource, open_source

SHARED = ("task", "question", "box", "image")


def pair_item(a: dict, b: dict | None) -> dict:
    """The pair item of A's item ``a`` and B's item ``b`` at the same position (``None``: B has no item there).

    >>> a, b = {"id": "1", "text": "a dog", "_i": 0}, {"id": "2", "text": "a cat", "_i": 0}
    >>> pair = pair_item(a, b)
    >>> pair["id"], pair["_error"]
    ('1', "--a has id '1' here but --b has id '2': the two files must hold the same items in the same order.")
    """
    source = f"{a.get('_source')}" if b is None else f"{a.get('_source')} | {b.get('_source')}"
    item: dict[str, Any] = {"_source": source, "_i": a.get("_i")}
    # A pair that cannot be compared keeps A's id (else B's), so its row is found by the id the files give it,
    # not by its position.
    known = a.get("id") if a.get("id") is not None else (b or {}).get("id")
    if known is not None:
        item["id"] = known
    item["text_a"], item["text_b"] = a.get("text"), (b or {}).get("text")
    if a.get("_error"):
        return {**item, "_error": f"--a: {a['_error']}"}
    if b is None:
        return {**item, "_error": "--b has no item at this position: the two files must hold the same items."}
    if b.get("_error"):
        return {**item, "_error": f"--b: {b['_error']}"}
    if a.get("id") is not None and b.get("id") is not None and str(a["id"]) != str(b["id"]):
        return {
            **item,
            "_error": f"--a has id {str(a['id'])!r} here but --b has id {str(b['id'])!r}: the two files must "
            "hold the same items in the same order.",
        }
    for key in SHARED:
        mine, theirs = a.get(key), b.get(key)
        if mine is not None and theirs is not None and _differ(key, mine, theirs):
            return {**item, "_error": f"--a and --b give this item different {key}s ({mine!r}, {theirs!r})."}
        if mine is not None or theirs is not None:
            item[key] = mine if mine is not None else theirs
    return item


def _differ(key: str, mine: Any, theirs: Any) -> bool:
    # Image paths are resolved from each file's folder: the same file name in two folders is one image
    # copied, as system outputs kept apart often have it; images given as data are not compared.
    if key == "image":
        return isinstance(mine, str) and isinstance(theirs, str) and os.path.basename(mine) != os.path.basename(theirs)
    return mine != theirs


def open_pairs(a: Any, b: Any, *, shard: tuple[int, int] = (0, 1), **options: Any) -> ItemSource:
    """This process's share of the pairs of inputs ``a`` and ``b`` (``options``: :func:`open_source`'s
    ``kind``, ``split``, ``columns``, applied to both)."""
    mine = open_source(a, shard=shard, option="--a", **options)
    theirs = open_source(b, option="--b", **options)

    def rows(skip: int) -> Iterator[dict]:
        others = theirs.items(skip=mine.first + skip)
        for item in mine.items(skip=skip):
            yield pair_item(item, next(others, None))

    return ItemSource(f"{mine.name} vs {theirs.name}", mine.kind, mine.total, mine.first, rows)


def pair_source(a: Any, b: Any, **options: Any) -> Callable[[tuple[int, int]], ItemSource]:
    """What :func:`mmjudge.stream.score_file` opens in each process: ``shard -> open_pairs(a, b, shard=shard)``."""
    return lambda shard: open_pairs(a, b, shard=shard, **options)


def check_same_length(a: Any, b: Any, **options: Any) -> int:
    """The number of items, once both inputs are known to hold as many; else one line saying they differ.

    Raises:
        ValueError: the two inputs hold different numbers of items, or none.
    """
    count_a, count_b = open_source(a, option="--a", **options).total, open_source(b, option="--b", **options).total
    if count_a is not None and count_b is not None and count_a != count_b:
        raise ValueError(
            f"--a holds {count_a:,} items and --b {count_b:,}: the two must hold the same items in the same order."
        )
    if not count_a:
        raise ValueError(f"--a {a}: no items to compare.")
    return count_a
