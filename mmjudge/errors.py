"""Exception types for problems a user can fix, so front doors can answer them in one line.

:class:`MissingDependencyError` is a ``RuntimeError`` (what earlier versions raised) whose message says
what to install; :class:`ServiceError` is a ``RuntimeError`` for a remote service that cannot be reached or
refuses a request (network down, server not started, an HTTP error). The CLI prints both as
``mmjudge <cmd>: error: …`` like a ``ValueError``. :func:`shown_ids` writes the list of ids such a message
names, :func:`check_bool` reads a true/false option strictly and :func:`check_positive_int` a count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SHOWN_IDS = 5  # ids named in one message; the rest are counted


def id_differences(found: Iterable[str], wanted: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(missing, unknown)``: the ``wanted`` ids not ``found`` (in ``wanted``'s order), and the ``found``
    ids not wanted (in ``found``'s order). The one comparison behind every "the file must cover exactly the
    benchmark's ids" check.

    >>> id_differences(["a", "x"], ["a", "b"])
    (['b'], ['x'])
    """
    found, wanted = list(found), list(dict.fromkeys(wanted))
    have, known = set(found), set(wanted)
    return [i for i in wanted if i not in have], [i for i in found if i not in known]


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


class OutputClosed(BaseException):
    """The reader of the command's output went away (``mmjudge score … | head -3`` closed the pipe). A
    ``BaseException``, like ``KeyboardInterrupt``: no handler of file or service errors (``except OSError``,
    ``except Exception``) mistakes it for one; the CLI ends quietly (:class:`mmjudge.cli.PipeGuard`)."""


def check_bool(value: Any, name: str) -> bool:
    """A strict boolean option: ``True``/``False``, ``0``/``1`` or ``"true"``/``"false"``; anything else
    is a ``ValueError`` (``bool("no")`` would be ``True``).

    >>> check_bool("false", "smoothing"), check_bool(1, "explain")
    (False, True)
    >>> check_bool("no", "smoothing")
    Traceback (most recent call last):
    ValueError: Expected argument `smoothing` to be true or false, but got 'no';
    pass smoothing=False (--set smoothing=false).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(
        f"Expected argument `{name}` to be true or false, but got {value!r}; pass {name}=False (--set {name}=false)."
    )


def check_positive_int(value: Any, name: str) -> int:
    """A strict whole-number option of at least 1 (a batch size, a count): ``True`` and ``8.0`` are refused.

    >>> check_positive_int(8, "batch_size")
    8
    >>> check_positive_int(0, "batch_size")
    Traceback (most recent call last):
    ValueError: Expected argument `batch_size` to be a positive integer, but got 0.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Expected argument `{name}` to be a positive integer, but got {value!r}.")
    return value


def check_batch_size(value: Any, auto: bool = False) -> int | str:
    """``batch_size``, by one rule everywhere: a positive integer, strictly (:func:`check_positive_int`: ``"8"``,
    ``8.0`` and ``True`` are refused), or ``"auto"`` where the part sizes its batches itself (``auto=True``).

    >>> check_batch_size(8), check_batch_size("auto", auto=True)
    (8, 'auto')
    >>> check_batch_size("8", auto=True)
    Traceback (most recent call last):
    ValueError: Expected argument `batch_size` to be a positive integer or 'auto', but got '8'.
    """
    if auto and value == "auto":
        return value
    try:
        return check_positive_int(value, "batch_size")
    except ValueError:
        if auto:
            raise ValueError(
                f"Expected argument `batch_size` to be a positive integer or 'auto', but got {value!r}."
            ) from None
        raise
