"""Inference time per sample (VELA's Table 1, last column), measured on whatever device runs it.

A metric is timed on the first ``samples`` items of a benchmark after one warm-up item (models load, kernels
compile), through the same stream every run uses, with its persistent caches set aside (:func:`caches_off`:
the judge cache, an encoder's embedding store): the time of the work, not of a cache hit. The figure is wall
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
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
    aside (:func:`caches_off`). Its in-memory caches stay: time a metric before it scores anything else, and
    afterwards it scores as it would have.

    Raises:
        ValueError: fewer than two items, or ``samples`` below 1.
    """
    if samples < 1:
        raise ValueError(f"Expected at least 1 timing sample, but got {samples}.")
    if len(items) < 2:
        raise ValueError("Timing needs at least two items (one to warm up, one to time).")
    timed = list(items[1 : samples + 1])
    with caches_off(metric):
        for _ in metric.stream(list(items[:1]), progress=False, on_error="record"):
            pass
        start = time.perf_counter()
        for _ in metric.stream(timed, progress=False, on_error="record"):
            pass
        elapsed = time.perf_counter() - start
    return Timing(round(1000 * elapsed / len(timed), 3), len(timed), describe_device())


@contextmanager
def caches_off(metric: Any) -> Iterator[None]:
    """While the block runs, ``metric`` neither reads nor writes a persistent cache, as if built with
    ``cache=False``; as it was afterwards. A judge's answer cache (a :class:`~mmjudge.judges.cached.CachedJudge`
    layer, with the store it lends its backend) is stepped around and an encoder's embedding store set aside,
    wherever the metric keeps them among its attributes and theirs (FLEUR's ``judge``, CLIP-S's ``encoder``,
    Polos' ``model.clip``).

    >>> from mmjudge.judges.cached import CachedJudge
    >>> from mmjudge.metrics.prompt_judge import PromptJudge
    >>> import os, tempfile
    >>> g = PromptJudge("g_veval", judge="dummy", cache=os.path.join(tempfile.mkdtemp(), "c.sqlite"))
    >>> with caches_off(g):
    ...     isinstance(g.judge, CachedJudge)
    False
    >>> isinstance(g.judge, CachedJudge)
    True
    """
    from mmjudge.judges.base import innermost
    from mmjudge.judges.cached import CachedJudge
    from mmjudge.store import ResultStore

    undo: list[tuple[Any, str, Any]] = []

    def set_aside(owner: Any, name: str, value: Any) -> None:
        undo.append((owner, name, vars(owner)[name]))
        setattr(owner, name, value)

    try:
        for part in list(_parts(metric, depth=2)):  # listed before anything is set aside
            for name, value in list(vars(part).items()):
                if isinstance(value, CachedJudge):
                    set_aside(part, name, value.inner)
                    backend = innermost(value)  # the API backend keeps its batch ledger in the cache's store
                    if getattr(backend, "__dict__", {}).get("store") is value.store:
                        set_aside(backend, "store", None)
            if not isinstance(part, CachedJudge) and isinstance(vars(part).get("store"), ResultStore):
                set_aside(part, "store", None)
        yield
    finally:
        for owner, name, value in reversed(undo):
            setattr(owner, name, value)


def _parts(obj: Any, depth: int, seen: set[int] | None = None) -> Iterator[Any]:
    """``obj`` and the objects its attributes hold, ``depth`` levels down (not classes, modules or functions)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or not hasattr(obj, "__dict__") or isinstance(obj, _NOT_PARTS):
        return
    seen.add(id(obj))
    yield obj
    if depth > 0:
        for value in list(vars(obj).values()):
            yield from _parts(value, depth - 1, seen)


_NOT_PARTS = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)


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
