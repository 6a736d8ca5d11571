"""Where the GPU time of one call goes: a ``torch.profiler`` summary the benchmarks print with ``--profile``.

It answers "is the GPU busy, and with what?": wall time against the summed kernel time (the rest is the GPU
waiting for the CPU: tokenising, image preprocessing, Python), kernel time by family (matrix products,
attention, copies, element-wise), the longest kernels, and the device time under mmjudge's labelled
phases (``record_function("mmjudge....")`` in the engine, plus the vision towers the benchmarks label).
The profiler slows the CPU side a little: read the shares, not the wall time, from it.

>>> kernel_family("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64")
'matmul'
>>> kernel_family("fmha_cutlassF_bf16_aligned_64x64_rf_sm80")
'attention'
>>> kernel_family("Memcpy DtoH (Device -> Pageable)")
'copy'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

_FAMILIES = (
    ("attention", ("flash", "fmha", "attention", "attn")),
    ("matmul", ("gemm", "xmma", "cutlass", "nvjet", "cublas", "matmul", "splitk")),
    ("copy", ("memcpy", "memset", "catarray", "copy", "index", "gather", "scatter")),
)


def kernel_family(name: str) -> str:
    """``matmul``, ``attention``, ``copy`` or ``elementwise`` (norms, activations, rotary, softmax, ...)."""
    lower = name.lower()
    for family, needles in _FAMILIES:
        if any(n in lower for n in needles):
            return family
    return "elementwise"


@contextmanager
def labelled(module: Any, label: str):
    """Label a submodule's forward (e.g. a vision tower) as ``label`` in the profile."""
    from torch.autograd.profiler import record_function

    open_ranges: list = []

    def enter(*_):
        scope = record_function(label)
        scope.__enter__()
        open_ranges.append(scope)

    def leave(*_):
        if open_ranges:
            open_ranges.pop().__exit__(None, None, None)

    hooks = [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


def _union_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` intervals: time the GPU ran at least one kernel (kernels on
    several streams can overlap; their plain sum would count that time twice)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


# CPU-side operations that wait for the GPU: each is a synchronisation the launching thread stalls on.
_SYNC_OPS = (
    "aten::_local_scalar_dense",
    "aten::item",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaMemcpyAsync",
    "cudaEventSynchronize",
    "aten::nonzero",
    "aten::masked_select",
)


def idle_gaps(intervals: list[tuple[float, float]], start: float, end: float, threshold: float = 1e-3) -> list:
    """``(gap start, gap seconds)`` of every stretch of at least ``threshold`` seconds inside ``[start, end]``
    in which no kernel ran, longest first.

    >>> idle_gaps([(1.0, 2.0), (2.0005, 3.0), (3.5, 4.0)], 0.0, 5.0)
    [(0.0, 1.0), (4.0, 1.0), (3.0, 0.5)]
    """
    gaps, cursor = [], start
    for a, b in sorted(intervals):
        if a - cursor >= threshold:
            gaps.append((cursor, a - cursor))
        cursor = max(cursor, b)
    if end - cursor >= threshold:
        gaps.append((cursor, end - cursor))
    return sorted(gaps, key=lambda g: -g[1])


def _gap_lines(prof: Any, intervals: list, label_names: set, wall: float) -> tuple[list[str], dict]:
    """Where the GPU sat idle: time in gaps over 1 ms, and for the five longest the labelled CPU range that
    was open at their middle (the innermost one), which says what the host was doing meanwhile."""
    from torch.autograd import DeviceType

    ranges = [
        (e.time_range.start / 1e6, e.time_range.end / 1e6, e.name)
        for e in prof.events()
        if e.device_type == DeviceType.CPU and (e.name in label_names or e.name.startswith("mmjudge."))
    ]
    # From the first event the profiler recorded (the host's work before the first kernel is idle GPU time too).
    first = min([e.time_range.start / 1e6 for e in prof.events()] + [a for a, _ in intervals])
    gaps = idle_gaps(intervals, first, first + wall)
    total = sum(seconds for _, seconds in gaps)
    lines = [f"    idle gaps : {total:.2f} s in {len(gaps)} gaps of 1 ms or more (of {wall:.2f} s wall)"]
    named = []
    for at, seconds in gaps[:5]:
        middle = at + seconds / 2
        open_ranges = sorted((b - a, name) for a, b, name in ranges if a <= middle <= b)
        named.append((seconds, open_ranges[0][1] if open_ranges else "no labelled range (the metric around the judge)"))
    if named:
        lines.append("    longest   : " + ", ".join(f"{s * 1000:.0f} ms in {n}" for s, n in named))
    return lines, {"idle_gap_seconds": total, "idle_gaps": len(gaps), "longest_gaps": named}


def profile_call(fn: Callable[[], Any], title: str, top: int = 10) -> dict:
    """Run ``fn`` once under the profiler and print the summary; returns the figures.

    Kernel time excludes the labelled phases (``record_function`` ranges show up as device events spanning
    their kernels, gaps included); "busy" is the union of kernel intervals over the wall time. The CPU side:
    the operations with the most self time, the synchronisations (with their counts) and the kernel launches,
    which say whether the GPU waits on Python, on transfers or on launches."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        start = time.perf_counter()
        fn()
        sync()
        wall = time.perf_counter() - start
    averages = prof.key_averages()
    label_names = {e.key for e in averages if e.key.startswith(("mmjudge.", "vision"))}
    kernels: dict[str, float] = {}
    intervals = []
    for event in prof.events():
        if event.device_type == DeviceType.CUDA and event.name not in label_names:
            kernels[event.name] = kernels.get(event.name, 0.0) + event.time_range.elapsed_us() / 1e6
            intervals.append((event.time_range.start / 1e6, event.time_range.end / 1e6))
    cpu_ops = sorted(
        ((e.key, e.self_cpu_time_total / 1e6, e.count) for e in averages if e.device_type == DeviceType.CPU),
        key=lambda item: -item[1],
    )
    syncs = [(k, s, c) for k, s, c in cpu_ops if k in _SYNC_OPS]
    launches = sum(c for k, _, c in cpu_ops if "LaunchKernel" in k or k == "cudaLaunchKernelExC")
    cpu_line = "    CPU self  : " + ", ".join(f"{k} {s:.3f} s ×{c}" for k, s, c in cpu_ops[:6])
    sync_line = "    CPU syncs : " + (", ".join(f"{k} {s:.3f} s ×{c}" for k, s, c in syncs) or "none recorded")
    busy_sum = sum(kernels.values())
    if not busy_sum:  # a CPU run (smoke test): the phases' CPU time instead
        labels = {e.key: e.cpu_time_total / 1e6 for e in averages if e.key in label_names}
        print(
            f"  profile {title}: wall {wall:.2f} s, no GPU kernels recorded; CPU time by phase: "
            + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(labels.items(), key=lambda kv: -kv[1]))
        )
        print(cpu_line)
        return {"wall": wall, "busy": 0.0, "families": {}, "labels": labels}
    busy = _union_seconds(intervals)
    families: dict[str, float] = {}
    for name, seconds in kernels.items():
        families[kernel_family(name)] = families.get(kernel_family(name), 0.0) + seconds
    labels = {e.key: e.device_time_total / 1e6 for e in averages if e.key in label_names}
    print(
        f"  profile {title}: wall {wall:.2f} s, GPU busy {busy:.2f} s ({busy / wall:.0%}; the rest it waits), "
        f"kernel time {busy_sum:.2f} s in {len(intervals)} kernels ({launches} launches)"
    )
    print(
        "    by family : "
        + ", ".join(f"{k} {v:.2f} s ({v / busy_sum:.0%})" for k, v in sorted(families.items(), key=lambda kv: -kv[1]))
    )
    if labels:
        print(
            "    by phase  : "
            + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(labels.items(), key=lambda kv: -kv[1]))
            + " (span on the GPU, gaps included)"
        )
    print(cpu_line)
    print(sync_line)
    gap_lines, gaps = _gap_lines(prof, intervals, label_names, wall)
    for line in gap_lines:
        print(line)
    for name, seconds in sorted(kernels.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {seconds:7.3f} s {seconds / busy_sum:5.1%}  {name[:110]}")
    return {
        "wall": wall,
        "busy": busy,
        "busy_share": busy / wall,
        "families": families,
        "labels": labels,
        "syncs": syncs,
        "launches": launches,
        **gaps,
    }
