"""Parquet export of a benchmark the ``datasets`` way: files carrying features and info, plus the card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.datasets._card import card
from mmjudge.datasets._loading import DATASETS, load_dataset

CATEGORICAL_COLUMNS = ("task",)


def export_to_parquet(name: str, out_dir: str | Path, dataset: Any = None, **load_kwargs: Any) -> Path:
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


def export_info(path: str | Path) -> Any:
    """The ``datasets.DatasetInfo`` (features, description, citation, licence, homepage) stored in an
    exported Parquet file."""
    import json

    import datasets
    import pyarrow.parquet as pq

    hf = json.loads((pq.read_schema(path).metadata or {}).get(b"huggingface", b"{}")).get("info", {})
    return datasets.DatasetInfo(
        description=hf.get("description", ""),
        citation=hf.get("citation", ""),
        license=hf.get("license", ""),
        homepage=hf.get("homepage", ""),
        features=datasets.Features.from_dict(hf["features"]) if "features" in hf else None,
    )
