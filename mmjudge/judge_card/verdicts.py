"""Verdicts a judge gave elsewhere, read for a card without loading any judge (``--verdicts BENCHMARK=FILE``).

A verdict file is JSON Lines, one object per item of the benchmark:

* pairs benchmarks: ``{"id": ..., "preferred": 0 | 1 | 0.5}`` — the index of the better response in the
  benchmark's list of responses (``0.5`` for a tie; ``null`` when the judge gave no answer);
* ratings benchmarks: ``{"id": ..., "score": <number>}`` (``null``: no answer);
* rankings benchmarks (MLLM-as-a-Judge's batch): ``{"id": ..., "ranking": [2, 0, 1]}`` — the indices of the item's
  answers, best first, each answer once (``null``: no answer).

Ids are the benchmark's own (``mmjudge.load_dataset(name)``'s ``id`` column). Every line is checked before
anything is scored, and a bad one is one line naming the file and the line.

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "v.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write('{"id": "a", "preferred": 0}\\n{"id": "b", "preferred": 0.5}\\n{"id": 7, "preferred": null}\\n')
>>> read_verdicts(path, "pairs")
{'a': 0.0, 'b': 0.5, '7': nan}
>>> with open(path, "a") as f:
...     _ = f.write('{"id": "c", "preferred": 2}\\n')
>>> read_verdicts(path, "pairs")
Traceback (most recent call last):
ValueError: ...v.jsonl line 4: `preferred` must be 0, 1 or 0.5 (the index of the better response; ...), but got 2.
>>> parse_verdicts(['{"id": "r1", "ranking": [2, 0, 1]}', '{"id": "r2", "ranking": null}'], "rankings")
{'r1': [2, 0, 1], 'r2': None}
>>> parse_verdicts(['{"id": "r1", "ranking": [2, 0, 1]}'], "rankings", "v.jsonl", sizes={"r1": 4})
Traceback (most recent call last):
ValueError: v.jsonl line 1: `ranking` must list the 4 answers' indices (0-3) best first, ... but got [2, 0, 1].
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mmjudge.inputs import is_number
from mmjudge.paths import open_regular_file

FIELD = {"pairs": "preferred", "ratings": "score", "rankings": "ranking"}
# A verdict line is one short object; a file whose "line" is longer is no verdict file, and is not read whole.
MAX_LINE_CHARS = 1 << 20


def read_verdicts(path: str | os.PathLike, kind: str, sizes: Mapping[str, int] | None = None) -> dict[str, Any]:
    """id → the verdict (``preferred`` for ``kind="pairs"``, ``score`` for ``"ratings"``, NaN: no answer;
    ``ranking`` for ``"rankings"``, a list of indices, ``None``: no answer). ``sizes``: each item's number of
    answers, which a ranking must order every one of.

    Raises:
        ValueError: a line that is not a JSON object, without an ``id``, with a repeated id or a value out of
            range; FileNotFoundError: no such file.
    """
    _check_kind(kind)
    file = Path(path).expanduser()
    if not file.exists():
        raise FileNotFoundError(f"verdict file {str(file)!r}: no such file.")
    # utf-8-sig: a byte-order mark (Windows editors write one) is read as the board's reader reads it (jsonl.decode)
    with io.TextIOWrapper(open_regular_file(file), encoding="utf-8-sig", errors="replace") as f:
        out = parse_verdicts(_short_lines(f, str(file)), kind, str(file), sizes)
    if not out:
        raise ValueError(f"{file}: no verdicts (the file is empty).")
    return out


def parse_verdicts(
    lines: Iterable[str], kind: str, source: str = "", sizes: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The verdicts of a file's ``lines`` (what :func:`read_verdicts` reads; the leaderboard's Judges track checks
    an upload with it), every problem one ``ValueError`` naming ``<source> line N`` (``line N`` without a source).
    ``sizes`` (rankings): each item's number of answers; a ranking must be a permutation of them.

    >>> parse_verdicts(['{"id": "a", "score": 2.5}', "", '{"id": "b", "score": null}'], "ratings")
    {'a': 2.5, 'b': nan}
    >>> parse_verdicts(['{"id": "a", "preferred": 1}', '{"id": "a", "preferred": 0}'], "pairs")
    Traceback (most recent call last):
    ValueError: line 2: id 'a' has a verdict already; give one verdict per item.
    """
    _check_kind(kind)
    key, out = FIELD[kind], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source} line {number}" if source else f"line {number}"
        row = _object(line, where)
        if "id" not in row or row["id"] is None or isinstance(row["id"], (dict, list, bool)):
            raise ValueError(f"{where}: expected an `id` (a string or a number), but got {row.get('id')!r}.")
        item = str(row["id"])
        if item in out:
            raise ValueError(f"{where}: id {item!r} has a verdict already; give one verdict per item.")
        if key not in row:
            raise ValueError(f"{where}: expected `{key}`, but the object has {sorted(row)}.")
        out[item] = _value(row[key], key, where, None if sizes is None else sizes.get(item))
    return out


def _check_kind(kind: str) -> None:
    if kind not in FIELD:
        raise ValueError(f"Expected argument `kind` to be one of {', '.join(map(repr, FIELD))}, but got {kind!r}.")


def check_known(verdicts: Iterable[str], known: Iterable[str], limit: int | None = None) -> None:
    """Every verdict names an item the card scores (:func:`mmjudge.errors.id_differences`, as the board checks
    an upload); with ``limit``, the items are the benchmark's first ``limit``, and the message says so.

    >>> check_known(["a", "z"], ["a", "b"], limit=2)
    Traceback (most recent call last):
    ValueError: 1 verdict(s) name ids not among the 2 items read (--limit 2) ('z'); ids are the benchmark's own ...
    """
    from mmjudge.errors import id_differences, shown_ids

    _, unknown = id_differences(verdicts, known)
    if unknown:
        which = (
            "the benchmark does not have" if limit is None else f"not among the {limit:,} items read (--limit {limit})"
        )
        raise ValueError(
            f"{len(unknown):,} verdict(s) name ids {which} ({shown_ids(unknown)}); ids are the benchmark's own `id` "
            "column."
        )


def _short_lines(f: io.TextIOWrapper, source: str) -> Iterable[str]:
    """The lines of text file ``f``, none held longer than :data:`MAX_LINE_CHARS` (a one-line gigabyte is refused
    after reading that much, not after reading it all)."""
    for number, line in enumerate(iter(lambda: f.readline(MAX_LINE_CHARS + 1), ""), 1):
        if len(line.rstrip("\r\n")) > MAX_LINE_CHARS:
            raise ValueError(
                f"{source} line {number}: longer than {MAX_LINE_CHARS:,} characters; a verdict line is one JSON "
                'object such as {"id": ..., "preferred": 0}.'
            )
        yield line


def _object(line: str, where: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"{where}: not JSON ({str(err)[:80]}).") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, but got {type(row).__name__}.")
    return row


def _value(value: Any, key: str, where: str, size: int | None = None) -> Any:
    if key == "ranking":
        return None if value is None else _ranking(value, where, size)
    if value is None:
        return math.nan
    if key == "preferred":
        if not is_number(value) or float(value) not in (0.0, 1.0, 0.5):
            raise ValueError(
                f"{where}: `preferred` must be 0, 1 or 0.5 (the index of the better response; 0.5 for a tie), "
                f"but got {value!r}."
            )
        return float(value)
    if not is_number(value) or not math.isfinite(float(value)):
        raise ValueError(f"{where}: `score` must be a finite number (or null for no answer), but got {value!r}.")
    return float(value)


def _ranking(value: Any, where: str, size: int | None) -> list[int]:
    """A ranking: whole-number indices of the item's answers, best first, each once — all ``size`` of them where
    the item is known (an unknown id is reported by :func:`check_known`, as for the other kinds)."""
    whole = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    n = size if size is not None else len(value) if whole else 0
    if not whole or n < 2 or sorted(value) != list(range(n)):
        which = f"the {n} answers' indices (0-{n - 1})" if size is not None else "the answers' indices (0, 1, ...)"
        example = [1, 0, *range(2, max(n, 3))]
        raise ValueError(
            f"{where}: `ranking` must list {which} best first, each once (e.g. {example}), but got {repr(value)[:80]}."
        )
    return list(value)
