"""Exception types for problems a user can fix, so front doors can answer them in one line.

:class:`MissingDependencyError` is a ``RuntimeError`` (what earlier versions raised) whose message says
what to install; :class:`ServiceError` is a ``RuntimeError`` for a remote service that cannot be reached or
refuses a request (network down, server not started, an HTTP error). The CLI prints both as
``mmjudge <cmd>: error: …`` like a ``ValueError``.
"""

from __future__ import annotations


class MissingDependencyError(RuntimeError):
    """Something outside Python is missing (Java for METEOR, a jar, a server); the message says how to install it."""


class ServiceError(RuntimeError):
    """A remote service (a judge's HTTP server) is unreachable or refused the request; the message names
    the endpoint and the last error, which the user fixes by starting the server or correcting the URL."""
