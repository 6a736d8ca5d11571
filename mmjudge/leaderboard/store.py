"""Durable storage and work queue of the leaderboard: one SQLite file (WAL) plus the uploaded files.

Every submission is made durable before the submitter is told "received": its file is written under
a generated name and fsync'ed, then its row is committed (``synchronous=FULL``). Jobs move
``PENDING → RUNNING → DONE | FAILED``. A worker claims the oldest PENDING job atomically
(``BEGIN IMMEDIATE`` + ``UPDATE … WHERE status='PENDING'``) under a lease that it renews with
heartbeats; a job whose lease ran out (its worker was killed) goes back to PENDING, and so, at once, does
a job still held under the id of a worker that is starting again (:meth:`Store.recover_expired` with
``worker``). Each recovery is one log line. Results are keyed
by submission id and written in the same transaction that sets DONE, and only by the worker that
still holds the lease, so a job is never lost and never counted twice.

>>> import tempfile
>>> store = Store(tempfile.mkdtemp())
>>> sid = store.add_submission(track="models", benchmark="demo", name="m", submitter="me", data=b'{"id": "a"}\\n')
>>> store.get(sid).status
<Status.PENDING: 'PENDING'>
>>> job = store.claim("worker-1", lease_s=60)
>>> job.id == sid, str(job.status)
(True, 'RUNNING')
>>> store.complete(sid, "worker-1", signature="s", summary={"overall": 3.0}, rows=[])
True
>>> str(store.get(sid).status), store.result(sid).summary
('DONE', {'overall': 3.0})
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.records import STORED, QueueEntry, Rejection, Result, ScoredSubmission, Status, Submission
from mmjudge.leaderboard.schema import create_or_migrate, open_connection

DB_NAME = "leaderboard.sqlite"
UPLOADS = "uploads"
# A claimed job's lease: renewed by the worker's heartbeat every quarter of it, so it only needs to outlast a
# few missed beats; it is how long a job whose worker died (and does not come back under its id) waits.
DEFAULT_LEASE_S = 20.0
MAX_ATTEMPTS = 10  # a job whose worker died this many times is failed rather than retried forever

logger = logging.getLogger(__name__)


class RateLimitedError(ValueError):
    """The client already sent ``used`` submissions within the rate-limit window."""

    def __init__(self, client: str, used: int):
        super().__init__(f"{client!r} has sent {used} submissions")
        self.client, self.used = client, used


class DuplicateError(ValueError):
    """The same file (content hash) was already submitted to this benchmark; ``previous`` is its row."""

    def __init__(self, previous: Submission):
        super().__init__(f"duplicate of submission {previous.id}")
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
        create_or_migrate(self.connect())

    # ------------------------------------------------------------------------------------- plumbing
    def connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = open_connection(self.path, self.timeout_s)
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
            Both are checked inside the inserting transaction, so simultaneous uploads cannot both pass;
            the duplicate first, so that a client's repeated upload is recognised even at its limit.
        """
        sid = uuid.uuid4().hex
        file_name = f"{sid}.jsonl"  # never the uploader's name: no path traversal, no clashes
        path = self.uploads / file_name
        _write_durably(path, data)
        now = time.time() if now is None else now
        digest = content_hash(data)
        row = (sid, track, benchmark, name, link, description, submitter, client, digest, file_name)
        try:
            with self.transaction() as db:
                if unique:
                    previous = db.execute(
                        "SELECT * FROM submissions WHERE content_hash=? AND track=? AND benchmark=?"
                        " ORDER BY created_at LIMIT 1",
                        (digest, track, benchmark),
                    ).fetchone()
                    if previous is not None:
                        raise DuplicateError(Submission.from_row(previous))
                if rate is not None:
                    used = _count_recent(db, client, now - rate[1])
                    if used >= rate[0]:
                        raise RateLimitedError(client, used)
                db.execute(
                    "INSERT INTO submissions (id, track, benchmark, name, link, description, submitter, client,"
                    " content_hash, file_name, status, signature, created_at, updated_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (*row, Status.PENDING.value, signature, now, now),
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
        return (self.uploads / row.file_name).read_bytes()

    def get(self, sid: str) -> Submission | None:
        row = self.connect().execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        return Submission.from_row(row) if row else None

    def find_upload(self, *, client: str, track: str, benchmark: str, digest: str) -> list[Submission]:
        """The submissions ``client`` made of this exact file (content hash) to this benchmark, oldest
        first: how a repeated upload (a retry after a lost reply) is recognised."""
        rows = self.connect().execute(
            "SELECT * FROM submissions WHERE content_hash=? AND track=? AND benchmark=? AND client=?"
            " ORDER BY created_at, id",
            (digest, track, benchmark, client),
        )
        return [Submission.from_row(r) for r in rows]

    def submissions(self, status: Status | None = None, include_hidden: bool = False) -> list[Submission]:
        sql, args = "SELECT * FROM submissions WHERE 1=1", []
        if status is not None:
            sql += " AND status = ?"
            args.append(Status(status).value)
        if not include_hidden:
            sql += " AND hidden = 0"
        return [Submission.from_row(r) for r in self.connect().execute(sql + " ORDER BY created_at, id", args)]

    def rejections(self) -> list[Rejection]:
        return [Rejection.from_row(r) for r in self.connect().execute("SELECT * FROM rejections ORDER BY n")]

    def count_recent(self, client: str, since: float) -> int:
        """Submissions (accepted or refused) from ``client`` since ``since`` — the rate limit's count."""
        return _count_recent(self.connect(), client, since)

    def position(self, sid: str) -> int | None:
        """The job's place in the queue (1 = next; 0 = running), None when it is not queued; one query."""
        row = (
            self.connect()
            .execute(
                "SELECT s.status, (SELECT COUNT(*) FROM submissions q WHERE q.status=? AND q.hidden=0"
                " AND (q.created_at < s.created_at OR (q.created_at = s.created_at AND q.id <= s.id))) AS ahead"
                " FROM submissions s WHERE s.id=? AND s.hidden=0 AND s.status IN (?, ?)",
                (Status.PENDING.value, sid, Status.PENDING.value, Status.RUNNING.value),
            )
            .fetchone()
        )
        if row is None:
            return None
        return int(row["ahead"]) if row["status"] == Status.PENDING else 0

    def queue(self, now: float | None = None) -> list[QueueEntry]:
        """PENDING and RUNNING jobs, oldest first, with ``position`` (1 = next; 0 = running) and ``age_s``."""
        now = time.time() if now is None else now
        rows = self.connect().execute(
            "SELECT id, name, track, benchmark, status, created_at, worker, attempts, reason FROM submissions"
            " WHERE status IN (?, ?) AND hidden = 0 ORDER BY created_at, id",
            (Status.PENDING.value, Status.RUNNING.value),
        )
        out, position = [], 0
        for r in rows:
            status = Status(r["status"])
            position += status is Status.PENDING
            out.append(
                QueueEntry(
                    id=r["id"],
                    name=r["name"],
                    track=r["track"],
                    benchmark=r["benchmark"],
                    status=status,
                    created_at=r["created_at"],
                    worker=r["worker"],
                    attempts=r["attempts"],
                    reason=r["reason"],
                    position=position if status is Status.PENDING else 0,
                    age_s=max(0.0, now - r["created_at"]),
                )
            )
        return out

    # ---------------------------------------------------------------------------------------- queue
    def recover_expired(self, now: float | None = None, worker: str | None = None) -> int:
        """RUNNING jobs whose lease ran out (the worker died) go back to PENDING — or to FAILED after
        :data:`MAX_ATTEMPTS` tries; with ``worker``, so do the jobs still held under that id, whatever their
        lease (that worker is starting again: what it held died with its last run). One log line per job.
        Returns how many were re-queued or failed."""
        now = time.time() if now is None else now
        running = Status.RUNNING.value
        with self.transaction() as db:
            rows = db.execute(
                "SELECT id, worker, lease_until, attempts FROM submissions WHERE status=? AND (lease_until < ? OR"
                " (worker IS NOT NULL AND worker=?))",
                (running, now, worker),
            ).fetchall()
            decided = [(row, *_recovery(row, worker, now)) for row in rows]
            for row, status, reason, _ in decided:
                db.execute(
                    "UPDATE submissions SET status=?, reason=?, worker=NULL, lease_until=NULL, updated_at=?,"
                    " finished_at=? WHERE id=? AND status=?",
                    (status.value, reason, now, now if status is Status.FAILED else None, row["id"], running),
                )
        for row, status, _, why in decided:
            if status is Status.FAILED:
                logger.warning("job %s failed: %s, the %d-th time", row["id"], why, row["attempts"])
            else:
                logger.info("job %s re-queued: %s; attempt %d of %d is next", row["id"], why, row["attempts"] + 1,
                            MAX_ATTEMPTS)  # fmt: skip
        return len(decided)

    def claim(self, worker: str, lease_s: float = DEFAULT_LEASE_S, now: float | None = None) -> Submission | None:
        """Atomically take the oldest PENDING job for ``worker`` (None when the queue is empty)."""
        self.recover_expired(now)
        now = time.time() if now is None else now
        with self.transaction() as db:
            row = db.execute(
                "SELECT id FROM submissions WHERE status=? ORDER BY created_at, id LIMIT 1", (Status.PENDING.value,)
            ).fetchone()
            if row is None:
                return None
            claimed = db.execute(
                "UPDATE submissions SET status=?, worker=?, lease_until=?, started_at=?, updated_at=?,"
                " attempts=attempts+1, reason='' WHERE id=? AND status=?",
                (Status.RUNNING.value, worker, now + lease_s, now, now, row["id"], Status.PENDING.value),
            ).rowcount
        return self.get(row["id"]) if claimed == 1 else None

    def heartbeat(self, sid: str, worker: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
        """Extend the lease; False when the job is no longer this worker's (it was re-queued)."""
        now = time.time()
        with self.transaction() as db:
            n = db.execute(
                "UPDATE submissions SET lease_until=? WHERE id=? AND status=? AND worker=?",
                (now + lease_s, sid, Status.RUNNING.value, worker),
            ).rowcount
        return n == 1

    def complete(self, sid: str, worker: str, *, signature: str, summary: Any, rows: Any) -> bool:
        """Write the results and set DONE in one transaction — only if ``worker`` still holds the job."""
        now = time.time()
        with self.transaction() as db:
            owned = db.execute(
                "SELECT 1 FROM submissions WHERE id=? AND status=? AND worker=?", (sid, Status.RUNNING.value, worker)
            ).fetchone()
            if owned is None:
                return False
            db.execute(
                "INSERT OR REPLACE INTO results (submission_id, signature, summary, rows, worker, created_at)"
                " VALUES (?,?,?,?,?,?)",
                (sid, signature, json.dumps(summary, allow_nan=False), json.dumps(rows, allow_nan=False), worker, now),
            )
            db.execute(
                "UPDATE submissions SET status=?, signature=?, reason='', worker=NULL, lease_until=NULL,"
                " finished_at=?, updated_at=? WHERE id=?",
                (Status.DONE.value, signature, now, now, sid),
            )
        return True

    def fail(self, sid: str, worker: str | None, reason: str) -> bool:
        """FAILED with ``reason`` (shown to the submitter); with ``worker``, only if it holds the job."""
        now = time.time()
        with self.transaction() as db:
            sql = (
                "UPDATE submissions SET status=?, reason=?, worker=NULL, lease_until=NULL, finished_at=?,"
                " updated_at=? WHERE id=?"
            )
            args: list = [Status.FAILED.value, reason, now, now, sid]
            if worker is not None:
                sql += " AND status=? AND worker=?"
                args += [Status.RUNNING.value, worker]
            n = db.execute(sql, args).rowcount
        return n == 1

    # ---------------------------------------------------------------------------------------- admin
    def requeue(self, sid: str, reason: str = "re-queued by an admin") -> bool:
        """Back to PENDING (re-run): old results are deleted in the same transaction."""
        now = time.time()
        with self.transaction() as db:
            db.execute("DELETE FROM results WHERE submission_id=?", (sid,))
            n = db.execute(
                "UPDATE submissions SET status=?, reason=?, worker=NULL, lease_until=NULL, attempts=0,"
                " finished_at=NULL, updated_at=? WHERE id=?",
                (Status.PENDING.value, reason, now, sid),
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
        (self.uploads / row.file_name).unlink(missing_ok=True)
        return True

    # -------------------------------------------------------------------------------------- results
    def result(self, sid: str) -> Result | None:
        row = self.connect().execute("SELECT * FROM results WHERE submission_id=?", (sid,)).fetchone()
        return Result.from_row(row) if row else None

    def done(self, track: str | None = None) -> list[ScoredSubmission]:
        """Visible DONE submissions with their result summary (no per-item rows), oldest first."""
        sql = (
            "SELECT s.*, r.summary AS summary FROM submissions s JOIN results r ON r.submission_id = s.id"
            " WHERE s.status=? AND s.hidden=0"
        )
        args: list = [Status.DONE.value]
        if track is not None:
            sql += " AND s.track=?"
            args.append(track)
        return [
            ScoredSubmission.from_row(r) for r in self.connect().execute(sql + " ORDER BY s.created_at, s.id", args)
        ]

    def version(self) -> tuple:
        """Changes whenever a visible table could (a job finished, was hidden, deleted or re-queued; the
        queue moved): what the page polls before it rebuilds its tables. One cheap query."""
        row = self.connect().execute("SELECT COUNT(*), MAX(updated_at), SUM(hidden) FROM submissions").fetchone()
        return tuple(row)

    def counts(self) -> dict[str, int]:
        db = self.connect()
        out = {str(s): 0 for s in STORED}
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


def _recovery(row: sqlite3.Row, worker: str | None, now: float) -> tuple[Status, str, str]:
    """What becomes of a RUNNING job :meth:`Store.recover_expired` found: (status, the submitter's reason,
    the log's reason)."""
    if row["worker"] == worker and not (row["lease_until"] or 0) < now:
        why = f"its worker {row['worker']} restarted"
    else:
        why = f"its worker {row['worker']} stopped (lease expired {now - (row['lease_until'] or now):.0f} s ago)"
    if row["attempts"] >= MAX_ATTEMPTS:
        return Status.FAILED, f"the worker stopped {MAX_ATTEMPTS} times while scoring this submission", why
    if why.endswith("restarted"):
        return Status.PENDING, "re-queued: its worker restarted", why
    return Status.PENDING, "re-queued: the worker stopped (lease expired)", why


def _count_recent(db: sqlite3.Connection, client: str, since: float) -> int:
    accepted = db.execute(
        "SELECT COUNT(*) FROM submissions WHERE client = ? AND created_at >= ?", (client, since)
    ).fetchone()[0]
    refused = db.execute(
        "SELECT COUNT(*) FROM rejections WHERE client = ? AND created_at >= ?", (client, since)
    ).fetchone()[0]
    return int(accepted) + int(refused)


def _write_durably(path: Path, data: bytes) -> None:
    """``data`` at ``path`` through a temporary file, fsync'ed, renamed, and the directory fsync'ed."""
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


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
