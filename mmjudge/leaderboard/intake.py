"""Accepting a submission: protection rules, validation, then the durable write — in that order.

:func:`submit` is what the app's form (and its HTTP API) calls. It returns a :class:`Receipt` only
after the file and the row are committed; a refused upload is logged with its reason and returned
as a receipt with ``accepted=False`` and the one-line reason. The rate limit is checked first and
counts every request; an upload its client already made (a retry after a lost reply) gets the
original receipt back.

>>> import json, tempfile
>>> from mmjudge.leaderboard.store import Store
>>> from mmjudge.leaderboard.benchmarks import demo_outputs
>>> store = Store(tempfile.mkdtemp())
>>> data = "".join(json.dumps(r) + "\\n" for r in demo_outputs()).encode()
>>> ok = submit(store, track="models", benchmark="demo-inputs", name="my-vlm", submitter="ana", data=data)
>>> ok.accepted, str(store.get(ok.id).status)
(True, 'PENDING')
>>> again = submit(store, track="models", benchmark="demo-inputs", name="copy", submitter="bo", data=data)
>>> again.accepted, again.message.split(":")[0]
(False, 'duplicate')
>>> retry = submit(store, track="models", benchmark="demo-inputs", name="my-vlm", submitter="ana", data=data)
>>> retry.accepted, retry.repeated, retry.id == ok.id  # the same upload again: its receipt, not a refusal
(True, True, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mmjudge.leaderboard.benchmarks import get_benchmark
from mmjudge.leaderboard.protection import RateLimit, RefusedError, check_fields, duplicate_reason, trimmed
from mmjudge.leaderboard.records import Status, Submission
from mmjudge.leaderboard.store import DuplicateError, RateLimitedError, Store, content_hash
from mmjudge.leaderboard.tracks import TRACKS, get_track
from mmjudge.leaderboard.validation import MAX_BYTES, SubmissionError, human_size, size_reason


@dataclass
class Receipt:
    """What the submitter is told: ``accepted`` with the ``id``, or the ``message`` saying why not.
    ``repeated``: the same upload had arrived before (a retry after a lost reply); ``id`` is the original's."""

    accepted: bool
    message: str
    id: str | None = None
    repeated: bool = False


@dataclass(frozen=True)
class Upload:
    """One upload's fields as the board stores them (trimmed) and who sent it (the rate limit's key)."""

    track: str
    benchmark: str
    name: str
    submitter: str
    link: str
    description: str
    client: str

    def repeats(self, previous: Submission) -> bool:
        """``previous`` is this very upload sent before by the same client (same file — checked by the
        caller —, benchmark and fields): a retry after a lost reply, not a new submission."""
        return not previous.hidden and (
            previous.client,
            previous.track,
            previous.benchmark,
            previous.name,
            previous.submitter,
            previous.link,
            previous.description,
        ) == (self.client, self.track, self.benchmark, self.name, self.submitter, self.link, self.description)


def receipt_of(store: Store, previous: Submission) -> Receipt:
    """The receipt of a stored submission, given again to a client that repeats its upload."""
    position = store.position(previous.id)
    where = f"; position {position} in the queue" if position else ""
    return Receipt(
        True,
        f"received: submission {previous.id} is {previous.status}{where}. This exact upload had arrived before "
        "(your earlier reply was lost?): this is its receipt; nothing new was queued.",
        previous.id,
        repeated=True,
    )


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
    problem: str | None = None,
) -> Receipt:
    """Check, then store durably. Never raises for a user mistake: the receipt carries the reason.

    ``client`` is who sends the upload, the rate limit's key: the app passes the Hub user or the network
    address. It is never taken from a field the uploader fills in (the submitter name is display data);
    a library call without one is the ``local`` client. Every request counts against the rate limit,
    refused ones included, except a client repeating an upload it already made, which gets that
    upload's receipt back (idempotent). ``problem``: the upload is already known to be refused (no file
    arrived, too large) for this reason."""
    data = bytes(data or b"")
    name, link, description, submitter = trimmed(name, link, description, submitter)
    upload = Upload(str(track), str(benchmark), name, submitter, link, description, str(client or "local")[:200])
    if problem is None:
        digest = content_hash(data)
        for previous in store.find_upload(
            client=upload.client, track=upload.track, benchmark=upload.benchmark, digest=digest
        ):
            if upload.repeats(previous):
                return receipt_of(store, previous)
    try:
        if rate_limit is not None:  # first: every request counts, whatever else is wrong with it
            rate_limit.check(store, upload.client)
        if problem is not None:
            raise RefusedError(problem)
        if upload.track not in TRACKS:
            raise RefusedError(f"track must be one of {', '.join(TRACKS.names())}, not {upload.track!r}.")
        try:
            bench = get_benchmark(upload.benchmark)
        except ValueError as err:  # not a problem of the file: say it as it is
            raise RefusedError(f"{str(err)[:1].lower()}{str(err)[1:]}") from None
        if bench.track != upload.track:
            raise RefusedError(
                f"benchmark {upload.benchmark!r} belongs to the {bench.track} track, not {upload.track}."
            )
        check_fields(name, link, description, submitter)
        get_track(upload.track).read_file(data, bench, max_bytes)
    except (SubmissionError, RefusedError, ValueError) as err:
        reason = str(err) if isinstance(err, RefusedError) else f"invalid file: {err}"
        return _refuse(store, upload, data, reason)
    return _store(store, upload, data, rate_limit)


def _store(store: Store, upload: Upload, data: bytes, rate_limit: RateLimit | None) -> Receipt:
    """The durable write; duplicates and the rate limit are decided inside the inserting transaction (no
    race), so two simultaneous copies of one upload give one submission and, to the same client, its receipt."""
    try:
        sid = store.add_submission(
            track=upload.track,
            benchmark=upload.benchmark,
            name=upload.name,
            submitter=upload.submitter,
            data=data,
            link=upload.link,
            description=upload.description,
            client=upload.client,
            rate=rate_limit.rate if rate_limit is not None else None,
        )
    except DuplicateError as err:
        if upload.repeats(err.previous):
            return receipt_of(store, err.previous)
        return _refuse(store, upload, data, duplicate_reason(err.previous))
    except RateLimitedError as err:
        return _refuse(store, upload, data, rate_limit.reason(upload.client, err.used))  # type: ignore[union-attr]
    position = store.position(sid)
    where = f"; position {position} in the queue" if position else ""
    return Receipt(True, f"received: submission {sid} is {Status.PENDING}{where}.", sid)


def _refuse(store: Store, upload: Upload, data: bytes, reason: str) -> Receipt:
    """Log the refusal (it counts against the client's rate limit) and say why."""
    store.add_rejection(
        submitter=upload.submitter[:100],
        track=upload.track[:20],
        benchmark=upload.benchmark[:100],
        name=upload.name[:100],
        data=data,
        reason=reason,
        client=upload.client,
    )
    return Receipt(False, reason)


def submit_path(store: Store, path: str | None, max_bytes: int = MAX_BYTES, **fields) -> Receipt:
    """:func:`submit` for an uploaded file on disk (the app's form): a missing or oversized file is
    refused before it is read into memory (and, like every request, counted)."""
    problem = None
    if not path or not os.path.isfile(path):
        problem = (
            f"no file arrived. Choose a .jsonl file of at most {human_size(max_bytes)} and wait until its name "
            "shows in the file box before pressing Submit."
        )
    elif os.path.getsize(path) > max_bytes:
        problem = f"invalid file: {size_reason(os.path.getsize(path), max_bytes)}"
    if problem is not None:
        return submit(store, data=b"", max_bytes=max_bytes, problem=problem, **fields)
    with open(path, "rb") as f:
        data = f.read()
    return submit(store, data=data, max_bytes=max_bytes, **fields)


def upload_cap(max_bytes: int) -> int:
    """What the web server lets through (Gradio's ``max_file_size``): the board's own limit, so the page,
    the guide, the browser's pop-up ("exceed the maximum allowed size of 4.0 Mb") and the API all name
    one number. A file over it never reaches :func:`submit_path` from the page; ``mmjudge leaderboard
    submit`` checks the size first and says it in the board's words
    (:func:`~mmjudge.leaderboard.validation.size_reason`).

    >>> upload_cap(4 * 2**20) == 4 * 2**20
    True
    """
    return int(max_bytes)
