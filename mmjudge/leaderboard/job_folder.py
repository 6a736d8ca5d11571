"""A scoring job's own folder, ``<data dir>/jobs/<submission id>/``: where a track keeps what it has done
so far (the Arena track: its rounds of battles, written as they are judged), so a killed worker loses nothing.

**One writer at a time.** The worker that holds a job holds an exclusive lock (``flock``) on the folder's
lock file while it scores. The kernel drops the lock when the process dies, so the worker that claims the
re-queued job next takes it at once and resumes from the folder; a worker that was only frozen past its
lease keeps the lock until it sees, at its next lease check, that the job was taken from it — the new
owner waits until then (checking its own lease) rather than write beside it.

**Removed when the job ends.** After each job the worker :func:`sweep`\\ s the jobs folder: the folder of
every job that is no longer queued or running (DONE, FAILED, deleted — also one failed by the store after
too many stopped workers) is removed, under its lock, so a folder still in use is never touched.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> with locked(job_dir(root, "abc"), check=lambda: None) as folder:
...     _ = (folder / "rounds.jsonl").write_text("{}\\n")
...     sweep(root, live=lambda sid: False)  # in use: its lock is held
0
>>> sweep(root, live=lambda sid: True), sweep(root, live=lambda sid: False), job_dir(root, "abc").exists()
(0, 1, False)
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # not POSIX: one worker per data dir, then
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)
JOBS = "jobs"
LOCK_FILE = ".lock"
WAIT_S = 0.5  # how often a worker waiting for a job folder looks again (and checks its own lease)


def job_dir(data_dir: str | os.PathLike, sid: str) -> Path:
    """The folder of submission ``sid``'s job."""
    return Path(data_dir) / JOBS / sid


def _try_lock(handle: IO) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    # A folder removed while we waited: our lock is on a file no longer there, so lock the new one instead.
    if os.fstat(handle.fileno()).st_nlink == 0:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False
    return True


def _unlock(handle: IO) -> None:
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def locked(folder: Path, check: Callable[[], None], wait_s: float = WAIT_S) -> Iterator[Path]:
    """The job folder (created if missing), held exclusively until the block ends; while another process
    holds it, wait, calling ``check`` (the lease check: raises when the job is no longer this worker's)."""
    warned = False
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_FILE, "a+")  # noqa: SIM115 - closed below, after the lock is released
        if _try_lock(handle):
            break
        handle.close()
        check()
        if not warned:
            logger.warning("%s is held by another worker (frozen past its lease?); waiting for it", folder)
            warned = True
        time.sleep(wait_s)
    try:
        yield folder
    finally:
        _unlock(handle)
        handle.close()


def sweep(data_dir: str | os.PathLike, live: Callable[[str], bool]) -> int:
    """Remove the folders of the jobs for which ``live(sid)`` is False (not queued or running any more),
    each under its lock and after asking ``live`` again there; a folder whose lock is held is left alone.
    Returns how many were removed."""
    root = Path(data_dir) / JOBS
    if not root.is_dir():
        return 0
    removed = 0
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or live(folder.name):
            continue
        try:
            handle = open(folder / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
        except FileNotFoundError:  # removed meanwhile by another worker's sweep
            continue
        try:
            if not _try_lock(handle):
                continue
            try:
                if not live(folder.name):
                    shutil.rmtree(folder, ignore_errors=True)
                    removed += 1
            finally:
                _unlock(handle)
        finally:
            handle.close()
    return removed
