"""Name resolution: our benchmark names to their builders, any other name to ``datasets.load_dataset``.

>>> "pascal50s" in available_datasets() and DATASETS.module_name("pascal50s")
'mmjudge.datasets.pascal50s'
"""

from __future__ import annotations

import os
from typing import Any

from mmjudge.registry import Registry

# Benchmarks: name -> builder class. A new benchmark is one module in this package (the builder and its
# `to_human_judgments`) and one line here.
DATASETS = Registry(
    "dataset",
    {
        "caparena": "mmjudge.datasets.caparena:CapArena",
        "composite": "mmjudge.datasets.composite:Composite",
        "flickr8k_cf": "mmjudge.datasets.flickr8k_cf:Flickr8kCF",
        "flickr8k_expert": "mmjudge.datasets.flickr8k_expert:Flickr8kExpert",
        "foil": "mmjudge.datasets.foil:FOIL",
        "longcap_arena": "mmjudge.datasets.longcap_arena:LongCapArena",
        "mllm_judge": "mmjudge.datasets.mllm_judge:MLLMJudge",
        "mm_rewardbench": "mmjudge.datasets.mm_rewardbench:MMRewardBench",
        "detailcaps": "mmjudge.datasets.detailcaps:DetailCaps",
        "mmhe": "mmjudge.datasets.mmhe:MMHE",
        "multi_crit": "mmjudge.datasets.multi_crit:MultiCrit",
        "nebula": "mmjudge.datasets.nebula:Nebula",
        "pascal50s": "mmjudge.datasets.pascal50s:Pascal50S",
        "polaris": "mmjudge.datasets.polaris:Polaris",
        "thumb": "mmjudge.datasets.thumb:THumB",
        "vl_rewardbench": "mmjudge.datasets.vl_rewardbench:VLRewardBench",
    },
)


def available_datasets() -> list[str]:
    """Names :func:`load_dataset` resolves itself (anything else goes to ``datasets.load_dataset``)."""
    return DATASETS.names()


def builder(name: str, data_dir: str | None = None, cache_dir: str | None = None, **config_kwargs: Any):
    """The benchmark's ``datasets`` builder (not yet prepared). ``config_kwargs``: ``expected_counts``,
    ``check_images`` (see :class:`mmjudge.datasets._base.BenchmarkConfig`) and benchmark options."""
    cls = DATASETS.get(name)
    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(str(data_dir)))
    return cls(data_dir=data_dir, cache_dir=cache_dir, **config_kwargs)


def load_dataset(name: str, split: str | None = None, data_dir: str | None = None, **kwargs: Any):
    """``mmjudge.load_dataset("mmhe", data_dir=...)`` → ``DatasetDict`` (or one ``Dataset`` with ``split``).

    Our names (:func:`available_datasets`) are built by their builder and cached the ``datasets`` way
    (``cache_dir``; ``download_mode="force_redownload"`` rebuilds); other names go to
    ``datasets.load_dataset(name, split=split, data_dir=data_dir, **kwargs)``.
    """
    key = name.replace("-", "_")
    if key not in available_datasets():
        import datasets

        ours = ", ".join(available_datasets())
        local = os.path.exists(os.path.expanduser(name))
        from mmjudge.models import hub_offline

        offline = hub_offline()
        from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES

        if offline and not local and "/" not in name and name not in _PACKAGED_DATASETS_MODULES:
            import difflib

            close = difflib.get_close_matches(key, available_datasets(), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"Unknown dataset {name!r}.{hint} mmjudge's benchmarks are {ours}, and offline mode is on, "
                "so no Hub dataset can be looked up; check the name or turn the network on."
            )
        try:
            return datasets.load_dataset(name, split=split, data_dir=data_dir, **kwargs)
        except (datasets.exceptions.DatasetNotFoundError, ConnectionError) as err:
            raise ValueError(
                f"Unknown dataset {name!r} (mmjudge's benchmarks are {ours}): {str(err).splitlines()[0]}"
            ) from None
    download_mode = kwargs.pop("download_mode", None)
    verification_mode = kwargs.pop("verification_mode", None)
    cache_dir = kwargs.pop("cache_dir", None)
    b = builder(key, data_dir=data_dir, cache_dir=cache_dir, **kwargs)
    b.download_and_prepare(download_mode=download_mode, verification_mode=verification_mode)
    return b.as_dataset(split=split)
