"""What the board shows, as plain data (pandas DataFrames and escaped Markdown), built from the store.

The Gradio layout (:mod:`mmjudge.leaderboard.app`) only places these; tests read them directly.
Every user-supplied string that goes into Markdown passes :func:`~mmjudge.leaderboard.protection.markdown_text`.
"""

from __future__ import annotations

import math
import time
from typing import Any, Optional

from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS
from mmjudge.leaderboard.protection import markdown_text, safe_code, safe_link
from mmjudge.leaderboard.ranking import ALL, public_rows, rank_metrics, rank_models
from mmjudge.leaderboard.store import Store

TOP_PLOTTED = 5
# The plot colours lines by place, not by name: Gradio keeps a plot's colour domain across updates, so
# names of newly ranked models would get no line; places are a fixed domain (see PLACE_COLOURS).
PLACES = [f"#{k}" for k in range(1, TOP_PLOTTED + 1)]
PLACE_COLOURS = dict(zip(PLACES, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]))


def _round(value: Any, digits: int = 3) -> Any:
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, digits)
    return value


def _frame(rows: list[dict], columns: Optional[list[str]] = None):
    import pandas as pd

    frame = pd.DataFrame([{k: _round(v) for k, v in r.items()} for r in rows])
    if columns is not None:
        frame = frame.reindex(columns=columns)
    return frame


def signature_choices(store: Store, track: str, benchmark: Optional[str] = None) -> list[tuple[str, int]]:
    """The signature groups of a track (of one benchmark when given; largest first) as the group
    selector's ``(label, index)`` choices; the index is the ``group`` of :func:`models_view` /
    :func:`metrics_view` (given the same benchmark)."""
    entries = [e for e in store.done(track) if benchmark in (None, e["benchmark"])]
    tables = rank_models(entries) if track == "models" else rank_metrics(entries)
    return [(f"{i + 1}: {t['signature']}", i) for i, t in enumerate(tables)]


def models_view(store: Store, task: str = ALL, rank_by: str = "overall", columns: str = "criteria",
                group: int = 0) -> tuple[Any, str, Any]:  # fmt: skip
    """(table, caption, profile-plot data) for the Models track: signature group ``group``, ranked by
    ``rank_by`` on ``task``; ``columns`` = ``"criteria"`` (overall + criteria) or ``"tasks"`` (per task)."""
    import pandas as pd

    task = task or ALL
    tables = rank_models(store.done("models"), task=None if task == ALL else task, criterion=rank_by or "overall")
    if not tables:
        return _frame([], ["rank", "name"]), "No scored model submissions yet.", pd.DataFrame(columns=["place", "name", "criterion", "score"])
    table = tables[min(max(int(group or 0), 0), len(tables) - 1)]
    rows = public_rows(table)
    head = ["rank", "name", "overall"]
    if columns == "tasks" and task == ALL:
        body = [f"task:{t}" for t in MODEL_TASKS if any(f"task:{t}" in r for r in rows)]
    else:
        body = [c for c in CRITERIA if any(c in r for r in rows)]
    frame = _frame(rows, head + body + ["submitter", "id"])
    caption = (f"Ranked by **{markdown_text(rank_by)}** on task **{markdown_text(task)}** among {len(rows)} submission(s) "
               f"with comparable signatures. Signature: `{safe_code(table['signature'])}`"
               + (f" — {len(tables) - 1} other signature group(s) are listed separately." if len(tables) > 1 else "")
               + "  \nPlot: " + ", ".join(f"{PLACES[k]} = {markdown_text(r['name'])}" for k, r in enumerate(rows[:TOP_PLOTTED])))  # fmt: skip
    plot = [{"place": PLACES[k], "name": r["name"], "criterion": c, "score": _round(r[c])}
            for k, r in enumerate(rows[:TOP_PLOTTED]) for c in CRITERIA if r.get(c) is not None]
    # Empty places still appear (no score, so no line): the first rendering fixes the colour domain.
    plot += [{"place": p, "name": "", "criterion": CRITERIA[0], "score": None} for p in PLACES[len(rows[:TOP_PLOTTED]):]]
    return frame, caption, pd.DataFrame(plot, columns=["place", "name", "criterion", "score"])


def metrics_view(store: Store, benchmark: Optional[str] = None, task: str = ALL, criterion: str = "",
                 group: int = 0) -> tuple[Any, str]:  # fmt: skip
    """(table, caption) for the Metrics track: one benchmark's signature group, headline first, then
    the correlation (τ) and accuracy figures filtered by ``task`` / ``criterion``."""
    entries = [e for e in store.done("metrics") if benchmark in (None, "", e["benchmark"])]
    tables = rank_metrics(entries, task=None if task in (None, "", ALL) else task, criterion=criterion or None)
    if not tables:
        return _frame([], ["rank", "name", "headline"]), "No scored metric submissions yet."
    table = tables[min(max(int(group or 0), 0), len(tables) - 1)]
    rows = public_rows(table)
    figures = [k for k in dict.fromkeys(k for r in rows for k in r) if ":" in k]
    frame = _frame(rows, ["rank", "name", "headline"] + figures + ["submitter", "id"])
    caption = (f"Benchmark **{markdown_text(table['benchmark'])}**; headline = {markdown_text(table['headline'])}. "
               f"Intervals: bootstrap, on each submission's page. Signature: `{safe_code(table['signature'])}`")  # fmt: skip
    return frame, caption


def queue_view(store: Store, now: Optional[float] = None):
    """Queued and running jobs with their position and age (what hosted boards most need to show)."""
    now = time.time() if now is None else now
    rows = [{"position": str(q["position"]) if q["position"] else "running", "name": q["name"], "track": q["track"], "benchmark": q["benchmark"],
             "status": q["status"], "age": _age(q["age_s"]), "attempts": q["attempts"], "note": q["reason"], "id": q["id"]}
            for q in store.queue(now)]  # fmt: skip
    return _frame(rows, ["position", "name", "track", "benchmark", "status", "age", "attempts", "note", "id"])


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def submission_view(store: Store, sid: str) -> tuple[str, Any]:
    """(Markdown page, breakdown table) of one submission: status or reason, per-criterion and per-task
    breakdown, a few explanations (Models) or every figure with its interval (Metrics)."""
    sid = (sid or "").strip()
    row = store.get(sid) if sid else None
    if row is None or row["hidden"]:
        return f"No submission with id {markdown_text(sid)}.", _frame([])
    lines = [f"### {markdown_text(row['name'])}",
             f"**Status:** {row['status']}" + (f" — {markdown_text(row['reason'])}" if row["reason"] else ""),
             f"**Track:** {row['track']} · **Benchmark:** {markdown_text(row['benchmark'])} · **Submitted by:** {markdown_text(row['submitter'])}"]  # fmt: skip
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
    summary = result["summary"]
    if row["track"] == "models":
        table = [{"task": t, **{k: v for k, v in part.items()}} for t, part in summary["tasks"].items()]
        table.append({"task": ALL, "overall": summary["overall"], **summary["criteria"], "n": summary["n"]})
        if summary.get("examples"):
            lines.append("#### Example explanations")
            for ex in summary["examples"]:
                lines.append(f"- **{markdown_text(ex['criterion'])}** on `{safe_code(ex['id'])}` ({markdown_text(ex['task'])}), "
                             f"score {_round(ex['score'], 2)}: text “{markdown_text(ex['text'])}” — {markdown_text(ex['explanation'])}")  # fmt: skip
        return "\n\n".join(lines), _frame(table, ["task", "overall"] + CRITERIA + ["n"])
    head = summary.get("headline") or {}
    if head:
        lines.append(f"**Headline:** {markdown_text(head.get('label'))} = {_round(head.get('value'))} "
                     f"[{_round(head.get('ci_low'))}, {_round(head.get('ci_high'))}]")  # fmt: skip
    table = [{"figure": f"{summary['measure']} {k}", **v} for k, v in summary["correlations"].items()]
    table += [{"figure": f"accuracy {k}", **v} for k, v in summary["accuracy"].items()]
    return "\n\n".join(lines), _frame(table, ["figure", "value", "ci_low", "ci_high"])

