"""METEOR 1.5 through the official jar that pycocoevalcap ships (Denkowski & Lavie 2014).

The jar runs as **one long-lived Java process** per :class:`MeteorScorer` (``-stdio`` mode, English,
``-norm``, the settings pycocoevalcap uses), and each call sends all its items in one batch: one
``SCORE`` line per item (sufficient statistics), then one ``EVAL`` line over all of them, which returns
the per-item scores and the corpus score. The corpus score is METEOR over the pooled statistics, *not*
the mean of the per-item scores (as in pycocoevalcap). Inputs should be tokenised like the other
metrics (:func:`mmjudge.metrics.baselines.ptb_tokenize`), as the COCO evaluation does.

Java (``java`` on ``PATH``, any version from 8) and the ``pycocoevalcap`` package (which holds
``meteor-1.5.jar`` and its paraphrase table) are needed; their absence raises a ``RuntimeError`` that
says what to install. No Java-free METEOR is offered: one that reproduced 1.5's numbers would need
its stemmer, WordNet synonyms and paraphrase table matched exactly, and parity was not shown.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence

import numpy as np

from mmjudge.errors import MissingDependencyError

JAR_NAME = "meteor-1.5.jar"


def find_meteor_jar() -> str:
    """Path of ``meteor-1.5.jar`` inside the installed ``pycocoevalcap``; ``RuntimeError`` saying how to get it."""
    spec = importlib.util.find_spec("pycocoevalcap")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        jar = os.path.join(folder, "meteor", JAR_NAME)
        if os.path.isfile(jar):
            return jar
    raise MissingDependencyError(
        "METEOR needs the official METEOR 1.5 jar, shipped by the `pycocoevalcap` package: "
        "run `pip install pycocoevalcap` (and install Java, e.g. `apt-get install default-jre-headless`)."
    )


def find_java() -> str:
    """The ``java`` executable; ``RuntimeError`` naming the fix when there is none."""
    java = shutil.which("java")
    if java is None:
        raise MissingDependencyError(
            "METEOR 1.5 runs on Java, and no `java` executable is on PATH: install a Java runtime "
            "(e.g. `apt-get install default-jre-headless`, or `conda install openjdk`)."
        )
    return java


class MeteorScorer:
    """A running METEOR 1.5 process; ``compute_score`` may be called many times, ``close`` ends it.

    >>> scorer = MeteorScorer()  # doctest: +SKIP
    >>> scorer.compute_score(["a dog runs on the beach"], [["a dog is running on the beach"]])  # doctest: +SKIP
    (0.48..., array([0.48...]))
    """

    def __init__(self, jar: str | None = None, memory: str = "2G"):
        self.jar = jar or find_meteor_jar()
        command = [find_java(), "-jar", f"-Xmx{memory}", self.jar, "-", "-", "-stdio", "-l", "en", "-norm"]
        self._process = subprocess.Popen(
            command,
            cwd=os.path.dirname(self.jar),  # the jar finds its paraphrase table relative to itself
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._lock = threading.Lock()
        atexit.register(self.close)

    def compute_score(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, np.ndarray]:
        """Corpus METEOR and per-item METEOR for tokenised candidates and their references."""
        score_lines = []
        for candidate, refs in zip(candidates, references):
            # "|||" separates fields in the jar's protocol; pycocoevalcap strips it from the candidate
            hypothesis = candidate.replace("|||", "").replace("  ", " ")
            score_lines.append(" ||| ".join(("SCORE", " ||| ".join(refs), hypothesis)))
        with self._lock:
            if self._process.poll() is not None:
                raise RuntimeError(f"The METEOR process ({self.jar}) has exited with code {self._process.returncode}.")
            stats = self._exchange(score_lines)
            results = self._exchange(["EVAL ||| " + " ||| ".join(stats)], expected=len(stats) + 1)
        per_item = np.array([float(x) for x in results[:-1]])
        return float(results[-1]), per_item

    def _exchange(self, lines: list[str], expected: int | None = None) -> list[str]:
        """Write ``lines`` from a thread while reading the answers here (no pipe-buffer deadlock)."""
        payload = "".join(line + "\n" for line in lines).encode("utf-8")
        writer = threading.Thread(target=self._write, args=(payload,), daemon=True)
        writer.start()
        answers = []
        for _ in range(expected if expected is not None else len(lines)):
            line = self._process.stdout.readline()
            if not line:
                raise RuntimeError("The METEOR process ended unexpectedly (out of memory? see `memory`).")
            answers.append(line.decode("utf-8").strip())
        writer.join()
        return answers

    def _write(self, payload: bytes) -> None:
        self._process.stdin.write(payload)
        self._process.stdin.flush()

    def close(self) -> None:
        """End the Java process (also done at interpreter exit)."""
        process = getattr(self, "_process", None)
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            process.kill()
            process.wait()

    def __enter__(self) -> MeteorScorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SHARED: MeteorScorer | None = None


def compute_meteor(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, np.ndarray]:
    """Corpus and per-item METEOR 1.5 through one shared, lazily started Java process."""
    global _SHARED
    if _SHARED is None or _SHARED._process.poll() is not None:
        _SHARED = MeteorScorer()
    return _SHARED.compute_score(candidates, references)
