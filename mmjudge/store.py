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

    @property
    def batches(self) -> BatchLedger:
        """The ledger of submitted API batches kept in the same file (:class:`BatchLedger`)."""
        ledger = self.__dict__.get("_batches")
        if ledger is None:
            ledger = self.__dict__["_batches"] = BatchLedger(self)
        return ledger

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


class BatchLedger:
    """Which requests were submitted in which API batch (OpenAI's Batch API), kept beside the answers so a
    killed run, run again, collects the batch it already paid for instead of submitting a second one.

    A batch is recorded when its input file is uploaded (state ``uploaded``, before the batch exists: a kill
    between upload and submission is then found again), then ``submitted`` with its id, ``collected`` once
    its answers are stored, or ``abandoned`` (failed, expired, cancelled: its missing requests may be sent
    again). Each request is a cache key with a small JSON ``meta`` (what reading its answer needs).

    >>> import tempfile, os
    >>> ledger = ResultStore(os.path.join(tempfile.mkdtemp(), "s.sqlite")).batches
    >>> n = ledger.add("judge-a", "file-1", [("k1", {"choices": ["1", "2"]}), ("k2", {})])
    >>> ledger.update(n, batch_id="batch_9", state="submitted")
    >>> ledger.live("judge-a", ["k1", "k3"]), ledger.get(n)["batch_id"]
    ({'k1': 1}, 'batch_9')
    >>> ledger.update(n, state="collected"); ledger.live("judge-a", ["k1"])
    {}
    """

    LIVE = ("uploaded", "submitted")

    def __init__(self, store: ResultStore):
        self._conn, self._lock = store._conn, store._lock
        with self._lock, self._conn:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, "
                "batch_id TEXT, input_file_id TEXT, state TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS batch_requests (batch INTEGER NOT NULL, key TEXT NOT NULL, "
                "meta TEXT NOT NULL, error TEXT, PRIMARY KEY (batch, key))"
            )
            self._conn.execute("CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests (key)")

    def add(self, owner: str, input_file_id: str, entries: Sequence[tuple[str, Any]]) -> int:
        """Record an uploaded input file holding ``entries`` (``(key, meta)``); returns the ledger id."""
        with self._lock, self._conn:
            cursor = self._conn.execute(
                "INSERT INTO batches (owner, input_file_id, state, created) VALUES (?, ?, 'uploaded', ?)",
                (owner, input_file_id, time.time()),
            )
            number = int(cursor.lastrowid)
            self._conn.executemany(
                "INSERT OR REPLACE INTO batch_requests (batch, key, meta) VALUES (?, ?, ?)",
                [(number, key, json.dumps(meta)) for key, meta in entries],
            )
        return number

    def update(self, number: int, batch_id: str | None = None, state: str | None = None) -> None:
        with self._lock, self._conn:
            if batch_id is not None:
                self._conn.execute("UPDATE batches SET batch_id = ? WHERE id = ?", (batch_id, number))
            if state is not None:
                self._conn.execute("UPDATE batches SET state = ? WHERE id = ?", (state, number))

    def get(self, number: int) -> dict[str, Any]:
        with self._lock:
            row = self._conn.execute(
                "SELECT id, owner, batch_id, input_file_id, state, created FROM batches WHERE id = ?", (number,)
            ).fetchone()
        return dict(zip(("id", "owner", "batch_id", "input_file_id", "state", "created"), row)) if row else {}

    def live(self, owner: str, keys: Sequence[str]) -> dict[str, int]:
        """``{key: ledger id}`` for those ``keys`` that wait in a batch of ``owner`` not yet collected."""
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                rows = self._conn.execute(
                    "SELECT r.key, b.id FROM batch_requests r JOIN batches b ON b.id = r.batch WHERE b.owner = ? "
                    f"AND b.state IN ('uploaded', 'submitted') AND r.key IN ({','.join('?' * len(chunk))})",
                    [owner, *chunk],
                )
                found.update((k, int(n)) for k, n in rows)
        return found

    def entries(self, number: int) -> list[tuple[str, Any, str | None]]:
        """The requests of one batch: ``(key, meta, error)``."""
        with self._lock:
            rows = self._conn.execute("SELECT key, meta, error FROM batch_requests WHERE batch = ?", (number,))
            return [(k, json.loads(m), e) for k, m, e in rows]

    def set_errors(self, number: int, errors: Sequence[tuple[str, str]]) -> None:
        """Why the batch did not answer these keys (``(key, reason)``)."""
        with self._lock, self._conn:
            self._conn.executemany(
                "UPDATE batch_requests SET error = ? WHERE batch = ? AND key = ?", [(e, number, k) for k, e in errors]
            )

    def count(self, owner: str | None = None) -> int:
        """How many batches were recorded (for ``owner``)."""
        with self._lock:
            if owner is None:
                return self._conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM batches WHERE owner = ?", (owner,)).fetchone()[0]
