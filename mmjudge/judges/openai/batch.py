"""Batch mode of the ``openai`` judge (``mode="batch"``): the requests the cache cannot answer go to the Batch
API (half the synchronous price, answers within 24 hours), and their answers fill the cache, so the run then
finishes exactly as a synchronous one would.

The requests are written as Batch API JSONL (``{"custom_id": <cache key>, "method": "POST", "url":
"/v1/chat/completions", "body": …}``), split at the API's limits (50,000 requests and 200 MB per file),
uploaded (``files.create(purpose="batch")``), submitted (``batches.create``), and polled every
``poll_interval`` seconds with a progress bar. Every batch is recorded in the cache database
(:class:`mmjudge.store.BatchLedger`) from the moment its file is uploaded, so a process killed while a batch
is pending, run again, collects that same batch and never pays twice. A batch that expired, failed or was
cancelled has its missing requests submitted once more (only those); a request the batch rejected becomes a
failed result (an ``error`` row) with the batch's reason, is not cached, and is retried by the next run. So is a
request whose answer line in the output file is damaged (a torn line, not JSON, not an answer's shape): one bad
line never stops the collection of the rest of its batch.

>>> split_limits()
(50000, 199000000)
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from mmjudge.judges.openai.format import CHAT_PATH, answer_text, batch_line
from mmjudge.judges.openai.transport import APIError
from mmjudge.judges.requests import GenerationRequest, RatingRequest, RatingResult, request_key

logger = logging.getLogger(__name__)

MAX_REQUESTS_PER_FILE = 50_000  # the Batch API's limits per input file
MAX_BYTES_PER_FILE = 199_000_000  # 200 MB, less a margin
COMPLETION_WINDOW = "24h"
TERMINAL = ("completed", "failed", "expired", "cancelled")
DAMAGED = "mmjudge_damaged"  # the key of what _lines yields for a line that is not a JSON object
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([^"\\]{1,200})"')


def split_limits() -> tuple[int, int]:
    """Requests and bytes per input file."""
    return MAX_REQUESTS_PER_FILE, MAX_BYTES_PER_FILE


@dataclass
class Entry:
    """One request of a batch: its cache key (the line's ``custom_id``), its JSONL line, and what reading its
    answer needs (``meta``: the kind, and a rating's choices)."""

    key: str
    line: bytes
    meta: dict


class _Part:
    """One input file being written: at most the API's requests and bytes."""

    def __init__(self, max_requests: int, max_bytes: int):
        self.file = tempfile.TemporaryFile()  # noqa: SIM115  (closed once uploaded)
        self.entries: list[tuple[str, dict]] = []
        self.size = 0
        self.max_requests, self.max_bytes = max_requests, max_bytes

    def fits(self, entry: Entry) -> bool:
        return len(self.entries) < self.max_requests and self.size + len(entry.line) + 1 <= self.max_bytes

    def add(self, entry: Entry) -> None:
        self.file.write(entry.line + b"\n")
        self.size += len(entry.line) + 1
        self.entries.append((entry.key, entry.meta))


class BatchRunner:
    """The Batch API side of one ``openai`` judge (its first server; the cache's store holds the ledger)."""

    def __init__(self, judge: Any):
        self.judge = judge
        self.rejected: dict[str, str] = {}  # key -> why the batch did not answer it (this process's run)
        self.resubmitted: set[str] = set()
        self.max_requests, self.max_bytes = MAX_REQUESTS_PER_FILE, MAX_BYTES_PER_FILE
        self.submitted: list[str] = []  # batch ids this process created
        self.collected: list[str] = []  # batch ids this process collected
        self._client: Any = None

    # ------------------------------------------------------------------------------------ where
    @property
    def client(self) -> Any:
        """The server's client, retrying as the official client does (a poll that lasts hours must outlive a
        dropped connection or a 503)."""
        if len(self.judge.servers) != 1:
            raise ValueError("mode='batch' sends to one server's Batch API: give one base_url, not a fleet.")
        if self._client is None:
            self._client = self.judge.servers[0].client.with_options(max_retries=self.judge.transport.max_retries)
        return self._client

    @property
    def ledger(self) -> Any:
        if self.judge.store is None:
            raise ValueError(
                "mode='batch' needs the cache: the batch ids are kept in it, so a killed run collects the batches it "
                "submitted instead of paying twice (leave cache on; not --no-cache)."
            )
        return self.judge.store.batches

    @property
    def owner(self) -> str:
        """The judge's identity, short: a batch is collected only by the judge that submitted it."""
        blob = json.dumps(self.judge.identity(), sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    # ------------------------------------------------------------------------------------ entries
    def rating_entry(self, key: str, request: RatingRequest) -> Entry:
        call, _ = self.judge.rating_call(request)
        line = json.dumps(batch_line(key, call), separators=(",", ":")).encode("utf-8")
        return Entry(key, line, {"kind": "rate", "choices": [str(c) for c in request.choices]})

    def generation_entry(self, key: str, request: GenerationRequest) -> Entry:
        from mmjudge.judges.openai.format import generation_call

        call = generation_call(request, self.judge.model_name, self.judge.prefill_mode)
        line = json.dumps(batch_line(key, call), separators=(",", ":")).encode("utf-8")
        return Entry(key, line, {"kind": "generate"})

    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        """Rate ``requests`` through batches (the ones already pending for them, else new ones)."""
        identity = self.judge.identity()
        keys = [request_key(identity, "rate", r) for r in requests]
        unique = dict(zip(keys, requests))
        handover = _Handover(keys, on_batch)
        answers = self.run((self.rating_entry(k, r) for k, r in unique.items()), set(keys), progress, handover.give)
        results = []
        for key, request in zip(keys, requests):
            ok, value = answers.get(key, (False, "the batch returned no answer for it"))
            results.append(value if ok else self.judge.failed([str(c) for c in request.choices], value))
        handover.finish(results)
        return results

    def generate(self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch=None) -> list[str]:
        """Generate through batches; a request the batch rejected stops the run (a text has no ``error``)."""
        identity = self.judge.identity()
        keys = [request_key(identity, "generate", r) for r in requests]
        unique = dict(zip(keys, requests))
        handover = _Handover(keys, on_batch)
        answers = self.run((self.generation_entry(k, r) for k, r in unique.items()), set(keys), progress, handover.give)
        out = []
        for key in keys:
            ok, value = answers.get(key, (False, "the batch returned no answer for it"))
            if not ok:
                raise APIError(f"{self.judge.describe()}: a generation request failed in its batch: {value}")
            out.append(value)
        handover.finish(out)
        return out

    # ------------------------------------------------------------------------------------ the run
    def run(
        self, entries: Iterable[Entry], wanted: set[str] | None, progress: bool = True, give: Any = None
    ) -> dict[str, tuple]:
        """Send ``entries`` (those not pending in a batch already), wait for every batch they are in, and store
        the answers. Returns ``{key: (True, answer) | (False, why)}`` for the keys in ``wanted`` (``None``: the
        answers only fill the cache). ``give`` (``{key: answer}``), if given, receives the good answers to
        ``wanted`` keys as each batch is collected, and stores them (the cache's ``on_batch``); every other
        answer the batches hold is stored here."""
        answers: dict[str, tuple] = {}
        pending: set[int] = set()

        def to_send() -> Iterator[Entry]:
            for chunk in _chunks(entries, 500):
                live = self.ledger.live(self.owner, [e.key for e in chunk])
                for entry in chunk:
                    if entry.key in self.rejected:
                        answers[entry.key] = (False, self.rejected[entry.key])
                    elif entry.key in live:  # submitted by an earlier (killed) run: collect it, never pay twice
                        pending.add(live[entry.key])
                    else:
                        yield entry

        pending.update(self.submit_all(to_send()))
        if pending:
            self.wait(pending, answers, wanted, progress, give)
        return answers if wanted is None else {k: v for k, v in answers.items() if k in wanted}

    def submit_all(self, entries: Iterable[Entry]) -> list[int]:
        """Submit ``entries`` in input files at the API's limits, each as it fills; returns their ledger numbers."""
        numbers, part = [], _Part(self.max_requests, self.max_bytes)
        for entry in entries:
            if not part.fits(entry) and part.entries:
                numbers.append(self.submit(part))
                part = _Part(self.max_requests, self.max_bytes)
            part.add(entry)
        if part.entries:
            numbers.append(self.submit(part))
        return numbers

    def submit(self, part: _Part) -> int:
        """Upload one input file, record it, submit its batch; returns its ledger number."""
        part.file.seek(0)
        name = f"mmjudge-{self.owner}-{int(time.time())}.jsonl"
        uploaded = self._api(
            "upload the batch input", lambda: self.client.files.create(file=(name, part.file), purpose="batch")
        )
        part.file.close()
        number = self.ledger.add(self.owner, uploaded.id, part.entries)
        self._create(number, uploaded.id, len(part.entries))
        return number

    def _create(self, number: int, file_id: str, count: int) -> None:
        batch = self._api(
            "submit the batch",
            lambda: self.client.batches.create(
                input_file_id=file_id,
                endpoint=CHAT_PATH,
                completion_window=COMPLETION_WINDOW,
                metadata={"mmjudge": self.owner, "ledger": str(number)},
            ),
        )
        self.ledger.update(number, batch_id=batch.id, state="submitted")
        self.submitted.append(batch.id)
        logger.info("%s: submitted batch %s (%d requests)", self.judge.describe(), batch.id, count)

    def _adopt_or_create(self, number: int, file_id: str, count: int) -> None:
        """A file uploaded by a run killed before its batch was recorded: the batch made from it, if one was
        (searched among the account's recent batches), else a batch made now."""
        for batch in self._api("list batches", lambda: self.client.batches.list(limit=100)):
            if getattr(batch, "input_file_id", None) == file_id:
                self.ledger.update(number, batch_id=batch.id, state="submitted")
                return
        self._create(number, file_id, count)

    def wait(self, pending: set[int], answers: dict, wanted: set[str] | None, progress: bool, give: Any = None) -> None:
        """Poll ``pending`` batches every ``poll_interval`` seconds until each is done, collecting each as it ends."""
        from mmjudge.progress import progress_bar

        sizes = {n: len(self.ledger.entries(n)) for n in pending}
        done: dict[int, int] = {}
        with progress_bar(total=sum(sizes.values()), desc=f"{self.judge.describe()} batch", unit="req",
                          disable=not progress) as bar:  # fmt: skip
            while pending:
                for number in sorted(pending):
                    row = self.ledger.get(number)
                    if not row.get("batch_id"):
                        self._adopt_or_create(number, row["input_file_id"], sizes[number])
                        row = self.ledger.get(number)
                    batch = self._api("look at the batch", lambda b=row["batch_id"]: self.client.batches.retrieve(b))
                    counts = getattr(batch, "request_counts", None)
                    done[number] = int(getattr(counts, "completed", 0) or 0) + int(getattr(counts, "failed", 0) or 0)
                    if batch.status in TERMINAL:
                        pending.discard(number)
                        done[number] = sizes[number]
                        for new in self.collect(number, batch, answers, wanted, give):
                            pending.add(new)
                            sizes[new] = len(self.ledger.entries(new))
                            bar.total += sizes[new]
                bar.n = sum(done.values())
                bar.refresh()
                if pending:
                    time.sleep(self.judge.poll_interval)

    # ------------------------------------------------------------------------------------ answers
    def collect(self, number: int, batch: Any, answers: dict, wanted: set[str] | None, give: Any = None) -> list[int]:
        """Store a finished batch's answers (those to ``wanted`` keys through ``give``, when given); note what
        it rejected; resubmit (once) what it left unanswered. Returns the ledger numbers of the resubmitted
        batches."""
        entries = {key: meta for key, meta, _ in self.ledger.entries(number)}
        seen: set[str] = set()
        kept: list[tuple[str, Any]] = []
        given: dict[str, Any] = {}
        errors: list[tuple[str, str]] = []
        for file_id in (getattr(batch, "output_file_id", None), getattr(batch, "error_file_id", None)):
            for line in self._lines(file_id):
                key = line.get("custom_id")
                if key not in entries or key in seen:
                    continue
                if _unfinished(line):
                    continue  # expired or cancelled before it ran: missing, so sent again
                seen.add(key)
                ok, value = self._read_safely(line, entries[key], batch.id)
                asked = wanted is not None and key in wanted  # (a whole input's answers only fill the cache)
                if asked:
                    answers[key] = (ok, value)
                if not ok:
                    errors.append((key, value))
                elif asked and give is not None:
                    given[key] = value  # the caller's cache stores it
                else:  # not asked for in this call (a batch of an earlier run's): stored here
                    kept.append((key, value.to_json() if isinstance(value, RatingResult) else str(value)))
                if len(kept) >= 500:
                    self.judge.store.put_many(kept)
                    kept = []
        self.judge.store.put_many(kept)
        if given:
            give(given)  # before the ledger says collected: a kill in between collects this batch again
        missing = [k for k in entries if k not in seen]
        resubmitted: list[int] = []
        if missing and batch.status != "completed" and not any(k in self.resubmitted for k in missing):
            resubmitted = self._resubmit(number, missing, entries)
        elif missing:
            why = f"batch {batch.id} {batch.status} without answering it{_batch_errors(batch)}"
            errors += [(k, why) for k in missing]
            for k in missing:
                if wanted is not None and k in wanted:
                    answers[k] = (False, why)
        for key, why in errors:
            self.rejected[key] = why
        self.ledger.set_errors(number, errors)
        self.ledger.update(number, state="collected" if batch.status == "completed" else batch.status)
        self.collected.append(batch.id)
        if errors:
            logger.warning("%s: batch %s rejected %d requests (first: %s)", self.judge.describe(), batch.id,
                           len(errors), errors[0][1])  # fmt: skip
        return resubmitted

    def _read_safely(self, line: dict, meta: dict, batch_id: str) -> tuple[bool, Any]:
        """:meth:`_read`, with a line that cannot be read as an answer (torn, or not an answer's shape) turned
        into a failure of that request alone: an error row now, sent again by the next run. An exception here
        would stop the collection before the ledger says collected, and every run would stop on it again."""
        if DAMAGED in line:
            why = f"batch {batch_id} returned a damaged line for it ({line[DAMAGED]}); the next run sends it again"
            return False, self.judge.transport.scrub(why)
        try:
            return self._read(line, meta, batch_id)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
            why = f"batch {batch_id} returned an unreadable answer for it ({type(err).__name__}: {err})"
            return False, self.judge.transport.scrub(why[:300])

    def _read(self, line: dict, meta: dict, batch_id: str) -> tuple[bool, Any]:
        response = line.get("response") or {}
        body, status, error = response.get("body"), response.get("status_code"), line.get("error")
        if error or status != 200:
            detail = (error or {}).get("message") if isinstance(error, dict) else error
            if not detail and isinstance(body, dict):
                detail = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
            why = f"batch {batch_id} rejected it (HTTP {status}: {detail or 'no reason given'})"
            return False, self.judge.transport.scrub(why)
        self.judge.usage.add(body.get("usage") if isinstance(body, dict) else None, batch=True)
        if meta.get("kind") == "generate":
            return True, answer_text(body)
        choices = [str(c) for c in meta.get("choices", [])]
        id_choices = None
        if self.judge.mass_mode == "exact":
            ids = self.judge.choice_token_ids(choices)
            id_choices = {token_id: k for k, group in enumerate(ids) for token_id in group}
        result = self.judge.read_answer(body, choices, id_choices)
        return (False, result.error) if result.error is not None else (True, result)

    def _resubmit(self, number: int, missing: list[str], entries: dict) -> list[int]:
        """Submit again, from the batch's own input file, only the requests it left unanswered."""
        wanted = set(missing)
        self.resubmitted |= wanted
        row = self.ledger.get(number)
        lines = (x for x in self._lines(row["input_file_id"]) if DAMAGED not in x and x.get("custom_id") in wanted)
        numbers = self.submit_all(
            Entry(d["custom_id"], json.dumps(d, separators=(",", ":")).encode(), entries[d["custom_id"]]) for d in lines
        )
        logger.info("%s: %d requests left unanswered by a batch resubmitted", self.judge.describe(), len(missing))
        return numbers

    def _lines(self, file_id: str | None) -> Iterator[dict]:
        """The JSON lines of a file on the server, streamed (an output file can be large). A line that is not a
        JSON object comes as ``{DAMAGED: why, "custom_id": …}``, with the id when the line still holds it."""
        if not file_id:
            return
        stream = self.client.files.with_streaming_response.content(file_id)
        reply = self._api("download a batch file", stream.__enter__)
        try:
            for number, raw in enumerate(reply.iter_lines(), 1):
                if raw.strip():
                    yield _parsed(raw, number, file_id)
        finally:
            stream.__exit__(None, None, None)

    def _api(self, what: str, call: Any) -> Any:
        """One Batch API call; a failure is one line (a server without a Batch API: HTTP 404)."""
        import openai

        try:
            return call()
        except openai.APIStatusError as err:
            hint = " (this server has no Batch API: use mode='sync')" if err.status_code in (404, 405) else ""
            text = self.judge.transport.scrub(str(err))[:300]
            raise APIError(f"{self.judge.describe()}: could not {what}: HTTP {err.status_code}{hint}: {text}",
                           err.status_code) from None  # fmt: skip
        except openai.APIConnectionError as err:
            raise APIError(f"{self.judge.describe()}: could not {what}: {type(err).__name__}: {err}") from None


class _Handover:
    """Hands a call's answers to its ``on_batch`` (the cache, which stores them): the good ones as each batch is
    collected (:meth:`give`), then the rest with :meth:`finish`. Without an ``on_batch``, :attr:`give` is
    ``None`` and :meth:`BatchRunner.collect` stores every answer itself."""

    def __init__(self, keys: Sequence[str], on_batch: Any):
        self.keys, self.on_batch = list(keys), on_batch
        self.positions: dict[str, list[int]] = {}
        for i, key in enumerate(self.keys):
            self.positions.setdefault(key, []).append(i)
        self.handed: set[int] = set()
        self.give = self._give if on_batch is not None else None

    def _give(self, answers: dict[str, Any]) -> None:
        batch = [i for key in answers for i in self.positions.get(key, ()) if i not in self.handed]
        if batch:
            self.handed.update(batch)
            self.on_batch(batch, [answers[self.keys[i]] for i in batch])

    def finish(self, results: list) -> None:
        rest = [i for i in range(len(results)) if i not in self.handed]
        if rest and self.on_batch is not None:
            self.handed.update(rest)
            self.on_batch(rest, [results[i] for i in rest])


def _parsed(raw: str | bytes, number: int, file_id: str) -> dict:
    """One line of a batch file as a dict; a damaged one (a torn write, not an object) as ``{DAMAGED: why}``
    with its ``custom_id`` when that much of it is still there.

    >>> damaged = _parsed('{"custom_id": "k1", "response": {"status_co', 3, "file-9")
    >>> damaged["custom_id"], damaged[DAMAGED]
    ('k1', 'line 3 of file-9 is not JSON (Unterminated string starting at: line 1 column 34)')
    >>> _parsed('[1, 2]', 4, "file-9")
    {'mmjudge_damaged': 'line 4 of file-9 is a JSON list, not an object', 'custom_id': None}
    """
    try:
        line = json.loads(raw)
    except ValueError as err:
        why = f"line {number} of {file_id} is not JSON ({str(err).split(' (char')[0]})"
    else:
        if isinstance(line, dict):
            return line
        why = f"line {number} of {file_id} is a JSON {type(line).__name__}, not an object"
    found = _CUSTOM_ID.search(raw.encode("utf-8", "replace") if isinstance(raw, str) else raw)
    return {DAMAGED: why, "custom_id": found.group(1).decode("utf-8", "replace") if found else None}


def _unfinished(line: dict) -> bool:
    """A line of a batch's error file for a request that never ran (the batch expired or was cancelled)."""
    error = line.get("error")
    return isinstance(error, dict) and error.get("code") in ("batch_expired", "batch_cancelled")


def _batch_errors(batch: Any) -> str:
    """A failed batch's own reasons (``batch.errors``), in a few words."""
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    messages = [str(getattr(e, "message", "")) for e in errors[:3] if getattr(e, "message", None)]
    return f" ({'; '.join(messages)})" if messages else ""


def _chunks(entries: Iterable[Entry], size: int) -> Iterator[list[Entry]]:
    chunk: list[Entry] = []
    for entry in entries:
        chunk.append(entry)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
