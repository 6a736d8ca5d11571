"""What a cell needs to be recomputed, and which of those are here: the benchmark's data folder (and its
images, for metrics that look at them), the metric itself, its weights, a judge behind an API, a GPU, a
program (Java for METEOR), files a metric reads outside Python (SPICE's CoreNLP jars), options only the user
can give. Nothing is loaded or downloaded to find out: weights are looked up in the local Hugging Face cache,
an API judge by its key's environment variable.

>>> from mmjudge.reproduce.tables import load_tables
>>> cell = next(c for c in load_tables()["harmonic_eval_8"].cells() if c.row.key == "tiger")
>>> [(n.what, n.present) for n in cell_needs(cell, data_dirs={}, options={}, scored=False)][:2]
[('metric', False), ('data', False)]
>>> first_missing(cell_needs(cell, data_dirs={}, options={}, scored=False)).split(":")[0]
'TIGEr is not in mmjudge'
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.reproduce.tables import Cell, Row

# Benchmarks a loader can fetch from the Hugging Face Hub when no data folder is given.
HUB_BENCHMARKS = ("longcap_arena", "nebula", "polaris", "detailcaps")
# Where each benchmark's images are (folder names, anywhere under its data folder), besides Parquet files
# that embed them.
IMAGE_FOLDERS = {
    "flickr8k_expert": ("Flicker8k_Dataset", "Flickr8k_Dataset", "Images", "images"),
    "flickr8k_cf": ("Flicker8k_Dataset", "Flickr8k_Dataset", "Images", "images"),
    "composite": ("Flicker8k_Dataset", "Flickr8k_Dataset", "flickr30k_images", "val2014"),
    "pascal50s": ("JPEGImages",),
    "foil": ("val2014",),
}


@dataclass(frozen=True)
class Need:
    """One thing a cell needs: ``what`` (``metric``, ``option``, ``data``, ``images``, ``weights``, ``judge``,
    ``gpu``, ``tool``), ``detail`` (which one), ``present`` (``None``: cannot be told without loading it),
    ``missing`` (the sentence a cell that cannot run shows) and, for a missing ``metric``, ``unregistered``: the
    row names an mmjudge metric or configuration that this installation does not register (not one that has no
    implementation)."""

    what: str
    detail: str
    present: bool | None
    missing: str = ""
    unregistered: bool = False

    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "?"}[self.present]


def first_missing(needs: list[Need]) -> str | None:
    """The reason the first missing need gives, or ``None`` when nothing is missing."""
    return next((n.missing or n.detail for n in needs if n.present is False), None)


def cell_needs(cell: Cell, data_dirs: Mapping[str, str], options: Mapping[str, Any], scored: bool) -> list[Need]:
    """Everything ``cell`` needs, in the order a missing one is reported. ``scored``: per-item scores come from
    a ``--scores`` file, so only the benchmark's data is needed (no metric, weights or judge)."""
    needs = [] if scored else _metric_needs(cell.row, options)
    needs.append(_data_need(cell.benchmark, data_dirs.get(cell.benchmark)))
    if scored:
        return needs
    if cell.row.images and not cell.row.unavailable:
        needs.append(_images_need(cell.benchmark, data_dirs.get(cell.benchmark)))
    if cell.row.unavailable or not _registered(cell.row.metric):
        return needs
    for weight in cell.row.weights:
        needs.append(_weights_need(weight, options))
    if cell.row.judge:
        needs.append(_judge_need(cell.row.judge, options))
    if cell.row.gpu:
        needs.append(
            Need("gpu", "a CUDA GPU", _has_gpu(), f"{cell.row.label} needs a GPU (its judge is too large for a CPU)")
        )
    for tool in cell.row.tools:
        found = shutil.which(tool) is not None
        needs.append(Need("tool", tool, found, f"{cell.row.label} needs `{tool}` on PATH (not found)"))
    if cell.row.check:
        needs.append(_files_need(cell.row.check, options))
    return needs


def _files_need(check: str, options: Mapping[str, Any]) -> Need:
    """The catalogue's ``check = "module:function"``: called with the options it names, it answers
    ``(what is needed, the missing sentence or None)`` without loading anything."""
    import importlib
    import inspect

    module, _, name = check.partition(":")
    function = getattr(importlib.import_module(module), name)
    wanted = inspect.signature(function).parameters
    detail, missing = function(**{k: v for k, v in options.items() if k in wanted})
    return Need("files", detail, missing is None, missing or "")


def _registered(metric: str | None) -> bool:
    from mmjudge.metrics import METRICS

    return metric is not None and metric in METRICS.names()


def _metric_needs(row: Row, options: Mapping[str, Any]) -> list[Need]:
    if row.unavailable:
        return [Need("metric", row.label, False, row.unavailable)]
    if not _registered(row.metric):
        missing = f"metric not available: {row.metric!r} is not registered in this mmjudge"
        return [Need("metric", row.name, False, missing, unregistered=True)]
    if row.config:
        from mmjudge.metrics import METRICS

        configs = getattr(METRICS.get(row.metric), "configs", ())
        if configs and row.config not in configs:
            return [
                Need(
                    "metric",
                    row.name,
                    False,
                    f"metric not available: {row.metric!r} has no configuration {row.config!r} "
                    f"(it has {', '.join(configs)})",
                    unregistered=True,
                )
            ]
    needs = [Need("metric", row.name, True)]
    missing = [key for key in row.requires if key not in options]
    if missing:
        needs.append(
            Need("option", ", ".join(missing), False, row.requires_note or f"needs --option {row.key}:KEY=VALUE")
        )
    return needs


def _data_need(benchmark: str, folder: str | None) -> Need:
    if folder:
        ok = Path(folder).expanduser().is_dir()
        return Need("data", f"{benchmark}: {folder}", ok, f"--data-dir {benchmark}={folder}: not a folder")
    if benchmark in HUB_BENCHMARKS:
        offline = _offline()
        return Need(
            "data",
            f"{benchmark}: from the Hugging Face Hub",
            not offline,
            f"no data: {benchmark} comes from the Hub, and offline mode is on; pass --data-dir {benchmark}=DIR",
        )
    return Need("data", f"{benchmark}: no folder given", False, f"no data: pass --data-dir {benchmark}=DIR")


def _images_need(benchmark: str, folder: str | None) -> Need:
    if not folder:
        embedded = benchmark in HUB_BENCHMARKS and not _offline()
        return Need(
            "images", f"{benchmark} images", embedded, f"no images: pass --data-dir {benchmark}=DIR with its images"
        )
    folders = IMAGE_FOLDERS.get(benchmark, ())
    ok = _has_images(Path(folder).expanduser(), folders)
    return Need(
        "images",
        f"{benchmark} images in {folder}",
        ok,
        f"no images: {folder} holds none of {benchmark}'s image folders ({', '.join(folders)}) "
        "nor Parquet files that embed them",
    )


def _has_images(root: Path, folders: tuple[str, ...], depth: int = 3) -> bool:
    if not root.is_dir():
        return False
    for folder, subdirs, files in os.walk(root):
        if Path(folder).name in folders or any(f.endswith(".parquet") for f in files):
            return True
        if len(Path(folder).relative_to(root).parts) >= depth:
            subdirs[:] = []
    return False


def _weights_need(weight: str, options: Mapping[str, Any]) -> Need:
    given = options.get("model") or options.get("checkpoint")
    if given and Path(str(given)).expanduser().exists():
        return Need("weights", f"{weight} (given: {given})", True)
    if " " in weight:  # a description, not a Hub id: only the metric can tell
        return Need("weights", weight, None)
    return Need(
        "weights",
        weight,
        _in_hub_cache(weight),
        f"weights not present: {weight} is not in the Hugging Face cache"
        + (" and offline mode is on" if _offline() else " (it would be downloaded)"),
    )


def _judge_need(judge: str, options: Mapping[str, Any]) -> Need:
    if judge.startswith("openai:") and not options.get("base_url"):
        key = os.environ.get(str(options.get("api_key_env", "OPENAI_API_KEY")))
        return Need("judge", judge, bool(key), f"judge {judge} needs an API key: set OPENAI_API_KEY")
    return Need("judge", judge, True)


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for name in ("config.json", "model_index.json", "open_clip_config.json", "adapter_config.json"):
        if isinstance(try_to_load_from_cache(repo_id, name), str):
            return True
    return False


def _offline() -> bool:
    from mmjudge.models import hub_offline

    return bool(hub_offline())


@functools.lru_cache(maxsize=1)
def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def runnable(needs: list[Need]) -> bool:
    return all(n.present is not False for n in needs)
