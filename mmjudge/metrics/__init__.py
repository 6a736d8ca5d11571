"""Metrics of the engine: one folder each (``mmjudge/metrics/<name>/``), registered in :data:`METRICS`.

>>> from mmjudge.metrics import available_metrics
>>> "harmonic_eval" in available_metrics()
True
"""

from __future__ import annotations

import inspect
from typing import Any

from mmjudge.registry import Registry

# Metrics: name -> class. A new metric is one folder in this package (mmjudge/metrics/<name>/) and one line here.
METRICS = Registry(
    "metric",
    {
        "baselines": "mmjudge.metrics.baselines:Baselines",
        "capture": "mmjudge.metrics.capture:CAPTURE",
        "clip_score": "mmjudge.metrics.clip_score:CLIPScore",
        "expert": "mmjudge.metrics.expert:EXPERT",
        "fleur": "mmjudge.metrics.fleur:FLEUR",
        "harmonic_eval": "mmjudge.metrics.harmonic_eval:HarmonicEval",
        "infometic": "mmjudge.metrics.infometic:InfoMetIC",
        "pac_s": "mmjudge.metrics.pac_s:PACScore",
        "polos": "mmjudge.metrics.polos:Polos",
        "prompt_judge": "mmjudge.metrics.prompt_judge:PromptJudge",
        "vela": "mmjudge.metrics.vela:VELA",
    },
)


def available_metrics() -> list[str]:
    """Names accepted by :func:`mmjudge.load`."""
    return METRICS.names()


def load_metric(name: str, config_name: str | None = None, **kwargs: Any) -> Any:
    """Instantiate metric ``name``; ``config_name`` selects a configuration of metrics that have several
    (e.g. ``load_metric("fleur", "reffleur")``). The package's entry point :func:`mmjudge.load` is this."""
    cls = METRICS.get(name)
    if config_name is not None:
        if "config_name" not in inspect.signature(cls).parameters:
            raise ValueError(f"Metric {name!r} has no configurations, but config_name={config_name!r} was given.")
        kwargs["config_name"] = config_name
    from mmjudge.metrics.building import check_metric_options

    check_metric_options(cls, kwargs)  # a misspelt option is a clear ValueError, not a TypeError
    return cls(**kwargs)
