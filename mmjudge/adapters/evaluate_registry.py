"""Make ``evaluate.load("<name>")`` find mmjudge's metrics by bare name, offline.

``evaluate.load("harmonic_eval")`` first asks the Hub; when that fails (offline, or no such Hub module)
it falls back to its module cache,
``<HF_MODULES_CACHE>/evaluate_modules/metrics/evaluate-metric--<name>/<sha256>/<name>.py``.
We copy our thin ``metrics/<name>/<name>.py`` shells there. This happens on ``import mmjudge`` (a cheap
check; set ``MMJUDGE_NO_REGISTER=1`` to skip it) and explicitly with ``mmjudge register``.

The shells only import :mod:`mmjudge`, so a registered copy always runs the installed engine.

What is written, and when: on ``import mmjudge`` (and by ``mmjudge register``), for each shell whose
current content is not there yet, ``<HF_MODULES_CACHE>/evaluate_modules/metrics/evaluate-metric--<name>/<sha256 of
the shell>/<name>.py`` with its ``README.md`` and empty ``__init__.py`` files (``HF_MODULES_CACHE`` defaults
to ``~/.cache/huggingface/modules``). Nothing else is written; an import that finds the files already
there writes nothing. ``MMJUDGE_NO_REGISTER=1`` turns it off; ``evaluate.load("metrics/<name>")`` (a
folder) then still works.

evaluate logs "Using the latest cached version of the module…" every time it falls back to that
cache; for mmjudge's own module names that line says nothing useful, so a logging filter drops it — for our
names only. Importing mmjudge installs nothing on other libraries' loggers: the filter goes on evaluate's
logger when one of our evaluate shells is loaded (:mod:`mmjudge.adapters.evaluate_metric`; the first
bare-name load of a process shows evaluate's line once, later ones are quiet), or when a program calls
:func:`quiet_cached_notice` itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

# The keyword arguments `evaluate.load` passes on to `evaluate.Metric.__init__`; every other keyword
# given to `evaluate.load("<name>", ...)` is an option of the mmjudge engine metric.
EVALUATE_INIT_KWARGS = frozenset(
    {
        "config_name",
        "keep_in_memory",
        "cache_dir",
        "num_process",
        "process_id",
        "seed",
        "experiment_id",
        "hash",
        "max_concurrent_cache_files",
        "timeout",
    }
)


def split_init_kwargs(kwargs: dict) -> tuple[dict, dict]:
    """Split an evaluate shell's constructor keywords into ``(evaluate's, the engine's)``.

    >>> split_init_kwargs({"hash": "abc", "model": "m", "gamma": 0.5})
    ({'hash': 'abc'}, {'model': 'm', 'gamma': 0.5})
    """
    own = {k: v for k, v in kwargs.items() if k in EVALUATE_INIT_KWARGS}
    return own, {k: v for k, v in kwargs.items() if k not in EVALUATE_INIT_KWARGS}


def shells_dir() -> Path | None:
    """Folder holding ``<name>/<name>.py`` evaluate shells: the checkout's ``metrics/`` (editable
    install) or the copy that ``setup.py`` bundles as ``mmjudge/_evaluate_shells`` (regular install)."""
    package = Path(__file__).resolve().parent.parent  # mmjudge/
    for candidate in (package.parent / "metrics", package / "_evaluate_shells"):
        if candidate.is_dir():
            return candidate
    return None


def modules_cache() -> Path:
    """evaluate's dynamic-module folder, resolved the way ``evaluate.config`` does."""
    hf_home = os.getenv("HF_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    base = os.getenv("HF_MODULES_CACHE", os.path.join(os.path.expanduser(hf_home), "modules"))
    return Path(base).expanduser() / "evaluate_modules"


def register(force: bool = False) -> list[Path]:
    """Copy every shell into evaluate's module cache; returns the files written (or already there)."""
    source = shells_dir()
    if source is None:
        return []
    root = modules_cache()
    written = []
    for script in sorted(source.glob("*/*.py")):
        name = script.parent.name
        if script.stem != name:
            continue  # app.py and helpers are not modules
        content = script.read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        target_dir = root / "metrics" / f"evaluate-metric--{name}" / digest
        target = target_dir / f"{name}.py"
        if force or not target.is_file():
            target_dir.mkdir(parents=True, exist_ok=True)
            for init in (root, root / "metrics", target_dir.parent, target_dir):
                (init / "__init__.py").touch(exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(content)
            os.replace(tmp, target)  # atomic: a concurrent import never sees half a file
            readme = script.parent / "README.md"
            if readme.is_file():
                (target_dir / "README.md").write_bytes(readme.read_bytes())
        # evaluate picks the most recently modified copy: make sure the current one is the newest.
        siblings = target_dir.parent.glob(f"*/{name}.py")
        if any(other.stat().st_mtime > target.stat().st_mtime for other in siblings if other != target):
            os.utime(target)
        written.append(target)
    return written


class _CachedNoticeFilter(logging.Filter):
    """Drops evaluate's "Using the latest cached version of the module" line for mmjudge's modules."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith("Using the latest cached version of the module"):
            return True
        return not any(f"evaluate-metric--{name}" in message for name in module_names())


def module_names() -> list[str]:
    """The names of mmjudge's evaluate modules (``harmonic_eval``, ``fleur`` …)."""
    source = shells_dir()
    return sorted(p.parent.name for p in source.glob("*/*.py") if p.stem == p.parent.name) if source else []


def quiet_cached_notice() -> None:
    """Install :class:`_CachedNoticeFilter` on evaluate's loader logger (once; evaluate need not be imported)."""
    target = logging.getLogger("evaluate.loading")
    if not any(isinstance(f, _CachedNoticeFilter) for f in target.filters):
        target.addFilter(_CachedNoticeFilter())


def register_quietly() -> None:
    """:func:`register` unless ``MMJUDGE_NO_REGISTER`` is set; never fails an import."""
    if os.environ.get("MMJUDGE_NO_REGISTER"):
        return
    try:
        register()
    except OSError as err:  # read-only home, full disk…: evaluate.load("metrics/<name>") still works
        logger.debug("Could not register evaluate modules: %s", err)
