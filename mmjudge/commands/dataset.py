"""``mmjudge dataset``: list, inspect, export and card the benchmark datasets.

Examples::

    mmjudge dataset list
    mmjudge dataset info flickr8k_expert --data-dir ~/data/flickr8k
    mmjudge dataset export mmhe --data-dir ~/data/mmhe --out exports/mmhe   # Parquet + README.md card
    mmjudge dataset card thumb > datasets_scripts/thumb/README.md
"""

from __future__ import annotations

import argparse
import json

EXAMPLES = """\
examples:
  mmjudge dataset list
  mmjudge dataset info flickr8k_expert --data-dir ~/data/flickr8k
  mmjudge dataset export mmhe --data-dir ~/data/mmhe --out exports/mmhe   # Parquet + README.md card
  mmjudge dataset card thumb
"""


def _load_kwargs(args: argparse.Namespace) -> dict:
    kwargs = {"data_dir": args.data_dir, "cache_dir": args.cache_dir}
    if args.expected_counts:
        kwargs["expected_counts"] = json.loads(args.expected_counts)
    return {k: v for k, v in kwargs.items() if v is not None}


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
    dataset = md.load_dataset(args.name, **_load_kwargs(args))
    if args.action == "info":
        for split, ds in dataset.items():
            print(f"{split}: {ds.num_rows} rows")
        print("columns:", ", ".join(next(iter(dataset.values())).column_names))
        hj = md.human_judgments(args.name, dataset)
        print(f"items: {len(hj.items)}  ratings: {len(hj.ratings)}  choices: {len(hj.choices)}  pairs: {len(hj.pairs)}")
        return 0
    if not args.out:
        raise ValueError("`mmjudge dataset export` needs --out DIR.")
    out = md.export_to_parquet(args.name, args.out, dataset=dataset)
    print(f"wrote {out}/README.md and {out}/data/*.parquet")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "dataset",
        help="load, inspect and export the human-judgment benchmarks",
        description="List, inspect, export (Parquet + card) and print the cards of the human-judgment "
        "benchmarks mmjudge meta-evaluates on.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["list", "info", "export", "card"],
                   help="list the benchmarks, show one's splits and counts, export it, or print its card")
    p.add_argument("name", nargs="?", help="benchmark name (see `mmjudge dataset list`)")
    p.add_argument("--data-dir", dest="data_dir", help="folder with the upstream files (and images)")
    p.add_argument("--cache-dir", dest="cache_dir", help="datasets cache folder")
    p.add_argument("--out", help="export folder")
    p.add_argument("--expected-counts", dest="expected_counts", help='JSON, e.g. \'{"test": 12}\'; {} disables count checks')
    p.set_defaults(func=run)
