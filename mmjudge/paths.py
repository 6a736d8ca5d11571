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


def check_out_folder(path: str | os.PathLike | None, flag: str = "--out") -> None:
    """An output folder a command will make or fill: refused in one line, before any work, when it is a file
    (or a FIFO, a device…) or lies under a file (no folder can be made there).

    >>> import tempfile
    >>> f = os.path.join(tempfile.mkdtemp(), "f"); _ = open(f, "w").close()
    >>> check_out_folder(os.path.join(f, "card"))
    Traceback (most recent call last):
    ValueError: --out .../f/card: .../f is a file, so no folder can be made there; give a folder path.
    """
    if not path:
        return
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        kind = special_file_kind(folder) or "a file"
        raise ValueError(f"{flag} {path}: is {kind}; give a folder.")
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {path}: {parent} is a file, so no folder can be made there; give a folder path.")


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


def link_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be followed when it is a symbolic link that leads nowhere: ``"a symbolic link loop"``
    or ``"a broken symbolic link (to '…')"``; ``None`` otherwise (it exists, or it is simply absent). Without
    this, a loop reads as "no such file" and an input name that is no file is taken for a Hub data set.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> os.symlink(os.path.join(d, "b"), os.path.join(d, "a")); os.symlink(os.path.join(d, "a"), os.path.join(d, "b"))
    >>> link_problem(os.path.join(d, "a")), link_problem(d), link_problem(os.path.join(d, "none"))
    ('a symbolic link loop', None, None)
    """
    import errno

    try:
        os.stat(path)
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symbolic link loop"
        if os.path.islink(path):
            return f"a broken symbolic link (to {os.readlink(path)!r})"
        return None
    except ValueError:  # a NUL byte in the name
        return None


def not_a_regular_file(path: str | os.PathLike) -> str | None:
    """What ``path`` is when a regular file was expected and it is something else that exists (a folder, a
    device, a FIFO, a socket) or a link that leads nowhere; ``None`` for a regular file or an absent path.

    >>> not_a_regular_file("/dev/zero"), not_a_regular_file("/no/such/file")
    ('a character device, not a regular file', None)
    """
    problem = link_problem(path)
    if problem is not None:
        return problem
    if os.path.isdir(path):
        return "a folder, not a file"
    kind = special_file_kind(path)
    return None if kind is None else f"{kind}, not a regular file"


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once links are resolved, a symbolic link to the
    other, or a hard link (same device and inode). Either may not exist yet (then only the paths compare).

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); a = os.path.join(d, "a.jsonl"); _ = open(a, "w").close()
    >>> os.link(a, os.path.join(d, "hard")); os.symlink(a, os.path.join(d, "soft"))
    >>> [same_file(a, os.path.join(d, n)) for n in ("hard", "soft", "x/../a.jsonl", "other")]
    [True, True, True, False]
    """
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    inner, outer = os.path.realpath(path), os.path.realpath(folder)
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def _how(written: str | os.PathLike, read: str | os.PathLike) -> str:
    if os.path.islink(written) or os.path.islink(read):
        return "a symbolic link to"
    if os.path.realpath(written) != os.path.realpath(read):
        return "a hard link to"
    return "the same file as"


def check_writes_spare_reads(
    writes: list[tuple[str, str | os.PathLike, str]],
    reads: list[tuple[str, str | os.PathLike]],
    *,
    folders_read_whole: bool = False,
) -> None:
    """Refuse, in one line and before anything is touched, a command whose written files include one it
    reads: the same path, a symbolic link to it or a hard link to it (``os.path.samefile``: same device and
    inode). ``writes`` are ``(flag, path, label)`` triples — the flag to change, the file, and how messages name
    it (``"--output s.jsonl"``, ``"the part file s.jsonl.part-0-of-1.jsonl of --output s.jsonl"``); ``reads``
    are ``(flag, path)`` pairs. A read that is a folder protects every file inside it; with
    ``folders_read_whole`` (an ``--input`` folder read as data files: whatever lands there is read next time)
    nothing may be written inside it at all.

    Raises:
        ValueError: naming the written file, what it is to the input, and the fix.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); s = os.path.join(d, "s.jsonl"); _ = open(s, "w").close()
    >>> check_writes_spare_reads([("--output", s, f"--output {s}")], [("--input", s)])
    Traceback (most recent call last):
    ValueError: --output .../s.jsonl is the same file as --input .../s.jsonl: writing it would destroy the input;
    give another --output.
    """
    for flag, written, label in writes:
        for read_flag, read in reads:
            if not os.path.isdir(read):
                if same_file(written, read):
                    raise ValueError(
                        f"{label} is {_how(written, read)} {read_flag} {read}: writing it would destroy the input; "
                        f"give another {flag}."
                    )
            elif _inside(written, read) and (folders_read_whole or os.path.lexists(written)):
                what = (
                    "lies inside the {} folder {}, whose files are all read as the input (a resumed run would read "
                    "its own rows); give an {} outside it."
                    if folders_read_whole
                    else "is a file of the {} folder {}: writing it would destroy part of the input; give another {}."
                )
                raise ValueError(f"{label} " + what.format(read_flag, read, flag))
            elif _hard_link_inside(written, read):
                raise ValueError(
                    f"{label} is a hard link to a file inside the {read_flag} folder {read}: writing it would change "
                    f"the input; give another {flag}."
                )


def _hard_link_inside(written: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether ``written`` exists with more than one name and one of them is a file under ``folder`` (only then
    is the folder walked)."""
    try:
        info = os.stat(written)
    except (OSError, ValueError):
        return False
    if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
        return False
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                other = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
                return True
    return False
