"""A persistent judge cache: SQLite (stdlib), wrapped around any judge.

Keys are sha256 hashes of (judge identity: backend, model id + revision, settings that change outputs;
request kind; full prompt; image pixels; choices / decoding settings). Results are written batch by
batch as the judge produces them, so an interrupted run resumes where it stopped. Several processes
may share one file (WAL journal, busy timeout). Only answers the judge actually returned are stored:
invalid input is rejected before any judge call and never reaches the cache.

>>> import tempfile, os
>>> from mmjudge.cache import CachedJudge
>>> from mmjudge.judges import load_judge, RatingRequest, Turn
>>> inner = load_judge("dummy")
>>> judge = CachedJudge(inner, os.path.join(tempfile.mkdtemp(), "cache.sqlite"))
>>> req = [RatingRequest(turns=[Turn("user", "Rate: a cat.")])]
>>> first = judge.rate(req, progress=False); again = judge.rate(req, progress=False)
>>> inner.calls, first[0].raw == again[0].raw
(1, True)
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Optional, Sequence, Union

from mmjudge import distributed
from mmjudge.judges.base import CAPABILITIES, GenerationRequest, Judge, RatingRequest, RatingResult, request_key

SCHEMA_VERSION = 1


def default_cache_path() -> Path:
    """``$MMJUDGE_CACHE`` if set, else ``$XDG_CACHE_HOME/mmjudge/judge_cache.sqlite`` (``~/.cache``)."""
    env = os.environ.get("MMJUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")).expanduser()
    return base / "mmjudge" / "judge_cache.sqlite"


_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_cache_path(path: Union[str, os.PathLike]) -> Path:
    """``path`` as a usable cache file, checked before any model is loaded.

    Raises:
        ValueError: the path is a folder, an existing file that is not an SQLite database, or a place
            where no file can be created (read-only folder, a file in the way).

    >>> import tempfile, os
    >>> check_cache_path(tempfile.mkdtemp())
    Traceback (most recent call last):
    ValueError: cache: '...' is a folder; give a file path such as '.../judge_cache.sqlite' (or pass cache=False / --no-cache).
    """
    path = Path(path).expanduser()
    fix = "(or pass cache=False / --no-cache)"
    if path.is_dir():
        raise ValueError(f"cache: {str(path)!r} is a folder; give a file path such as {str(path / 'judge_cache.sqlite')!r} {fix}.")
    if path.is_file():
        with open(path, "rb") as f:
            head = f.read(16)
        if head and head != _SQLITE_MAGIC:
            raise ValueError(f"cache: {str(path)!r} exists but is not an SQLite file; give another path {fix}.")
        if not os.access(path, os.W_OK):
            raise ValueError(f"cache: {str(path)!r} is not writable; give another path {fix}.")
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"cache: cannot create {str(path)!r}: {str(parent)!r} is a file, not a folder {fix}.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"cache: cannot create {str(path)!r}: folder {str(parent)!r} is not writable {fix}.")
    return path


class JudgeCache:
    """Key → JSON store in one SQLite file, safe to share between processes."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = check_cache_path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False)
            self._conn.execute("SELECT 1").fetchone()
        except (OSError, sqlite3.Error) as err:
            raise ValueError(f"cache: cannot open {str(self.path)!r} as an SQLite file ({err}); give another path "
                             "(or pass cache=False / --no-cache).") from None
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
                    raise ValueError(f"cache: cannot use {str(self.path)!r} ({err}); give another path "
                                     "(or pass cache=False / --no-cache).") from None
                time.sleep(0.05)

    def get_many(self, keys: Sequence[str]) -> dict[str, object]:
        found: dict[str, object] = {}
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

    def put_many(self, items: Sequence[tuple[str, object]]) -> None:
        rows = [(k, json.dumps(v), SCHEMA_VERSION) for k, v in items]
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO results (key, value, schema) VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


class CachedJudge(Judge):
    """Wraps ``judge`` so each answer is computed once per cache file.

    Args:
        judge: any :class:`~mmjudge.judges.base.Judge`.
        path: the SQLite file; default :func:`default_cache_path`.
    """

    def __init__(self, judge: Judge, path: Optional[Union[str, os.PathLike]] = None):
        self.inner = judge
        self.store = JudgeCache(path or default_cache_path())
        self.backend = judge.backend
        self.batch_size = judge.batch_size
        # The wrapper answers exactly as the judge it wraps: same capabilities, same model facts.
        for name in (*CAPABILITIES, "model_type"):
            setattr(self, name, getattr(judge, name))
        self.hits = 0

    def identity(self) -> dict:
        return self.inner.identity()

    def signature_fields(self) -> dict:
        return self.inner.signature_fields()

    def _rate_batch(self, requests):  # pragma: no cover - rate() below never calls it
        return self.inner._rate_batch(requests)

    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        stored = self._cached(requests, "rate", RatingResult.from_json, RatingResult.to_json, self.inner.rate, progress)
        return stored

    def generate(self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch=None) -> list[str]:
        return self._cached(requests, "generate", str, str, self.inner.generate, progress)

    def _cached(self, requests, kind, decode, encode, compute, progress):
        identity = self.inner.identity()
        keys = [request_key(identity, kind, r) for r in requests]
        if distributed.is_distributed():
            # All processes must agree on what is missing (the judge splits exactly that between them),
            # even while another process is already writing this call's answers: the main one reads and
            # decides, the others receive its answer (reading the cache there too would be wasted work).
            found = distributed.broadcast_from_main(self.store.get_many(keys) if distributed.is_main() else None)
        else:
            found = self.store.get_many(keys)
        out = [decode(found[k]) if k in found else None for k in keys]
        self.hits += sum(k in found for k in keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if not missing:
            return out
        # Identical requests in one call are computed once.
        first_of: dict[str, int] = {}
        todo = [i for i in missing if first_of.setdefault(keys[i], i) == i]

        def store_batch(batch: Sequence[int], answers: list) -> None:
            rows = []
            for j, answer in zip(batch, answers):
                if isinstance(answer, RatingResult) and not all(math.isfinite(x) for x in answer.raw):
                    raise RuntimeError(f"The judge returned non-finite probabilities for request #{todo[j]}.")
                rows.append((keys[todo[j]], encode(answer)))
            self.store.put_many(rows)

        computed = compute([requests[i] for i in todo], progress=progress, on_batch=store_batch)
        by_key = {keys[i]: answer for i, answer in zip(todo, computed)}
        for i in missing:
            out[i] = by_key[keys[i]]
        return out
