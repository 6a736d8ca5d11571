"""Reading JSON Lines the same way everywhere (``score --input``, metaeval score files, leaderboard
uploads): text decoded as UTF-8 (a byte-order mark accepted), blank lines skipped, and every error a
:class:`JsonLineError` carrying the 1-based line, so each caller can name the file its own way.

>>> list(json_lines('{"id": "a"}\\n\\n[1]\\n'))
[(1, {'id': 'a'}), (3, [1])]
>>> decode(b'{"t": "caf\\xe9"}')
Traceback (most recent call last):
mmjudge.jsonl.JsonLineError: line 1: not UTF-8 (byte 10); save the file as UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


class JsonLineError(ValueError):
    """A problem on one line: ``line`` (1-based) and ``reason`` (a sentence without the location)."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line, self.reason = line, reason


def decode(data: bytes) -> str:
    """``data`` as UTF-8 text without a leading byte-order mark; a bad byte names its line."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as err:
        line = bytes(data)[: err.start].count(b"\n") + 1
        raise JsonLineError(line, f"not UTF-8 (byte {err.start}); save the file as UTF-8.") from None
    return text[1:] if text.startswith("\ufeff") else text


def json_lines(text: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line; the values are not checked further."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as err:
            raise JsonLineError(n, f"not valid JSON ({err.msg} at column {err.colno}).") from None
