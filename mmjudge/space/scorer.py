"""Scoring one item in the Space: each chosen metric loaded once (one judge shared by the judged ones),
run through the results layer (:class:`mmjudge.report.Report`), with why the others did not run.

>>> from mmjudge.space import Settings
>>> Scorer(Settings(judge="dummy")).score({"task": "ic", "text": "a dog", "image": None}, ["No-Such"]).skipped
{'No-Such': 'not available in this Space'}
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmjudge.report import Report, invisible_characters
from mmjudge.space.choices import MetricChoice, metric_choices
from mmjudge.space.inputs import SpaceInputError
from mmjudge.space.settings import Settings

Progress = Callable[..., Any]
PRIMARY = "HarmonicEval"  # the page's subject: its per-criterion chart, table and explanations


@dataclass
class SpaceResult:
    """One scored item: a :class:`Report` per metric that ran, and why the others did not."""

    item: dict
    reports: dict[str, Report] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    demo: bool = False
    warning: str = ""  # the demo's label (Settings.demo_warning)

    def row(self, label: str) -> dict:
        return self.reports[label].rows[0]

    @property
    def harmonic(self) -> dict | None:
        return self.row(PRIMARY) if PRIMARY in self.reports else None


class Scorer:
    """Loads each chosen metric once (one judge shared by HarmonicEval and FLEUR) and scores items.

    Args:
        settings: the Space's settings.
        judge: a ready judge to use instead of the one the settings name (tests: ``ScriptedJudge``).
    """

    def __init__(self, settings: Settings, judge: Any = None):
        self.settings = settings
        self.choices = {c.label: c for c in metric_choices(settings)}
        self._judge = judge
        self._metrics: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()  # two requests must not load the same model twice

    def judge(self) -> Any:
        if self._judge is None:
            from mmjudge.judges.factory import build_judge

            options = {"device": self.settings.device} if self.settings.device else {}
            cache = self.settings.cache or False
            self._judge = build_judge(self.settings.model, self.settings.judge, cache, **options)
        return self._judge

    def metric(self, label: str) -> Any:
        """The loaded metric of choice ``label``, loaded once (explanations are a per-call option, so one
        instance serves requests with and without them)."""
        with self._lock:
            if label not in self._metrics:
                self._metrics[label] = self._load(self.choices[label])
            return self._metrics[label]

    def _load(self, choice: MetricChoice) -> Any:
        import mmjudge

        kwargs: dict[str, Any] = self.settings.options_for(choice.name, choice.config)
        if choice.spec.judged:
            kwargs.update(judge=self.judge(), cache=False)  # one judge for all judged metrics; it carries the cache
        return mmjudge.load(choice.name, choice.config, **kwargs)

    def score(
        self, item: dict, labels: Sequence[str], explain: bool = False, progress: Progress | None = None
    ) -> SpaceResult:
        """Score ``item`` with the metrics named in ``labels`` (unknown or inapplicable ones are listed
        in ``skipped``). ``progress(fraction, desc=...)`` is called before each metric."""
        if not labels:
            raise ValueError("Metrics: none chosen. Tick at least one metric.")
        check_labels(labels)
        result = SpaceResult(item=item, demo=self.settings.demo, warning=self.settings.demo_warning)
        todo = []
        for label in labels:
            choice = self.choices.get(label)
            reason = "not available in this Space" if choice is None else choice.skip_reason(item)
            if reason:
                result.skipped[label] = reason
            else:
                todo.append(label)
        for k, label in enumerate(todo):
            if progress is not None:
                progress(k / len(todo), desc=f"{label}: loading and scoring")
            try:
                metric = self.metric(label)
                # Every chosen metric that can say why (its spec declares the option) is asked to.
                options = {"explain": True} if explain and self.choices[label].explains else {}
                result.reports[label] = Report.from_items(metric, [item], default_task=item["task"], **options)
            except Exception as err:
                if len(todo) == 1:
                    raise
                logging.getLogger("mmjudge.space").exception("%s failed", label)
                result.failed[label] = short_reason(err)
        if progress is not None:
            progress(1.0, desc="done")
        return result


def check_labels(labels: Sequence[str]) -> None:
    """A chosen metric's label is shown back on the page: one holding bidirectional controls or
    zero-width characters (which change how it reads) is refused in one line.

    >>> check_labels(["BLEU", "\u202eUELB"])
    Traceback (most recent call last):
    ...
    mmjudge.space.inputs.SpaceInputError: Metrics: the label '\u202eUELB' holds invisible characters that change
    how it is shown (U+202E); tick the metrics the page offers.
    """
    for label in labels:
        hidden = invisible_characters(str(label))
        if hidden:
            raise SpaceInputError(
                f"Metrics: the label {label!r} holds invisible characters that change how it is shown "
                f"({', '.join(dict.fromkeys(hidden))}); tick the metrics the page offers."
            )


def short_reason(err: BaseException, limit: int = 160) -> str:
    """The first line of an error, shortened, for a table cell (``|`` would break the table)."""
    first = (str(err).strip().splitlines() or [""])[0].replace("|", "/")
    text = f"{type(err).__name__}: {first}" if not isinstance(err, ValueError) else first
    return text if len(text) <= limit else text[: limit - 1] + "…"
