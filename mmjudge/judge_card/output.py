"""What a judge card writes: ``card.json`` (a list of rows ``{"benchmark", "subset", "measure", "value", "low",
"high", "n"}``, values as fractions), ``card.md`` (one table a person reads, shares as percentages),
``card.png`` (each benchmark's headline figure with its interval) and ``signature.json`` (the judge, its
signature, where each benchmark's judgments came from, the bootstrap settings, what the judge cost, and which
published figures the card reproduced).

>>> rows = [{"benchmark": "vl_rewardbench", "subset": "", "measure": "accuracy", "value": 0.654, "low": 0.627,
...          "high": 0.68, "n": 1250}]
>>> print(card_markdown("gpt-4o", rows, {}))  # doctest: +ELLIPSIS
# Judge card: gpt-4o
<BLANKLINE>
| benchmark | subset | measure | value | 95% interval | n |
|---|---|---|---|---|---|
| vl_rewardbench | — | accuracy | 65.4 | [62.7, 68.0] | 1250 |
...
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmjudge.judge_card.measures import DISTANCE_MEASURES, SHARE_MEASURES
from mmjudge.report import markdown_text

PERCENT = set(SHARE_MEASURES)  # shown ×100 in card.md (card.json keeps fractions)


OUTPUT_FILES = ("card.json", "card.md", "card.png", "signature.json")
NOTE = (
    "Shares and correlations ×100; `no_answer` is the share of items the judge gave no answer for (left out of "
    "every other figure); `samples_per_s` counts the items this run judged."
)
DISTANCE_NOTE = (
    "`levenshtein` is a distance from the human ranking, shown as is (0 = the human's order, 1 = as far as it can "
    "be): **lower is better**."
)


def write_card(card: Any, settings: Any) -> Path:
    """``card.json``, ``card.md``, ``card.png`` and ``signature.json`` under ``settings.out``."""
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    _atomic(out / "card.json", json.dumps(card.rows, indent=1, allow_nan=False) + "\n")
    _atomic(out / "signature.json", json.dumps(signature(card, settings), indent=1, sort_keys=True) + "\n")
    text = card_markdown(card.judge, card.rows, card.not_run, card.signature, card.usage, settings.confidence)
    _atomic(out / "card.md", text)
    chart(card.judge, card.rows, out / "card.png")
    return out


def signature(card: Any, settings: Any) -> dict[str, Any]:
    """What the card's figures depend on: enough to reproduce them (verdict files by sha256, never by content)."""
    from mmjudge._version import __version__
    from mmjudge.encoders.checkpoint_files import file_sha256

    verdicts = {
        name: file_sha256(Path(path).expanduser())
        for name, path in settings.verdicts.items()
        if Path(path).expanduser().is_file()
    }
    return {
        "mmjudge": __version__,
        "judge": card.judge,
        "signature": card.signature,
        "sources": card.sources,
        "verdicts_sha256": verdicts,
        "not_run": card.not_run,
        "limit": settings.limit,
        "bootstrap": settings.bootstrap,
        "seed": settings.seed,
        "confidence": settings.confidence,
        "usage": card.usage,
    }


def card_markdown(
    judge: str,
    rows: Sequence[Mapping],
    not_run: Mapping[str, str],
    signature: str = "",
    usage: Any = None,
    confidence: float = 0.95,
) -> str:
    """The card as one Markdown table (user-given names escaped; the intervals' coverage in the header), then what
    did not run and why."""
    header = f"| benchmark | subset | measure | value | {100 * confidence:g}% interval | n |"
    lines = [f"# Judge card: {markdown_text(judge)}", "", header]
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        shown = _shown(r["measure"], r["value"])
        interval = "—" if r["low"] is None else f"[{_shown(r['measure'], r['low'])}, {_shown(r['measure'], r['high'])}]"
        subset = markdown_text(r["subset"]) if r["subset"] else "—"
        lines.append(f"| {r['benchmark']} | {subset} | {r['measure']} | {shown} | {interval} | {r['n']} |")
    lines += ["", NOTE]
    if any(r["measure"] in DISTANCE_MEASURES for r in rows):
        lines += ["", DISTANCE_NOTE]
    if not_run:
        lines += ["", "Not run:"] + [f"- {name}: {markdown_text(why)}" for name, why in not_run.items()]
    if usage:
        lines += ["", f"Judge usage: {markdown_text(json.dumps(usage, sort_keys=True))}"]
    if signature:
        lines += ["", f"Signature: `{signature}`"]
    return "\n".join(lines) + "\n"


def _shown(measure: str, value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if measure in DISTANCE_MEASURES:
        return f"{value:.3f}"
    return f"{100 * value:.1f}" if measure in PERCENT else f"{value:.2f}"


def headline(rows: Sequence[Mapping]) -> list[Mapping]:
    """Each benchmark's first row: its main measure over all items."""
    seen: dict[str, Mapping] = {}
    for r in rows:
        if r["subset"] == "" and r["benchmark"] not in seen and r["value"] is not None:
            seen[r["benchmark"]] = r
    return list(seen.values())


def chart(judge: str, rows: Sequence[Mapping], path: Path) -> bool:
    """A bar per benchmark (its headline measure ×100) with its interval; ``False`` without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:  # the card's table is the result; the picture a bonus
        return False
    bars = headline(rows)
    figure = Figure(figsize=(max(4.0, 1.2 * len(bars) + 2), 3.6), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    values = [100 * b["value"] for b in bars]
    errors = [
        [100 * (b["value"] - b["low"]) if b["low"] is not None else 0 for b in bars],
        [100 * (b["high"] - b["value"]) if b["high"] is not None else 0 for b in bars],
    ]
    axes.bar(range(len(bars)), values, yerr=errors, capsize=4, color="#4c72b0")
    axes.set_xticks(range(len(bars)))
    lower = dict.fromkeys(DISTANCE_MEASURES, "\n(lower is better)")
    axes.set_xticklabels([f"{b['benchmark']}\n{b['measure']}{lower.get(b['measure'], '')}" for b in bars], fontsize=7)
    axes.set_ylabel("×100")
    # The name is the user's: a `$…$` in it would be parsed as mathtext (and a bad one fail the whole card).
    axes.set_title(f"Judge card: {judge}"[:80].replace("$", r"\$"), fontsize=9)
    figure.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    figure.savefig(tmp)
    tmp.replace(path)
    return True


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
