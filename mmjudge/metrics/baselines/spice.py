"""SPICE 1.0 (Anderson et al. 2016) through the official ``spice-1.0.jar`` that pycocoevalcap ships, run as
pycocoevalcap runs it.

One call writes SPICE's input file (a JSON list of ``{"image_id", "test", "refs"}``), runs

``java -jar -Xmx8G spice-1.0.jar <input> -cache <folder> -out <output> -subset -silent``

in the jar's folder, and reads the output file (a JSON list of ``{"image_id", "scores": {"All": {"f", "pr",
"re", "tp", "fp", "fn", "numImages"}, "Object": …, "Attribute": …, "Relation": …, "Cardinality": …,
"Color": …, "Size": …}}``). An item's SPICE is its ``All`` F-score; the corpus figure is their mean, as
pycocoevalcap reports it; a category's F-score is ``null`` (NaN here) when the references have no tuple of
that category. Candidates and references should be PTB-tokenised first, as the COCO evaluation does
(:func:`mmjudge.metrics.baselines.ptb_tokenize`; the ``spice`` configuration of ``Baselines`` does it).

**What it needs.** Java, the ``pycocoevalcap`` package (it holds the jar and every library the jar's manifest
names except two) and Stanford CoreNLP 3.6.0's ``stanford-corenlp-3.6.0.jar`` and
``stanford-corenlp-3.6.0-models.jar``: no registry reachable here ships them (pycocoevalcap downloads
``stanford-corenlp-full-2015-12-09.zip`` from nlp.stanford.edu on first use; mmjudge downloads nothing).
Put them in ``pycocoevalcap/spice/lib/``, or in any folder named by ``corenlp_dir=`` or the
``MMJUDGE_CORENLP_DIR`` environment variable (they then join the class path). SPICE 1.0 was built for Java 8:
its output step asks for the Nashorn JavaScript engine, which Java 15 removed, so on a newer Java the jar
fails at the end of its run; that failure is recognised and said in one line (use ``java=`` to name a Java
8–14 executable).

>>> missing = missing_corenlp(corenlp_dir="/nonexistent")
>>> missing.split(":")[0]
'SPICE needs Stanford CoreNLP 3.6.0 (stanford-corenlp-3.6.0.jar and stanford-corenlp-3.6.0-models.jar)'
>>> java_failure('Exception in thread "main" java.lang.NullPointerException: Cannot invoke '
...              '"javax.script.ScriptEngine.put(String, Object)" because "engine" is null').split(":")[0]
'SPICE 1.0 writes its output through the Nashorn JavaScript engine, which Java 15 removed'
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.errors import MissingDependencyError

JAR_NAME = "spice-1.0.jar"
MAIN_CLASS = "edu.anu.spice.SpiceScorer"
CORENLP_VERSION = "3.6.0"
CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
CORENLP_ENV = "MMJUDGE_CORENLP_DIR"
#: SPICE's category names (``-subset``) -> the output suffix here (``spice_object`` …).
CATEGORIES = {
    "Object": "object",
    "Attribute": "attribute",
    "Relation": "relation",
    "Cardinality": "cardinality",
    "Color": "color",
    "Size": "size",
}


def spice_folder(spice_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding ``spice-1.0.jar`` (and its ``lib/``): ``spice_dir``, else the installed
    pycocoevalcap's ``spice/``. ``MissingDependencyError`` saying what to install when there is none."""
    if spice_dir is not None:
        folder = Path(spice_dir).expanduser()
        if not (folder / JAR_NAME).is_file():
            raise MissingDependencyError(f"spice_dir={str(spice_dir)!r} holds no {JAR_NAME}.")
        return folder
    spec = importlib.util.find_spec("pycocoevalcap")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "spice" / JAR_NAME).is_file():
            return Path(location) / "spice"
    raise MissingDependencyError(
        f"SPICE runs the {JAR_NAME} that the `pycocoevalcap` package ships: run `pip install pycocoevalcap` "
        "(and install Java, e.g. `apt-get install default-jre-headless`)."
    )


def corenlp_folder(corenlp_dir: str | os.PathLike | None = None, spice_dir: str | os.PathLike | None = None) -> Path:
    """Where the CoreNLP 3.6.0 jars are looked for: ``corenlp_dir``, else ``$MMJUDGE_CORENLP_DIR``, else the
    ``lib/`` folder beside ``spice-1.0.jar`` (where its manifest expects them)."""
    given = corenlp_dir if corenlp_dir is not None else os.environ.get(CORENLP_ENV) or None
    if given is not None:
        return Path(given).expanduser()
    return spice_folder(spice_dir) / "lib"


def missing_corenlp(
    corenlp_dir: str | os.PathLike | None = None, spice_dir: str | os.PathLike | None = None
) -> str | None:
    """One line naming the two CoreNLP jars and where they go, or ``None`` when both are there. (What
    ``mmjudge reproduce --dry-run`` shows for SPICE's cells.)"""
    try:
        folder = corenlp_folder(corenlp_dir, spice_dir)
    except MissingDependencyError as err:
        return str(err)
    absent = [name for name in CORENLP_JARS if not (folder / name).is_file()]
    if not absent:
        return None
    return (
        f"SPICE needs Stanford CoreNLP {CORENLP_VERSION} ({' and '.join(CORENLP_JARS)}): "
        f"{', '.join(absent)} not found in {folder}; put both there (they are in "
        "stanford-corenlp-full-2015-12-09.zip from the Stanford NLP site), or in a folder given by "
        f"corenlp_dir= or ${CORENLP_ENV}"
    )


def corenlp_need(
    corenlp_dir: str | os.PathLike | None = None, spice_dir: str | os.PathLike | None = None
) -> tuple[str, str | None]:
    """``(what is needed, the missing sentence or None)``: the need ``mmjudge reproduce`` lists for SPICE."""
    try:
        where = f"the CoreNLP {CORENLP_VERSION} jars in {corenlp_folder(corenlp_dir, spice_dir)}"
    except MissingDependencyError:
        where = f"the CoreNLP {CORENLP_VERSION} jars beside pycocoevalcap's {JAR_NAME}"
    return where, missing_corenlp(corenlp_dir, spice_dir)


def java_failure(stderr: str) -> str | None:
    """The one-line reason for a known way the real jar fails for want of something it needs (a Java it runs
    on, complete CoreNLP jars), read from its error output, or ``None``. :meth:`SpiceScorer.compute_score`
    raises it as a ``MissingDependencyError``, which the CLI prints as one line."""
    if "NoClassDefFoundError: edu/stanford/nlp" in stderr or "ClassNotFoundException: edu.stanford.nlp" in stderr:
        return (
            f"SPICE could not load Stanford CoreNLP's classes: the {' and '.join(CORENLP_JARS)} it was given are "
            "not complete CoreNLP 3.6.0 jars (a cut-short download, or another version); put the ones from "
            "stanford-corenlp-full-2015-12-09.zip in their place"
        )
    if "javax.script.ScriptEngine" in stderr or "nashorn" in stderr.lower():
        return (
            "SPICE 1.0 writes its output through the Nashorn JavaScript engine, which Java 15 removed: "
            "run it with a Java 8 to 14 runtime (java=/path/to/java)"
        )
    if "InaccessibleObjectException" in stderr:
        return (
            "SPICE 1.0's cache and parser reflect into JDK internals, which Java 9+ forbids "
            "(InaccessibleObjectException): run it with a Java 8 runtime (java=/path/to/java)"
        )
    return None


class SpiceScorer:
    """The SPICE jar, ready to run: the files are checked when it is built, each ``compute_score`` runs Java once.

    Args:
        spice_dir: the folder holding ``spice-1.0.jar`` and its ``lib/`` (default: pycocoevalcap's).
        corenlp_dir: the folder holding the two CoreNLP 3.6.0 jars (default ``$MMJUDGE_CORENLP_DIR``, else
            ``<spice_dir>/lib``).
        cache_dir: SPICE's own cache of parsed captions (``-cache``; default ``spice/`` in the mmjudge cache
            folder: never inside an installed package).
        memory: the Java heap (``-Xmx``), ``"8G"`` as pycocoevalcap.
        java: the Java executable (default ``java`` on ``PATH``).

    Raises:
        MissingDependencyError: no Java, no jar, or no CoreNLP jars (one line each, saying where they go);
            from ``compute_score``, a Java the jar cannot run on (:func:`java_failure`).
    """

    def __init__(
        self,
        spice_dir: str | os.PathLike | None = None,
        corenlp_dir: str | os.PathLike | None = None,
        cache_dir: str | os.PathLike | None = None,
        memory: str = "8G",
        java: str | None = None,
    ):
        self.folder = spice_folder(spice_dir)
        self.jar = self.folder / JAR_NAME
        missing = missing_corenlp(corenlp_dir, self.folder)
        if missing:
            raise MissingDependencyError(missing)
        self.corenlp = corenlp_folder(corenlp_dir, self.folder)
        self.java = shutil.which(java or "java")
        if self.java is None:
            raise MissingDependencyError(
                f"SPICE runs on Java, and {java or 'java'!r} is not an executable here: install a Java runtime "
                "(SPICE 1.0 was built for Java 8) or pass java=/path/to/java."
            )
        if not isinstance(memory, str) or not memory[:-1].isdigit() or memory[-1].upper() not in "KMGT":
            raise ValueError(f"Expected argument `memory` to be a Java heap size such as '8G', but got {memory!r}.")
        self.memory = memory
        if cache_dir is None:
            from mmjudge.paths import cache_dir as mmjudge_cache

            cache_dir = mmjudge_cache() / "spice"
        self.cache_dir = Path(cache_dir).expanduser()
        self._jar_digest: str | None = None

    @property
    def signature_fields(self) -> dict[str, Any]:
        """What decides the numbers: the jar (by content) and CoreNLP's version; never a path."""
        if self._jar_digest is None:  # the 20 MB jar hashed once, not at every signature
            from mmjudge.encoders.checkpoint_files import file_sha256

            self._jar_digest = file_sha256(self.jar)[:12]
        return {"spice_jar": self._jar_digest, "corenlp": CORENLP_VERSION, "synsets": True}

    def command(self, input_file: str, output_file: str) -> list[str]:
        """pycocoevalcap's command line; with the CoreNLP jars outside ``lib/``, they join the class path."""
        tail = [input_file, "-cache", str(self.cache_dir), "-out", output_file, "-subset", "-silent"]
        if self.corenlp.resolve() == (self.folder / "lib").resolve():
            return [self.java, "-jar", f"-Xmx{self.memory}", JAR_NAME, *tail]
        path = os.pathsep.join([str(self.jar), *(str(self.corenlp / name) for name in CORENLP_JARS)])
        return [self.java, f"-Xmx{self.memory}", "-cp", path, MAIN_CLASS, *tail]

    def compute_score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, dict[str, np.ndarray]]:
        """The mean SPICE and per-item arrays: ``"spice"`` (the ``All`` F-score) and one per category
        (``"object"`` … ``"size"``, NaN where the references have no tuple of it)."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        entries = [
            {"image_id": i, "test": cand, "refs": list(refs)}
            for i, (cand, refs) in enumerate(zip(candidates, references))
        ]
        with tempfile.TemporaryDirectory(prefix="mmjudge-spice-") as work:
            input_file, output_file = os.path.join(work, "input.json"), os.path.join(work, "output.json")
            with open(input_file, "w", encoding="utf-8") as f:
                json.dump(entries, f, indent=2)
            done = subprocess.run(
                self.command(input_file, output_file), cwd=self.folder, capture_output=True, text=True
            )
            if done.returncode != 0:
                known = java_failure(done.stderr)
                if known:  # the wrong Java: the user installs another (one line at the CLI, not a traceback)
                    raise MissingDependencyError(known)
                raise RuntimeError(_failure_line(done.returncode, done.stderr))
            with open(output_file, encoding="utf-8") as f:
                results = json.load(f)
        return _read_results(results, len(entries))


def _failure_line(code: int, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no error output"
    return f"SPICE failed (java exited with code {code}): {last[:300]}"


def _number(value: Any) -> float:
    """pycocoevalcap's ``float_convert``: a number, or NaN for ``null`` and anything unreadable."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _read_results(results: Any, n: int) -> tuple[float, dict[str, np.ndarray]]:
    if not isinstance(results, list):
        raise RuntimeError(f"SPICE's output is not a JSON list (got {type(results).__name__}).")
    by_id = {item.get("image_id"): item.get("scores", {}) for item in results if isinstance(item, dict)}
    missing = [i for i in range(n) if i not in by_id]
    if missing:
        raise RuntimeError(f"SPICE's output has no scores for {len(missing)} of {n} items (first: item {missing[0]}).")
    out = {"spice": np.array([_number(by_id[i].get("All", {}).get("f")) for i in range(n)])}
    for category, key in CATEGORIES.items():
        out[key] = np.array([_number((by_id[i].get(category) or {}).get("f")) for i in range(n)])
    return float(np.mean(out["spice"])), out
