"""Durable storage and work queue of the leaderboard: one SQLite file (WAL) plus the uploaded files.

Every submission is made durable before the submitter is told "received": its file is written under
a generated name and fsync'ed, then its row is committed (``synchronous=FULL``). Jobs move
``PENDING → RUNNING → DONE | FAILED``. A worker claims the oldest PENDING job atomically
(``BEGIN IMMEDIATE`` + ``UPDATE … WHERE status='PENDING'``) under a lease that it renews with
heartbeats; a job whose lease ran out (its worker was killed) goes back to PENDING. Results are keyed
by submission id and written in the same transaction that sets DONE, and only by the worker that
still holds the lease, so a job is never lost and never counted twice.

>>> import tempfile
>>> store = Store(tempfile.mkdtemp())
>>> sid = store.add_submission(track="models", benchmark="demo", name="m", submitter="me", data=b'{"id": "a"}\\n')
>>> store.get(sid)["status"]
'PENDING'
>>> job = store.claim("worker-1", lease_s=60)
>>> job["id"] == sid, job["status"]
(True, 'RUNNING')
>>> store.complete(sid, "worker-1", signature="s", summary={"overall": 3.0}, rows=[])
True
>>> store.get(sid)["status"], store.result(sid)["summary"]
('DONE', {'overall': 3.0})
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DB_NAME = "leaderboard.sqlite"
UPLOADS = "uploads"
STATUSES = ("PENDING", "RUNNING", "DONE", "FAILED")
DEFAULT_LEASE_S = 60.0
MAX_ATTEMPTS = 10  # a job whose worker died this many times is failed rather than retried forever

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,
    track TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    name TEXT NOT NULL,
    link TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    submitter TEXT NOT NULL,
    client TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,
    file_name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'DONE', 'FAILED')),
    reason TEXT NOT NULL DEFAULT '',
    signature TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    hidden INTEGER NOT NULL DEFAULT 0,
    synced_at REAL
);
CREATE INDEX IF NOT EXISTS submissions_queue ON submissions (status, created_at);
CREATE INDEX IF NOT EXISTS submissions_hash ON submissions (content_hash);
CREATE TABLE IF NOT EXISTS results (
    submission_id TEXT PRIMARY KEY REFERENCES submissions (id) ON DELETE CASCADE,
    signature TEXT NOT NULL,
    summary TEXT NOT NULL,
    rows TEXT NOT NULL,
    worker TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rejections (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    submitter TEXT NOT NULL,
    client TEXT NOT NULL DEFAULT '',
    track TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    name TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""
# Columns added after the first release: (table, column, declaration), added to older databases.
_ADDED_COLUMNS = [
    ("submissions", "client", "TEXT NOT NULL DEFAULT ''"),
    ("rejections", "client", "TEXT NOT NULL DEFAULT ''"),
]
_INDEXES = """
CREATE INDEX IF NOT EXISTS submissions_client ON submissions (client, created_at);
CREATE INDEX IF NOT EXISTS rejections_client ON rejections (client, created_at);
"""


class RateLimitedError(ValueError):
    """The client already sent ``used`` submissions within the rate-limit window."""

    def __init__(self, client: str, used: int):
        super().__init__(f"{client!r} has sent {used} submissions")
        self.client, self.used = client, used


class DuplicateError(ValueError):
    """The same file (content hash) was already submitted to this benchmark; ``previous`` is its row."""

    def __init__(self, previous: dict):
        super().__init__(f"duplicate of submission {previous['id']}")
        self.previous = previous


def content_hash(data: bytes) -> str:
    """SHA-256 of the uploaded bytes (duplicate detection).

    >>> content_hash(b"abc")[:12]
    'ba7816bf8f01'
    """
    return hashlib.sha256(data).hexdigest()


class Store:
    """The leaderboard's database and upload folder under ``data_dir``.

    One connection per thread (SQLite connections must not be shared across threads); every process
    and thread opens the same file, so the app, several workers and an admin can work at once.
    """

    def __init__(self, data_dir: str | os.PathLike, timeout_s: float = 30.0):
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.uploads = self.data_dir / UPLOADS
        self.uploads.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_NAME
        self.timeout_s = timeout_s
        self._local = threading.local()
        self.connect().executescript(_SCHEMA)  # IF NOT EXISTS: safe when several processes start at once
        self._migrate()

    def _migrate(self) -> None:
        """Add the columns a database made by an older version lacks (then their indexes)."""
        with self.transaction() as db:
            for table, column, declaration in _ADDED_COLUMNS:
                if column not in {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        self.connect().executescript(_INDEXES)

    # ------------------------------------------------------------------------------------- plumbing
    def connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None, check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a committed submission survives a power cut
            db.execute("PRAGMA foreign_keys=ON")
            db.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")
            self._local.db = db
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error): takes the write lock up front, so
        a read-then-write (claiming a job) cannot interleave with another writer."""
        db = self.connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # ---------------------------------------------------------------------------------- submissions
    def add_submission(
        self,
        *,
        track: str,
        benchmark: str,
        name: str,
        submitter: str,
        data: bytes,
        link: str = "",
        description: str = "",
        signature: str = "",
        now: float | None = None,
        unique: bool = True,
        client: str = "",
        rate: tuple[int, float] | None = None,
    ) -> str:
        """Store the file under a generated name (fsync'ed), then commit the PENDING row. Returns the id.

        ``client`` identifies who sent the upload (the rate limit's key; ``submitter`` is only shown).
        ``rate`` = (max submissions, window in seconds) per client.

        Raises:
            DuplicateError: ``unique`` and the same content was already submitted to this benchmark.
            RateLimitedError: ``rate`` and the client used it up.
            Both are checked inside the inserting transaction, so simultaneous uploads cannot both pass.
        """
        sid = uuid.uuid4().hex
        file_name = f"{sid}.jsonl"  # never the uploader's name: no path traversal, no clashes
        path = self.uploads / file_name
        tmp = path.with_suffix(".part")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(self.uploads)
        now = time.time() if now is None else now
        digest = content_hash(data)
        try:
            with self.transaction() as db:
                if rate is not None:
                    used = _count_recent(db, client, now - rate[1])
                    if used >= rate[0]:
                        raise RateLimitedError(client, used)
                if unique:
                    previous = db.execute(
                        "SELECT * FROM submissions WHERE content_hash=? AND track=? AND benchmark=? ORDER BY created_at LIMIT 1",
                        (digest, track, benchmark),
                    ).fetchone()
                    if previous is not None:
                        raise DuplicateError(dict(previous))
                db.execute(
                    "INSERT INTO submissions (id, track, benchmark, name, link, description, submitter, client, content_hash,"
                    " file_name, status, signature, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,'PENDING',?,?,?)",
                    (
                        sid,
                        track,
                        benchmark,
                        name,
                        link,
                        description,
                        submitter,
                        client,
                        digest,
                        file_name,
                        signature,
                        now,
                        now,
                    ),
                )
        except (DuplicateError, RateLimitedError):
            path.unlink(missing_ok=True)
            raise
        return sid

    def add_rejection(
        self, *, submitter: str, track: str, benchmark: str, name: str, data: bytes, reason: str, client: str = ""
    ) -> None:
        """Log a refused upload (what was wrong, for the submitter's history and the admin)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO rejections (submitter, client, track, benchmark, name, content_hash, reason, created_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (submitter, client, track, benchmark, name, content_hash(data), reason, time.time()),
            )

    def read_file(self, sid: str) -> bytes:
        row = self.get(sid)
        if row is None:
            raise ValueError(f"No submission {sid!r}.")
        return (self.uploads / row["file_name"]).read_bytes()

    def get(self, sid: str) -> dict | None:
        row = self.connect().execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        return dict(row) if row else None

    def submissions(self, status: str | None = None, include_hidden: bool = False) -> list[dict]:
        sql, args = "SELECT * FROM submissions WHERE 1=1", []
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        if not include_hidden:
            sql += " AND hidden = 0"
        return [dict(r) for r in self.connect().execute(sql + " ORDER BY created_at, id", args)]

    def rejections(self) -> list[dict]:
        return [dict(r) for r in self.connect().execute("SELECT * FROM rejections ORDER BY n")]

    def count_recent(self, client: str, since: float) -> int:
        """Submissions (accepted or refused) from ``client`` since ``since`` — the rate limit's count."""
        return _count_recent(self.connect(), client, since)

    def position(self, sid: str) -> int | None:
        """The job's place in the queue (1 = next; 0 = running), None when it is not queued; one query."""
        row = (
            self.connect()
            .execute(
                "SELECT s.status, (SELECT COUNT(*) FROM submissions q WHERE q.status='PENDING' AND q.hidden=0"
                " AND (q.created_at < s.created_at OR (q.created_at = s.created_at AND q.id <= s.id))) AS ahead"
                " FROM submissions s WHERE s.id=? AND s.hidden=0 AND s.status IN ('PENDING', 'RUNNING')",
                (sid,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return int(row["ahead"]) if row["status"] == "PENDING" else 0

    def queue(self, now: float | None = None) -> list[dict]:
        """PENDING and RUNNING jobs, oldest first, with ``position`` (1 = next; 0 = running) and ``age_s``."""
        now = time.time() if now is None else now
        rows = (
            self.connect()
            .execute(
                "SELECT id, name, track, benchmark, status, created_at, worker, attempts, reason FROM submissions"
                " WHERE status IN ('PENDING', 'RUNNING') AND hidden = 0 ORDER BY created_at, id"
            )
            .fetchall()
        )
        out, position = [], 0
        for r in rows:
            d = dict(r)
            if d["status"] == "PENDING":
                position += 1
                d["position"] = position
            else:
                d["position"] = 0
            d["age_s"] = max(0.0, now - d["created_at"])
            out.append(d)
        return out

    # ---------------------------------------------------------------------------------------- queue
    def recover_expired(self, now: float | None = None) -> int:
        """RUNNING jobs whose lease ran out (the worker died) go back to PENDING — or to FAILED after
        :data:`MAX_ATTEMPTS` tries. Returns how many were re-queued or failed."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            failed = db.execute(
                "UPDATE submissions SET status='FAILED', reason=?, worker=NULL, lease_until=NULL, finished_at=?, updated_at=?"
                " WHERE status='RUNNING' AND lease_until < ? AND attempts >= ?",
                (f"the worker stopped {MAX_ATTEMPTS} times while scoring this submission", now, now, now, MAX_ATTEMPTS),
            ).rowcount
            requeued = db.execute(
                "UPDATE submissions SET status='PENDING', reason='re-queued: the worker stopped (lease expired)',"
                " worker=NULL, lease_until=NULL, updated_at=? WHERE status='RUNNING' AND lease_until < ?",
                (now, now),
            ).rowcount
        return failed + requeued

    def claim(self, worker: str, lease_s: float = DEFAULT_LEASE_S, now: float | None = None) -> dict | None:
        """Atomically take the oldest PENDING job for ``worker`` (None when the queue is empty)."""
        self.recover_expired(now)
        now = time.time() if now is None else now
        with self.transaction() as db:
            row = db.execute(
                "SELECT id FROM submissions WHERE status='PENDING' ORDER BY created_at, id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            claimed = db.execute(
                "UPDATE submissions SET status='RUNNING', worker=?, lease_until=?, started_at=?, updated_at=?,"
                " attempts=attempts+1, reason='' WHERE id=? AND status='PENDING'",
                (worker, now + lease_s, now, now, row["id"]),
            ).rowcount
        return self.get(row["id"]) if claimed == 1 else None

    def heartbeat(self, sid: str, worker: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
        """Extend the lease; False when the job is no longer this worker's (it was re-queued)."""
        now = time.time()
        with self.transaction() as db:
            n = db.execute(
                "UPDATE submissions SET lease_until=? WHERE id=? AND status='RUNNING' AND worker=?",
                (now + lease_s, sid, worker),
            ).rowcount
        return n == 1

    def complete(self, sid: str, worker: str, *, signature: str, summary: Any, rows: Any) -> bool:
        """Write the results and set DONE in one transaction — only if ``worker`` still holds the job."""
        now = time.time()
        with self.transaction() as db:
            owned = db.execute(
                "SELECT 1 FROM submissions WHERE id=? AND status='RUNNING' AND worker=?", (sid, worker)
            ).fetchone()
            if owned is None:
                return False
            db.execute(
                "INSERT OR REPLACE INTO results (submission_id, signature, summary, rows, worker, created_at) VALUES (?,?,?,?,?,?)",
                (sid, signature, json.dumps(summary, allow_nan=False), json.dumps(rows, allow_nan=False), worker, now),
            )
            db.execute(
                "UPDATE submissions SET status='DONE', signature=?, reason='', worker=NULL, lease_until=NULL,"
                " finished_at=?, updated_at=? WHERE id=?",
                (signature, now, now, sid),
            )
        return True

    def fail(self, sid: str, worker: str | None, reason: str) -> bool:
        """FAILED with ``reason`` (shown to the submitter); with ``worker``, only if it holds the job."""
        now = time.time()
        with self.transaction() as db:
            sql = "UPDATE submissions SET status='FAILED', reason=?, worker=NULL, lease_until=NULL, finished_at=?, updated_at=? WHERE id=?"
            args: list = [reason, now, now, sid]
            if worker is not None:
                sql += " AND status='RUNNING' AND worker=?"
                args.append(worker)
            n = db.execute(sql, args).rowcount
        return n == 1

    # ---------------------------------------------------------------------------------------- admin
    def requeue(self, sid: str, reason: str = "re-queued by an admin") -> bool:
        """Back to PENDING (re-run): old results are deleted in the same transaction."""
        now = time.time()
        with self.transaction() as db:
            db.execute("DELETE FROM results WHERE submission_id=?", (sid,))
            n = db.execute(
                "UPDATE submissions SET status='PENDING', reason=?, worker=NULL, lease_until=NULL, attempts=0,"
                " finished_at=NULL, updated_at=? WHERE id=?",
                (reason, now, sid),
            ).rowcount
        return n == 1

    def set_hidden(self, sid: str, hidden: bool) -> bool:
        with self.transaction() as db:
            n = db.execute(
                "UPDATE submissions SET hidden=?, updated_at=? WHERE id=?", (int(hidden), time.time(), sid)
            ).rowcount
        return n == 1

    def delete(self, sid: str) -> bool:
        row = self.get(sid)
        if row is None:
            return False
        with self.transaction() as db:
            db.execute("DELETE FROM results WHERE submission_id=?", (sid,))
            db.execute("DELETE FROM submissions WHERE id=?", (sid,))
        (self.uploads / row["file_name"]).unlink(missing_ok=True)
        return True

    # -------------------------------------------------------------------------------------- results
    def result(self, sid: str) -> dict | None:
        row = self.connect().execute("SELECT * FROM results WHERE submission_id=?", (sid,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["summary"], out["rows"] = json.loads(out["summary"]), json.loads(out["rows"])
        return out

    def done(self, track: str | None = None) -> list[dict]:
        """Visible DONE submissions joined with their result summary (no per-item rows)."""
        sql = (
            "SELECT s.*, r.summary AS summary FROM submissions s JOIN results r ON r.submission_id = s.id"
            " WHERE s.status='DONE' AND s.hidden=0"
        )
        args: list = []
        if track is not None:
            sql += " AND s.track=?"
            args.append(track)
        out = []
        for r in self.connect().execute(sql + " ORDER BY s.created_at, s.id", args):
            d = dict(r)
            d["summary"] = json.loads(d["summary"])
            out.append(d)
        return out

    def counts(self) -> dict[str, int]:
        db = self.connect()
        out = dict.fromkeys(STATUSES, 0)
        for status, n in db.execute("SELECT status, COUNT(*) FROM submissions GROUP BY status"):
            out[status] = n
        out["results"] = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        out["rejected"] = db.execute("SELECT COUNT(*) FROM rejections").fetchone()[0]
        return out

    def integrity_check(self) -> str:
        return self.connect().execute("PRAGMA integrity_check").fetchone()[0]

    def mark_synced(self, sid: str, when: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE submissions SET synced_at=? WHERE id=?", (when, sid))


def _count_recent(db: sqlite3.Connection, client: str, since: float) -> int:
    accepted = db.execute(
        "SELECT COUNT(*) FROM submissions WHERE client = ? AND created_at >= ?", (client, since)
    ).fetchone()[0]
    refused = db.execute(
        "SELECT COUNT(*) FROM rejections WHERE client = ? AND created_at >= ?", (client, since)
    ).fetchone()[0]
    return int(accepted) + int(refused)


def _fsync_dir(path: Path) -> None:
    """Make the new file's directory entry durable too (POSIX; a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
