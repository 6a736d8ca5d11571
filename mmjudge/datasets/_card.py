"""The dataset card (README.md with the Hub's YAML), built from a builder's metadata."""

from __future__ import annotations

from typing import Any

from mmjudge.datasets._loading import DATASETS


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return label
    return "100K<n<1M"


def card(
    name: str,
    splits: dict[str, int] | None = None,
    features: Any = None,
    split_bytes: dict[str, int] | None = None,
) -> str:
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
    # A builder with several configurations (CONFIG_FEATURES) gets one table per configuration.
    configs = getattr(cls, "CONFIG_FEATURES", None) or {"": cls.FEATURES}
    schema = "\n\n".join(
        (f"Configuration `{config}`:\n\n" if config else "")
        + "| column | type |\n|---|---|\n"
        + "\n".join(f"| `{col}` | `{_feature_text(feat)}` |" for col, feat in table.items())
        for config, table in configs.items()
    )
    counts = "\n".join(f"| {s} | {n} |" for s, n in splits.items()) if splits else ""
    issues = "\n".join(f"- {issue}" for issue in cls.KNOWN_ISSUES)
    verified = src.VERIFIED.get(name, "")
    parts = [
        "\n".join(line for line in yaml if line),
        f"# {cls.PRETTY_NAME}\n\n{cls.DESCRIPTION}",
        "## Loading\n\n```python\nfrom mmjudge import load_dataset\n\n"
        f'ds = load_dataset("{name}", data_dir="path/to/files")  # builds and caches once\n'
        f'# after export: datasets.load_dataset("<org>/{name}")\n```\n\n'
        f"Source files a `data_dir` must hold: {cls.SOURCE_FILES}. Homepage: {cls.HOMEPAGE or 'n/a'}."
        + (_layouts_text(src.LAYOUTS[name]) if len(src.LAYOUTS.get(name, ())) > 1 else ""),
        f"## Schema\n\n{schema}",
        f"## Rows\n\n| split | rows |\n|---|---|\n{counts}" if counts else "",
        f"## Licence\n\n{cls.LICENSE}. mmjudge redistributes no data: this card describes what the loader builds.",
        f"## Known issues\n\n{issues}\n- Verification status of the upstream mapping: {verified}.",
        f"## Citation\n\n```bibtex\n{cls.CITATION.strip()}\n```",
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _layouts_text(layouts: Any) -> str:
    """The copies of the benchmark the loader reads, as a Markdown list for the card."""
    lines = [
        f"- `{lay.name}`: {lay.describe()}"
        + (f" (optional: {', '.join(f'`{o}`' for o in lay.optional)})" if lay.optional else "")
        + f" — from {lay.source}"
        for lay in layouts
    ]
    if layouts[0].name != "original":
        others = " or ".join(f'`layout="{lay.name}"`' for lay in layouts[1:])
        return (
            f"\n\nEvery layout gives the same rows and ids; when a folder holds several, the {layouts[0].name} "
            f"layout is read ({others} picks another):\n\n" + "\n".join(lines)
        )
    return (
        "\n\nEither layout gives the same rows and ids; when a folder holds both, the original release is read "
        '(`layout="json"` picks the other):\n\n' + "\n".join(lines)
    )


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
