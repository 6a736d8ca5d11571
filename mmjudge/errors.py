"""Exception types for problems a user can fix, so front doors can answer them in one line.

:class:`MissingDependencyError` is a ``RuntimeError`` (what earlier versions raised) whose message says
what to install; :class:`ServiceError` is a ``RuntimeError`` for a remote service that cannot be reached or
refuses a request (network down, server not started, an HTTP error). The CLI prints both as
``mmjudge <cmd>: error: …`` like a ``ValueError``. :func:`shown_ids` writes the list of ids such a message
names.
"""

from __future__ import annotations

from typing import Iterable

SHOWN_IDS = 5  # ids named in one message; the rest are counted


def shown_ids(ids: Iterable[str]) -> str:
    """The first :data:`SHOWN_IDS` ids, quoted, and how many more there are (error messages stay one line).

    >>> shown_ids(["a", "b"])
    "'a', 'b'"
    >>> shown_ids(str(i) for i in range(7))
    "'0', '1', '2', '3', '4', … (2 more)"
    """
    ids = list(ids)
    text = ", ".join(repr(i) for i in ids[:SHOWN_IDS])
    return text + (f", … ({len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else "")


class MissingDependencyError(RuntimeError):
    """Something outside Python is missing (Java for METEOR, a jar, a server); the message says how to install it."""


class ServiceError(RuntimeError):
    """A remote service (a judge's HTTP server) is unreachable or refused the request; the message names
    the endpoint and the last error, which the user fixes by starting the server or correcting the URL."""
