"""The worker: claims queued submissions, scores them, commits the results — and survives being killed.

Each job is claimed atomically under a lease (:meth:`Store.claim`); a heartbeat thread renews it while
the job runs. Models-track outputs are scored by HarmonicEval through the engine's judge and cache
(``mmjudge.load("harmonic_eval", judge=…, cache=<data dir>/judge_cache.sqlite)``) as a stream of rows
(:func:`mmjudge.stream.stream_rows`: bounded chunks, the results layer's rows); Metrics-track scores go
through :func:`mmjudge.metaeval.meta_evaluate`.
Results are committed together with DONE, only while the lease is still this worker's. A killed
worker's job is re-queued when its lease expires and scored again from the start; the judge cache
makes the repeated work cheap. Several workers may run at once on the same data dir.

>>> import json, tempfile
>>> from mmjudge.leaderboard.store import Store
>>> from mmjudge.leaderboard.intake import submit
>>> from mmjudge.leaderboard.benchmarks import demo_outputs
>>> d = tempfile.mkdtemp()
>>> store = Store(d)
>>> data = "".join(json.dumps(r) + "\\n" for r in demo_outputs()).encode()
>>> sid = submit(store, track="models", benchmark="demo-inputs", name="m", submitter="s", data=data).id
>>> worker = Worker(store, {"judge": "dummy", "batch_size": 4, "explain_examples": 1}, progress=False)
>>> worker.run_once() == sid, store.get(sid)["status"]
(True, 'DONE')
>>> result = store.result(sid)
>>> len(result["rows"]), sorted(result["summary"]["tasks"]), "judge=dummy" in result["signature"]
(8, ['ic', 'reg', 'vdu', 'vqa'], True)
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from mmjudge.leaderboard.benchmarks import configure, get_benchmark
from mmjudge.leaderboard.hub_sync import HubSync
from mmjudge.leaderboard.ranking import summarise_metaeval, summarise_models
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import DEFAULT_LEASE_S, Store
from mmjudge.leaderboard.validation import validate_outputs, validate_scores
from mmjudge.report import json_safe
from mmjudge.signature import Signature

logger = logging.getLogger(__name__)
SUBMISSION_METRIC = "submission"  # the metric's name inside the meta-evaluation (one metric per job)


class LeaseLost(RuntimeError):
    """The job was re-queued while this worker held it (it stalled past its lease)."""


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Worker:
    """One worker process (or thread): ``run()`` loops, ``run_once()`` does at most one job."""

    def __init__(
        self,
        store: Store,
        settings: dict | None = None,
        worker_id: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        progress: bool = True,
        hub: HubSync | None = None,
    ):
        self.store = store
        self.settings = {**DEFAULTS, **(settings or {})}
        if self.settings.get("benchmarks"):
            configure(self.settings["benchmarks"])
        self.worker_id = worker_id or new_worker_id()
        self.lease_s = float(lease_s)
        self.progress = progress
        self.hub = hub
        self._metric: Any = None

    # ---------------------------------------------------------------------------------- the loop
    def run(
        self,
        poll_s: float = 2.0,
        once: bool = False,
        stop: threading.Event | None = None,
        max_idle_s: float | None = None,
    ) -> int:
        """Work until ``stop`` is set (or the queue is empty with ``once``, or idle ``max_idle_s``);
        returns the number of jobs finished."""
        done, idle_since = 0, time.monotonic()
        while stop is None or not stop.is_set():
            sid = self.run_once()
            if sid is not None:
                done += 1
                idle_since = time.monotonic()
                continue
            if once or (max_idle_s is not None and time.monotonic() - idle_since >= max_idle_s):
                break
            if stop is not None:
                stop.wait(poll_s)
            else:
                time.sleep(poll_s)
        return done

    def run_once(self) -> str | None:
        """Claim and finish one job; returns its id, or None when nothing was queued."""
        job = self.store.claim(self.worker_id, self.lease_s)
        if job is None:
            return None
        # The heartbeat starts before the Hub sync: a slow sync must not outlive the lease just claimed.
        beat = _Heartbeat(self.store, job["id"], self.worker_id, self.lease_s)
        beat.start()
        try:
            self._sync()
            signature, summary, rows = self.score(job, beat)
            if not self.store.complete(job["id"], self.worker_id, signature=signature, summary=summary, rows=rows):
                logger.warning(
                    "job %s was re-queued while %s scored it; its results were not kept", job["id"], self.worker_id
                )
        except LeaseLost:
            logger.warning("job %s: lease lost by %s", job["id"], self.worker_id)
        except ValueError as err:  # the engine's one-line errors: what is wrong with this submission
            self.store.fail(job["id"], self.worker_id, f"scoring failed: {err}")
        except Exception as err:
            logger.exception("job %s failed", job["id"])
            self.store.fail(job["id"], self.worker_id, f"internal error ({type(err).__name__}): {err}")
        finally:
            beat.stop()
        self._sync()
        return job["id"]

    def _sync(self) -> None:
        if self.hub is not None:
            self.hub.sync(self.store)

    # ------------------------------------------------------------------------------------ scoring
    def score(self, job: dict, beat: _Heartbeat) -> tuple[str, dict, list]:
        bench = get_benchmark(job["benchmark"])
        data = self.store.read_file(job["id"])
        # No size check on re-reading: intake accepted the file under the board's own limit
        # (settings["max_upload_bytes"]), which may exceed validation's default.
        if job["track"] == "models":
            return self._score_models(bench, validate_outputs(data, bench.ids, max_bytes=None), beat)
        return self._score_metrics(bench, validate_scores(data, bench.ids, max_bytes=None), beat)

    def metric(self) -> Any:
        """HarmonicEval with the configured judge, through the shared judge cache (built once; explanations
        are asked per call, so the same instance and judge give them)."""
        if self._metric is None:
            import mmjudge

            s = self.settings
            options = dict(s.get("judge_options") or {})
            if s.get("model"):
                options["model"] = s["model"]
            cache = str(self.store.data_dir / "judge_cache.sqlite")
            self._metric = mmjudge.load("harmonic_eval", judge=s["judge"], gamma=s["gamma"], cache=cache, **options)
        return self._metric

    def _score_models(self, bench, outputs: list[dict], beat: _Heartbeat) -> tuple[str, dict, list]:
        from mmjudge.stream import stream_rows

        inputs = {it["id"]: it for it in bench.inputs()}
        items = [{**inputs[o["id"]], "text": o["text"]} for o in outputs]
        metric = self.metric()
        rows: list[dict] = []
        # The engine's stream: bounded chunks, each distinct image decoded once per chunk; the lease is
        # checked at every row, so a job re-queued while it ran stops within a chunk.
        for _, row in stream_rows(metric, items, chunk_size=max(1, int(self.settings["batch_size"]))):
            beat.check()
            rows.append(json_safe(row))  # a criterion the judge failed on is NaN in memory, null when stored
        self._add_explanations(metric, items, rows, beat)
        beat.check()
        signatures = list(dict.fromkeys(r["signature"] for r in rows))
        if len(signatures) != 1:
            raise RuntimeError(f"one submission gave {len(signatures)} signatures")
        # The criteria the judge rates: a text-only judge is not asked those that see the image (needs_image),
        # which are then neither means nor failures.
        return signatures[0], summarise_models(rows, metric.rated_criteria), rows

    def _add_explanations(self, metric: Any, items: list[dict], rows: list[dict], beat: _Heartbeat) -> None:
        """The judge's explanations for the first few items (shown on the submission page)."""
        from mmjudge.judges import JudgeCapabilityError
        from mmjudge.stream import stream_rows

        k = int(self.settings.get("explain_examples") or 0)
        if k <= 0:
            return
        beat.check()
        by_id = {r["id"]: r for r in rows}
        try:
            for _, explained in stream_rows(metric, items[:k], explain=True):
                for key, value in explained.items():
                    if key.endswith("_explanation"):
                        by_id[explained["id"]][key] = value
        except JudgeCapabilityError:  # the judge cannot generate text: no explanations, scores unaffected
            return

    def _score_metrics(self, bench, scores: dict, beat: _Heartbeat) -> tuple[str, dict, list]:
        from mmjudge.metaeval import meta_evaluate

        s = self.settings
        beat.check()
        result = meta_evaluate(
            bench.judgments(),
            {SUBMISSION_METRIC: scores},
            bootstrap=int(s["bootstrap"]),
            seed=int(s["seed"]),
            protocol=s["protocol"],
            best_of=s["best_of"],
            ties=s["ties"],
        )
        signature = Signature.make(
            "metaeval",
            benchmark=bench.name,
            protocol=s["protocol"],
            best_of=s["best_of"],
            ties=s["ties"],
            bootstrap=int(s["bootstrap"]),
            seed=int(s["seed"]),
            confidence=result.options.get("confidence"),
        )
        records = result.to_dict()["records"]  # JSON-safe: NaN/inf → None, numpy scalars → numbers
        return str(signature), summarise_metaeval(result, SUBMISSION_METRIC), records


class _Heartbeat:
    """Renews the lease every third of it, in a thread with its own database connection."""

    def __init__(self, store: Store, sid: str, worker: str, lease_s: float):
        self.store, self.sid, self.worker, self.lease_s = store, sid, worker, lease_s
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{sid[:8]}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                if not self.store.heartbeat(self.sid, self.worker, self.lease_s):
                    self.lost = True
                    return
            except Exception:
                logger.warning("heartbeat of %s failed", self.sid, exc_info=True)
        self.store.close()

    def check(self) -> None:
        if self.lost:
            raise LeaseLost(self.sid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
