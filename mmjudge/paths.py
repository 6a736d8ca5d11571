"""Where mmjudge keeps its files, in a leaf module (models, the judge cache and the CLIP cache read it
without importing one another).

>>> import os
>>> os.environ["MMJUDGE_CACHE"] = "/tmp/x/judge.sqlite"
>>> str(default_cache_path()), str(cache_dir())
('/tmp/x/judge.sqlite', '/tmp/x')
>>> del os.environ["MMJUDGE_CACHE"]
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_SQLITE_MAGIC = b"SQLite format 3\x00"


def default_cache_path() -> Path:
    """``$MMJUDGE_CACHE`` if set, else ``$XDG_CACHE_HOME/mmjudge/judge_cache.sqlite`` (``~/.cache``)."""
    env = os.environ.get("MMJUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")).expanduser()
    return base / "mmjudge" / "judge_cache.sqlite"


def cache_dir() -> Path:
    """The folder beside the judge cache where mmjudge builds its other files (the tiny random models)."""
    return default_cache_path().parent


def check_cache_path(path: str | os.PathLike) -> Path:
    """``path`` as a usable cache file, checked before any model is loaded.

    Raises:
        ValueError: the path is a folder, an existing file that is not an SQLite database, or a place
            where no file can be created (read-only folder, a file in the way).

    >>> import tempfile
    >>> check_cache_path(tempfile.mkdtemp())
    Traceback (most recent call last):
    ValueError: cache: '...' is a folder; give a file path such as '.../judge_cache.sqlite'
    (or pass cache=False / --no-cache).
    """
    path = Path(path).expanduser()
    fix = "(or pass cache=False / --no-cache)"
    if path.is_dir():
        raise ValueError(
            f"cache: {str(path)!r} is a folder; give a file path such as {str(path / 'judge_cache.sqlite')!r} {fix}."
        )
    special = special_file_kind(path)
    if special is not None:  # SQLite would open it, and opening a FIFO waits for a writer
        raise ValueError(f"cache: {str(path)!r} is {special}, not a regular file; give another path {fix}.")
    if path.is_file():
        with open(path, "rb") as f:
            head = f.read(16)
        if head and head != _SQLITE_MAGIC:
            raise ValueError(f"cache: {str(path)!r} exists but is not an SQLite file; give another path {fix}.")
        if not os.access(path, os.W_OK):
            raise ValueError(f"cache: {str(path)!r} is not writable; give another path {fix}.")
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"cache: cannot create {str(path)!r}: {str(parent)!r} is a file, not a folder {fix}.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"cache: cannot create {str(path)!r}: folder {str(parent)!r} is not writable {fix}.")
    return path


def special_file_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists but is not a regular file or a folder (``"a named pipe (FIFO)"``, a
    device, a socket), else ``None``. Found with ``stat``, which never blocks (opening a FIFO does: it waits for
    a writer), so readers refuse such paths in one sentence instead of hanging.

    >>> import tempfile
    >>> special_file_kind(tempfile.mkdtemp()), special_file_kind("/no/such/file"), special_file_kind("/dev/null")
    (None, None, 'a character device')
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return _special_kind(mode)


def _special_kind(mode: int) -> str | None:
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def open_regular_file(path: str | os.PathLike, max_bytes: int | None = None):
    """``path`` opened for reading (binary) when it is a regular file of at most ``max_bytes``: opened without
    blocking and checked on the open descriptor (so a path swapped for a FIFO between a check and the open
    cannot hang the reader).

    Raises:
        FileNotFoundError: no such file. IsADirectoryError: a folder.
        ValueError: a FIFO, device or socket (naming which), or a file larger than ``max_bytes``.
        PermissionError / OSError: the file cannot be opened.
    """
    path = os.fspath(path)
    kind = special_file_kind(path)
    if kind is not None:
        raise ValueError(f"{path!r} is {kind}, not a regular file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", path)
        kind = _special_kind(info.st_mode)
        if kind is not None:
            raise ValueError(f"{path!r} is {kind}, not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise ValueError(f"{path!r} is {info.st_size:,} bytes, more than the {max_bytes:,} read at most")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
