"""Accepting a submission: protection rules, validation, then the durable write — in that order.

:func:`submit` is what the app's form (and its HTTP API) calls. It returns a :class:`Receipt` only
after the file and the row are committed; a refused upload is logged with its reason and returned
as a receipt with ``accepted=False`` and the one-line reason.

>>> import json, tempfile
>>> from mmjudge.leaderboard.store import Store
>>> from mmjudge.leaderboard.benchmarks import demo_outputs
>>> store = Store(tempfile.mkdtemp())
>>> data = "".join(json.dumps(r) + "\\n" for r in demo_outputs()).encode()
>>> ok = submit(store, track="models", benchmark="demo-inputs", name="my-vlm", submitter="ana", data=data)
>>> ok.accepted, store.get(ok.id)["status"]
(True, 'PENDING')
>>> again = submit(store, track="models", benchmark="demo-inputs", name="copy", submitter="bo", data=data)
>>> again.accepted, again.message.split(":")[0]
(False, 'duplicate')
"""

from __future__ import annotations

from dataclasses import dataclass

from mmjudge.leaderboard import TRACKS
from mmjudge.leaderboard.benchmarks import get_benchmark
from mmjudge.leaderboard.protection import RateLimit, RefusedError, check_fields, duplicate_reason
from mmjudge.leaderboard.store import DuplicateError, RateLimitedError, Store
from mmjudge.leaderboard.validation import (
    MAX_BYTES,
    SubmissionError,
    human_size,
    size_reason,
    validate_outputs,
    validate_scores,
)


@dataclass
class Receipt:
    """What the submitter is told: ``accepted`` with the new ``id``, or the ``message`` saying why not."""

    accepted: bool
    message: str
    id: str | None = None


def submit(
    store: Store,
    *,
    track: str,
    benchmark: str,
    name: str,
    submitter: str,
    data: bytes,
    link: str = "",
    description: str = "",
    rate_limit: RateLimit | None = None,
    max_bytes: int = MAX_BYTES,
    client: str | None = None,
) -> Receipt:
    """Check, then store durably. Never raises for a user mistake: the receipt carries the reason.

    ``client`` is who sends the upload, the rate limit's key: the app passes the Hub user or the network
    address. It is never taken from a field the uploader fills in (the submitter name is display data);
    a library call without one is the ``local`` client."""
    data = bytes(data or b"")
    client = str(client or "local")[:200]
    try:
        if track not in TRACKS:
            raise RefusedError(f"track must be one of {', '.join(TRACKS)}, not {track!r}.")
        bench = get_benchmark(benchmark)
        if bench.track != track:
            raise RefusedError(f"benchmark {benchmark!r} belongs to the {bench.track} track, not {track}.")
        name, link, description, submitter = check_fields(name, link, description, submitter)
        if rate_limit is not None:
            rate_limit.check(store, client)
        if track == "models":
            validate_outputs(data, bench.ids, max_bytes=max_bytes)
        else:
            validate_scores(data, bench.ids, max_bytes=max_bytes)
    except (SubmissionError, RefusedError, ValueError) as err:
        reason = str(err) if isinstance(err, RefusedError) else f"invalid file: {err}"
        store.add_rejection(
            submitter=str(submitter or "")[:100],
            track=str(track)[:20],
            benchmark=str(benchmark)[:100],
            name=str(name or "")[:100],
            data=data,
            reason=reason,
            client=client,
        )
        return Receipt(False, reason)
    try:  # duplicates and the rate limit are decided inside the inserting transaction (no race)
        sid = store.add_submission(
            track=track,
            benchmark=benchmark,
            name=name,
            submitter=submitter,
            data=data,
            link=link,
            description=description,
            client=client,
            rate=rate_limit.rate if rate_limit is not None else None,
        )
    except (DuplicateError, RateLimitedError) as err:
        if isinstance(err, DuplicateError):
            reason = duplicate_reason(err.previous)
        else:
            reason = rate_limit.reason(client, err.used)  # type: ignore[union-attr]
        store.add_rejection(
            submitter=submitter, track=track, benchmark=benchmark, name=name, data=data, reason=reason, client=client
        )
        return Receipt(False, reason)
    position = store.position(sid)
    where = f"; position {position} in the queue" if position else ""
    return Receipt(True, f"received: submission {sid} is PENDING{where}.", sid)


def submit_path(store: Store, path: str | None, max_bytes: int = MAX_BYTES, **fields) -> Receipt:
    """:func:`submit` for an uploaded file on disk (the app's form): refuses a missing or oversized file
    before reading it into memory."""
    import os

    reason = None
    if not path or not os.path.isfile(path):
        reason = (
            f"no file arrived. Choose a .jsonl file of at most {human_size(max_bytes)} and wait until its name "
            "shows in the file box before pressing Submit."
        )
    elif os.path.getsize(path) > max_bytes:
        reason = f"invalid file: {size_reason(os.path.getsize(path), max_bytes)}"
    if reason is not None:
        store.add_rejection(
            submitter=str(fields.get("submitter") or "")[:100],
            track=str(fields.get("track"))[:20],
            benchmark=str(fields.get("benchmark"))[:100],
            name=str(fields.get("name") or "")[:100],
            data=b"",
            reason=reason,
            client=str(fields.get("client") or "local")[:200],
        )
        return Receipt(False, reason)
    with open(path, "rb") as f:
        data = f.read()
    return submit(store, data=data, max_bytes=max_bytes, **fields)


def upload_cap(max_bytes: int) -> int:
    """What the web server lets through (Gradio's ``max_file_size``): well above the board's own limit,
    so that a file over the limit reaches :func:`submit_path` and gets its one line with sizes, instead
    of vanishing in the upload and leaving "no file arrived".

    >>> upload_cap(4 * 2**20) == 32 * 2**20
    True
    """
    return max(4 * int(max_bytes), 32 * 2**20)
