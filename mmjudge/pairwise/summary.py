"""What a run of comparisons found, per criterion: how often A won, lost or tied, the mean preference, the
judge's position bias and how often its verdict followed the slot — accumulated row by row, so a run of
any length is summarised in constant memory.

>>> s = PairSummary(["fluency"])
>>> for p, bias, follows in ((0.9, 0.1, 0.0), (0.5, 0.0, 0.0), (0.2, 0.3, 1.0)):
...     s.add({"overall": p, "fluency": p, "fluency_position_bias": bias, "fluency_slot_following": follows,
...            "fluency_status": "ok"})
>>> row = s.rows()[1]
>>> row["criterion"], row["a_wins"], row["b_wins"], row["ties"], round(row["mean_preference"], 4)
('fluency', 1, 1, 1, 0.5333)
>>> round(row["position_bias"], 4), round(row["slot_following"], 4)
(0.1333, 0.3333)
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mmjudge.inputs import is_number
from mmjudge.metrics.statuses import add_failures, failure_line


def _number(value: Any) -> float:
    if is_number(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


class PairSummary:
    """Counts and sums per criterion (and ``overall``) over comparison rows."""

    def __init__(self, criteria: Sequence[str]):
        self.criteria = list(criteria)
        self.pairs = 0
        self.not_compared = 0  # rows with an `error` (bad input)
        self.first_error: str | None = None
        self.unanswered = 0  # rows where the judge gave no answer on some criterion
        self.failures: dict[str, dict[str, int]] = {}  # criterion -> status -> rows (as ratings count them)
        self._stats = {
            name: dict.fromkeys(("n", "a", "b", "tie", "sum", "bias", "follow", "failed"), 0.0)
            for name in ["overall", *self.criteria]
        }

    def add(self, row: dict) -> None:
        """Count one row (as written: NaN or ``None`` where there is no preference)."""
        self.pairs += 1
        if row.get("error"):
            self.not_compared += 1
            self.first_error = self.first_error or str(row["error"])
            return
        if add_failures(self.failures, {k: v for k, v in row.items() if v not in ("", None)}):
            self.unanswered += 1
        for name, stats in self._stats.items():
            value = _number(row.get(name))
            if not math.isfinite(value):
                stats["failed"] += 1
                continue
            stats["n"] += 1
            stats["sum"] += value
            stats["a" if value > 0.5 else "b" if value < 0.5 else "tie"] += 1
            if name != "overall":
                stats["bias"] += _number(row.get(f"{name}_position_bias"))
                stats["follow"] += _number(row.get(f"{name}_slot_following"))

    def rows(self) -> list[dict[str, Any]]:
        """One dict per criterion, ``overall`` first: ``a_wins``, ``b_wins``, ``ties``, ``no_preference``,
        ``mean_preference`` (mean P(A better)), ``position_bias`` (mean β) and ``slot_following`` (share of
        pairs whose verdict followed the slot in both orders); NaN where nothing was compared."""
        out = []
        for name, s in self._stats.items():
            n = s["n"]
            out.append(
                {
                    "criterion": name,
                    "a_wins": int(s["a"]),
                    "b_wins": int(s["b"]),
                    "ties": int(s["tie"]),
                    "no_preference": int(s["failed"]),
                    "mean_preference": _mean(s["sum"], n),
                    "position_bias": math.nan if name == "overall" else _mean(s["bias"], n),
                    "slot_following": math.nan if name == "overall" else _mean(s["follow"], n),
                }
            )
        return out

    def table(self) -> str:
        """The summary as aligned text (what ``mmjudge compare`` prints at the end)."""
        names = f"{'P(A>B)':>7s} {'A wins':>7s} {'B wins':>7s} {'ties':>6s} {'none':>6s} {'bias':>7s} {'slot':>6s}"
        lines = [f"{'criterion':14s} {names}"]
        for r in self.rows():
            cells = [
                _fmt(r["mean_preference"], 3),
                f"{r['a_wins']:7d}",
                f"{r['b_wins']:7d}",
                f"{r['ties']:6d}",
                f"{r['no_preference']:6d}",
                _fmt(r["position_bias"], 3, signed=True),
                _fmt(r["slot_following"], 2, width=6),
            ]
            lines.append(f"{r['criterion']:14s} " + " ".join(cells))
        lines.append(
            "P(A>B): mean preference for A; bias: the first slot's mean advantage (0 = none); slot: share of pairs "
            "whose verdict followed the slot in both orders"
        )
        return "\n".join(lines)

    def failure_lines(self) -> list[str]:
        """The lines a run ends with: pairs that could not be compared, pairs the judge gave no answer for."""
        lines = []
        if self.not_compared:
            lines.append(
                f"{self.not_compared} of {self.pairs} pairs could not be compared (the reason is in `error`); "
                f"first: {self.first_error}"
            )
        if self.unanswered:
            lines.append(failure_line(self.failures, self.unanswered, self.pairs, unit="pair", judged="preference"))
        return lines


def _mean(total: float, n: float) -> float:
    return total / n if n else math.nan


def _fmt(value: float, digits: int, signed: bool = False, width: int = 7) -> str:
    if not math.isfinite(value):
        return f"{'—':>{width}s}"
    return f"{value:+{width}.{digits}f}" if signed else f"{value:{width}.{digits}f}"


def output_rows(path: str | Path) -> Iterator[dict]:
    """The rows of a finished output (JSON Lines, CSV or Parquet by suffix), one at a time."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            yield from csv.DictReader(f)
    elif path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            yield from batch.to_pylist()
    else:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)
