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


def profile_call(fn: Callable[[], Any], title: str, top: int = 10) -> dict:
    """Run ``fn`` once under the profiler and print the summary; returns the figures."""
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
    kernels: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == DeviceType.CUDA:
            kernels[event.name] = kernels.get(event.name, 0.0) + event.time_range.elapsed_us() / 1e6
    busy = sum(kernels.values())
    if not busy:  # a CPU run (smoke test): the phases' CPU time instead
        labels = {
            e.key: e.cpu_time_total / 1e6 for e in prof.key_averages() if e.key.startswith(("mmjudge.", "vision"))
        }
        print(
            f"  profile {title}: wall {wall:.2f} s, no GPU kernels recorded; CPU time by phase: "
            + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(labels.items(), key=lambda kv: -kv[1]))
        )
        return {"wall": wall, "busy": 0.0, "families": {}, "labels": labels}
    families: dict[str, float] = {}
    for name, seconds in kernels.items():
        families[kernel_family(name)] = families.get(kernel_family(name), 0.0) + seconds
    labels = {e.key: e.device_time_total / 1e6 for e in prof.key_averages() if e.key.startswith(("mmjudge.", "vision"))}
    print(
        f"  profile {title}: wall {wall:.2f} s, kernels {busy:.2f} s ({busy / wall:.0%} busy; the rest the GPU waits)"
    )
    print(
        "    by family : "
        + ", ".join(f"{k} {v:.2f} s ({v / busy:.0%})" for k, v in sorted(families.items(), key=lambda kv: -kv[1]))
    )
    if labels:
        print(
            "    by phase  : " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(labels.items(), key=lambda kv: -kv[1]))
        )
    for name, seconds in sorted(kernels.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {seconds:7.3f} s {seconds / busy:5.1%}  {name[:110]}")
    return {"wall": wall, "busy": busy, "families": families, "labels": labels}
