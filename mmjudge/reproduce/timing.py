"""Inference time per sample (VELA's Table 1, last column), measured on whatever device runs it.

A metric is timed on the first ``samples`` items of a benchmark after one warm-up item (models load, kernels
compile), through the same stream every run uses, with its persistent caches set aside (:meth:`Metric.uncached
<mmjudge.metrics.base.Metric.uncached>`: the judge cache, an encoder's embedding store): the time of the work,
not of a cache hit. The figure is wall
time divided by the items, so it includes image decoding and batching, as a user running the metric would see
it; the device is named with it, because the paper's RTX 3090 figures and this machine's are not comparable.

>>> from mmjudge.metrics.baselines import Baselines
>>> items = [{"id": str(k), "text": f"a dog number {k}", "references": ["a dog"]} for k in range(4)]
>>> t = time_metric(Baselines("rouge_l"), items, samples=3)
>>> t.samples, t.ms_per_sample > 0, bool(t.device)
(3, True, True)
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """``ms_per_sample`` over ``samples`` items on ``device``."""

    ms_per_sample: float
    samples: int
    device: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def time_metric(metric: Any, items: Sequence[dict], samples: int = 20) -> Timing:
    """Time ``metric`` on ``items[1 : samples + 1]`` after a warm-up on ``items[0]``, its persistent caches set
    aside (``metric.uncached()``). Its in-memory caches stay: time a metric before it scores anything else, and
    afterwards it scores as it would have.

    Raises:
        ValueError: fewer than two items, or ``samples`` below 1.
    """
    if samples < 1:
        raise ValueError(f"Expected at least 1 timing sample, but got {samples}.")
    if len(items) < 2:
        raise ValueError("Timing needs at least two items (one to warm up, one to time).")
    timed = list(items[1 : samples + 1])
    with metric.uncached():
        for _ in metric.stream(list(items[:1]), progress=False, on_error="record"):
            pass
        start = time.perf_counter()
        for _ in metric.stream(timed, progress=False, on_error="record"):
            pass
        elapsed = time.perf_counter() - start
    return Timing(round(1000 * elapsed / len(timed), 3), len(timed), describe_device())


def describe_device() -> str:
    """The GPU's name when torch sees one, else the CPU's model and core count."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"GPU {torch.cuda.get_device_name(0)}"
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"CPU {model} ({os.cpu_count()} cores)"
