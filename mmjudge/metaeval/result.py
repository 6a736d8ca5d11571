"""What a meta-evaluation returns: :class:`MetaEvalResult`, its figures as records, saved and loaded as JSON.

>>> result = MetaEvalResult(dataset="toy", metrics=["m"], records=[
...     {"metric": "m", "measure": "tau_c", "task": ALL, "criterion": OVERALL, "value": 0.5}])
>>> result.value("m", measure="tau_c"), result.headline("m")["value"]
(0.5, 0.5)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.metaeval.bootstrap import DEFAULT_CONFIDENCE, percentile_interval
from mmjudge.metaeval.correlation import MEASURES

ALL = "all"
AVG = "avg"
OVERALL = "overall"


@dataclass
class MetaEvalResult:
    """All figures of one benchmark, as flat records (one dict per figure and metric).

    Correlation records: ``dataset, metric, measure (tau_b|tau_c|pearson|spearman), task, criterion,
    protocol, score_key, value, ci_low, ci_high, n_rows, n_items, n_failed``. Accuracy records: ``dataset,
    metric, measure="accuracy", kind (best_of_n|pascal50s|foil|…), criterion, subset (task or category, or
    "avg"), value, ci_low, ci_high, n_pairs, n_units, n_failed``. ``n_rows`` / ``n_items`` / ``n_pairs``
    count what the figure used; ``n_failed`` the items it left out because the metric had no score for
    them. Values are in [-1, 1] / [0, 1] (tables show ×100). ``coverage`` holds, per metric, how its
    scores were joined (``by`` id or content, ``items``, ``unjoined_rows``) and how many items failed
    (``failed``: no score in a column some figure used).
    """

    dataset: str
    metrics: list[str]
    records: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)
    correlation: str = "tau_c"
    criteria: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    coverage: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (figure key, metric) -> bootstrap values; kept in memory only, for paired comparisons.
    resamples: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def correlation_measure(self) -> str:
        """The benchmark's correlation measure (``tau_c`` when it names none, e.g. ``"accuracy"``)."""
        return self.correlation if self.correlation in MEASURES else "tau_c"

    def find(self, metric: str, **where: Any) -> list[dict[str, Any]]:
        return [r for r in self.records if r["metric"] == metric and all(r.get(k) == v for k, v in where.items())]

    def value(self, metric: str, **where: Any) -> float:
        """The value of the one record of ``metric`` matching ``where`` (e.g. ``measure="tau_c"``)."""
        found = self.find(metric, **where)
        if len(found) != 1:
            raise ValueError(f"{len(found)} records of {metric!r} match {where}, expected exactly one.")
        return found[0]["value"]

    def headline(self, metric: str) -> dict[str, Any] | None:
        """The benchmark's usual single figure (Table 8): mean accuracy when it has preference pairs,
        else its correlation (``correlation`` measure) on the overall criterion over all tasks."""
        acc = list(self.find(metric, measure="accuracy"))
        if acc:
            kind = acc[0]["kind"]
            same = [r for r in acc if r["kind"] == kind]
            overall = [r for r in same if r.get("criterion", "overall") == "overall"] or same
            return next((r for r in overall if r["subset"] == AVG), overall[0])
        corr = self.find(metric, measure=self.correlation_measure)
        if not corr:
            return None
        criterion = "overall" if any(r["criterion"] == "overall" for r in corr) else corr[0]["criterion"]
        task = ALL if any(r["task"] == ALL for r in corr) else corr[0]["task"]
        return next(r for r in corr if r["criterion"] == criterion and r["task"] == task)

    def compare(self, metric_a: str, metric_b: str, confidence: float | None = None, **where: Any) -> dict:
        """Paired bootstrap comparison of one figure between two metrics: ``difference`` (a − b), its
        interval, and ``share_b_not_worse`` (share of resamples where b ≥ a; small means a is reliably
        better). Needs the in-memory resamples (not kept in saved JSON)."""
        rec_a, rec_b = self.find(metric_a, **where), self.find(metric_b, **where)
        if len(rec_a) != 1 or len(rec_b) != 1:
            raise ValueError(f"Expected one figure matching {where} for both {metric_a!r} and {metric_b!r}.")
        key = figure_key(rec_a[0])
        if (key, metric_a) not in self.resamples or (key, metric_b) not in self.resamples:
            raise ValueError("No bootstrap resamples in memory: run meta_evaluate with bootstrap > 0.")
        diff = self.resamples[(key, metric_a)] - self.resamples[(key, metric_b)]
        low, high = percentile_interval(diff, confidence or self.options.get("confidence", DEFAULT_CONFIDENCE))
        finite = diff[np.isfinite(diff)]
        return {
            "metric_a": metric_a,
            "metric_b": metric_b,
            **dict(where.items()),
            "difference": rec_a[0]["value"] - rec_b[0]["value"],
            "ci_low": low,
            "ci_high": high,
            "share_b_not_worse": float(np.mean(finite <= 0)) if finite.size else float("nan"),
        }

    def failure_lines(self) -> list[str]:
        """One line per metric with failed items, e.g. ``harmonic_eval: 3 of 5,664 items had no score and
        were left out``."""
        return [
            f"{metric}: {c['failed']:,} of {c['items']:,} items had no score and were left out"
            for metric, c in self.coverage.items()
            if c.get("failed")
        ]

    # --------------------------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "metrics": self.metrics,
            "correlation": self.correlation,
            "criteria": self.criteria,
            "tasks": self.tasks,
            "options": self.options,
            "coverage": self.coverage,
            "records": [{k: _jsonable(v) for k, v in r.items()} for r in self.records],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetaEvalResult:
        records = [
            {k: (math.nan if v is None and k in _FLOAT_FIELDS else v) for k, v in r.items()} for r in data["records"]
        ]
        return cls(
            dataset=data["dataset"],
            metrics=list(data["metrics"]),
            records=records,
            options=dict(data.get("options", {})),
            correlation=data.get("correlation", "tau_c"),
            criteria=list(data.get("criteria", [])),
            tasks=list(data.get("tasks", [])),
            coverage=dict(data.get("coverage", {})),
        )

    @classmethod
    def load_all(cls, path: str | Path) -> list[MetaEvalResult]:
        """Results saved by :meth:`save` or :func:`~mmjudge.metaeval.write_outputs` (one or a list)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            return [cls.from_dict(d) for d in (data if isinstance(data, list) else [data])]
        except (OSError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{path}: not a saved meta-evaluation result ({err}).") from None

    @classmethod
    def load(cls, path: str | Path) -> MetaEvalResult:
        """The one result saved in ``path``."""
        results = cls.load_all(path)
        if len(results) != 1:
            raise ValueError(f"{path}: holds {len(results)} results; use MetaEvalResult.load_all.")
        return results[0]


_FLOAT_FIELDS = ("value", "ci_low", "ci_high")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; `load` turns it back
    if isinstance(value, np.generic):
        return value.item()
    return value


def figure_key(record: Mapping[str, Any]) -> tuple:
    """What makes two records the same figure for two metrics (measure, task, criterion, protocol …)."""
    fields = ("measure", "task", "criterion", "protocol", "kind", "subset")
    return tuple((k, record.get(k)) for k in fields)
