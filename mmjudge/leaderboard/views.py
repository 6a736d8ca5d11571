"""What the board shows, as plain data (pandas DataFrames and escaped Markdown), built from the store.

The Gradio layout (:mod:`mmjudge.leaderboard.app`) only places these; tests read them directly.
Every user-supplied string that goes into Markdown passes :func:`~mmjudge.report.markdown_text`.
"""

from __future__ import annotations

import math
import time
from typing import Any

from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS
from mmjudge.leaderboard.protection import safe_code, safe_link
from mmjudge.leaderboard.ranking import ALL, public_rows, rank_metrics, rank_models
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.store import Store
from mmjudge.report import markdown_text

TOP_PLOTTED = 5
# The plot colours lines by place, not by name: Gradio keeps a plot's colour domain across updates, so
# names of newly ranked models would get no line; places are a fixed domain (see PLACE_COLOURS).
PLACES = [f"#{k}" for k in range(1, TOP_PLOTTED + 1)]
PLACE_COLOURS = dict(zip(PLACES, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]))


def _round(value: Any, digits: int = 3) -> Any:
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, digits)
    return value


def _frame(rows: list[dict], columns: list[str] | None = None):
    import pandas as pd

    frame = pd.DataFrame([{k: _round(v) for k, v in r.items()} for r in rows])
    if columns is not None:
        frame = frame.reindex(columns=columns)
    return frame


def _options(settings: dict | None) -> dict:
    """The ranking options the views read from the board's settings."""
    s = {**DEFAULTS, **(settings or {})}
    return {"bootstrap": int(s["bootstrap"]), "seed": int(s["seed"]), "max_failed_share": float(s["max_failed_share"])}


def default_benchmark(store: Store, track: str) -> str | None:
    """The benchmark a track's table shows first: the one with the most scored submissions."""
    counts: dict[str, int] = {}
    for e in store.done(track):
        counts[e["benchmark"]] = counts.get(e["benchmark"], 0) + 1
    return max(counts, key=lambda b: counts[b]) if counts else None


def _tables(
    store: Store,
    track: str,
    benchmark: str | None,
    task: str | None = None,
    by: str | None = None,
    criterion: str | None = None,
    settings: dict | None = None,
) -> list[dict]:
    benchmark = benchmark or default_benchmark(store, track)
    entries = [e for e in store.done(track) if e["benchmark"] == benchmark]
    if track == "models":
        o = _options(settings)
        return rank_models(
            entries,
            task=task,
            criterion=by or "overall",
            max_failed_share=o["max_failed_share"],
            bootstrap=o["bootstrap"],
            seed=o["seed"],
        )
    return rank_metrics(entries, task=task, criterion=criterion)


def signature_choices(store: Store, track: str, benchmark: str | None = None) -> list[tuple[str, int]]:
    """The signature groups of one benchmark of a track (largest first; the track's default benchmark
    when none is given) as the group selector's ``(label, index)`` choices; the index is the ``group``
    of :func:`models_view` / :func:`metrics_view` (given the same benchmark)."""
    tables = _tables(store, track, benchmark, settings={"bootstrap": 0})
    return [(f"{i + 1}: {t['signature']}", i) for i, t in enumerate(tables)]


def _interval(row: dict, digits: int = 3) -> str:
    low, high = row.get("ci_low"), row.get("ci_high")
    return "" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


def _separable(row: dict) -> str:
    return {True: "yes", False: "no (within noise)", None: ""}[row.get("separable")]


def _failures(row: dict, n: int | None) -> str:
    failed = row.get("failed")
    if failed is None:
        return ""
    return f"{failed} ({100 * failed / n:.1f}%)" if n and failed else str(failed)


INTERVAL_NOTE = (
    "**interval**: 95% bootstrap over the benchmark's items; **vs above**: *yes* when a paired bootstrap "
    "on the same items separates this row from the one above (the interval of their difference excludes "
    "0), *no* when chance could swap them."
)


def models_view(
    store: Store,
    task: str = ALL,
    rank_by: str = "overall",
    columns: str = "criteria",
    group: int = 0,
    benchmark: str | None = None,
    settings: dict | None = None,
) -> tuple[Any, str, Any]:
    """(table, caption, profile-plot data) for the Models track: one benchmark's signature group
    ``group``, ranked by ``rank_by`` on ``task``; ``columns`` = ``"criteria"`` (overall + criteria) or
    ``"tasks"`` (per task). Each row shows the ranked figure's interval, whether it is separable from
    the row above, and how many items the judge failed on; a row the judge failed on too often is
    listed without a rank, with the reason."""
    import pandas as pd

    task, rank_by = task or ALL, rank_by or "overall"
    tables = _tables(store, "models", benchmark, None if task == ALL else task, rank_by, settings=settings)
    if not tables:
        return (
            _frame([], ["rank", "name"]),
            "No scored model submissions yet.",
            pd.DataFrame(columns=["place", "name", "criterion", "score"]),
        )
    table = tables[min(max(int(group or 0), 0), len(tables) - 1)]
    rows = public_rows(table)
    sizes = {e["id"]: e["summary"].get("n") for e in store.done("models")}
    head = (
        ["rank", "name", "overall"]
        + ([rank_by] if rank_by != "overall" else [])
        + ["interval", "vs above", "judge failures"]
    )
    if columns == "tasks" and task == ALL:
        body = [f"task:{t}" for t in MODEL_TASKS if any(f"task:{t}" in r for r in rows)]
    else:
        body = [c for c in CRITERIA if c != rank_by and any(c in r for r in rows)]
    shown = [
        {**r, "interval": _interval(r), "vs above": _separable(r), "judge failures": _failures(r, sizes.get(r["id"]))}
        for r in rows
    ]
    frame = _frame(shown, head + body + ["note", "submitter", "id"])
    max_failed = _options(settings)["max_failed_share"]
    caption = (
        f"Benchmark **{markdown_text(table['benchmark'])}**: ranked by **{markdown_text(rank_by)}** on task "
        f"**{markdown_text(task)}** among {len(rows)} submission(s) with comparable signatures; "
        f"{INTERVAL_NOTE} **judge failures**: items the judge could not rate; above {100 * max_failed:g}% a row "
        f"is listed without a rank. Signature: `{safe_code(table['signature'])}`"
        + (f" — {len(tables) - 1} other signature group(s) are listed separately." if len(tables) > 1 else "")
        + "  \nPlot: "
        + ", ".join(f"{PLACES[k]} = {markdown_text(r['name'])}" for k, r in enumerate(rows[:TOP_PLOTTED]))
    )
    plot = [
        {"place": PLACES[k], "name": r["name"], "criterion": c, "score": _round(r[c])}
        for k, r in enumerate(rows[:TOP_PLOTTED])
        for c in CRITERIA
        if r.get(c) is not None
    ]
    # Empty places still appear (no score, so no line): the first rendering fixes the colour domain.
    plot += [
        {"place": p, "name": "", "criterion": CRITERIA[0], "score": None} for p in PLACES[len(rows[:TOP_PLOTTED]) :]
    ]
    return frame, caption, pd.DataFrame(plot, columns=["place", "name", "criterion", "score"])


def metrics_view(
    store: Store, benchmark: str | None = None, task: str = ALL, criterion: str = "", group: int = 0
) -> tuple[Any, str]:
    """(table, caption) for the Metrics track: one benchmark's signature group, headline first with its
    interval and whether it is separable from the row above, then the correlation (τ) and accuracy
    figures filtered by ``task`` / ``criterion``."""
    tables = _tables(
        store, "metrics", benchmark or None, None if task in (None, "", ALL) else task, criterion=criterion or None
    )
    if not tables:
        return _frame([], ["rank", "name", "headline"]), "No scored metric submissions yet."
    table = tables[min(max(int(group or 0), 0), len(tables) - 1)]
    rows = [{**r, "interval": _interval(r), "vs above": _separable(r)} for r in public_rows(table)]
    figures = [k for k in dict.fromkeys(k for r in rows for k in r) if ":" in k]
    frame = _frame(rows, ["rank", "name", "headline", "interval", "vs above"] + figures + ["submitter", "id"])
    caption = (
        f"Benchmark **{markdown_text(table['benchmark'])}**; headline = {markdown_text(table['headline'])}. "
        f"{INTERVAL_NOTE} Every figure's interval is on the submission's page. "
        f"Signature: `{safe_code(table['signature'])}`"
    )
    return frame, caption


def results_records(
    store: Store,
    track: str,
    benchmark: str | None = None,
    task: str = ALL,
    by: str = "",
    group: int = 0,
    settings: dict | None = None,
) -> list[dict]:
    """The ranked rows of one benchmark's signature group as plain records (numbers, not display
    strings): what the CSV / JSON downloads and the ``/results`` API give. ``benchmark`` and
    ``signature`` are repeated on every row so a file stands on its own."""
    task = task or ALL
    if track == "models":
        tables = _tables(store, track, benchmark, None if task == ALL else task, by or "overall", settings=settings)
    else:
        tables = _tables(store, track, benchmark, None if task == ALL else task, settings=settings)
    if not tables:
        return []
    table = tables[min(max(int(group or 0), 0), len(tables) - 1)]
    return [
        {"benchmark": table["benchmark"], **{k: _round(v, 6) for k, v in r.items()}, "signature": table["signature"]}
        for r in public_rows(table)
    ]


def write_results(records: list[dict], folder: str, stem: str) -> tuple[str, str]:
    """``records`` as ``<stem>.csv`` and ``<stem>.json`` in ``folder`` (the downloads); returns both paths."""
    import json
    import os

    import pandas as pd

    os.makedirs(folder, exist_ok=True)
    csv_path, json_path = os.path.join(folder, f"{stem}.csv"), os.path.join(folder, f"{stem}.json")
    pd.DataFrame(records).to_csv(csv_path, index=False)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1, allow_nan=False)
    return csv_path, json_path


def standing(store: Store, sid: str, settings: dict | None = None) -> dict:
    """Where one submission stands, as plain data (the ``/status`` API and ``mmjudge leaderboard submit``):
    status, reason, queue position; once DONE its ranked row (rank, value, interval, separable, judge
    failures, note) in its benchmark's table."""
    sid = str(sid or "").strip()
    row = store.get(sid) if sid else None
    if row is None or row["hidden"]:
        return {"id": sid, "status": "UNKNOWN", "reason": f"no submission {sid!r}"}
    out = {
        "id": sid,
        "status": row["status"],
        "reason": row["reason"],
        "track": row["track"],
        "benchmark": row["benchmark"],
        "name": row["name"],
        "position": store.position(sid),
    }
    if row["status"] != "DONE":
        return out
    for table in _tables(store, row["track"], row["benchmark"], settings=settings):
        for r in public_rows(table):
            if r["id"] == sid:
                key = "overall" if row["track"] == "models" else "headline"
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
            "position": str(q["position"]) if q["position"] else "running",
            "name": q["name"],
            "track": q["track"],
            "benchmark": q["benchmark"],
            "status": q["status"],
            "age": _age(q["age_s"]),
            "attempts": q["attempts"],
            "note": q["reason"],
            "id": q["id"],
        }
        for q in store.queue(now)
    ]
    return _frame(rows, ["position", "name", "track", "benchmark", "status", "age", "attempts", "note", "id"])


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def submission_view(store: Store, sid: str, settings: dict | None = None) -> tuple[str, Any]:
    """(Markdown page, breakdown table) of one submission: status or reason, its place in its table
    (rank, interval, separable from the row above), per-criterion and per-task breakdown with the
    judge's failures and a few explanations (Models) or every figure with its interval (Metrics)."""
    sid = (sid or "").strip()
    row = store.get(sid) if sid else None
    if row is None or row["hidden"]:
        return f"No submission with id {markdown_text(sid)}.", _frame([])
    lines = [
        f"### {markdown_text(row['name'])}",
        f"**Status:** {row['status']}" + (f" — {markdown_text(row['reason'])}" if row["reason"] else ""),
        f"**Track:** {row['track']} · **Benchmark:** {markdown_text(row['benchmark'])} · **Submitted by:** {markdown_text(row['submitter'])}",
    ]
    if row["link"]:
        lines.append(f"**Link:** {safe_link(row['link'])}")
    if row["description"]:
        lines.append(f"> {markdown_text(row['description'])}")
    result = store.result(sid) if row["status"] == "DONE" else None
    if row["status"] in ("PENDING", "RUNNING"):
        position = store.position(sid)
        lines.append(f"Queue position: {position or 'running now'} · waiting {_age(time.time() - row['created_at'])}.")
    if result is None:
        return "\n\n".join(lines), _frame([])
    lines.append(f"**Signature:** `{safe_code(result['signature'])}`")
    place = standing(store, sid, settings)
    if place.get("rank") is not None:
        lines.append(
            f"**Rank:** {place['rank']} of {place['of']} by {place['by']} = {_round(place['value'])} "
            f"{_interval(place)} · separable from the row above: {_separable(place) or '—'}"
        )
    elif place.get("note"):
        lines.append(f"**{markdown_text(place['note'])}**")
    summary = result["summary"]
    if row["track"] == "models":
        if "failed_items" in summary:
            which = ", ".join(f"{c} {k}" for c, k in summary.get("failures", {}).items() if k)
            lines.append(
                f"**Judge failures:** {summary['failed_items']} of {summary['n']} items"
                + (f" ({which})" if which else "")
            )
        table = [{"task": t, **dict(part.items())} for t, part in summary["tasks"].items()]
        table.append(
            {
                "task": ALL,
                "overall": summary["overall"],
                **summary["criteria"],
                "n": summary["n"],
                "failed": summary.get("failed_items"),
            }
        )
        if summary.get("examples"):
            lines.append("#### Example explanations")
            for ex in summary["examples"]:
                lines.append(
                    f"- **{markdown_text(ex['criterion'])}** on `{safe_code(ex['id'])}` ({markdown_text(ex['task'])}), "
                    f"score {_round(ex['score'], 2)}: text “{markdown_text(ex['text'])}” — {markdown_text(ex['explanation'])}"
                )
        return "\n\n".join(lines), _frame(table, ["task", "overall"] + CRITERIA + ["n", "failed"])
    head = summary.get("headline") or {}
    if head:
        lines.append(
            f"**Headline:** {markdown_text(head.get('label'))} = {_round(head.get('value'))} "
            f"[{_round(head.get('ci_low'))}, {_round(head.get('ci_high'))}]"
        )
    table = [{"figure": f"{summary['measure']} {k}", **v} for k, v in summary["correlations"].items()]
    table += [{"figure": f"accuracy {k}", **v} for k, v in summary["accuracy"].items()]
    return "\n\n".join(lines), _frame(table, ["figure", "value", "ci_low", "ci_high"])
