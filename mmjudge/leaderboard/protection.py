"""What keeps a public board safe: rate limits, duplicate messages, escaping, admin tokens.

Names, links and descriptions are stored as the submitter typed them (data) and escaped every time
they are rendered (:func:`safe_text`, :func:`safe_link`), so no HTML or script reaches a visitor.
Uploaded files never keep their name (the store generates one), so no path can be traversed.
Admin actions (hide, delete, re-run / re-queue) need the token in ``MMJUDGE_LEADERBOARD_ADMIN_TOKEN``;
without that variable they are disabled.

>>> safe_text('<img src=x onerror="alert(1)">')
'&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
>>> safe_link("javascript:alert(1)"), safe_link("https://huggingface.co/org/model")
('', '<a href="https://huggingface.co/org/model" target="_blank" rel="noopener noreferrer">https://huggingface.co/org/model</a>')
"""

from __future__ import annotations

import hmac
import html
import os
import re
import time
from dataclasses import dataclass
from typing import Optional

ADMIN_TOKEN_ENV = "MMJUDGE_LEADERBOARD_ADMIN_TOKEN"
MAX_NAME_CHARS = 100
MAX_LINK_CHARS = 300
MAX_DESCRIPTION_CHARS = 2000
_LINK = re.compile(r"^https?://[^\s<>\"']+$")


class RefusedError(ValueError):
    """A submission refused by a protection rule (rate limit, duplicate, bad field)."""


@dataclass
class RateLimit:
    """At most ``max_submissions`` per client within ``window_s`` seconds (refused uploads count too).

    The client is who sends the upload (the app passes the signed-in Hub user, else the IP address),
    never the free-text submitter name, which anyone can change between uploads."""

    max_submissions: int = 5
    window_s: float = 3600.0

    def check(self, store, client: str, now: Optional[float] = None) -> None:
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
        return (f"rate limit: {client!r} has sent {used} submissions in the last {self.window_s / 60:g} minutes "
                f"(limit {self.max_submissions}); try again later.")  # fmt: skip


def check_fields(name: str, link: str, description: str, submitter: str) -> tuple[str, str, str, str]:
    """Trimmed fields, or :class:`RefusedError` naming the field that is missing or too long."""
    name, link, description, submitter = (str(v or "").strip() for v in (name, link, description, submitter))
    if not name:
        raise RefusedError("give the model or metric a name.")
    if not submitter:
        raise RefusedError("say who submits (your name or Hub user).")
    for label, value, limit in (("name", name, MAX_NAME_CHARS), ("submitter", submitter, MAX_NAME_CHARS),
                                ("link", link, MAX_LINK_CHARS), ("description", description, MAX_DESCRIPTION_CHARS)):  # fmt: skip
        if len(value) > limit:
            raise RefusedError(f"the {label} has {len(value)} characters; the limit is {limit}.")
    if link and not _LINK.match(link):
        raise RefusedError(f"the link must start with http:// or https:// and hold no spaces or quotes, not {link[:60]!r}.")
    return name, link, description, submitter


def duplicate_reason(previous: dict) -> str:
    return (f"duplicate: the same file was already submitted as {previous['name']!r} "
            f"(submission {previous['id'][:8]}, status {previous['status']}).")  # fmt: skip


def safe_text(value: object) -> str:
    """``value`` escaped for HTML and Markdown tables (``|`` and newlines would break a table row)."""
    return html.escape(str(value), quote=True).replace("|", "&#124;").replace("\n", " ")


def safe_code(value: object) -> str:
    """``value`` for a Markdown code span: HTML is shown literally there, so only backticks and line
    breaks (which would end the span) are replaced.

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


def check_admin(token: Optional[str], env: Optional[dict] = None) -> None:
    """Raise :class:`PermissionError` unless ``token`` equals the configured admin token."""
    expected = (env if env is not None else os.environ).get(ADMIN_TOKEN_ENV, "")
    if not expected:
        raise PermissionError(f"admin actions are disabled: set {ADMIN_TOKEN_ENV} on the server.")
    if not token or not hmac.compare_digest(str(token).encode(), expected.encode()):
        raise PermissionError("wrong admin token.")
