"""The leaderboard database's tables, and how a connection to it is opened.

One SQLite file in WAL mode with ``synchronous=FULL`` (a committed submission survives a power cut).
Tables are created with ``IF NOT EXISTS`` (several processes may start at once), and columns added
after the first release are added to an older database (:data:`ADDED_COLUMNS`).

>>> import sqlite3
>>> db = sqlite3.connect(":memory:", isolation_level=None)
>>> db.row_factory = sqlite3.Row
>>> create_or_migrate(db)
>>> sorted(r["name"] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'") if r["name"][0] != "s")
['rejections', 'results']
"""

from __future__ import annotations

import os
import sqlite3

from mmjudge.leaderboard.records import STORED

SCHEMA = """
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
    status TEXT NOT NULL CHECK (status IN ({statuses})),
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
""".replace("{statuses}", ", ".join(f"'{s}'" for s in STORED))
# Columns added after the first release: (table, column, declaration), added to older databases.
ADDED_COLUMNS = [
    ("submissions", "client", "TEXT NOT NULL DEFAULT ''"),
    ("rejections", "client", "TEXT NOT NULL DEFAULT ''"),
]
INDEXES = """
CREATE INDEX IF NOT EXISTS submissions_client ON submissions (client, created_at);
CREATE INDEX IF NOT EXISTS rejections_client ON rejections (client, created_at);
"""


def open_connection(path: str | os.PathLike, timeout_s: float) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), rows readable by column name."""
    db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # a committed submission survives a power cut
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
    return db


def create_or_migrate(db: sqlite3.Connection) -> None:
    """Create the tables, add the columns a database made by an older version lacks, then the indexes."""
    db.executescript(SCHEMA)
    db.execute("BEGIN IMMEDIATE")
    try:
        for table, column, declaration in ADDED_COLUMNS:
            if column not in {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    db.executescript(INDEXES)
