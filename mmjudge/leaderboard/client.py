"""Taking part from a terminal: the board's public HTTP API through ``gradio_client``.

What ``mmjudge leaderboard download`` and ``mmjudge leaderboard submit`` call; nothing here needs the
board's data dir — only its URL, as for any participant. A dropped connection is retried on a fresh
one, and so is the first connection (a board that is restarting is waited for, not taken for a wrong
URL); an upload whose reply was lost is safe to repeat (the board gives the original receipt back).
gradio_client's event-stream reader prints a traceback of its own when its connection breaks; that
thread's output is dropped here, and the break is said once, in the retry's line.

>>> parse_receipt("✅ received: submission 0123456789abcdef0123456789abcdef is PENDING; position 2 in the queue.")
'0123456789abcdef0123456789abcdef'
>>> parse_receipt("✅ received: submission 0123456789abcdef0123456789abcdef is DONE. This exact upload had arrived …")
'0123456789abcdef0123456789abcdef'
>>> parse_receipt("❌ Not accepted — rate limit: your address (10.0.0.7) sent 5 submissions …")
Traceback (most recent call last):
...
ValueError: Not accepted — rate limit: your address (10.0.0.7) sent 5 submissions …
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.records import Status
from mmjudge.leaderboard.validation import size_reason

_RECEIPT = re.compile(r"received: submission ([0-9a-f]{32}) is (?:PENDING|RUNNING|DONE|FAILED)")
RETRIES = 5  # a dropped connection is tried again this many times (waits 1, 2, 4, 8, 16 s)
CALL_TIMEOUT_S = 300.0  # a reply that never comes (the server died with it) counts as a dropped connection


def parse_receipt(reply: str) -> str:
    """The submission's id from the board's reply to an upload (a new one, or the receipt of the same
    upload sent before); ``ValueError`` with the board's reason when it was not accepted."""
    match = _RECEIPT.search(str(reply))
    if match is None:
        raise ValueError(str(reply).lstrip("❌ ").strip() or "the board gave no answer to the upload.")
    return match.group(1)


def dropped_connection(err: BaseException) -> bool:
    """The error (or one it was raised from) says the connection broke or no reply came: worth another
    try. A reply the board did give (a refusal, an unknown endpoint) is not.

    >>> dropped_connection(ConnectionResetError(104, "Connection reset by peer")), dropped_connection(ValueError("no"))
    (True, False)
    """
    import concurrent.futures

    seen: BaseException | None = err
    while seen is not None:
        name = type(seen).__module__.split(".")[0]
        if isinstance(seen, (ConnectionError, TimeoutError, concurrent.futures.TimeoutError)):
            return True
        if isinstance(seen, concurrent.futures.CancelledError):
            return True  # gradio_client cancels a job whose event stream broke before its reply came
        if name in ("httpx", "httpcore") and type(seen).__name__ not in ("HTTPStatusError", "InvalidURL"):
            return True  # transport errors: connect, read, write, protocol, timeouts
        seen = seen.__cause__ or seen.__context__
    return False


class NotABoardError(ValueError):
    """Something answered at the URL, but not as a board (not a Gradio app, or no board API)."""


class BoardClient:
    """One board, reached at ``url`` (the page's address). A call whose connection drops (or whose reply
    never comes), or that cannot connect at all, is made again on a fresh connection, up to ``retries``
    times; an upload may be repeated safely: the board answers a repeated upload with its original receipt."""

    def __init__(
        self,
        url: str,
        client: Any = None,
        retries: int = RETRIES,
        backoff_s: float = 1.0,
        timeout_s: float = CALL_TIMEOUT_S,
        on_retry: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.url, self.retries, self.backoff_s, self.timeout_s = url, int(retries), float(backoff_s), float(timeout_s)
        self.on_retry, self.sleep = on_retry, sleep
        self.client = client  # connected by the first call, inside its retries

    def _connect(self) -> Any:
        try:
            from gradio_client import Client
        except ModuleNotFoundError:
            raise ValueError("talking to a board needs gradio_client: pip install gradio_client") from None
        try:
            client = Client(self.url, verbose=False)
        except Exception as err:
            if dropped_connection(err):
                raise  # nothing answers (yet): the caller's retries wait for the board
            raise NotABoardError(
                f"{self.url} does not answer as a board ({_reason(err)}); check --url (the board page's address)."
            ) from None
        _quiet_stream_reader(client)
        return client

    def _call(self, *args: Any, api_name: str) -> Any:
        started = time.monotonic()
        for attempt in range(self.retries + 1):
            connected = self.client is not None
            try:
                if self.client is None:
                    self.client = self._connect()
                    connected = True
                _stream_error(self.client)  # forget how an earlier call's stream ended
                job = self.client.submit(*args, api_name=api_name)
                return job.result(timeout=self.timeout_s)
            except NotABoardError:
                raise
            except Exception as err:
                if not dropped_connection(err):
                    raise ValueError(
                        f"the board at {self.url} answered {api_name} with an error: {_reason(err)}"
                    ) from None
                reason = _stream_error(self.client) or _reason(err)
                self._drop_client()
                if attempt == self.retries:
                    raise ValueError(
                        f"the board at {self.url} is unreachable ({reason}) after {attempt + 1} tries over "
                        f"{time.monotonic() - started:.0f} s; is it running? Try again once it is back "
                        "(--retries waits longer)."
                    ) from None
                wait = self.backoff_s * 2**attempt
                if self.on_retry is not None:
                    what = (
                        f"the connection to {self.url} dropped during {api_name}"
                        if connected
                        else f"the board at {self.url} is unreachable"
                    )
                    self.on_retry(f"{what} ({reason}); trying again in {wait:g} s ({attempt + 1} of {self.retries})")
                self.sleep(wait)
        raise AssertionError("unreachable")

    def _drop_client(self) -> None:
        """Forget the connection (and session); the next try opens a fresh one."""
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()  # stops its heartbeat thread

    def benchmarks(self) -> list[dict]:
        """Every benchmark with its track, items, tasks, line format and limits."""
        return list(self._call(api_name="/benchmarks"))

    def benchmark(self, name: str) -> dict:
        found = {b["name"]: b for b in self.benchmarks()}
        if name not in found:
            raise ValueError(f"the board at {self.url} has no benchmark {name!r}; it has {', '.join(found) or 'none'}.")
        return found[name]

    def download(self, name: str, out: str | Path, fmt: str = "zip") -> Path:
        """Save the benchmark's inputs (``zip`` / ``parquet``) or its example submission (``example``) to ``out``."""
        self.benchmark(name)  # a clear line for an unknown name
        if fmt == "example":
            got = self._call(name, api_name="/example_submission")
        else:
            got = self._call(name, fmt, api_name="/benchmark_inputs")
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(got, out)
        return out

    def submit(
        self, name: str, path: str | Path, label: str, submitter: str = "", link: str = "", description: str = ""
    ) -> str:
        """Upload ``path`` for benchmark ``name`` as ``label``; returns the submission id (``ValueError``
        with the board's one-line reason when refused). A file over the board's limit is refused here,
        in the board's words, before anything is sent."""
        from gradio_client import handle_file

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"--file {path}: no such file.")
        spec = self.benchmark(name)
        limit = (spec.get("limits") or {}).get("max_upload_bytes")
        if limit is not None and path.stat().st_size > int(limit):
            raise ValueError(f"--file {path}: {size_reason(path.stat().st_size, int(limit))}")
        fields = (spec["track"], name, label, submitter, link, description)
        reply = self._call(*fields, handle_file(str(path)), api_name="/submit")
        return parse_receipt(reply)

    def status(self, sid: str) -> dict:
        return dict(self._call(sid, api_name="/status"))

    def wait(
        self,
        sid: str,
        timeout_s: float = 3600.0,
        poll_s: float = 5.0,
        on_change: Callable[[dict], None] | None = None,
    ) -> dict:
        """Poll ``/status`` until the submission is DONE or FAILED (``ValueError`` after ``timeout_s``)."""
        deadline, last = time.monotonic() + timeout_s, None
        while True:
            status = self.status(sid)
            seen = (status.get("status"), status.get("position"))
            if seen != last and on_change is not None:
                on_change(status)
            last = seen
            if _status(status).final:
                return status
            if time.monotonic() >= deadline:
                raise ValueError(
                    f"submission {sid} is still {status.get('status')} after {timeout_s:g} s; "
                    f"see its page on the board, or wait longer with --timeout."
                )
            time.sleep(poll_s)


def _reason(err: BaseException) -> str:
    """The error in a few words: the innermost one it was raised from (``ConnectError: [Errno 111] …``),
    not a wrapper's name (``CancelledError``).

    >>> try:
    ...     try:
    ...         raise ConnectionRefusedError(111, "Connection refused")
    ...     except OSError as inner:
    ...         raise ValueError("wrapped") from inner
    ... except ValueError as err:
    ...     _reason(err)
    'ConnectionRefusedError: [Errno 111] Connection refused'
    """
    seen: BaseException = err
    while seen.__cause__ is not None or (seen.__context__ is not None and not seen.__suppress_context__):
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    text = str(seen).strip().splitlines()[0] if str(seen).strip() else ""
    return f"{type(seen).__name__}: {text}" if text else type(seen).__name__


# gradio_client's event-stream reader (Client.stream_messages, run on Client.stream_executor) calls
# traceback.print_exc() before re-raising when its connection breaks other than by a clean close, so a
# run that recovers through its retry printed a traceback first. Its thread is marked, and what it writes
# to sys.stderr is dropped; the error itself still fails the call, which is retried and said in one line.
_SILENT = threading.local()


class _StderrGate:
    """``sys.stderr`` as it was, for every thread except gradio_client's marked stream readers."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        return len(text) if getattr(_SILENT, "on", False) else self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _StreamReaders(concurrent.futures.ThreadPoolExecutor):
    """The one thread gradio_client reads a session's event stream on, marked silent; keeps the last error
    it ended with (the retry line names it: ``ReadError: [Errno 104] Connection reset by peer``)."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="board-events")
        self.error: BaseException | None = None

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        return super().submit(self._silenced, fn, *args, **kwargs)

    def _silenced(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        _SILENT.on = True
        try:
            return fn(*args, **kwargs)
        except BaseException as err:
            self.error = err
            raise
        finally:
            _SILENT.on = False


def _quiet_stream_reader(client: Any) -> None:
    """Run ``client``'s event-stream reader on a :class:`_StreamReaders` thread (when this gradio_client has
    one) and put the :class:`_StderrGate` in front of ``sys.stderr`` (once)."""
    if not isinstance(getattr(client, "stream_executor", None), concurrent.futures.ThreadPoolExecutor):
        return
    client.stream_executor.shutdown(wait=False)
    client.stream_executor = _StreamReaders()
    if not isinstance(sys.stderr, _StderrGate):
        sys.stderr = _StderrGate(sys.stderr)


def _stream_error(client: Any) -> str | None:
    """What ended ``client``'s event stream since last asked, in a few words (``None``: nothing)."""
    readers = getattr(client, "stream_executor", None)
    error = getattr(readers, "error", None)
    if error is None:
        return None
    readers.error = None
    return _reason(error)


def _status(status: dict) -> Status:
    try:
        return Status(status.get("status"))
    except ValueError:
        return Status.UNKNOWN


def describe(status: dict) -> str:
    """One line for a status (what ``mmjudge leaderboard submit`` prints).

    >>> describe({"status": "PENDING", "position": 3, "id": "x"})
    'PENDING: position 3 in the queue'
    >>> describe({"status": "DONE", "rank": 2, "of": 5, "by": "overall", "value": 3.1234, "ci_low": 3.0, "ci_high": 3.3,
    ...           "separable": False, "failed": 0, "note": ""})
    'DONE: rank 2 of 5 by overall = 3.123 [3.000, 3.300]; not separable from the row above; judge failures 0'
    """
    state = _status(status)
    if state.queued:
        where = f"position {status['position']} in the queue" if status.get("position") else "being scored"
        return f"{state}: {where}"
    if state is not Status.DONE:
        return f"{state}: {status.get('reason') or 'no reason given'}"
    if status.get("rank") is None:
        return f"DONE, not ranked: {status.get('note') or 'no comparable row'}"

    def num(v: Any) -> str:
        return "—" if v is None else f"{v:.3f}"

    line = f"DONE: rank {status['rank']} of {status['of']} by {status['by']} = {num(status.get('value'))}"
    if status.get("ci_low") is not None:
        line += f" [{num(status['ci_low'])}, {num(status['ci_high'])}]"
    if status.get("separable") is not None:
        line += "; separable from the row above" if status["separable"] else "; not separable from the row above"
    if status.get("failed") is not None:
        line += f"; judge failures {status['failed']}"
    return line
