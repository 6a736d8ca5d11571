"""What a reproduction found: one :class:`CellResult` per cell (its ``cells.json`` object has exactly
:data:`FIELDS`) and the :class:`Reproduction` that holds them with the tables and each cell's needs. Values
only: :mod:`.run` computes them, :mod:`.output` shows and writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmjudge.reproduce.needs import Need
from mmjudge.reproduce.tables import Cell, Column, Table
from mmjudge.reproduce.timing import Timing

STATUSES = ("match", "outside", "not_run")
FIELDS = ("table", "metric", "benchmark", "measure", "published", "source", "ours", "low", "high", "status", "reason")


@dataclass
class CellResult:
    """One cell's outcome; :meth:`to_dict` gives the ``cells.json`` object (exactly :data:`FIELDS`)."""

    cell: Cell
    ours: float | None = None
    low: float | None = None
    high: float | None = None
    status: str = "not_run"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.cell.table,
            "metric": self.cell.row.key,
            "benchmark": benchmark_label(self.cell.column),
            "measure": self.cell.measure,
            "published": self.cell.published,
            "source": self.cell.source,
            "ours": self.ours,
            "low": self.low,
            "high": self.high,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass
class Reproduction:
    """What :func:`reproduce` returns: the tables, every cell's needs and (unless a dry run) its result."""

    tables: dict[str, Table]
    cells: list[Cell]
    needs: dict[str, list[Need]]
    results: dict[str, CellResult] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for result in self.results.values():
            out[result.status] += 1
        return out


def benchmark_label(column: Column) -> str:
    """The benchmark of a cell as ``cells.json`` names it: the loader's name, then split, human criterion and
    number of references when the column fixes them (``longcap_arena/testA/descriptiveness``, ``foil/1-ref``)."""
    parts = [column.benchmark]
    if column.split:
        parts.append(column.split)
    if column.criterion != "overall":
        parts.append(column.criterion)
    if column.references is not None:
        parts.append(f"{column.references}-ref")
    return "/".join(parts)
