"""The leaderboard's settings: one JSON file in the data dir, shared by the app and every worker.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> save_settings(d, {"judge": "dummy", "demo": True})
>>> s = load_settings(d)
>>> s["judge"], s["demo"], s["bootstrap"]
('dummy', True, 200)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SETTINGS_FILE = "settings.json"
DEFAULTS: dict[str, Any] = {
    "demo": False,
    # HarmonicEval, Models track: judge backend and model (None = the metric's default model).
    "judge": "transformers",
    "model": None,
    "gamma": 0.75,
    "judge_options": {},
    "batch_size": 16,  # items per scoring batch; the lease is renewed between batches
    "explain_examples": 2,  # items whose explanations are generated for the submission page
    # Models track: a submission whose judge failed on more than this share of its items is shown but
    # not ranked (mmjudge.leaderboard.ranking.MAX_FAILED_SHARE explains the 5%).
    "max_failed_share": 0.05,
    # Metrics track: the meta-evaluation protocol (part of every row's signature). Also the resamples
    # and seed of the Models track's intervals and paired comparisons (bootstrap over items).
    "bootstrap": 200,
    "seed": 0,
    "protocol": "per_judgment",
    "best_of": "majority",
    "ties": "wrong",
    # Arena track: the items each pair of systems meets on per round (the adaptive schedule of
    # mmjudge.pairwise; round 0 pits the submission against every anchor). Part of its rows' signature.
    "arena_items_per_pair": 64,
    # Benchmarks read by the dataset loaders (see mmjudge.leaderboard.benchmarks.configure).
    "benchmarks": [],
    # Protection: submissions per client (Hub user, else address) per window; the upload size limit;
    # the admin throttle (after the k-th wrong token in a row a client waits admin_delay_s * 2^(k-1) s,
    # at most admin_max_delay_s).
    "rate_limit": 5,
    "rate_window_s": 3600,
    "max_upload_bytes": 4 * 1024 * 1024,
    "admin_delay_s": 1.0,
    "admin_max_delay_s": 900.0,
    # Optional Hub sync (mmjudge.leaderboard.hub_sync): dataset repo ids, or null for none.
    "hub_requests_repo": None,
    "hub_results_repo": None,
}


def read_settings_file(data_dir: str | os.PathLike) -> dict[str, Any]:
    """What ``<data_dir>/settings.json`` itself sets (empty when there is no file)."""
    path = Path(data_dir) / SETTINGS_FILE
    if not path.is_file():
        return {}
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err}); fix or delete it.") from None
    if not isinstance(values, dict):
        raise ValueError(f"{path}: expected a JSON object of settings, but got {type(values).__name__}.")
    return values


def load_settings(data_dir: str | os.PathLike) -> dict[str, Any]:
    """Defaults overridden by ``<data_dir>/settings.json`` when it exists."""
    return {**DEFAULTS, **read_settings_file(data_dir)}


def save_settings(data_dir: str | os.PathLike, settings: dict[str, Any]) -> None:
    """Write the settings that differ from the defaults (atomically)."""
    path = Path(data_dir) / SETTINGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    changed = {k: v for k, v in settings.items() if DEFAULTS.get(k, object()) != v}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(changed, indent=2), encoding="utf-8")
    os.replace(tmp, path)
