"""What the board shows, as plain data (pandas DataFrames and escaped Markdown), built from the store.

The Gradio layout (:mod:`mmjudge.leaderboard.layout`) only places these; tests read them directly. What
differs between tracks (the ranking, the table's columns, a submission's breakdown) is the track's
(:mod:`mmjudge.leaderboard.tracks`); everything here works for any track. Every user-supplied string
that goes into Markdown passes :func:`~mmjudge.report.markdown_text`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mmjudge.leaderboard.display import age_text, frame, interval_text, rounded, separable_text, write_results
from mmjudge.leaderboard.protection import safe_code, safe_link
from mmjudge.leaderboard.ranking import ALL, public_rows
from mmjudge.leaderboard.records import Status
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.tracks import TrackView, ViewContext, get_track
from mmjudge.report import markdown_text

__all__ = [
    "default_benchmark",
    "metrics_view",
    "models_view",
    "queue_view",
    "results_records",
    "signature_choices",
    "standing",
    "submission_view",
    "track_view",
    "write_results",
]


def _settings(settings: Mapping[str, Any] | None) -> dict:
    return {**DEFAULTS, **(settings or {})}


def default_benchmark(store: Store, track: str) -> str | None:
    """The benchmark a track's table shows first: the one with the most scored submissions."""
    counts: dict[str, int] = {}
    for e in store.done(track):
        counts[e.benchmark] = counts.get(e.benchmark, 0) + 1
    return max(counts, key=lambda b: counts[b]) if counts else None


def tables(
    store: Store,
    track: str,
    benchmark: str | None,
    filters: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> list[dict]:
    """The ranked tables (signature groups, largest first) of one benchmark of ``track`` (its default
    benchmark when none is given)."""
    benchmark = benchmark or default_benchmark(store, track)
    entries = [e for e in store.done(track) if e.benchmark == benchmark]
    spec = get_track(track)
    return spec.rank(entries, {**spec.defaults(), **(filters or {})}, _settings(settings))


def signature_choices(store: Store, track: str, benchmark: str | None = None) -> list[tuple[str, int]]:
    """The signature groups of one benchmark of a track (largest first; the track's default benchmark
    when none is given) as the group selector's ``(label, index)`` choices; the index is the ``group``
    of :func:`track_view` (given the same benchmark)."""
    found = tables(store, track, benchmark, settings={"bootstrap": 0})
    return [(f"{i + 1}: {t['signature']}", i) for i, t in enumerate(found)]


def _index(group: Any, count: int) -> int:
    return min(max(int(group or 0), 0), max(count - 1, 0))


def track_view(
    store: Store,
    track: str,
    benchmark: str | None = None,
    group: int = 0,
    filters: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> TrackView:
    """A track's tab for one benchmark's signature group ``group`` under ``filters``."""
    spec, settings = get_track(track), _settings(settings)
    filters = {**spec.defaults(), **{k: v for k, v in (filters or {}).items() if v is not None}}
    found = tables(store, track, benchmark, filters, settings)
    context = ViewContext(entries=store.done(track), settings=settings)
    return spec.view(found, _index(group, len(found)), filters, context)


def models_view(
    store: Store,
    task: str = ALL,
    rank_by: str = "overall",
    columns: str = "criteria",
    group: int = 0,
    benchmark: str | None = None,
    settings: dict | None = None,
) -> tuple[Any, str, Any]:
    """(table, caption, profile-plot data) of the Models track (:func:`track_view`)."""
    filters = {"task": task or ALL, "rank_by": rank_by or "overall", "columns": columns}
    view = track_view(store, "models", benchmark, group, filters, settings)
    return view.table, view.caption, view.plot


def metrics_view(
    store: Store, benchmark: str | None = None, task: str = ALL, criterion: str = "", group: int = 0
) -> tuple[Any, str]:
    """(table, caption) of the Metrics track (:func:`track_view`)."""
    view = track_view(store, "metrics", benchmark or None, group, {"task": task or ALL, "criterion": criterion or ""})
    return view.table, view.caption


def results_records(
    store: Store,
    track: str,
    benchmark: str | None = None,
    task: str = ALL,
    by: str = "",
    group: int = 0,
    settings: dict | None = None,
    filters: Mapping[str, str] | None = None,
) -> list[dict]:
    """The ranked rows of one benchmark's signature group as plain records (numbers, not display
    strings): what the CSV / JSON downloads and the ``/results`` API give. ``benchmark`` and
    ``signature`` are repeated on every row so a file stands on its own."""
    wanted = {"task": task or ALL, **({"rank_by": by} if by else {}), **(filters or {})}
    found = tables(store, track, benchmark, wanted, settings)
    if not found:
        return []
    table = found[_index(group, len(found))]
    return [
        {"benchmark": table["benchmark"], **{k: rounded(v, 6) for k, v in r.items()}, "signature": table["signature"]}
        for r in public_rows(table)
    ]


def standing(store: Store, sid: str, settings: dict | None = None) -> dict:
    """Where one submission stands, as plain data (the ``/status`` API and ``mmjudge leaderboard submit``):
    status, reason, queue position; once DONE its ranked row (rank, value, interval, separable, judge
    failures, note) in its benchmark's table."""
    sid = str(sid or "").strip()
    row = store.get(sid) if sid else None
    if row is None or row.hidden:
        return {"id": sid, "status": str(Status.UNKNOWN), "reason": f"no submission {sid!r}"}
    out = {
        "id": sid,
        "status": str(row.status),
        "reason": row.reason,
        "track": row.track,
        "benchmark": row.benchmark,
        "name": row.name,
        "position": store.position(sid),
    }
    if row.status is not Status.DONE:
        return out
    key = get_track(row.track).headline
    for table in tables(store, row.track, row.benchmark, settings=settings):
        for r in public_rows(table):
            if r["id"] == sid:
                out.update(
                    rank=r.get("rank"),
                    of=sum(1 for x in table["rows"] if x.get("rank") is not None),
                    by=key,
                    value=r.get(key),
                    ci_low=r.get("ci_low"),
                    ci_high=r.get("ci_high"),
                    separable=r.get("separable"),
                    failed=r.get("failed"),
                    note=r.get("note", ""),
                    signature=table["signature"],
                )
                return out
    return out


def queue_view(store: Store, now: float | None = None):
    """Queued and running jobs with their position and age (what hosted boards most need to show)."""
    now = time.time() if now is None else now
    rows = [
        {
            "position": str(q.position) if q.position else "running",
            "name": q.name,
            "track": q.track,
            "benchmark": q.benchmark,
            "status": str(q.status),
            "age": age_text(q.age_s),
            "attempts": q.attempts,
            "note": q.reason,
            "id": q.id,
        }
        for q in store.queue(now)
    ]
    return frame(rows, ["position", "name", "track", "benchmark", "status", "age", "attempts", "note", "id"])


def submission_view(store: Store, sid: str, settings: dict | None = None) -> tuple[str, Any]:
    """(Markdown page, breakdown table) of one submission: status or reason, its place in its table
    (rank, interval, separable from the row above), and its track's breakdown (per criterion and task
    with the judge's failures and a few explanations; every figure with its interval)."""
    sid = (sid or "").strip()
    row = store.get(sid) if sid else None
    if row is None or row.hidden:
        return f"No submission with id {markdown_text(sid)}.", frame([])
    lines = [
        f"### {markdown_text(row.name)}",
        f"**Status:** {row.status}" + (f" — {markdown_text(row.reason)}" if row.reason else ""),
        f"**Track:** {row.track} · **Benchmark:** {markdown_text(row.benchmark)} · "
        f"**Submitted by:** {markdown_text(row.submitter)} · **Id:** `{row.id}`",
    ]
    if row.link:
        lines.append(f"**Link:** {safe_link(row.link)}")
    if row.description:
        lines.append(f"> {markdown_text(row.description)}")
    result = store.result(sid) if row.status is Status.DONE else None
    if row.status.queued:
        position = store.position(sid)
        lines.append(f"Queue position: {position or 'running now'} · waiting {age_text(time.time() - row.created_at)}.")
    if result is None:
        return "\n\n".join(lines), frame([])
    lines.append(f"**Signature:** `{safe_code(result.signature)}`")
    place = standing(store, sid, settings)
    if place.get("rank") is not None:
        lines.append(
            f"**Rank:** {place['rank']} of {place['of']} by {place['by']} = {rounded(place['value'])} "
            f"{interval_text(place)} · separable from the row above: {separable_text(place) or '—'}"
        )
    elif place.get("note"):
        lines.append(f"**{markdown_text(place['note'])}**")
    extra, table, columns = get_track(row.track).breakdown(result.summary)
    return "\n\n".join(lines + extra), frame(table, columns)
