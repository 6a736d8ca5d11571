"""Scoring one Arena submission: its outputs meet the anchor systems' outputs on the same inputs, head to head
(the track itself is declared in :mod:`mmjudge.leaderboard.tracks.arena`).

A job of this track (a team's ``{id, text}`` outputs for a benchmark's inputs, validated as on the Models
track) is judged by HarmonicEval's pairwise judge against every anchor system of the benchmark, and the
anchors against each other (cached by the board's judge cache, so they cost once for all submissions),
through :func:`mmjudge.pairwise.arena.rank_systems` in the job's own folder ``<work_dir>/<job id>/``. The
rounds' rows are written as they finish, so a worker killed in the middle of a job loses nothing: the next
worker that claims the re-queued job resumes its rounds where the part files stop and judges only what is
missing.

The submission's figures are **relative to the anchors** (the same for every submission of a benchmark),
so they rank across jobs: ``strength`` = its Bradley–Terry θ minus the anchors' mean θ (log-odds: a
strength of +1 beats an average anchor with probability σ(1) ≈ 0.73), with its bootstrap interval over items
(the same difference per resample), ``win_rate`` (its mean preference over the anchors) overall and per
criterion, ``battles`` (with a preference) and ``no_preference`` (its battles the judge gave no answer for).

This module is self-contained (it imports nothing of the board), so the board's track declarations wire it
in: the worker calls :func:`score_arena` with the benchmark's inputs, the validated outputs and the anchors'
outputs, and commits ``(signature, summary, rows)``; the views rank the summaries by ``strength``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.inputs import is_number
from mmjudge.metaeval.bootstrap import DEFAULT_CONFIDENCE, percentile_interval
from mmjudge.report import json_safe

SUBMISSION = "submission"
DEFAULT_ITEMS_PER_PAIR = 64


def system_inputs(inputs: Sequence[Mapping[str, Any]], folder: Path) -> dict[str, dict[str, Any]]:
    """The inputs by id as the system files carry them: task, question, box, and the image as a path (an
    image held in memory — PIL, or ``datasets``' ``{bytes, path}`` — is written once into ``folder/images``)."""
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    out = {}
    for k, item in enumerate(inputs):
        row = {key: item[key] for key in ("task", "question", "box") if item.get(key) is not None}
        image = item.get("image")
        if isinstance(image, Mapping):
            image = image.get("path") if image.get("bytes") is None else image["bytes"]
        if isinstance(image, (bytes, bytearray)):
            path = images / f"{k}.bin"
            if not path.exists():
                path.write_bytes(bytes(image))
            image = str(path)
        elif image is not None and not isinstance(image, str):  # a PIL image
            path = images / f"{k}.png"
            if not path.exists():
                image.save(path)
            image = str(path)
        if image is not None:
            row["image"] = image
        out[str(item["id"])] = row
    return out


def write_system(path: Path, inputs: Mapping[str, dict], outputs: Sequence[Mapping[str, Any]]) -> None:
    """One system's outputs as the JSON Lines :func:`~mmjudge.pairwise.arena.read_systems` reads: each
    output's text with its input's fields (:func:`system_inputs`)."""
    with open(path, "w", encoding="utf-8") as f:
        for output in outputs:
            row = {"id": str(output["id"]), "text": output["text"], **inputs[str(output["id"])]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def score_arena(
    metric: Any,
    inputs: Sequence[Mapping[str, Any]],
    outputs: Sequence[Mapping[str, Any]],
    anchors: Mapping[str, Sequence[Mapping[str, Any]]],
    work_dir: str | Path,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    items_per_pair: int = DEFAULT_ITEMS_PER_PAIR,
    chunk_size: int | None = None,
    check: Callable[[], None] | None = None,
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Judge one submission against the anchors; ``(signature, summary, rows)`` for the board to commit.

    Args:
        metric: the pairwise judge (``HarmonicEval(...).pairwise()``), on the board's judge cache.
        inputs: the benchmark's inputs (``id``, ``task``, ``image`` as a path, ``question``, ``box``).
        outputs: the submission's ``{id, text}`` for every input; ``anchors``: the same per anchor system.
        work_dir: the job's folder (kept until the job is done: a re-queued job resumes from it).
        chunk_size: battles judged (and written) together: what a killed worker can lose at most.
        check: called at every round (the board's lease check: raises when the job was taken away).

    Raises:
        ValueError: fewer than two anchors, or an anchor named like the submission.
    """
    from mmjudge.pairwise.arena import rank_systems

    if len(anchors) < 2 or SUBMISSION in anchors:
        raise ValueError(f"The Arena track needs two or more anchor systems, none named {SUBMISSION!r}.")
    folder = Path(work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    by_id = system_inputs(inputs, folder)
    files = {}
    for name, texts in {**anchors, SUBMISSION: outputs}.items():
        files[name] = folder / f"system-{len(files)}.jsonl"
        write_system(files[name], by_id, texts)

    def round_started(number: int, battles: int) -> None:
        if check is not None:
            check()

    names = list(anchors)
    ranking = rank_systems(
        metric,
        {name: str(path) for name, path in files.items()},
        folder / "rounds",
        anchors=names,
        items_per_pair=items_per_pair,
        max_rounds=len(by_id) // items_per_pair + 2,
        bootstrap=bootstrap,
        seed=seed,
        chunk_size=chunk_size,
        on_round=round_started,
    )
    rows = battle_rows(folder / "rounds", ranking.systems)
    # The submission's own battles without a preference (the judge failed in either order): never a 0.5.
    no_preference = sum(1 for r in rows if not (is_number(r.get("overall")) and math.isfinite(r["overall"])))
    return ranking.signature, summarise_arena(ranking, names, no_preference), json_safe(rows)


def summarise_arena(ranking: Any, anchors: Sequence[str], no_preference: int = 0) -> dict[str, Any]:
    """The submission's figures relative to the anchors (see the module), and each anchor's, for the page;
    ``no_preference``: the submission's battles the judge gave no preference for."""
    systems = list(ranking.systems)
    me, others = systems.index(SUBMISSION), [systems.index(a) for a in anchors]
    centre = float(np.mean(ranking.strength[others]))
    low = high = math.nan
    if ranking.resamples is not None:
        shifted = ranking.resamples[:, me] - ranking.resamples[:, others].mean(axis=1)
        low, high = percentile_interval(shifted, ranking.settings.get("confidence", DEFAULT_CONFIDENCE))
    rates = {c: float(v[me]) for c, v in ranking.criterion_win_rates.items()}
    return json_safe(
        {
            "strength": float(ranking.strength[me]) - centre,
            "ci_low": low,
            "ci_high": high,
            "win_rate": rates.get("overall", math.nan),
            "win_rates": rates,
            "battles": int(ranking.battles[me]),
            "no_preference": int(no_preference),
            "anchors": {systems[i]: float(ranking.strength[i]) - centre for i in others},
            "judged": int(ranking.judged),
        }
    )


def battle_rows(rounds: Path, systems: Sequence[str]) -> list[dict[str, Any]]:
    """The submission's battles as rows (``system_a``, ``system_b``, ``item``, overall and per-criterion
    P(a ≻ b), statuses): what the board keeps as the job's per-item results."""
    from mmjudge.pairwise.summary import output_rows

    rows = []
    for path in sorted(rounds.glob("round-*.jsonl")):
        for row in output_rows(path):
            if SUBMISSION in (row.get("system_a"), row.get("system_b")):
                rows.append({k: v for k, v in row.items() if not k.endswith(("_explanation",))})
    return rows
