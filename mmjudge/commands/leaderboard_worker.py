"""``mmjudge leaderboard-worker``: score queued leaderboard submissions (run one or several).

Examples::

    mmjudge leaderboard-worker --data-dir /data/board
    mmjudge leaderboard-worker --data-dir /data/board --judge transformers --model Qwen/Qwen2.5-VL-7B-Instruct
    mmjudge leaderboard-worker --data-dir /data/board --once     # drain the queue, then exit

A worker killed mid-job loses nothing: the job goes back to the queue when its lease (``--lease``, renewed
by a heartbeat while the worker lives) runs out, or at once when a worker starts under the same
``--worker-id``, and is scored again. Each job's claim, end and re-queueing is one log line.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from mmjudge.leaderboard.hub_sync import HubSync
    from mmjudge.leaderboard.settings import load_settings
    from mmjudge.leaderboard.store import Store
    from mmjudge.leaderboard.worker import Worker

    data_dir = Path(args.data_dir).expanduser()
    if not data_dir.is_dir():
        raise ValueError(
            f"--data-dir {data_dir}: no such folder; start the board there first (mmjudge leaderboard --data-dir …)."
        )
    settings = load_settings(data_dir)
    for key in ("judge", "model"):
        if getattr(args, key):
            settings[key] = getattr(args, key)
    if args.batch_size:
        settings["batch_size"] = args.batch_size
    if args.poll <= 0 or args.lease <= 0:
        raise ValueError("--poll and --lease must be positive numbers of seconds.")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    store = Store(data_dir)
    worker = Worker(store, settings, worker_id=args.worker_id, lease_s=args.lease, hub=HubSync.from_settings(settings))
    print(f"worker {worker.worker_id} on {data_dir} (judge={settings['judge']})", flush=True)
    done = worker.run(poll_s=args.poll, once=args.once, max_idle_s=args.max_idle)
    print(f"worker {worker.worker_id}: {done} job(s) finished", flush=True)
    return 0


def add_parser(sub) -> None:
    from mmjudge.leaderboard.store import DEFAULT_LEASE_S

    p = sub.add_parser("leaderboard-worker", help="score queued leaderboard submissions")
    p.add_argument("--data-dir", dest="data_dir", default="leaderboard-data", help="the board's data dir")
    p.add_argument("--once", action="store_true", help="exit when the queue is empty")
    p.add_argument(
        "--poll", type=float, default=2.0, help="seconds between looks at an empty queue (default %(default)g)"
    )
    p.add_argument(
        "--lease",
        type=float,
        default=DEFAULT_LEASE_S,
        help="seconds a claimed job stays this worker's without a heartbeat (default %(default)g)",
    )
    p.add_argument("--max-idle", dest="max_idle", type=float, default=None, help="exit after this many idle seconds")
    p.add_argument("--judge", help="override the judge backend of the settings (e.g. dummy, transformers)")
    p.add_argument("--model", help="override the judge model of the settings")
    p.add_argument("--batch-size", dest="batch_size", type=int, help="items per scoring batch")
    p.add_argument(
        "--worker-id",
        dest="worker_id",
        help="name of this worker (default host-pid-random); restarted under the same name, it takes back at once "
        "the jobs it held when it died (never give two live workers one name)",
    )
    p.set_defaults(func=run)
