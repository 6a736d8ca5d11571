"""Taking part from a terminal: the board's public HTTP API through ``gradio_client``.

What ``mmjudge leaderboard download`` and ``mmjudge leaderboard submit`` call; nothing here needs the
board's data dir — only its URL, as for any participant.

>>> parse_receipt("✅ received: submission 0123456789abcdef0123456789abcdef is PENDING; position 2 in the queue.")
'0123456789abcdef0123456789abcdef'
>>> parse_receipt("❌ Not accepted — rate limit: your address (10.0.0.7) sent 5 submissions …")
Traceback (most recent call last):
...
ValueError: Not accepted — rate limit: your address (10.0.0.7) sent 5 submissions …
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FINAL = ("DONE", "FAILED")
_RECEIPT = re.compile(r"received: submission ([0-9a-f]{32}) is PENDING")


def parse_receipt(reply: str) -> str:
    """The new submission's id from the board's reply to an upload; ``ValueError`` with the board's
    reason when it was not accepted."""
    match = _RECEIPT.search(str(reply))
    if match is None:
        raise ValueError(str(reply).lstrip("❌ ").strip() or "the board gave no answer to the upload.")
    return match.group(1)


class BoardClient:
    """One board, reached at ``url`` (the page's address)."""

    def __init__(self, url: str, client: Any = None):
        if client is None:
            try:
                from gradio_client import Client
            except ModuleNotFoundError:
                raise ValueError("talking to a board needs gradio_client: pip install gradio_client") from None
            try:
                client = Client(url, verbose=False)
            except Exception as err:
                raise ValueError(f"cannot reach a board at {url} ({type(err).__name__}: {err}); check --url.") from None
        self.url, self.client = url, client

    def _call(self, *args: Any, api_name: str) -> Any:
        try:
            return self.client.predict(*args, api_name=api_name)
        except Exception as err:
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise ValueError(f"the board at {self.url} answered {api_name} with an error: {first}") from None

    def benchmarks(self) -> list[dict]:
        """Every benchmark with its track, items, tasks and line format."""
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
        with the board's one-line reason when refused)."""
        from gradio_client import handle_file

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"--file {path}: no such file.")
        track = self.benchmark(name)["track"]
        reply = self._call(track, name, label, submitter, link, description, handle_file(str(path)), api_name="/submit")
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
            if status.get("status") in FINAL or status.get("status") == "UNKNOWN":
                return status
            if time.monotonic() >= deadline:
                raise ValueError(
                    f"submission {sid} is still {status.get('status')} after {timeout_s:g} s; "
                    f"see its page on the board, or wait longer with --timeout."
                )
            time.sleep(poll_s)


def describe(status: dict) -> str:
    """One line for a status (what ``mmjudge leaderboard submit`` prints).

    >>> describe({"status": "PENDING", "position": 3, "id": "x"})
    'PENDING: position 3 in the queue'
    >>> describe({"status": "DONE", "rank": 2, "of": 5, "by": "overall", "value": 3.1234, "ci_low": 3.0, "ci_high": 3.3,
    ...           "separable": False, "failed": 0, "note": ""})
    'DONE: rank 2 of 5 by overall = 3.123 [3.000, 3.300]; not separable from the row above; judge failures 0'
    """
    state = status.get("status")
    if state in ("PENDING", "RUNNING"):
        where = f"position {status['position']} in the queue" if status.get("position") else "being scored"
        return f"{state}: {where}"
    if state != "DONE":
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
