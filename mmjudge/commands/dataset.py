"""``mmjudge dataset``: list, inspect, export, card and write the human judgments of the benchmark datasets.

Examples::

    mmjudge dataset list
    mmjudge dataset info flickr8k_expert --data-dir ~/data/flickr8k
    mmjudge dataset export mmhe --data-dir ~/data/mmhe --out exports/mmhe   # Parquet + README.md card
    mmjudge dataset card thumb > datasets_scripts/thumb/README.md
    mmjudge dataset judgments pascal50s --data-dir ~/data/pascal --out pascal50s.json   # docs/metaeval.md schema
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mmjudge.human_judgments import SCHEMA_VERSION

EXAMPLES = """\
examples:
  mmjudge dataset list
  mmjudge dataset info flickr8k_expert --data-dir ~/data/flickr8k
  mmjudge dataset export mmhe --data-dir ~/data/mmhe --out exports/mmhe   # Parquet + README.md card
  mmjudge dataset card thumb
  mmjudge dataset judgments pascal50s --data-dir ~/data/pascal --out pascal50s.json
  mmjudge dataset info mllm_judge --data-dir ~/src/MLLM-Judge --config score
"""


def _load_kwargs(args: argparse.Namespace) -> dict:
    kwargs = {"data_dir": args.data_dir, "cache_dir": args.cache_dir, "layout": args.layout, "config_name": args.config}
    if args.expected_counts:
        kwargs["expected_counts"] = json.loads(args.expected_counts)
    return {k: v for k, v in kwargs.items() if v is not None}


def check_out_spares_data(args: argparse.Namespace, files: list[Path]) -> None:
    """None of ``files`` (what ``--out`` receives) is a file of ``--data-dir`` (the upstream files being read:
    ``dataset judgments x --data-dir d --out d/flickr8k.json`` would overwrite the release it reads), nor a hard
    link to one: refused in one line before anything is written."""
    from mmjudge.paths import check_writes_spare_reads

    if args.data_dir:
        label = (lambda p: f"--out {args.out}") if args.action == "judgments" else (lambda p: f"--out {args.out} ({p})")
        writes = [("--out", path, label(path)) for path in files]
        check_writes_spare_reads(writes, [("--data-dir", str(Path(args.data_dir).expanduser()))])


def run(args: argparse.Namespace) -> int:
    from mmjudge import datasets as md

    if args.action == "list":
        for name in md.available_datasets():
            print(name)
        return 0
    if not args.name:
        raise ValueError(f"`mmjudge dataset {args.action}` needs a dataset NAME.")
    if args.action == "card":
        print(md.card(args.name), end="")
        return 0
    if args.action in ("export", "judgments") and not args.out:
        what = "DIR" if args.action == "export" else "FILE.json"
        raise ValueError(f"`mmjudge dataset {args.action}` needs --out {what}.")
    if args.action == "judgments":
        if Path(args.out).is_dir():
            raise ValueError(
                f"--out {args.out}: is a folder, but `dataset judgments` writes one JSON file; give a file path."
            )
        if not Path(args.out).resolve().parent.is_dir():
            raise ValueError(f"--out {args.out}: its folder does not exist; create it first.")
        check_out_spares_data(args, [Path(args.out)])
    dataset = md.load_dataset(args.name, **_load_kwargs(args))
    if args.action == "judgments":
        hj = md.write_judgments(args.name, args.out, data_dir=args.data_dir, dataset=dataset)
        placed = sum(1 for it in hj.items if it.get("image"))
        print(
            f"wrote {args.out}: {len(hj.items)} items ({placed} with an image path), {len(hj.ratings)} ratings, "
            f"{len(hj.pairs)} pairs, {len(hj.choices)} choices (schema mmjudge.human_judgments, version "
            f"{SCHEMA_VERSION})"
        )
        return 0
    if args.action == "info":
        for split, ds in dataset.items():
            print(f"{split}: {ds.num_rows} rows")
        print("columns:", ", ".join(next(iter(dataset.values())).column_names))
        hj = md.human_judgments(args.name, dataset)
        print(f"items: {len(hj.items)}  ratings: {len(hj.ratings)}  choices: {len(hj.choices)}  pairs: {len(hj.pairs)}")
        return 0
    files = [Path(args.out) / "README.md", *(Path(args.out) / "data" / f"{s}-00000-of-00001.parquet" for s in dataset)]
    check_out_spares_data(args, files)  # the splits are known now; nothing is written yet
    out = md.export_to_parquet(args.name, args.out, dataset=dataset)
    print(f"wrote {out}/README.md and {out}/data/*.parquet")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "dataset",
        help="load, inspect and export the human-judgment benchmarks",
        description="List, inspect, export (Parquet + card), print the cards of, and write the human judgments "
        "(JSON, for `mmjudge metaeval --judgments`) of the benchmarks mmjudge meta-evaluates on.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "action",
        choices=["list", "info", "export", "card", "judgments"],
        help="list the benchmarks, show one's splits and counts, export it, print its card, or write its "
        "human judgments as a JSON file (docs/metaeval.md)",
    )
    p.add_argument("name", nargs="?", help="benchmark name (see `mmjudge dataset list`)")
    p.add_argument("--data-dir", dest="data_dir", help="folder with the upstream files (and images)")
    p.add_argument("--cache-dir", dest="cache_dir", help="datasets cache folder")
    p.add_argument("--out", help="export folder (export) or JSON file (judgments)")
    p.add_argument(
        "--layout",
        choices=["original", "json", "parquet", "csv"],
        help="which copy to read when --data-dir holds several (the original release, the JSON file, Hub Parquet, "
        "LongCap-Arena's CSV files)",
    )
    p.add_argument(
        "--config",
        help="the benchmark's configuration, for one that has several (mllm_judge: pair, score or batch)",
    )
    p.add_argument(
        "--expected-counts", dest="expected_counts", help="JSON, e.g. '{\"test\": 12}'; {} disables count checks"
    )
    p.set_defaults(func=run)
