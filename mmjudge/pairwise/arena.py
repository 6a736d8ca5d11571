"""Ranking many systems from head-to-head battles: rounds of pairs chosen adaptively, each round streamed,
resumable and sharded like ``mmjudge score``.

:func:`rank_systems` reads every system's outputs on the same items, then runs the rounds of an
:class:`~mmjudge.pairwise.schedule.AdaptiveSchedule`: round ``r``'s battles (system a, system b, item) are
compared by :class:`~mmjudge.metrics.harmonic_eval.pairwise.PairwiseHarmonicEval` through
:func:`mmjudge.stream.score_file` into ``<output_dir>/round-<r>.jsonl`` (rows written as they finish; under
``torchrun`` each process judges its share). A run killed at any point and started again re-reads the finished
rounds, schedules exactly the same next battles (the schedule depends only on its settings and the battles
before), and resumes the unfinished round where its part files stop; ``arena.json`` records the systems,
settings and signature so a run with other ones is refused instead of mixed in. The result, :class:`Ranking`:
Bradley–Terry strengths with bootstrap intervals over items, the win-rate matrix and per-criterion win rates,
written as ``ranking.json``, ``ranking.md`` and ``win_rates.csv``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge import distributed
from mmjudge.inputs import is_number
from mmjudge.pairwise.bradley_terry import fit_bradley_terry, win_rates
from mmjudge.pairwise.schedule import (
    DEFAULT_ITEMS_PER_PAIR,
    DEFAULT_MAX_ROUNDS,
    AdaptiveSchedule,
    History,
    spread_anchors,
)
from mmjudge.pairwise.summary import output_rows
from mmjudge.report import CSV_LINE_END, csv_cell, json_safe, markdown_text

MANIFEST = "arena.json"
SHARED_FIELDS = ("image", "question", "box", "task")


@dataclass
class SystemOutputs:
    """Every system's text on the same items: ``ids`` (the first system's order), ``texts[name]`` aligned to
    them, and each item's shared fields (``image``, ``question``, ``box``, ``task``) from the first system."""

    names: list[str]
    ids: list[str]
    texts: dict[str, list[str]]
    shared: list[dict[str, Any]]


def read_systems(systems: Mapping[str, Any], **source_options: Any) -> SystemOutputs:
    """Read each system's outputs (any input ``score`` reads); one line naming what is wrong when a file has
    an unreadable line, a repeated id, or not the same ids as the first system."""
    from mmjudge.stream.sources import open_source

    names = list(systems)
    if len(names) < 2:
        raise ValueError(f"Ranking needs at least two systems, but got {len(names)}.")
    ids: list[str] = []
    texts: dict[str, list[str]] = {}
    shared: list[dict[str, Any]] = []
    for name in names:
        by_id: dict[str, str] = {}
        for item in open_source(systems[name], option=f"--system {name}", **source_options):
            where = f"--system {name}: {item.get('_source')}"
            if item.get("_error"):
                raise ValueError(f"{where}: {item['_error']}")
            key = str(item["id"]) if item.get("id") is not None else str(item["_i"])
            if key in by_id:
                raise ValueError(f"{where}: id {key!r} appears twice; every item needs its own id.")
            by_id[key] = item.get("text")
            if name == names[0]:
                ids.append(key)
                shared.append({k: item[k] for k in SHARED_FIELDS if item.get(k) is not None})
        missing = [i for i in ids if i not in by_id]
        if missing or len(by_id) != len(ids):
            extra = next((i for i in by_id if i not in set(ids)), None)
            what = f"has no item {missing[0]!r}" if missing else f"has item {extra!r}, which {names[0]} has not"
            raise ValueError(f"--system {name} {what}: every system needs its outputs on the same items (same ids).")
        texts[name] = [by_id[i] for i in ids]
    if not ids:
        raise ValueError(f"--system {names[0]}: no items.")
    return SystemOutputs(names, ids, texts, shared)


@dataclass
class Ranking:
    """Systems ranked from battles (arrays in the systems' given order).

    Attributes:
        strength, low, high: Bradley–Terry θ (mean 0; P(i beats j) = σ(θ_i − θ_j)) and its bootstrap interval.
        battles: battles with a preference, per system; win_rates: mean P(i ≻ j) (NaN: never met).
        criterion_win_rates: per criterion (and ``overall``), each system's mean preference over its battles.
        judged: battles judged (with or without a preference); possible: every pair of systems on every item.
    """

    systems: list[str]
    strength: np.ndarray
    low: np.ndarray
    high: np.ndarray
    battles: np.ndarray
    win_rates: np.ndarray
    criterion_win_rates: dict[str, np.ndarray]
    judged: int
    possible: int
    rounds: int
    no_preference: int = 0
    signature: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    resamples: np.ndarray | None = field(default=None, repr=False)  # bootstrap θ (resamples × systems), not saved

    def order(self) -> list[int]:
        """System indices from the strongest."""
        return [int(i) for i in np.argsort(-self.strength, kind="stable")]

    def rank(self, i: int) -> int:
        """1 + the number of systems whose interval lies wholly above system ``i``'s (ties where they overlap)."""
        if not math.isfinite(self.high[i]):
            return 1 + sum(1 for j in range(len(self.systems)) if self.strength[j] > self.strength[i])
        return 1 + sum(1 for j in range(len(self.systems)) if self.low[j] > self.high[i])

    def separated(self) -> bool:
        """Whether every two systems next to each other in the order have disjoint intervals."""
        order = self.order()
        return all(self.low[a] > self.high[b] for a, b in zip(order[:-1], order[1:]))

    def rows(self) -> list[dict[str, Any]]:
        """One dict per system, strongest first."""
        out = []
        for i in self.order():
            row = {
                "rank": self.rank(i),
                "system": self.systems[i],
                "strength": float(self.strength[i]),
                "ci_low": float(self.low[i]),
                "ci_high": float(self.high[i]),
                "battles": int(self.battles[i]),
            }
            row.update({f"win_rate_{c}": float(v[i]) for c, v in self.criterion_win_rates.items()})
            out.append(row)
        return out

    def markdown(self) -> str:
        """The ranking as a Markdown table (system names shown literally)."""
        criteria = list(self.criterion_win_rates)
        head = ["Rank", "System", "Strength", "95% interval", "Battles", *[f"Win rate: {c}" for c in criteria]]
        lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * 1 + "---|" + "---:|" * (len(head) - 2)]
        for row in self.rows():
            cells = [
                str(row["rank"]),
                markdown_text(row["system"]),
                f"{row['strength']:+.3f}",
                f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]",
                str(row["battles"]),
                *[_percent(row[f"win_rate_{c}"]) for c in criteria],
            ]
            lines.append("| " + " | ".join(cells) + " |")
        share = self.judged / self.possible if self.possible else math.nan
        lines.append("")
        lines.append(
            f"{self.judged:,} battles judged in {self.rounds} rounds: {share:.1%} of all {self.possible:,} "
            f"(every pair of systems on every item); intervals {'separate' if self.separated() else 'overlap for'} "
            "neighbours." + (f" {self.no_preference} battles got no preference." if self.no_preference else "")
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "systems": self.systems,
                "ranking": self.rows(),
                "win_rates": self.win_rates.tolist(),
                "judged": self.judged,
                "possible": self.possible,
                "rounds": self.rounds,
                "no_preference": self.no_preference,
                "separated": self.separated(),
                "signature": self.signature,
                "settings": self.settings,
            }
        )

    def save(self, folder: str | Path) -> None:
        """``ranking.json``, ``ranking.md`` and ``win_rates.csv`` (row system's mean preference over the column's)."""
        folder = Path(folder)
        (folder / "ranking.json").write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        (folder / "ranking.md").write_text(self.markdown() + "\n", encoding="utf-8")
        with open(folder / "win_rates.csv", "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator=CSV_LINE_END)  # CRLF: a CR in a name stays in its cell
            writer.writerow(["system", *[csv_cell(s) for s in self.systems]])
            for name, rates in zip(self.systems, self.win_rates):
                writer.writerow([csv_cell(name), *["" if not math.isfinite(r) else f"{r:.4f}" for r in rates]])


def _percent(value: float) -> str:
    return "—" if not math.isfinite(value) else f"{100 * value:.1f}"


def round_path(output_dir: str | Path, number: int) -> Path:
    return Path(output_dir) / f"round-{number:03d}.jsonl"


def rank_systems(
    metric: Any,
    systems: Mapping[str, Any],
    output_dir: str | Path,
    *,
    anchors: Sequence[str] | None = None,
    items_per_pair: int = DEFAULT_ITEMS_PER_PAIR,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    task: str | None = None,
    strict: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    chunk_size: int | None = None,
    source_options: dict | None = None,
    on_round: Callable[[int, int], None] | None = None,
) -> Ranking:
    """Rank ``systems`` (name → outputs file) with the pairwise ``metric`` (``HarmonicEval(...).pairwise()``).

    Args:
        output_dir: where the rounds' rows, ``arena.json`` and the ranking go (created if missing).
        anchors: systems every other one meets first (default: three spread over the given order).
        items_per_pair, max_rounds: see :class:`~mmjudge.pairwise.schedule.AdaptiveSchedule`.
        bootstrap, confidence, seed: the intervals (resampling items) and the item orders.
        strict, chunk_size, progress: as for :func:`mmjudge.stream.score_file`.
        on_round: called with ``(round, battles)`` before each round is judged.
    """
    outputs = read_systems(systems, **(source_options or {}))
    names = outputs.names
    unknown = [a for a in anchors or () if a not in names]
    if unknown:
        raise ValueError(f"--anchors: {unknown[0]!r} is not one of the systems ({', '.join(names)}).")
    anchor_ids = tuple(names.index(a) for a in anchors) if anchors else spread_anchors(len(names))
    schedule = AdaptiveSchedule(
        len(names), len(outputs.ids), anchor_ids, items_per_pair, max_rounds, bootstrap, confidence, seed
    )
    folder = Path(output_dir)
    _prepare_folder(folder, overwrite, _manifest(metric, outputs, schedule))
    history = History.empty()
    criteria = ["overall", *metric.criteria]
    per_criterion: dict[str, list[float]] = {c: [] for c in criteria}
    rounds = 0
    for number in range(max_rounds):
        battles = schedule.round(number, history)
        if not battles:
            break
        if on_round is not None:
            on_round(number, len(battles))
        rows = _judge_round(metric, outputs, battles, round_path(folder, number), task, strict, progress, chunk_size)
        a, b, item, _ = zip(*rows)
        history = history.extended(a, b, item, [r[3]["overall"] for r in rows])
        for c in criteria:
            per_criterion[c] += [r[3][c] for r in rows]
        rounds = number + 1
    ranking = _ranking(metric, outputs, schedule, history, per_criterion, rounds)
    if distributed.is_main():
        ranking.save(folder)
    return ranking


def _manifest(metric: Any, outputs: SystemOutputs, schedule: AdaptiveSchedule) -> dict[str, Any]:
    return {
        "systems": outputs.names,
        "items": len(outputs.ids),
        "inputs": inputs_digest(outputs),
        "signature": str(metric.signature),
        **schedule.settings(),
    }


def inputs_digest(outputs: SystemOutputs) -> str:
    """A digest of every system's texts and the items' shared fields: a finished round's rows are reused only
    by a run on the same outputs (the same names and ids with other texts would mix two runs' battles)."""
    import hashlib

    blob = json.dumps(
        [outputs.names, outputs.ids, outputs.texts, outputs.shared], sort_keys=True, default=lambda o: type(o).__name__
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def written_files(folder: str | Path, max_rounds: int = DEFAULT_MAX_ROUNDS) -> list[Path]:
    """Every file a ranking run writes into (or, with ``overwrite``, deletes from) ``folder``: the rounds'
    rows (and their part and merge files), the manifest, the ranking files."""
    folder = Path(folder)
    rounds = [round_path(folder, n) for n in range(max_rounds)]
    fixed = [folder / n for n in (MANIFEST, "ranking.json", "ranking.md", "win_rates.csv")]
    return list(dict.fromkeys([*rounds, *folder.glob("round-*.jsonl*"), *fixed]))


def _prepare_folder(folder: Path, overwrite: bool, manifest: dict[str, Any]) -> None:
    """The output folder for this run: emptied of an earlier run's files with ``overwrite``; else an earlier
    run's manifest must be this one's (same systems, items, settings, signature)."""
    if distributed.is_main():
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / MANIFEST
        if overwrite:
            for old in [
                *folder.glob("round-*.jsonl*"),
                path,
                *(folder / n for n in ("ranking.json", "ranking.md", "win_rates.csv")),
            ]:
                if old.exists():
                    old.unlink()
        if path.exists():
            earlier = json.loads(path.read_text(encoding="utf-8"))
            if "inputs" not in earlier:  # written before the inputs were recorded: checked as it was then
                manifest = {k: v for k, v in manifest.items() if k != "inputs"}
            if earlier != manifest:
                changed = next(k for k in {**earlier, **manifest} if earlier.get(k) != manifest.get(k))
                if changed == "inputs":
                    raise ValueError(
                        f"{folder}: holds a ranking run on other system outputs (the same systems and items, other "
                        "texts or images), whose battles would mix with this run's; pass --overwrite to start again, "
                        "or another --output-dir."
                    )
                raise ValueError(
                    f"{folder}: holds a ranking run with another {changed} ({earlier.get(changed)!r}, this run: "
                    f"{manifest.get(changed)!r}); pass --overwrite to start again, or another --output-dir."
                )
        else:
            path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    distributed.barrier()


def _judge_round(
    metric: Any,
    outputs: SystemOutputs,
    battles: list[tuple[int, int, int]],
    path: Path,
    task: str | None,
    strict: bool,
    progress: bool,
    chunk_size: int | None,
) -> list[tuple[int, int, int, dict[str, float]]]:
    """Judge one round's battles into ``path`` (resuming it if it was cut off); its rows as
    ``(a, b, item, {criterion: preference})``."""
    from mmjudge.stream import score_file

    names = outputs.names
    items = [
        {
            **outputs.shared[k],
            "id": f"{names[a]} vs {names[b]} on {outputs.ids[k]}",
            "text_a": outputs.texts[names[a]][k],
            "text_b": outputs.texts[names[b]][k],
            "system_a": names[a],
            "system_b": names[b],
            "item": outputs.ids[k],
        }
        for a, b, k in battles
    ]
    score_file(
        metric,
        items,
        str(path),
        task=task,
        strict=strict,
        progress=progress,
        chunk_size=chunk_size,
        keep=("system_a", "system_b", "item"),
    )
    position = {item_id: k for k, item_id in enumerate(outputs.ids)}
    rows = []
    for row, (a, b, k) in zip(output_rows(path), battles):
        if (row.get("system_a"), row.get("system_b"), row.get("item")) != (names[a], names[b], outputs.ids[k]):
            raise ValueError(f"{path}: its rows are not this round's battles; pass --overwrite to start again.")
        values = {c: _preference(row.get(c)) for c in ["overall", *metric.criteria]}
        rows.append((a, b, position[row["item"]], values))
    if len(rows) != len(battles):
        raise ValueError(f"{path}: holds {len(rows)} rows for {len(battles)} battles; pass --overwrite to start again.")
    return rows


def _preference(value: Any) -> float:
    return float(value) if is_number(value) else math.nan


def _ranking(
    metric: Any,
    outputs: SystemOutputs,
    schedule: AdaptiveSchedule,
    history: History,
    per_criterion: dict[str, list[float]],
    rounds: int,
) -> Ranking:
    n = len(outputs.names)
    fit = fit_bradley_terry(
        history.a,
        history.b,
        history.preference,
        history.item,
        n,
        schedule.bootstrap,
        schedule.confidence,
        schedule.seed,
    )
    criterion_rates = {}
    for c, values in per_criterion.items():
        p = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(p)
        sums = np.bincount(history.a[ok], p[ok], n) + np.bincount(history.b[ok], 1 - p[ok], n)
        counts = np.bincount(history.a[ok], minlength=n) + np.bincount(history.b[ok], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            criterion_rates[c] = np.where(counts > 0, sums / counts, np.nan)
    return Ranking(
        systems=outputs.names,
        strength=fit.strength,
        low=fit.low,
        high=fit.high,
        battles=fit.battles,
        win_rates=win_rates(history.a, history.b, history.preference, n),
        criterion_win_rates=criterion_rates,
        judged=len(history),
        possible=n * (n - 1) // 2 * len(outputs.ids),
        rounds=rounds,
        no_preference=int(np.sum(~np.isfinite(history.preference))),
        signature=str(metric.signature),
        settings={**schedule.settings(), "bootstrap": schedule.bootstrap},
        resamples=fit.resamples,
    )
