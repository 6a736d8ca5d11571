"""The leaderboard's Gradio 6 app: rankings per track, how to take part (downloads of each benchmark's
inputs and an example submission), a submission form whose reply follows the submission, the queue, a
page per submission, an admin panel. :func:`build_app` puts together :class:`~mmjudge.leaderboard.handlers.Board`
(what each event does) and :mod:`~mmjudge.leaderboard.layout` (where it shows); submissions go through
:func:`mmjudge.leaderboard.intake.submit_path`, scoring is the worker's.

HTTP API (``gradio_client``; what ``mmjudge leaderboard download`` / ``submit`` use):

==========================  =======================================================================
``/benchmarks``             every benchmark with its track, items, tasks, line format and limits (JSON)
``/benchmark_inputs``       (benchmark, ``zip`` | ``parquet``) → the inputs file
``/example_submission``     (benchmark) → an example submission file
``/submit``                 (track, benchmark, name, submitter, link, description, file) → one line
``/status``                 (submission id) → status, queue position, and once DONE its ranked row (JSON)
``/results``                (track, benchmark, task, rank by) → the ranked rows with intervals (JSON)
``/<track>_table``          ``/models_table`` (task, rank by), ``/metrics_table`` (benchmark, task),
                            ``/arena_table`` (benchmark)
``/queue``, ``/submission``, ``/admin``
==========================  =======================================================================

A page opened at ``?submission=<id>`` shows that submission (the link in a reply).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.handlers import Board, board_url, client_key
from mmjudge.leaderboard.intake import upload_cap

__all__ = ["board_url", "build_app", "client_key", "launch"]


def build_app(data_dir: str, settings: dict | None = None):
    """The Blocks app over the data dir (settings from ``<data_dir>/settings.json`` unless given)."""
    from mmjudge.leaderboard.layout import build_page

    board = Board(data_dir, settings)
    demo = build_page(board)
    demo.lb_board = board  # for the CLI and tests
    demo.lb_store = board.store
    demo.lb_max_bytes = board.max_bytes
    demo.lb_exports = board.exports
    return demo


def launch(demo: Any, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Launch with the board's CSS (Gradio 6 takes it at launch), the web server's upload cap (the
    board's own limit: :func:`~mmjudge.leaderboard.intake.upload_cap`; a larger body is answered 413 and a
    partial upload of a client that left is removed: :func:`mmjudge.gradio_compat.launch_page`) and the
    exports folder (the downloads) as the one folder outside the temp dir it may serve files from."""
    from mmjudge.gradio_compat import launch_page
    from mmjudge.leaderboard.layout import CSS
    from mmjudge.leaderboard.validation import MAX_BYTES

    cap = upload_cap(getattr(demo, "lb_max_bytes", MAX_BYTES))
    allowed = list(kwargs.pop("allowed_paths", None) or [])
    if hasattr(demo, "lb_exports"):
        Path(demo.lb_exports).mkdir(parents=True, exist_ok=True)
        allowed.append(os.fspath(demo.lb_exports))
    return launch_page(demo, cap, server_name=host, server_port=port, css=CSS, allowed_paths=allowed, **kwargs)
