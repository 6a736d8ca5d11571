"""Which metrics the Space offers: every configuration the engine's registry declares
(:data:`mmjudge.metrics.METRICS`, :meth:`~mmjudge.metrics.base.Metric.spec_for`: ``label``, ``judged``,
``requires``, ``tasks``, ``inputs``, ``description``) whose label the settings list
(:data:`~mmjudge.space.settings.DEFAULT_METRICS`) and whose required options they give. Whether a metric
applies to a task, or to an item, is read from its declaration too.

>>> from mmjudge.space import Settings
>>> [c.label for c in metric_choices(Settings())]
['HarmonicEval', 'FLEUR', 'RefFLEUR', 'CLIP-S', 'RefCLIP-S', 'BLEU', 'ROUGE-L', 'CIDEr-D']
>>> [c.label for c in metric_choices(Settings()) if c.applies_to("reg")]
['HarmonicEval']
>>> choice = {c.label: c for c in metric_choices(Settings())}["RefCLIP-S"]
>>> choice.skip_reason({"task": "ic", "text": "a dog", "image": "x"})
'needs reference texts (one per line under References)'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mmjudge.metrics import METRICS
from mmjudge.metrics.spec import MetricSpec
from mmjudge.space.inputs import TASKS
from mmjudge.space.settings import Settings

_NEEDS = {
    "image": "needs an image",
    "references": "needs reference texts (one per line under References)",
    "question": "needs a question",
    "box": "needs a box",
}


@dataclass(frozen=True)
class MetricChoice:
    """One metric configuration the page offers."""

    label: str
    name: str
    config: str | None
    spec: MetricSpec

    @property
    def note(self) -> str:
        """One line on what it measures (the metric's own declaration)."""
        return self.spec.description

    def applies_to(self, task: str) -> bool:
        """The metric scores this task (its spec's ``tasks``): the page offers it only there."""
        return task in self.spec.tasks

    @property
    def explains(self) -> bool:
        """The metric can say why (its spec declares the ``explain`` option)."""
        return "explain" in self.spec.option_names()

    def skip_reason(self, item: dict) -> str | None:
        """Why this metric cannot score ``item`` (``None`` when it can)."""
        task = item.get("task", "ic")
        if task not in self.spec.tasks:
            names = ", ".join(TASKS.get(t, t) for t in self.spec.tasks)
            return f"scores {names} only"
        for spec in self.spec.inputs:
            needed = spec.required or task in spec.required_for
            if needed and spec.item_key != "text" and not item.get(spec.item_key):
                return _NEEDS.get(spec.kind, f"needs {spec.item_key}")
        return None


def declared_configurations(names: Sequence[str] | None = None) -> dict[str, tuple[str, str | None, MetricSpec]]:
    """label → (metric name, configuration, spec) for every configuration the registry declares (of the
    metrics in ``names`` when given); a metric that cannot even declare itself here is left out. The
    configuration is ``None`` for metrics that have only one (they take no ``config_name``)."""
    out: dict[str, tuple[str, str | None, MetricSpec]] = {}
    for name in METRICS.names() if names is None else names:
        try:
            cls = METRICS.get(name)
            configs = list(cls.configs) or [None]
            for config in configs:
                spec = cls.spec_for(config)
                out.setdefault(spec.label, (name, config if len(configs) > 1 else None, spec))
        except Exception:
            logging.getLogger("mmjudge.space").warning(
                "metric %s cannot declare itself; not offered", name, exc_info=True
            )
    return out


def metric_choices(settings: Settings, names: Sequence[str] | None = None) -> list[MetricChoice]:
    """The metric configurations this install offers: the settings' labels, in their order, that the
    registry declares and whose required options (``spec.requires``) the settings give."""
    declared = declared_configurations(names)
    out = []
    for label in settings.metrics:
        if label not in declared:
            continue
        name, config, spec = declared[label]
        options = settings.options_for(name, config)
        if any(option not in options for option in spec.requires):
            continue
        out.append(MetricChoice(label, name, config, spec))
    return out
