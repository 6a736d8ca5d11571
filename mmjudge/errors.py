"""Exception types for problems a user can fix, so front doors can answer them in one line.

:class:`MissingDependencyError` is a ``RuntimeError`` (what earlier versions raised) whose message says
what to install; the CLI prints it as ``mmjudge <cmd>: error: …`` like a ``ValueError``.
"""

from __future__ import annotations


class MissingDependencyError(RuntimeError):
    """Something outside Python is missing (Java for METEOR, a jar, a server); the message says how to install it."""
