"""Metrics of the engine. Each module of this package is one metric and names its class ``ENTRY``.

>>> from mmjudge.metrics import available_metrics
>>> "harmonic_eval" in available_metrics()
True
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

from mmjudge import registry


def available_metrics() -> list[str]:
    """Names accepted by :func:`mmjudge.load`."""
    return registry.available(__name__)


def load_metric(name: str, config_name: Optional[str] = None, **kwargs: Any) -> Any:
    """Instantiate metric ``name``; ``config_name`` selects a configuration of metrics that have several
    (e.g. ``load_metric("fleur", "reffleur")``)."""
    cls = registry.entry(__name__, name, "metric")
    if config_name is not None:
        if "config_name" not in inspect.signature(cls).parameters:
            raise ValueError(f"Metric {name!r} has no configurations, but config_name={config_name!r} was given.")
        kwargs["config_name"] = config_name
    from mmjudge.metrics.base import check_metric_options

    check_metric_options(cls, kwargs)  # a misspelt option is a clear ValueError, not a TypeError
    return cls(**kwargs)
