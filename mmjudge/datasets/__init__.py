"""The human-judgment benchmarks as ``datasets`` builders, loadable in one line.

``datasets`` 5.x no longer runs loading scripts, so each benchmark is a ``GeneratorBasedBuilder``
subclass in this package (one module per benchmark, registered in :data:`DATASETS`). :func:`load_dataset`
resolves our names and defers any other name to :func:`datasets.load_dataset`;
:func:`human_judgments` turns a benchmark into the :class:`~mmjudge.human_judgments.HumanJudgments` contract
of the meta-evaluation; :func:`export_to_parquet` writes Parquet + a dataset card for the Hub.

>>> "mmhe" in available_datasets() and "longcap_arena" in available_datasets()
True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

from mmjudge.registry import Registry
from mmjudge.human_judgments import HumanJudgments

__all__ = ["load_dataset", "available_datasets", "builder", "human_judgments", "export_to_parquet", "card"]



# Benchmarks: name -> builder class. A new benchmark is one module in this package (the builder and its
# `to_human_judgments`) and one line here.
DATASETS = Registry("dataset", {
    "composite": "mmjudge.datasets.composite:Composite",
    "flickr8k_cf": "mmjudge.datasets.flickr8k_cf:Flickr8kCF",
    "flickr8k_expert": "mmjudge.datasets.flickr8k_expert:Flickr8kExpert",
    "foil": "mmjudge.datasets.foil:FOIL",
    "longcap_arena": "mmjudge.datasets.longcap_arena:LongCapArena",
    "mmhe": "mmjudge.datasets.mmhe:MMHE",
    "pascal50s": "mmjudge.datasets.pascal50s:Pascal50S",
    "thumb": "mmjudge.datasets.thumb:THumB",
})  # fmt: skip


def available_datasets() -> list[str]:
    """Names :func:`load_dataset` resolves itself (anything else goes to ``datasets.load_dataset``)."""
    return DATASETS.names()


def builder(name: str, data_dir: Optional[str] = None, cache_dir: Optional[str] = None, **config_kwargs: Any):
    """The benchmark's ``datasets`` builder (not yet prepared). ``config_kwargs``: ``expected_counts``,
    ``check_images`` (see :class:`mmjudge.datasets._base.BenchmarkConfig`) and benchmark options."""
    cls = DATASETS.get(name)
    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(str(data_dir)))
    return cls(data_dir=data_dir, cache_dir=cache_dir, **config_kwargs)


def load_dataset(name: str, split: Optional[str] = None, data_dir: Optional[str] = None, **kwargs: Any):
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
            raise ValueError(f"Unknown dataset {name!r}.{hint} mmjudge's benchmarks are {ours}, and offline mode is on, "
                             "so no Hub dataset can be looked up; check the name or turn the network on.")
        try:
            return datasets.load_dataset(name, split=split, data_dir=data_dir, **kwargs)
        except (datasets.exceptions.DatasetNotFoundError, ConnectionError) as err:
            raise ValueError(f"Unknown dataset {name!r} (mmjudge's benchmarks are {ours}): {str(err).splitlines()[0]}") from None
    download_mode = kwargs.pop("download_mode", None)
    verification_mode = kwargs.pop("verification_mode", None)
    cache_dir = kwargs.pop("cache_dir", None)
    b = builder(key, data_dir=data_dir, cache_dir=cache_dir, **kwargs)
    b.download_and_prepare(download_mode=download_mode, verification_mode=verification_mode)
    return b.as_dataset(split=split)


def human_judgments(name: str, dataset: Any = None, **load_kwargs: Any) -> HumanJudgments:
    """The benchmark ``name`` as :class:`HumanJudgments` (loading it with ``load_kwargs`` unless given)."""
    import importlib

    module = importlib.import_module(DATASETS.module_name(name))
    if dataset is None:
        dataset = load_dataset(name, **load_kwargs)
    return module.to_human_judgments(dataset)


def rows_of(dataset: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(split, row)`` for a ``Dataset`` or every split of a ``DatasetDict``, images left undecoded
    as {bytes, path} dicts would be heavy; they are decoded lazily by ``datasets`` (PIL) on access."""
    import datasets

    if isinstance(dataset, datasets.DatasetDict):
        return [(split, row) for split, ds in dataset.items() for row in ds]
    return [(str(dataset.split or "test"), row) for row in dataset]


def caption_judgments(name: str, dataset: Any, correlation: str, per_rating: bool,
                      criteria: Optional[list[str]] = None) -> HumanJudgments:
    """Shared by the caption sets: one item per row; one rating per human judgment (``per_rating``,
    the Flickr8k protocol) or one rating per row and criterion (``criteria``, e.g. THumB)."""
    items, ratings = [], []
    for _split, row in rows_of(dataset):
        items.append({"id": row["id"], "task": "ic", "text": row["text"], "image": row.get("image"),
                      "references": list(row.get("references") or [])})
        if criteria:
            for criterion in criteria:
                ratings.append({"id": row["id"], "task": "ic", "criterion": criterion,
                                "score": float(row[criterion]), "annotator": None})
        elif per_rating:
            for k, value in enumerate(row["ratings"]):
                ratings.append({"id": row["id"], "task": "ic", "criterion": "overall", "score": float(value),
                                "annotator": str(k) if len(row["ratings"]) > 1 else None})
        else:
            ratings.append({"id": row["id"], "task": "ic", "criterion": "overall", "score": float(row["score"]),
                            "annotator": None})
    return HumanJudgments(name=name, items=items, ratings=ratings, correlation=correlation,
                          criteria=list(criteria or []))


CATEGORICAL_COLUMNS = ("task",)


def export_to_parquet(name: str, out_dir: Union[str, Path], dataset: Any = None, **load_kwargs: Any) -> Path:
    """Write ``out_dir/data/<split>-00000-of-00001.parquet`` and ``out_dir/README.md`` (the card, whose
    YAML ``configs`` lets ``datasets.load_dataset(out_dir)`` — or the pushed Hub repo — read it back).

    The export follows the ``datasets`` conventions: categorical columns (``task``) become
    ``ClassLabel`` (names shared by every split), the Parquet files carry the features *and* the
    ``DatasetInfo`` texts (description, citation, licence, homepage) in their ``huggingface`` schema
    metadata, and the card's YAML holds ``license``, ``license_link``, ``size_categories``, ``configs``
    and ``dataset_info``. ``datasets.load_dataset("parquet", data_files=...)`` restores the features
    (ClassLabel names included); :func:`export_info` reads the info texts back from a file.
    """
    import datasets

    cls = DATASETS.get(name)
    out = Path(out_dir)
    (out / "data").mkdir(parents=True, exist_ok=True)
    if dataset is None:
        dataset = load_dataset(name, **load_kwargs)
    if isinstance(dataset, datasets.Dataset):
        dataset = datasets.DatasetDict({str(dataset.split or "test"): dataset})
    for column in CATEGORICAL_COLUMNS:
        first = next(iter(dataset.values()))
        if column in first.column_names and isinstance(first.features[column], datasets.Value):
            names = sorted({str(v) for ds in dataset.values() for v in ds[column] if v is not None})
            dataset = datasets.DatasetDict(
                {split: ds.cast_column(column, datasets.ClassLabel(names=names)) for split, ds in dataset.items()}
            )
    texts = {"description": cls.DESCRIPTION, "citation": cls.CITATION, "license": cls.LICENSE, "homepage": cls.HOMEPAGE}
    sizes, nbytes = {}, {}
    for split, ds in dataset.items():
        path = out / "data" / f"{split}-00000-of-00001.parquet"
        ds.to_parquet(str(path))
        _add_info_metadata(path, texts, ds.features)
        sizes[split], nbytes[split] = ds.num_rows, ds.data.nbytes
    features = next(iter(dataset.values())).features
    (out / "README.md").write_text(card(name, splits=sizes, features=features, split_bytes=nbytes), encoding="utf-8")
    return out


def _add_info_metadata(path: Path, texts: dict[str, str], features: Any = None) -> None:
    """Put the DatasetInfo texts beside the features in the file's ``huggingface`` schema metadata.

    Parquet metadata cannot be edited in place, and ``Dataset.to_parquet`` takes no extra schema metadata,
    so the file is copied once more — row group by row group, keeping the row-group layout ``datasets``
    chose (its writer batch size: ``datasets.config.DEFAULT_MAX_BATCH_SIZE`` / ``MAX_ROW_GROUP_SIZE`` or
    the per-modality ``PARQUET_ROW_GROUP_SIZE_FOR_*``), its per-column options and the page index, so the
    Hub viewer and random access see the same file ``to_parquet`` wrote. The copy replaces the original
    only when complete."""
    import json

    import pyarrow.parquet as pq

    source = pq.ParquetFile(path)
    schema = source.schema_arrow
    metadata = dict(schema.metadata or {})
    hf = json.loads(metadata.get(b"huggingface", b"{}"))
    hf.setdefault("info", {}).update(texts)
    metadata[b"huggingface"] = json.dumps(hf).encode()
    schema = schema.with_metadata(metadata)
    options: dict[str, Any] = {"write_page_index": True}
    if features is not None:
        try:  # the per-column compression / dictionary choices to_parquet made (datasets >= 4)
            from datasets.arrow_writer import get_parquet_column_options

            options.update(get_parquet_column_options(features, schema))
        except ImportError:
            pass
    tmp = path.with_name(path.name + ".tmp")
    try:
        with pq.ParquetWriter(tmp, schema, **options) as writer:
            for i in range(source.num_row_groups):
                group = source.read_row_group(i)
                writer.write_table(group.replace_schema_metadata(metadata), row_group_size=max(1, group.num_rows))
        tmp.replace(path)
    finally:
        source.close()
        tmp.unlink(missing_ok=True)


def export_info(path: Union[str, Path]) -> Any:
    """The ``datasets.DatasetInfo`` (features, description, citation, licence, homepage) stored in an
    exported Parquet file."""
    import json

    import datasets
    import pyarrow.parquet as pq

    hf = json.loads((pq.read_schema(path).metadata or {}).get(b"huggingface", b"{}")).get("info", {})
    return datasets.DatasetInfo(
        description=hf.get("description", ""), citation=hf.get("citation", ""), license=hf.get("license", ""),
        homepage=hf.get("homepage", ""), features=datasets.Features.from_dict(hf["features"]) if "features" in hf else None,
    )


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return label
    return "100K<n<1M"


def card(name: str, splits: Optional[dict[str, int]] = None, features: Any = None,
         split_bytes: Optional[dict[str, int]] = None) -> str:
    """The dataset card (README.md with YAML metadata) for benchmark ``name``, built from its builder's
    metadata so the committed card and the exported one never drift apart. With ``features`` (an
    export), the YAML also holds ``dataset_info`` (features and split sizes) as the Hub reads it."""
    from mmjudge.datasets import _sources as src

    cls = DATASETS.get(name)
    split_names = list(splits) if splits else list(getattr(cls, "SPLITS", ("test",)))
    yaml = [
        "---",
        f"pretty_name: {cls.PRETTY_NAME}",
        "language:\n- en",
        # The Hub wants a slug for license_name; the full terms are in the card's Licence section.
        f"license: other\nlicense_name: {name.replace('_', '-')}-terms\nlicense_link: {cls.HOMEPAGE or 'LICENSE'}",
        "task_categories:\n- image-to-text",
        "tags:\n- human-judgments\n- meta-evaluation\n- mmjudge",
        f"size_categories:\n- {_size_category(sum(splits.values()) if splits else 0)}" if splits else "",
        "configs:\n- config_name: default\n  data_files:",
        *[f"  - split: {s}\n    path: data/{s}-*" for s in split_names],
        _dataset_info_yaml(features, splits, split_bytes or {}) if features is not None and splits else "",
        "---",
    ]
    schema = "\n".join(f"| `{col}` | `{_feature_text(feat)}` |" for col, feat in cls.FEATURES.items())
    counts = "\n".join(f"| {s} | {n} |" for s, n in splits.items()) if splits else ""
    issues = "\n".join(f"- {issue}" for issue in cls.KNOWN_ISSUES)
    verified = src.VERIFIED.get(name, "")
    parts = [
        "\n".join(line for line in yaml if line),
        f"# {cls.PRETTY_NAME}\n\n{cls.DESCRIPTION}",
        "## Loading\n\n```python\nfrom mmjudge import load_dataset\n"
        f"ds = load_dataset(\"{name}\", data_dir=\"path/to/files\")  # builds and caches once\n"
        f"# after export: datasets.load_dataset(\"<org>/{name}\")\n```\n\n"
        f"Source files a `data_dir` must hold: {cls.SOURCE_FILES}. Homepage: {cls.HOMEPAGE or 'n/a'}.",
        f"## Schema\n\n| column | type |\n|---|---|\n{schema}",
        f"## Rows\n\n| split | rows |\n|---|---|\n{counts}" if counts else "",
        f"## Licence\n\n{cls.LICENSE}. mmjudge redistributes no data: this card describes what the loader builds.",
        f"## Known issues\n\n{issues}\n- Verification status of the upstream mapping: {verified}.",
        f"## Citation\n\n```bibtex\n{cls.CITATION.strip()}\n```",
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _dataset_info_yaml(features: Any, splits: dict[str, int], split_bytes: dict[str, int]) -> str:
    """``dataset_info:`` as ``datasets`` writes it into a card (features, splits with their sizes)."""
    import datasets
    import yaml

    info = datasets.DatasetInfo(features=features)
    info.splits = datasets.SplitDict()
    for split, n in splits.items():
        info.splits.add(datasets.SplitInfo(name=split, num_examples=n, num_bytes=split_bytes.get(split, 0)))
    body = yaml.safe_dump({"dataset_info": info._to_yaml_dict()}, sort_keys=False, allow_unicode=True)
    return body.rstrip("\n")


def _feature_text(feature: Any) -> str:
    import datasets

    if isinstance(feature, datasets.Value):
        return feature.dtype
    if isinstance(feature, datasets.Image):
        return "Image"
    if isinstance(feature, datasets.Sequence):
        return f"list[{_feature_text(feature.feature)}]"
    if isinstance(feature, list):
        return f"list[{_feature_text(feature[0])}]"
    if isinstance(feature, dict):
        return "{" + ", ".join(f"{k}: {_feature_text(v)}" for k, v in feature.items()) + "}"
    return type(feature).__name__
