"""Hugging Face Space entry point of the mmjudge leaderboard: a thin adapter over the engine.

All logic is in ``mmjudge.leaderboard``. The data dir comes from ``MMJUDGE_LEADERBOARD_DIR`` (a Space's
persistent ``/data`` when mounted); ``MMJUDGE_LEADERBOARD_DEMO=1`` runs the offline demo.
Scoring runs in a separate ``mmjudge leaderboard-worker`` process (or in-process with the demo).
"""

import os
import sys

from mmjudge.cli import main

if __name__ == "__main__":
    args = [
        "leaderboard",
        "--data-dir",
        os.environ.get(
            "MMJUDGE_LEADERBOARD_DIR", "/data/leaderboard" if os.path.isdir("/data") else "leaderboard-data"
        ),
        "--host",
        "0.0.0.0",
        "--port",
        os.environ.get("PORT", "7860"),
    ]
    if os.environ.get("MMJUDGE_LEADERBOARD_DEMO") == "1":
        args.append("--demo")
    sys.exit(main(args))
