"""What the board stores, as typed values: one :class:`Status` for the store, the worker, the client and
the Hub sync, and one frozen dataclass per kind of row the store returns.

A job moves ``PENDING → RUNNING → DONE | FAILED``; ``UNKNOWN`` is never stored: it is what ``/status``
answers for an id the board does not know (or hides). The values are the strings stored in SQLite and
sent over the API, so ``Status("DONE")`` reads one back and ``str(Status.DONE)`` writes one.

>>> Status("DONE"), str(Status.DONE), f"{Status.PENDING}", Status.DONE.final, Status.DONE.hub
(<Status.DONE: 'DONE'>, 'DONE', 'PENDING', True, 'FINISHED')
>>> [str(s) for s in STORED]
['PENDING', 'RUNNING', 'DONE', 'FAILED']
>>> Submission(id="0" * 32, track="models", benchmark="b", name="m", submitter="s").status
<Status.PENDING: 'PENDING'>
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any


class Status(str, Enum):
    """Where a submission is: queued, being scored, scored, or failed (with its reason)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"  # never stored: the answer for an id the board does not know

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def final(self) -> bool:
        """Nothing will change any more (scored, failed, or not known at all)."""
        return self in (Status.DONE, Status.FAILED, Status.UNKNOWN)

    @property
    def queued(self) -> bool:
        """Waiting in the queue or being scored."""
        return self in (Status.PENDING, Status.RUNNING)

    @property
    def hub(self) -> str:
        """The status as the Hub leaderboard template's ``requests`` dataset spells it."""
        return "FINISHED" if self is Status.DONE else self.value


STORED = (Status.PENDING, Status.RUNNING, Status.DONE, Status.FAILED)


def _from_row(cls: type, row: Mapping[str, Any], **converted: Any) -> Any:
    """A dataclass from a database row: the columns the class declares (newer columns a row lacks keep
    their defaults, columns the class does not know are ignored), ``converted`` values winning."""
    keys = set(row.keys())
    values = {f.name: row[f.name] for f in fields(cls) if f.name in keys}
    return cls(**{**values, **converted})


@dataclass(frozen=True)
class Submission:
    """One row of ``submissions``: who sent what, for which benchmark, and where its job stands."""

    id: str
    track: str
    benchmark: str
    name: str
    submitter: str
    status: Status = Status.PENDING
    link: str = ""
    description: str = ""
    client: str = ""
    content_hash: str = ""
    file_name: str = ""
    reason: str = ""
    signature: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    worker: str | None = None
    lease_until: float | None = None
    attempts: int = 0
    hidden: bool = False
    synced_at: float | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Submission:
        return _from_row(cls, row, status=Status(row["status"]), hidden=bool(row["hidden"]))


@dataclass(frozen=True)
class ScoredSubmission(Submission):
    """A DONE submission with its result's summary (what the rankings read; no per-item rows)."""

    summary: dict = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ScoredSubmission:
        return _from_row(
            cls, row, status=Status(row["status"]), hidden=bool(row["hidden"]), summary=json.loads(row["summary"])
        )


@dataclass(frozen=True)
class Result:
    """One row of ``results``: a scored submission's signature, summary and per-item rows."""

    submission_id: str
    signature: str
    summary: dict
    rows: list
    worker: str
    created_at: float

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Result:
        return _from_row(cls, row, summary=json.loads(row["summary"]), rows=json.loads(row["rows"]))


@dataclass(frozen=True)
class Rejection:
    """One refused upload, with the reason its sender was given."""

    n: int
    submitter: str
    track: str
    benchmark: str
    name: str
    content_hash: str
    reason: str
    created_at: float
    client: str = ""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Rejection:
        return _from_row(cls, row)


@dataclass(frozen=True)
class QueueEntry:
    """A PENDING or RUNNING job as the queue shows it: ``position`` 1 = next, 0 = being scored."""

    id: str
    name: str
    track: str
    benchmark: str
    status: Status
    created_at: float
    worker: str | None
    attempts: int
    reason: str
    position: int
    age_s: float
