"""One persistent store and one way to use it: an SQLite key → JSON table (:class:`ResultStore`), and
:func:`cached_map`, which answers a list of keyed work items from a lookup and computes each missing one
once, saving answers as they arrive. The judge cache (:mod:`mmjudge.judges.cached`) and the CLIP
embedding cache (:mod:`mmjudge.encoders.clip`) are both this, with their own keys.

Several processes may share one file (WAL journal, busy timeout); only answers actually computed are
stored, so an interrupted run resumes where it stopped.

>>> import tempfile, os
>>> store = ResultStore(os.path.join(tempfile.mkdtemp(), "s.sqlite"))
>>> calls = []
>>> def square(todo, on_batch):
...     calls.append(todo)
...     answers = [int(k) ** 2 for k in (keys[i] for i in todo)]
...     on_batch(list(range(len(todo))), answers)
...     return answers
>>> keys = ["3", "4", "3"]
>>> cached_map(keys, square, store.get_many, store.put_many)
([9, 16, 9], 0)
>>> cached_map(keys, square, store.get_many, store.put_many), calls
(([9, 16, 9], 3), [[0, 1]])
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from mmjudge.paths import check_cache_path

SCHEMA_VERSION = 1

Lookup = Callable[[list], dict]
Save = Callable[[list], None]


class ResultStore:
    """Key → JSON value in one SQLite file, safe to share between processes and threads."""

    def __init__(self, path: str | os.PathLike):
        self.path = check_cache_path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False)
            self._conn.execute("SELECT 1").fetchone()
        except (OSError, sqlite3.Error) as err:
            raise ValueError(
                f"cache: cannot open {str(self.path)!r} as an SQLite file ({err}); give another path "
                "(or pass cache=False / --no-cache)."
            ) from None
        # Switching to WAL needs a moment of exclusive access and SQLite does not wait for it (no busy
        # handler there): two processes opening a new file together can see "database is locked".
        for attempt in range(100):
            try:
                with self._lock, self._conn:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute(
                        "CREATE TABLE IF NOT EXISTS results "
                        "(key TEXT PRIMARY KEY, value TEXT NOT NULL, schema INTEGER NOT NULL)"
                    )
                break
            except sqlite3.DatabaseError as err:
                if "locked" not in str(err) or attempt == 99:
                    raise ValueError(
                        f"cache: cannot use {str(self.path)!r} ({err}); give another path "
                        "(or pass cache=False / --no-cache)."
                    ) from None
                time.sleep(0.05)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The stored values of those ``keys`` that are stored."""
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, value FROM results WHERE schema = ? AND key IN ({marks})", [SCHEMA_VERSION, *chunk]
                )
                found.update((k, json.loads(v)) for k, v in rows)
        return found

    def put_many(self, items: Sequence[tuple[str, Any]]) -> None:
        """Store ``(key, JSON-able value)`` pairs (a key stored again is replaced)."""
        rows = [(k, json.dumps(v), SCHEMA_VERSION) for k, v in items]
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO results (key, value, schema) VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


def cached_map(
    keys: Sequence[str],
    compute: Callable[[list[int], Callable[[Sequence[int], list], None]], list],
    lookup: Lookup,
    save: Save | None = None,
) -> tuple[list, int]:
    """Values for ``keys`` and how many were found by ``lookup``.

    ``lookup(unique keys)`` returns the known values (a dict); every other key is computed once:
    ``compute(todo, on_batch)`` receives ``todo``, the positions in ``keys`` of the first occurrence of each
    missing key, and returns their values in that order; it may call ``on_batch(positions in todo,
    values)`` as batches finish, and ``save`` (``[(key, value), …]``) then stores them at once, so an
    interrupted computation keeps what it finished. Values ``save`` should not keep (failures) are for
    ``save`` to skip.
    """
    found = lookup(list(dict.fromkeys(keys)))
    out = [found.get(k) for k in keys]
    hits = sum(k in found for k in keys)
    first: dict[str, int] = {}
    todo = [i for i, k in enumerate(keys) if k not in found and first.setdefault(k, i) == i]
    if not todo:
        return out, hits

    def keep(batch: Sequence[int], values: list) -> None:
        if save is not None:
            save([(keys[todo[j]], value) for j, value in zip(batch, values)])

    computed = compute(todo, keep)
    by_key = {keys[i]: value for i, value in zip(todo, computed)}
    return [by_key.get(k, value) for k, value in zip(keys, out)], hits
