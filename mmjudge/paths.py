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
