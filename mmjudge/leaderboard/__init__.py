"""The leaderboard's engine: storage and work queue, validation, benchmarks, ranking, the worker,
protection, optional Hub sync and the Gradio app. ``leaderboard/app.py`` is a thin adapter over it.

Three tracks: **models** (a team submits its model's outputs ``{id, text}`` for a benchmark's inputs;
the worker scores them with HarmonicEval and the board ranks them overall, per task and per criterion),
**metrics** (a metric author submits per-item scores ``{id, score, …}`` for a human-judgment
benchmark; the worker runs the meta-evaluation and the board ranks metrics by agreement with humans) and
**arena** (model outputs as for models, judged head to head against the benchmark's anchor systems; the
board ranks them by Bradley–Terry strength relative to the anchors, with per-criterion win rates).
Rows are ranked together only when their signatures are comparable (:func:`mmjudge.signature.comparable`).
Each track is one declaration in :mod:`mmjudge.leaderboard.tracks`.
"""
