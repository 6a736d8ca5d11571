"""Checks on an uploaded file before it is accepted: one clear message naming the line or id.

Every track uploads JSONL (one JSON object per line, UTF-8). The Models and Arena tracks send
``{"id", "text"}`` for exactly the benchmark's ids; the Metrics track sends ``{"id", "score", …}`` (``score`` or
``overall`` plus optional per-criterion columns such as ``correctness``), every value a finite number.

>>> validate_outputs(b'{"id": "a", "text": "A dog."}\\n{"id": "b", "text": "A cat."}\\n', ["a", "b"])
[{'id': 'a', 'text': 'A dog.'}, {'id': 'b', 'text': 'A cat.'}]
>>> validate_outputs(b'{"id": "a", "text": "A dog."}\\n', ["a", "b"])
Traceback (most recent call last):
...
mmjudge.leaderboard.validation.SubmissionError: missing 1 id(s) of the benchmark: 'b'.
>>> validate_scores(b'{"id": "a", "score": 0.5}\\n{"id": "b", "score": NaN}\\n', ["a", "b"])
Traceback (most recent call last):
...
mmjudge.leaderboard.validation.SubmissionError: line 2 (id 'b'): 'score' is nan; scores must be finite numbers.
>>> validate_outputs(b'{"id": "a", "score": 0.5}\\n', ["a"])
Traceback (most recent call last):
...
mmjudge.leaderboard.validation.SubmissionError: line 1 (id 'a'): no 'text'. This looks like a Metrics-track score file;
the Models track wants one line per item like {"id": "a", "text": "<your model's output>"}.
To submit scores, choose the Metrics track.
>>> human_size(20 * 2**20), human_size(4 * 2**20), human_size(900)
('20.0 MB', '4.0 MB', '900 bytes')
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from mmjudge.errors import id_differences, shown_ids
from mmjudge.jsonl import JsonLineError, decode, json_lines
from mmjudge.metaeval.scores import check_scores

MAX_BYTES = 4 * 1024 * 1024
MAX_TEXT_CHARS = 4000
MAX_ID_CHARS = 200


class SubmissionError(ValueError):
    """An upload that cannot be accepted; the message says what is wrong and where."""


def human_size(n_bytes: int) -> str:
    """A size as people read it (MB = 2^20 bytes, as upload limits are set)."""
    if n_bytes < 2**10:
        return f"{n_bytes} bytes"
    if n_bytes < 2**20:
        return f"{n_bytes / 2**10:.1f} KB"
    return f"{n_bytes / 2**20:.1f} MB"


def size_reason(n_bytes: int, max_bytes: int) -> str:
    """The one line for a file over the limit, in the user's terms."""
    exact = f" ({max_bytes:,} bytes)" if max_bytes >= 2**10 else ""
    return (
        f"the file is {human_size(n_bytes)}; this board accepts at most {human_size(max_bytes)}{exact}. "
        'Keep only the fields the track needs in each line: "id" and "text" (Models) or "id" and the '
        "scores (Metrics)."
    )


def parse_jsonl(data: bytes, max_bytes: int | None = MAX_BYTES) -> list[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line (``max_bytes=None``: no size limit).

    Raises:
        SubmissionError: too large, empty, not UTF-8 (naming the line), a line that is not JSON or not
            a JSON object, or an object without a string ``id``.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise SubmissionError(f"expected the file's bytes, but got {type(data).__name__}.")
    if max_bytes is not None and len(data) > max_bytes:
        raise SubmissionError(size_reason(len(data), max_bytes))
    try:
        located = list(json_lines(decode(data)))
    except JsonLineError as err:
        raise SubmissionError(str(err)) from None
    rows = []
    for n, obj in located:
        if not isinstance(obj, dict):
            raise SubmissionError(f'line {n}: expected a JSON object like {{"id": …}}, but got {type(obj).__name__}.')
        item_id = obj.get("id")
        if not isinstance(item_id, str) or not item_id:
            raise SubmissionError(f"line {n}: 'id' must be a non-empty string, but got {item_id!r}.")
        if len(item_id) > MAX_ID_CHARS:
            raise SubmissionError(f"line {n}: the id has {len(item_id)} characters; the limit is {MAX_ID_CHARS}.")
        rows.append((n, obj))
    if not rows:
        raise SubmissionError("the file holds no JSON lines.")
    return rows


def check_ids(rows: list[tuple[int, dict]], ids: Sequence[str]) -> None:
    """The file's ids are exactly the benchmark's: no duplicate, extra or missing id."""
    seen: dict[str, int] = {}
    for n, obj in rows:
        if obj["id"] in seen:
            raise SubmissionError(f"line {n}: duplicate id {obj['id']!r} (first on line {seen[obj['id']]}).")
        seen[obj["id"]] = n
    missing, extra = id_differences(seen, ids)
    if extra:
        raise SubmissionError(
            f"line {seen[extra[0]]}: {len(extra)} id(s) are not in the benchmark: {shown_ids(extra)}."
        )
    if missing:
        raise SubmissionError(f"missing {len(missing)} id(s) of the benchmark: {shown_ids(missing)}.")


def validate_outputs(
    data: bytes,
    ids: Sequence[str],
    max_bytes: int | None = MAX_BYTES,
    max_chars: int = MAX_TEXT_CHARS,
    track: str = "Models",
) -> list[dict]:
    """A Models- or Arena-track upload (``track``: its label in messages) as ``[{"id", "text"}]`` in the
    benchmark's order.

    Raises:
        SubmissionError: any :func:`parse_jsonl` / :func:`check_ids` problem, a ``text`` that is missing,
            not a string, blank or longer than ``max_chars``.
    """
    rows = parse_jsonl(data, max_bytes)
    for n, obj in rows:
        text = obj.get("text")
        if "text" not in obj:
            example = json.dumps({"id": obj["id"], "text": "<your model's output>"}, ensure_ascii=False)
            if any(_is_number(v) for k, v in obj.items() if k != "id"):
                raise SubmissionError(
                    f"line {n} (id {obj['id']!r}): no 'text'. This looks like a Metrics-track score file; "
                    f"the {track} track wants one line per item like {example}. To submit scores, choose "
                    "the Metrics track."
                )
            raise SubmissionError(f"line {n} (id {obj['id']!r}): no 'text'; each line needs {example}.")
        if not isinstance(text, str):
            raise SubmissionError(
                f"line {n} (id {obj['id']!r}): 'text' must be a string, but got {type(text).__name__}."
            )
        if not text.strip():
            raise SubmissionError(f"line {n} (id {obj['id']!r}): 'text' is empty.")
        if len(text) > max_chars:
            raise SubmissionError(
                f"line {n} (id {obj['id']!r}): 'text' has {len(text)} characters; the limit is {max_chars}."
            )
    check_ids(rows, ids)
    by_id = {obj["id"]: obj["text"] for _, obj in rows}
    return [{"id": i, "text": by_id[i]} for i in ids]


def validate_scores(data: bytes, ids: Sequence[str], max_bytes: int | None = MAX_BYTES) -> dict[str, dict[str, float]]:
    """A Metrics-track upload as ``id → {column: value}`` (numeric columns; ``signature``/``text`` kept out).

    Each line is checked here, naming its line number; the ids as a whole (every benchmark id scored,
    no unknown one, every value finite) by the meta-evaluation's own check,
    :func:`mmjudge.metaeval.scores.check_scores`, so the board accepts exactly what the worker's
    meta-evaluation accepts.

    Raises:
        SubmissionError: any :func:`parse_jsonl` problem, no numeric column, a row lacking a column the
            others have, a non-number, NaN or infinity, a duplicate id, missing or unknown ids.
    """
    rows = parse_jsonl(data, max_bytes)
    columns: list[str] = []
    for _, obj in rows:
        for key, value in obj.items():
            if key != "id" and key not in columns and _is_number(value):
                columns.append(key)
    if not columns:
        hint = ""
        if any(isinstance(obj.get("text"), str) for _, obj in rows):
            hint = (
                ' This looks like a Models-track outputs file ({"id", "text"}); to submit a model\'s outputs, '
                "choose the Models track."
            )
        raise SubmissionError('no numeric score column; each line needs e.g. {"id": …, "score": 0.5}.' + hint)
    out: dict[str, dict[str, float]] = {}
    line_of: dict[str, int] = {}
    for n, obj in rows:
        if obj["id"] in line_of:
            raise SubmissionError(f"line {n}: duplicate id {obj['id']!r} (first on line {line_of[obj['id']]}).")
        line_of[obj["id"]] = n
        values = {}
        for key in columns:
            if key not in obj:
                raise SubmissionError(f"line {n} (id {obj['id']!r}): missing score {key!r} (other lines have it).")
            value = obj[key]
            if not _is_number(value):
                raise SubmissionError(f"line {n} (id {obj['id']!r}): {key!r} is {value!r}, not a number.")
            if not math.isfinite(value):
                raise SubmissionError(
                    f"line {n} (id {obj['id']!r}): {key!r} is {value}; scores must be finite numbers."
                )
            values[key] = float(value)
        out[obj["id"]] = values
    try:
        check_scores(out, ids, _SCORES)
    except ValueError as err:
        message = str(err).removeprefix(f"{_SCORES}: ")
        unknown = [i for i in out if i not in set(ids)]
        raise SubmissionError(
            f"line {line_of[unknown[0]]}: {message}" if unknown and not message.startswith("no score") else message
        ) from None
    return {i: out[i] for i in ids}


_SCORES = (
    "the file"  # the name check_scores puts before its messages (taken off again: the board's lines name the file)
)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
