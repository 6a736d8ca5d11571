"""``mmjudge leaderboard --demo``: settings for an offline board and a few example submissions.

>>> import tempfile
>>> from mmjudge.leaderboard.store import Store
>>> store = Store(tempfile.mkdtemp())
>>> seed_demo(store), seed_demo(store)  # only into an empty board
(10, 0)
"""

from __future__ import annotations

import json

from mmjudge.leaderboard.benchmarks import demo_outputs, demo_scores
from mmjudge.leaderboard.intake import submit
from mmjudge.leaderboard.judge_benchmarks import demo_card, demo_verdicts
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store

# What makes a board the demo (always applied), and the demo's defaults (a value in settings.json wins:
# a documented rate_limit there is kept).
DEMO_FORCED = {"demo": True, "judge": "dummy", "model": None}
DEMO_DEFAULTS = {"bootstrap": 200, "rate_limit": 50}


def demo_settings(from_file: dict) -> dict:
    """The settings of ``mmjudge leaderboard --demo``: the board's defaults, the demo's defaults, what
    ``settings.json`` sets, then what makes it the demo.

    >>> demo_settings({"rate_limit": 5})["rate_limit"], demo_settings({})["rate_limit"]
    (5, 50)
    >>> demo_settings({"judge": "transformers"})["judge"]
    'dummy'

    """
    return {**DEFAULTS, **DEMO_DEFAULTS, **from_file, **DEMO_FORCED}


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


def seed_demo(store: Store) -> int:
    """Queue three demo model outputs, two demo metric score files, two demo arena entries (the wordiest
    outputs, and outputs identical to the anchor ``anchor-clear``) and three demo judges (two verdict files,
    one judge card whose figures are reported, not scored) into an empty board."""
    if store.submissions(include_hidden=True):
        return 0
    queued = 0
    for quality, name in enumerate(["demo-vlm-terse", "demo-vlm-plain", "demo-vlm-wordy"]):
        queued += submit(
            store,
            track="models",
            benchmark="demo-inputs",
            name=name,
            submitter="demo",
            description="example outputs made for the demo",
            data=_jsonl(demo_outputs(quality)),
        ).accepted
    for noise, name in ((0.3, "demo-metric-close"), (1.5, "demo-metric-noisy")):
        queued += submit(
            store,
            track="metrics",
            benchmark="demo-judgments",
            name=name,
            submitter="demo",
            description=f"synthetic quality plus Gaussian noise σ={noise}",
            data=_jsonl(demo_scores(noise)),
        ).accepted
    for quality, name in ((3, "demo-vlm-wordy"), (1, "demo-vlm-like-anchor-clear")):
        queued += submit(
            store,
            track="arena",
            benchmark="demo-arena",
            name=name,
            submitter="demo",
            description="example outputs made for the demo, judged against the demo anchors",
            data=_jsonl(demo_outputs(quality)),
        ).accepted
    for data, name, about in (
        (_jsonl(demo_verdicts("careful")), "demo-judge-careful", "right on all but one pair per group"),
        (_jsonl(demo_verdicts("first-slot")), "demo-judge-first-slot", "always prefers the first response"),
        (json.dumps(demo_card(), indent=1).encode(), "demo-judge-reported", "a judge card with made-up figures"),
    ):
        queued += submit(
            store,
            track="judges",
            benchmark="demo-judge-pairs",
            name=name,
            submitter="demo",
            description=f"verdicts written for the demo: {about}",
            data=data,
        ).accepted
    return queued
