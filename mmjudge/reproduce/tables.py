"""The published tables as data: one TOML file per table (``tables/<name>.toml``: columns, rows and the
printed numbers) and one catalogue of how each row is computed (``tables/catalogue.toml``).

A **cell** is one published number: a row (a metric) × a column (a benchmark, its split and human criterion,
a measure, and how many references the metric sees). Its ``source`` says where the number is printed.

>>> tables = load_tables()
>>> sorted(tables)
['beyond_1', 'fleur_1', 'harmonic_eval_8', 'harmonic_eval_9', 'vela_1']
>>> cell = next(c for c in tables["harmonic_eval_8"].cells() if c.row.key == "bleu" and c.column.key == "f_ex")
>>> cell.benchmark, cell.measure, cell.published, cell.source
('flickr8k_expert', 'tau_c', 30.8, 'HarmonicEval paper (Ohi et al.), Table 8, row BLEU, column F-EX τc')
>>> cell.row.metric, cell.row.config
('baselines', 'bleu')
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.prompts import read_toml

HERE = Path(__file__).parent / "tables"
MEASURES = ("tau_b", "tau_c", "accuracy")
MEASURE_LABELS = {"tau_b": "τ-b", "tau_c": "τ-c", "accuracy": "accuracy"}


@dataclass(frozen=True)
class Row:
    """How one row is computed (the catalogue entry) and how the paper names it."""

    key: str
    label: str
    group: str = ""
    metric: str | None = None
    config: str | None = None
    options: dict = field(default_factory=dict)
    weights: tuple[str, ...] = ()
    judge: str | None = None
    gpu: bool = False
    images: bool = False
    tools: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    requires_note: str = ""
    unavailable: str = ""
    what: str = ""
    note: str = ""
    time_ms: float | None = None
    cell_notes: dict = field(default_factory=dict)  # column key -> what is known about that cell's number

    @property
    def name(self) -> str:
        """``metric`` or ``metric:config``, what ``mmjudge.load`` takes."""
        return f"{self.metric}:{self.config}" if self.config else str(self.metric)


@dataclass(frozen=True)
class Column:
    """One column: a figure of one benchmark."""

    key: str
    label: str
    benchmark: str
    measure: str
    split: str | None = None
    criterion: str = "overall"
    subset: str | None = None
    references: int | None = None

    @property
    def context(self) -> tuple[str, str | None, int | None]:
        """What the items depend on: cells sharing it are scored from the same items."""
        return (self.benchmark, self.split, self.references)


@dataclass(frozen=True)
class Cell:
    """One published number and what it takes to recompute it."""

    table: str
    row: Row
    column: Column
    published: float
    spread: float | None
    source: str

    @property
    def benchmark(self) -> str:
        return self.column.benchmark

    @property
    def note(self) -> str:
        """What is known about this published number (where it came from, why it may not reproduce), or ``""``."""
        return self.row.cell_notes.get(self.column.key, "")

    @property
    def measure(self) -> str:
        return self.column.measure

    @property
    def key(self) -> str:
        return f"{self.table}/{self.row.key}/{self.column.key}"


@dataclass
class Table:
    name: str
    title: str
    source: str
    columns: list[Column]
    rows: list[Row]
    published: dict[str, dict[str, float]]
    spread: dict[str, dict[str, float]]
    time_label: str = ""

    def cells(self) -> Iterator[Cell]:
        """Every published number, row by row in the paper's order."""
        for row in self.rows:
            for column in self.columns:
                value = self.published[row.key].get(column.key)
                if value is None:
                    continue  # "–" in the paper
                yield Cell(
                    table=self.name,
                    row=row,
                    column=column,
                    published=float(value),
                    spread=self.spread[row.key].get(column.key),
                    source=f"{self.source}, row {row.label}, column {column.label}",
                )


def load_catalogue(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Row key → how it is computed (``tables/catalogue.toml``)."""
    return read_toml(path or HERE / "catalogue.toml")


def load_table(path: str | Path, catalogue: dict[str, dict[str, Any]] | None = None) -> Table:
    """One table file, its rows completed from the catalogue.

    Raises:
        ValueError: a row the catalogue does not know, a measure not in :data:`MEASURES`, a published value
            for a column the table does not have.
    """
    path = Path(path)
    data = read_toml(path)
    catalogue = catalogue if catalogue is not None else load_catalogue()
    columns = [Column(**c) for c in data["columns"]]
    keys = {c.key for c in columns}
    for column in columns:
        if column.measure not in MEASURES:
            raise ValueError(f"{path.name}: column {column.key!r} has measure {column.measure!r}; expected {MEASURES}.")
    rows, published, spread = [], {}, {}
    for entry in data["rows"]:
        key = entry["key"]
        if key not in catalogue:
            raise ValueError(f"{path.name}: row {key!r} is not in {HERE.name}/catalogue.toml.")
        how = dict(catalogue[key])
        for name in ("weights", "tools", "requires"):
            how[name] = tuple(how.get(name, ()))
        rows.append(
            Row(
                key=key,
                label=entry["label"],
                group=entry.get("group", ""),
                note=entry.get("note", ""),
                time_ms=entry.get("time_ms"),
                cell_notes=dict(entry.get("cell_notes", {})),
                **how,
            )
        )
        unknown = set(entry.get("published", {})) - keys
        if unknown:
            raise ValueError(f"{path.name}: row {key!r} has values for unknown columns {sorted(unknown)}.")
        published[key] = dict(entry.get("published", {}))
        spread[key] = dict(entry.get("spread", {}))
    return Table(
        name=data["name"],
        title=data["title"],
        source=data["source"],
        columns=columns,
        rows=rows,
        published=published,
        spread=spread,
        time_label=data.get("time_label", ""),
    )


def load_tables(folder: Path | None = None) -> dict[str, Table]:
    """Every table shipped (``tables/*.toml`` except the catalogue), by name."""
    folder = folder or HERE
    catalogue = load_catalogue(folder / "catalogue.toml")
    tables = [load_table(p, catalogue) for p in sorted(folder.glob("*.toml")) if p.name != "catalogue.toml"]
    return {t.name: t for t in tables}


def select_cells(
    tables: dict[str, Table],
    table: str = "all",
    metrics: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
) -> list[Cell]:
    """The cells of ``table`` (or ``"all"``), restricted to row keys ``metrics`` and ``benchmarks``.

    Raises:
        ValueError: an unknown table, row key or benchmark (with the known ones), or a selection with no cell.
    """
    import difflib

    names = list(tables) if table == "all" else [table]
    for name in names:
        if name not in tables:
            close = difflib.get_close_matches(name, tables, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unknown table {name!r}.{hint} Tables: {', '.join(tables)}, or all.")
    cells = [c for name in names for c in tables[name].cells()]
    for wanted, attr, what in ((metrics, "row", "metric"), (benchmarks, "benchmark", "benchmark")):
        if not wanted:
            continue
        known = sorted({c.row.key if attr == "row" else c.benchmark for c in cells})
        for w in wanted:
            if w not in known:
                close = difflib.get_close_matches(w, known, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"No {what} {w!r} in {table}.{hint} Its {what}s: {', '.join(known)}.")
        cells = [c for c in cells if (c.row.key if attr == "row" else c.benchmark) in wanted]
    if not cells:
        raise ValueError(
            f"No cell of {table} has metrics {list(metrics or [])} on benchmarks {list(benchmarks or [])}."
        )
    return cells
