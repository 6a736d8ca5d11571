"""The worker: claims queued submissions, scores them, commits the results — and survives being killed.

Each job is claimed atomically under a lease (:meth:`Store.claim`); a heartbeat thread renews it while
the job runs. The job's track scores it (:meth:`mmjudge.leaderboard.tracks.Track.score`): Models-track
outputs by HarmonicEval through the engine's judge and cache (``<data dir>/judge_cache.sqlite``) as a
stream of rows, Metrics-track scores through :func:`mmjudge.metaeval.meta_evaluate`.
Results are committed together with DONE, only while the lease is still this worker's. A killed
worker's job is re-queued when its lease expires (the heartbeat lets the lease be short: 20 s by default),
or at once when a worker starts under the id that held it, and scored again by the next worker: from the start
(the judge cache makes the repeated work cheap), or, for a track that keeps its progress in the job's
folder (:mod:`mmjudge.leaderboard.job_folder`; the Arena track's rounds of battles), from where it
stopped. The folder is locked by the worker scoring the job and removed once the job is DONE or FAILED.
Several workers may run at once on the same data dir (each under its own id). Each job's claim, end and
re-queueing is one log line.

>>> import json, tempfile
>>> from mmjudge.leaderboard.store import Store
>>> from mmjudge.leaderboard.intake import submit
>>> from mmjudge.leaderboard.benchmarks import demo_outputs
>>> d = tempfile.mkdtemp()
>>> store = Store(d)
>>> data = "".join(json.dumps(r) + "\\n" for r in demo_outputs()).encode()
>>> sid = submit(store, track="models", benchmark="demo-inputs", name="m", submitter="s", data=data).id
>>> worker = Worker(store, {"judge": "dummy", "batch_size": 4, "explain_examples": 1}, progress=False)
>>> worker.run_once() == sid, str(store.get(sid).status)
(True, 'DONE')
>>> result = store.result(sid)
>>> len(result.rows), sorted(result.summary["tasks"]), "judge=dummy" in result.signature
(8, ['ic', 'reg', 'vdu', 'vqa'], True)
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.benchmarks import configure, get_benchmark
from mmjudge.leaderboard.hub_sync import HubSync
from mmjudge.leaderboard.job_folder import job_dir, locked, sweep
from mmjudge.leaderboard.records import Submission
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import DEFAULT_LEASE_S, Store
from mmjudge.leaderboard.tracks import Scored, ScoringJob, get_track

logger = logging.getLogger(__name__)


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
        self.resources: dict[str, Any] = {}  # what a track loads once per worker (HarmonicEval and its judge)
        self.took_back = False  # jobs still held under this id (a previous run of it died) re-queued yet?

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
        """Claim and finish one job; returns its id, or None when nothing was queued. The first call takes back
        the jobs still held under this worker's id (its previous run died with them) instead of waiting out
        their leases."""
        if not self.took_back:
            self.store.recover_expired(worker=self.worker_id)
            self.took_back = True
        job = self.store.claim(self.worker_id, self.lease_s)
        if job is None:
            return None
        started = time.monotonic()
        logger.info("job %s claimed by %s (attempt %d)", job.id, self.worker_id, job.attempts)
        # The heartbeat starts before the Hub sync: a slow sync must not outlive the lease just claimed.
        beat = _Heartbeat(self.store, job.id, self.worker_id, self.lease_s)
        beat.start()
        try:
            self._sync()
            with locked(job_dir(self.store.data_dir, job.id), beat.check) as folder:
                scored = self.score(job, beat, folder)
                if self.store.complete(
                    job.id, self.worker_id, signature=scored.signature, summary=scored.summary, rows=scored.rows
                ):
                    logger.info("job %s done by %s in %.1f s", job.id, self.worker_id, time.monotonic() - started)
                else:
                    logger.warning(
                        "job %s was re-queued while %s scored it; its results were not kept", job.id, self.worker_id
                    )
        except LeaseLost:
            logger.warning("job %s: lease lost by %s", job.id, self.worker_id)
        except ValueError as err:  # the engine's one-line errors: what is wrong with this submission
            self.store.fail(job.id, self.worker_id, f"scoring failed: {err}")
            logger.info("job %s failed (%s): scoring failed: %s", job.id, self.worker_id, err)
        except Exception as err:
            logger.exception("job %s failed", job.id)
            self.store.fail(job.id, self.worker_id, f"internal error ({type(err).__name__}): {err}")
        finally:
            beat.stop()
        self._sweep()
        self._sync()
        return job.id

    def _sweep(self) -> None:
        """Remove the folders of jobs that ended (this one once committed or failed; others failed by the
        store or deleted); a job still queued or running keeps its folder."""

        def live(sid: str) -> bool:
            row = self.store.get(sid)
            return row is not None and row.status.queued

        try:
            sweep(self.store.data_dir, live)
        except OSError:
            logger.warning("removing finished job folders failed", exc_info=True)

    def _sync(self) -> None:
        if self.hub is not None:
            self.hub.sync(self.store)

    # ------------------------------------------------------------------------------------ scoring
    def score(self, job: Submission, beat: _Heartbeat, folder: Path | None = None) -> Scored:
        """The job's track reads the stored file and scores it (``folder``: the job's locked folder). No
        size check on re-reading: intake accepted the file under the board's own limit
        (settings["max_upload_bytes"]), which may exceed validation's default."""
        bench = get_benchmark(job.benchmark)
        track = get_track(job.track)
        payload = track.read_file(self.store.read_file(job.id), bench, None)
        scoring = ScoringJob(
            bench, payload, self.settings, self.store.data_dir, beat.check, self.resources, work_dir=folder
        )
        return track.score(scoring)


class _Heartbeat:
    """Renews the lease every quarter of it, in a thread with its own database connection: three beats in a
    row may fail (a busy database) before the lease runs out."""

    def __init__(self, store: Store, sid: str, worker: str, lease_s: float):
        self.store, self.sid, self.worker, self.lease_s = store, sid, worker, lease_s
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{sid[:8]}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
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
