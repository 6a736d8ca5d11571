"""``mmjudge leaderboard``: serve the leaderboard app (Gradio) over a data dir, or take part in a board.

Examples::

    mmjudge leaderboard --demo                      # offline, dummy judge, example submissions, in-process worker
    mmjudge leaderboard --data-dir /data/board --port 7860 --host 0.0.0.0
    mmjudge leaderboard-worker --data-dir /data/board   # the scoring worker(s), as separate processes
    mmjudge leaderboard download --url http://127.0.0.1:7860 --benchmark demo-inputs --out inputs.zip
    mmjudge leaderboard submit --url http://127.0.0.1:7860 --benchmark demo-inputs --file outputs.jsonl --name my-vlm
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

DEFAULT_DATA_DIR = "leaderboard-data"
DEMO_DATA_DIR = Path("~/.cache/mmjudge/leaderboard-demo")


def board_settings(args: argparse.Namespace) -> tuple[Path, dict]:
    """The data dir and settings of the board to serve: ``settings.json`` there; with ``--demo`` the demo's
    defaults under it and what makes the demo over it (a ``rate_limit`` the file sets is kept)."""
    from mmjudge.leaderboard.demo import demo_settings
    from mmjudge.leaderboard.settings import load_settings, read_settings_file, save_settings

    data_dir = Path(args.data_dir or (DEMO_DATA_DIR if args.demo else DEFAULT_DATA_DIR)).expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.demo:  # written, so that workers started on the same data dir read the same settings
        save_settings(data_dir, demo_settings(read_settings_file(data_dir)))
    return data_dir, load_settings(data_dir)


def run(args: argparse.Namespace) -> int:
    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.demo import seed_demo
    from mmjudge.leaderboard.store import Store
    from mmjudge.leaderboard.worker import Worker

    data_dir, settings = board_settings(args)
    store = Store(data_dir)
    if args.demo:
        seeded = seed_demo(store)
        if seeded:
            print(f"queued {seeded} demo submissions")
    demo = build_app(str(data_dir), settings)
    stop = threading.Event()
    if args.worker if args.worker is not None else args.demo:
        worker = Worker(Store(data_dir), settings, progress=False)
        _log_jobs()
        threading.Thread(target=worker.run, kwargs={"poll_s": 1.0, "stop": stop}, daemon=True, name="worker").start()
        print(f"in-process worker {worker.worker_id} (judge={settings['judge']})")
    print(f"data dir: {data_dir}")
    try:
        launch(demo, host=args.host, port=args.port, share=False)
    finally:
        stop.set()
    return 0


def _log_jobs() -> None:
    """The in-process worker's one line per job (claimed, done, re-queued) on stderr, as a separate worker's."""
    import logging

    jobs = logging.getLogger("mmjudge.leaderboard")
    if not jobs.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        jobs.addHandler(handler)
        jobs.setLevel(logging.INFO)


def download(args: argparse.Namespace) -> int:
    from mmjudge.leaderboard.client import BoardClient

    default = {"zip": "inputs.zip", "parquet": "inputs.parquet", "example": "example_submission.jsonl"}[args.format]
    out = Path(args.out or f"{args.benchmark}-{default}")
    board = BoardClient(args.url, on_retry=lambda line: print(line, file=sys.stderr, flush=True))
    path = board.download(args.benchmark, out, args.format)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


def submit(args: argparse.Namespace) -> int:
    from mmjudge.leaderboard.client import BoardClient, describe
    from mmjudge.leaderboard.records import Status

    if args.retries < 0:
        raise ValueError("--retries must be 0 or more.")
    board = BoardClient(args.url, retries=args.retries, on_retry=lambda line: print(line, file=sys.stderr, flush=True))
    sid = board.submit(
        args.benchmark, args.file, args.name, args.submitter or "", args.link or "", args.description or ""
    )
    print(f"accepted: submission {sid}", flush=True)
    if args.no_wait:
        return 0
    if args.poll <= 0 or args.timeout <= 0:
        raise ValueError("--poll and --timeout must be positive numbers of seconds.")
    final = board.wait(
        sid, timeout_s=args.timeout, poll_s=args.poll, on_change=lambda s: print(describe(s), flush=True)
    )
    return 0 if final.get("status") == str(Status.DONE) else 1


def _add_client_parsers(p) -> None:
    actions = p.add_subparsers(
        dest="action",
        metavar="ACTION",
        help="take part in a running board: download (a benchmark's inputs) or submit (a file)",
    )
    d = actions.add_parser(
        "download",
        help="download a benchmark's inputs (or its example submission) from a board",
        description="Download a benchmark's inputs from a running board, through its public API.",
        epilog="examples:\n  mmjudge leaderboard download --url http://127.0.0.1:7860 --benchmark demo-inputs"
        " --out inputs.zip",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument("--url", required=True, help="the board's address (the page's URL)")
    d.add_argument("--benchmark", required=True, help="benchmark name, as the board lists it")
    d.add_argument(
        "--format",
        choices=["zip", "parquet", "example"],
        default="zip",
        help="zip: inputs.jsonl + images; parquet: image bytes inside; example: an example submission",
    )
    d.add_argument(
        "--out", help="file to write (default <benchmark>-inputs.zip / .parquet / -example_submission.jsonl)"
    )
    d.set_defaults(func=download)
    s = actions.add_parser(
        "submit",
        help="submit a file to a board and wait for its ranked row",
        description="Submit a file through a board's public API and wait until it is scored.",
        epilog="examples:\n  mmjudge leaderboard submit --url http://127.0.0.1:7860 --benchmark demo-inputs"
        " --file outputs.jsonl --name my-vlm",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--url", required=True, help="the board's address (the page's URL)")
    s.add_argument("--benchmark", required=True, help="benchmark name (its track is looked up on the board)")
    s.add_argument(
        "--file",
        required=True,
        help='the JSONL file: {"id", "text"} (models, arena) or {"id", "score"} (metrics)',
    )
    s.add_argument("--name", required=True, help="your model's or metric's name on the board")
    s.add_argument("--submitter", help="your name (default: your Hub user, else anonymous)")
    s.add_argument("--link", help="a link to the model or metric (https://…)")
    s.add_argument("--description", help="one or two lines about it")
    s.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the score (default %(default)g)")
    s.add_argument("--poll", type=float, default=5.0, help="seconds between status checks (default %(default)g)")
    s.add_argument("--no-wait", dest="no_wait", action="store_true", help="exit once the board accepted the file")
    s.add_argument(
        "--retries",
        type=int,
        default=5,
        help="times a dropped connection (or a board not answering yet, e.g. restarting) is tried again, waiting "
        "1, 2, 4 … s (default %(default)d); repeating an upload is safe: the board answers with its original receipt",
    )
    s.set_defaults(func=submit)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "leaderboard", help="serve the leaderboard app (submissions, queue, rankings), or download / submit"
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="offline demo: dummy judge (meaningless scores), synthetic judgments, example submissions",
    )
    p.add_argument(
        "--data-dir",
        dest="data_dir",
        help=f"database and uploads (default ./{DEFAULT_DATA_DIR}; demo: {DEMO_DATA_DIR})",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=None, help="port (default: Gradio's, 7860 or the next free)")
    p.add_argument(
        "--worker",
        dest="worker",
        action="store_true",
        default=None,
        help="also score in this process (default with --demo; otherwise run `mmjudge leaderboard-worker`)",
    )
    p.add_argument("--no-worker", dest="worker", action="store_false", help="do not score in this process")
    p.set_defaults(func=run)
    _add_client_parsers(p)
