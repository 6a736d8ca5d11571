"""``mmjudge leaderboard``: serve the leaderboard app (Gradio) over a data dir.

Examples::

    mmjudge leaderboard --demo                      # offline, dummy judge, example submissions, in-process worker
    mmjudge leaderboard --data-dir /data/board --port 7860 --host 0.0.0.0
    mmjudge leaderboard-worker --data-dir /data/board   # the scoring worker(s), as separate processes
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

DEFAULT_DATA_DIR = "leaderboard-data"
DEMO_DATA_DIR = Path("~/.cache/mmjudge/leaderboard-demo")


def run(args: argparse.Namespace) -> int:
    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.demo import DEMO_SETTINGS, seed_demo
    from mmjudge.leaderboard.settings import load_settings, save_settings
    from mmjudge.leaderboard.store import Store
    from mmjudge.leaderboard.worker import Worker

    data_dir = Path(args.data_dir or (DEMO_DATA_DIR if args.demo else DEFAULT_DATA_DIR)).expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.demo:
        save_settings(data_dir, {**load_settings(data_dir), **DEMO_SETTINGS})
    settings = load_settings(data_dir)
    store = Store(data_dir)
    if args.demo:
        seeded = seed_demo(store)
        if seeded:
            print(f"queued {seeded} demo submissions")
    demo = build_app(str(data_dir), settings)
    stop = threading.Event()
    if args.worker if args.worker is not None else args.demo:
        worker = Worker(Store(data_dir), settings, progress=False)
        threading.Thread(target=worker.run, kwargs={"poll_s": 1.0, "stop": stop}, daemon=True, name="worker").start()
        print(f"in-process worker {worker.worker_id} (judge={settings['judge']})")
    print(f"data dir: {data_dir}")
    try:
        launch(demo, host=args.host, port=args.port, share=False)
    finally:
        stop.set()
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("leaderboard", help="serve the leaderboard app (submissions, queue, rankings)")
    p.add_argument("--demo", action="store_true",
                   help="offline demo: dummy judge (meaningless scores), synthetic judgments, example submissions")
    p.add_argument("--data-dir", dest="data_dir", help=f"database and uploads (default ./{DEFAULT_DATA_DIR}; demo: {DEMO_DATA_DIR})")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default: Gradio's, 7860 or the next free)")
    p.add_argument("--worker", dest="worker", action="store_true", default=None,
                   help="also score in this process (default with --demo; otherwise run `mmjudge leaderboard-worker`)")
    p.add_argument("--no-worker", dest="worker", action="store_false", help="do not score in this process")
    p.set_defaults(func=run)
