"""mmjudge: automatic evaluation of text written by vision-language models.

>>> import mmjudge
>>> he = mmjudge.load("harmonic_eval", judge="dummy", cache=False)
>>> he.criteria
['correctness', 'completeness', 'clarity', 'fluency', 'conciseness']
"""

from __future__ import annotations

from typing import Any

from mmjudge._version import __version__
from mmjudge.metrics import available_metrics, load_metric
from mmjudge.metrics.harmonic_eval import HarmonicEval

__all__ = ["__version__", "HarmonicEval", "load", "available_metrics", "load_dataset"]


def load(name: str, config_name: str | None = None, **kwargs: Any) -> Any:
    """The package's entry point: ``mmjudge.load("harmonic_eval", model=...)`` returns the engine metric
    (same options as its class). See :func:`mmjudge.metrics.available_metrics`."""
    return load_metric(name, config_name, **kwargs)


def __getattr__(name: str) -> Any:
    # Data-set support pulls in `datasets`; import it only when asked for.
    if name == "load_dataset":
        from mmjudge.datasets import load_dataset

        return load_dataset
    raise AttributeError(f"module 'mmjudge' has no attribute {name!r}")


def _register_evaluate_modules() -> None:
    from mmjudge.adapters import evaluate_registry

    evaluate_registry.register_quietly()


_register_evaluate_modules()
