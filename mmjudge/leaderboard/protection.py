r"""What keeps a public board (and the Space) safe: rate limits, duplicate messages, escaping, admin tokens.

Names, links, descriptions and every other string a visitor typed are stored as typed (data) and
escaped every time they are put into Markdown, by ONE helper, :func:`mmjudge.report.markdown_text` (the
engine's results layer, which both apps use for every message that repeats user input); links go through
:func:`safe_link`. So no HTML, script
or Markdown link reaches a visitor. API replies are plain text (they are never rendered as HTML), so
they carry no escapes at all. Uploaded files never keep their name (the store generates one), so no
path can be traversed.

Rate limits count per *client* (the signed-in Hub user, else the network address), never per a field
the client writes. Admin actions (hide, delete, re-run / re-queue) need the token in
``MMJUDGE_LEADERBOARD_ADMIN_TOKEN`` (without it, or with one under 16 characters, they are disabled);
wrong guesses are throttled per client with a growing delay, the right token never (:class:`AdminGuard`).

>>> safe_link("javascript:alert(1)"), safe_link("https://huggingface.co/org/model")
('', '<a href="https://huggingface.co/org/model" target="_blank" rel="noopener noreferrer">https://huggingface.co/org/model</a>')
"""

from __future__ import annotations

import hashlib
import hmac
import html
import math
import os
import re
import threading
import time
from dataclasses import dataclass

from mmjudge.leaderboard.records import Submission
from mmjudge.report import invisible_characters

ADMIN_TOKEN_ENV = "MMJUDGE_LEADERBOARD_ADMIN_TOKEN"
# A right token is never refused (the throttle cannot hold the admin out), so guessing is stopped by the
# token's length: 16 random URL-safe characters are 2^96 tries.
MIN_TOKEN_CHARS = 16
MAX_NAME_CHARS = 100
MAX_LINK_CHARS = 300
MAX_DESCRIPTION_CHARS = 2000
_LINK = re.compile(r"^https?://[^\s<>\"']+$")


class RefusedError(ValueError):
    """A submission refused by a protection rule (rate limit, duplicate, bad field)."""


def client_label(client: str) -> str:
    """A client key (the rate limit's) in words, for messages.

    >>> client_label("ip:10.0.0.7"), client_label("user:ana"), client_label("local")
    ('your address (10.0.0.7)', 'Hub user ana', "'local'")
    """
    kind, _, value = str(client).partition(":")
    if kind == "ip" and value:
        return f"your address ({value})"
    if kind == "user" and value:
        return f"Hub user {value}"
    return repr(client)


@dataclass
class RateLimit:
    """At most ``max_submissions`` per client within ``window_s`` seconds (refused uploads count too).

    The client is who sends the upload (the app passes the signed-in Hub user, else the network
    address), never the free-text submitter name, which anyone can change between uploads."""

    max_submissions: int = 5
    window_s: float = 3600.0

    def check(self, store, client: str, now: float | None = None) -> None:
        """Refuse early (before validation) a client that already used its allowance; the store counts
        again inside the inserting transaction (:meth:`Store.add_submission` with :attr:`rate`)."""
        now = time.time() if now is None else now
        used = store.count_recent(client, now - self.window_s)
        if used >= self.max_submissions:
            raise RefusedError(self.reason(client, used))

    @property
    def rate(self) -> tuple[int, float]:
        return self.max_submissions, self.window_s

    def reason(self, client: str, used: int) -> str:
        return (
            f"rate limit: {client_label(client)} sent {used} submissions in the last {self.window_s / 60:g} minutes; "
            f"the limit is {self.max_submissions} per {self.window_s / 60:g} minutes (refused uploads count). "
            "Try again later."
        )


def trimmed(name: object, link: object, description: object, submitter: object) -> tuple[str, str, str, str]:
    """The four displayed fields as the board stores them (text, surrounding spaces removed)."""
    return tuple(str(v or "").strip() for v in (name, link, description, submitter))  # type: ignore[return-value]


def check_fields(name: str, link: str, description: str, submitter: str) -> tuple[str, str, str, str]:
    """Trimmed fields, or :class:`RefusedError` naming the field that is missing, too long, or holds
    characters that change how it is shown. An empty submitter is allowed (the app shows the Hub user,
    else "anonymous").

    >>> check_fields("\u202egnp.exe\u202c", "", "", "")
    Traceback (most recent call last):
    ...
    mmjudge.leaderboard.protection.RefusedError: the name holds invisible characters that change how it is
    shown (U+202E, U+202C: bidirectional controls or zero-width characters); remove them and submit again.
    """
    name, link, description, submitter = trimmed(name, link, description, submitter)
    if not name:
        raise RefusedError("give the model or metric a name.")
    for label, value, limit in (
        ("name", name, MAX_NAME_CHARS),
        ("submitter", submitter, MAX_NAME_CHARS),
        ("link", link, MAX_LINK_CHARS),
        ("description", description, MAX_DESCRIPTION_CHARS),
    ):
        if len(value) > limit:
            raise RefusedError(f"the {label} has {len(value)} characters; the limit is {limit}.")
        hidden = invisible_characters(value)
        if hidden:  # U+202E shows "\u202egnp.exe" as "exe.png": a name others read must be what it says
            raise RefusedError(
                f"the {label} holds invisible characters that change how it is shown "
                f"({', '.join(dict.fromkeys(hidden))}: bidirectional controls or zero-width characters); "
                "remove them and submit again."
            )
    if link and not _LINK.match(link):
        raise RefusedError(
            f"the link must start with http:// or https:// and hold no spaces or quotes, not {link[:60]!r}."
        )
    return name, link, description, submitter


def duplicate_reason(previous: Submission) -> str:
    """The refusal of a file already on the board, naming the stored submission by its full id (what
    ``/status`` and the Submission tab take)."""
    return (
        f"duplicate: the same file was already submitted as {previous.name!r} "
        f"(submission {previous.id}, status {previous.status})."
    )


# Characters Markdown (marked + GFM, as gr.Markdown renders it) reads as syntax anywhere in a line:
# links and images ([ ] !), emphasis (* _ ~), code (`), tables (|), headings (#), e-mail autolinks (@),
# and the backslash itself. ( ) { } + - . are syntax only next to these or at a line start, which a
# one-line message never gives them.


def safe_code(value: object) -> str:
    """``value`` for a Markdown code span (the engine's signatures): HTML is shown literally there, so
    only backticks and line breaks (which would end the span) are replaced.

    >>> safe_code("a`b|c")
    "a'b|c"
    """
    return str(value).replace("`", "'").replace("\n", " ")


def safe_link(url: str) -> str:
    """An escaped ``<a>`` for http(s) URLs; anything else (``javascript:``, ``data:``) renders as nothing."""
    url = str(url or "")
    if not _LINK.match(url):
        return ""
    escaped = html.escape(url, quote=True)
    return f'<a href="{escaped}" target="_blank" rel="noopener noreferrer">{escaped}</a>'


def _token_digest(token: object) -> bytes:
    # Hashing first makes the comparison's time independent of the lengths too.
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).digest()


def check_admin(token: str | None, env: dict | None = None) -> None:
    """Raise :class:`PermissionError` unless ``token`` equals the configured admin token (compared in
    constant time, on SHA-256 digests so that not even the length leaks). A configured token shorter
    than :data:`MIN_TOKEN_CHARS` disables admin actions: its length is what stops guessing (a right
    token is never refused, so no throttle can)."""
    expected = (env if env is not None else os.environ).get(ADMIN_TOKEN_ENV, "")
    if not expected:
        raise PermissionError(f"admin actions are disabled: set {ADMIN_TOKEN_ENV} on the server.")
    if len(expected) < MIN_TOKEN_CHARS:
        raise PermissionError(
            f"admin actions are disabled: {ADMIN_TOKEN_ENV} holds {len(expected)} characters; set one of at least "
            f"{MIN_TOKEN_CHARS} (e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))')."
        )
    if not hmac.compare_digest(_token_digest(token or ""), _token_digest(expected)) or not token:
        raise PermissionError("wrong admin token.")


class AdminGuard:
    """Admin-token checks; wrong tokens throttled per client with a growing delay, the right one never.

    Every token is compared (in constant time). The right token always gets through and clears the
    client's record, so no one sharing the admin's address (or key) can hold the admin out. After the
    k-th wrong token in a row a client must wait ``base_delay_s · 2^(k−1)`` seconds (at most
    ``max_delay_s``); a wrong token during the wait is answered with the time left. What keeps a token
    from being guessed is its length (:data:`MIN_TOKEN_CHARS`, checked by :func:`check_admin`): the wait
    slows a person's typos and a script's noise, not a search that the right answer ends.

    >>> t = [0.0]
    >>> guard = AdminGuard(base_delay_s=1.0, clock=lambda: t[0], env={ADMIN_TOKEN_ENV: "s3cret-s3cret-s3cret"})
    >>> for token in ("guess", "again"):
    ...     try:
    ...         guard.check(token, "ip:10.0.0.7")
    ...     except PermissionError as err:
    ...         print(err)
    wrong admin token.
    too many wrong admin tokens from your address (10.0.0.7): wait 1 s before trying again.
    >>> guard.check("s3cret-s3cret-s3cret", "ip:10.0.0.7")  # during the wait: the right token still gets through
    """

    def __init__(
        self,
        base_delay_s: float = 1.0,
        max_delay_s: float = 900.0,
        clock=time.monotonic,
        env: dict | None = None,
        max_clients: int = 10_000,
    ):
        if base_delay_s < 0 or max_delay_s < base_delay_s:
            raise ValueError(f"Expected 0 <= base_delay_s <= max_delay_s, but got {base_delay_s} and {max_delay_s}.")
        self.base_delay_s, self.max_delay_s, self.clock, self.env = float(base_delay_s), float(max_delay_s), clock, env
        self.max_clients = max_clients
        self._failures: dict[str, tuple[int, float]] = {}  # client -> (wrong tokens in a row, may try again at)
        self._lock = threading.Lock()

    def check(self, token: str | None, client: str) -> None:
        """:func:`check_admin`; a wrong token during ``client``'s wait says how long is left. Raises
        :class:`PermissionError`."""
        now = self.clock()
        try:
            check_admin(token, self.env)
        except PermissionError as err:
            if "disabled" in str(err):
                raise
            with self._lock:
                until = self._failures.get(client, (0, now))[1]
            if now < until:
                raise PermissionError(
                    f"too many wrong admin tokens from {client_label(client)}: "
                    f"wait {math.ceil(until - now)} s before trying again."
                ) from None
            self._record_failure(client, now)
            raise
        with self._lock:
            self._failures.pop(client, None)

    def _record_failure(self, client: str, now: float) -> None:
        with self._lock:
            failures = self._failures.get(client, (0, now))[0] + 1
            delay = min(self.base_delay_s * 2 ** min(failures - 1, 60), self.max_delay_s)
            self._failures[client] = (failures, now + delay)
            if len(self._failures) > self.max_clients:  # forget clients whose wait is long over
                stale = [c for c, (_, until) in self._failures.items() if now - until > self.max_delay_s]
                for c in stale:
                    del self._failures[c]
