"""``mmjudge judge-card``: which judge can I trust? One judge scored on benchmarks of judges.

Examples::

    mmjudge judge-card --benchmarks all --dry-run
    mmjudge judge-card --model Qwen/Qwen2.5-VL-7B-Instruct --benchmarks vl_rewardbench,flickr8k_expert \\
        --data-dir vl_rewardbench=~/data/vlrb --data-dir flickr8k_expert=~/data/fleur --out cards/qwen25vl7b
    mmjudge judge-card --judge openai --model gpt-4o --benchmarks vl_rewardbench \\
        --data-dir vl_rewardbench=~/data/vlrb --out cards/gpt-4o
    mmjudge judge-card --name my-judge --benchmarks vl_rewardbench \\
        --data-dir vl_rewardbench=~/data/vlrb --verdicts vl_rewardbench=my_verdicts.jsonl --out cards/my-judge
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmjudge import distributed
from mmjudge.commands._judge_flags import add_judge_options, judge_options, named_key_values

EXAMPLES = """\
examples:
  mmjudge judge-card --benchmarks all --dry-run
  mmjudge judge-card --model Qwen/Qwen2.5-VL-7B-Instruct --benchmarks vl_rewardbench,flickr8k_expert \\
      --data-dir vl_rewardbench=~/data/vlrb --data-dir flickr8k_expert=~/data/fleur --out cards/qwen
  mmjudge judge-card --judge openai --set base_url=http://HOST:8000/v1 --model Qwen/Qwen2.5-VL-72B-Instruct \\
      --benchmarks vl_rewardbench --data-dir vl_rewardbench=~/data/vlrb --out cards/qwen72b
  mmjudge judge-card --name my-judge --benchmarks vl_rewardbench --data-dir vl_rewardbench=~/data/vlrb \\
      --verdicts vl_rewardbench=verdicts.jsonl --out cards/my-judge     # verdicts made elsewhere: no judge loads
"""


def _pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    from mmjudge.judge_card.benchmarks import find_benchmarks

    out: dict[str, str] = {}
    for value in values or []:
        name, found, rest = value.partition("=")
        if not found or not name.strip() or not rest.strip():
            raise ValueError(f"{flag} expects BENCHMARK=PATH, but got {value!r}.")
        find_benchmarks(name.strip())  # an unknown name is one line with a "did you mean"
        if name.strip() in out:
            raise ValueError(f"{flag} {name.strip()}: given twice; give one {flag} per benchmark.")
        out[name.strip()] = str(Path(rest.strip()).expanduser())
    return out


def check_out_spares_inputs(out: str | None, settings) -> None:
    """No file ``--out`` receives is a ``--verdicts`` file or a file of a ``--data-dir``: refused in one line
    before anything is read or written (a card written over its own verdicts would destroy them)."""
    from mmjudge.judge_card.output import OUTPUT_FILES
    from mmjudge.paths import check_writes_spare_reads

    if not out:
        return
    writes = [("--out", Path(out) / name, f"--out {out} (its {name})") for name in OUTPUT_FILES]
    reads = [(f"--verdicts {name}", path) for name, path in settings.verdicts.items()]
    reads += [(f"--data-dir {name}", folder) for name, folder in settings.data_dirs.items()]
    check_writes_spare_reads(writes, reads)


def run(args: argparse.Namespace) -> int:
    from mmjudge.judge_card.benchmarks import find_benchmarks
    from mmjudge.judge_card.output import card_markdown
    from mmjudge.judge_card.run import Settings, judge_card, plan
    from mmjudge.paths import check_out_folder

    benchmarks = find_benchmarks(args.benchmarks)
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be a positive integer, but got {args.limit}.")
    if args.bootstrap < 0:
        raise ValueError(f"--bootstrap must be 0 or more, but got {args.bootstrap}.")
    check_out_folder(args.out)
    settings = Settings(
        data_dirs=_pairs(args.data_dir, "--data-dir"),
        verdicts=_pairs(args.verdicts, "--verdicts"),
        dataset_options=_dataset_options(args.dataset_option),
        limit=args.limit,
        bootstrap=args.bootstrap,
        seed=args.seed,
        confidence=args.confidence,
        out=args.out,
        progress=not args.quiet,
        name=args.name,
    )
    check_out_spares_inputs(args.out, settings)
    options = judge_options(args)
    judge = options if (args.model or args.judge) else None
    if args.dry_run:
        for p in plan(benchmarks, settings, judge is not None):
            why = p.missing()
            state = "ready" if why is None else f"missing: {why}"
            needs = ", ".join(f"{what} {'✓' if present else '✗'}" for what, present, _ in p.needs)
            print(f"{p.benchmark}: from {p.source}; {needs} — {state}")
        return 0
    card = judge_card(benchmarks, settings, judge)
    if not distributed.is_main():  # under torchrun one process prints (the others computed the same card)
        return 0 if card.rows else 2
    for name, why in card.not_run.items():
        print(f"{name}: not run: {why}", file=sys.stderr)
    print(card_markdown(card.judge, card.rows, card.not_run, card.signature, card.usage, args.confidence), end="")
    if args.out:
        print(f"wrote card.json, card.md, card.png, signature.json to {args.out}")
    return 0 if card.rows else 2


def _dataset_options(values: list[str] | None) -> dict[str, dict]:
    """``--dataset-option BENCHMARK:KEY=VALUE``, every option of a benchmark kept; an unknown benchmark is one line
    with a "did you mean" (not an option silently never used)."""
    from mmjudge.judge_card.benchmarks import find_benchmarks

    out = named_key_values(values, "--dataset-option")
    for name in out:
        find_benchmarks(name)
    return out


def add_parser(sub) -> None:
    p = sub.add_parser(
        "judge-card",
        help="which judge can I trust? score a judge on benchmarks of judges",
        description="Score one judge on benchmarks of judges — pairs it compares head to head in both orders "
        "(VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge, Multi-Crit, CapArena, Pascal-50S), captions and "
        "answers it rates (Flickr8k-Expert/CF, Composite, Polaris, Nebula, MLLM-as-a-Judge's scores) and answers it "
        "ranks from head-to-head comparisons (MLLM-as-a-Judge's batches) — or score verdicts it gave elsewhere; "
        "writes card.json, card.md, card.png and signature.json.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sel = p.add_argument_group("benchmarks")
    sel.add_argument("--benchmarks", default="all", help="comma-separated benchmark names, or all (default)")
    sel.add_argument("--data-dir", action="append", metavar="BENCHMARK=DIR", help="a benchmark's data (repeatable)")
    sel.add_argument(
        "--verdicts",
        action="append",
        metavar="BENCHMARK=FILE",
        help='verdicts made elsewhere, JSON Lines: {"id", "preferred": 0|1|0.5} (pairs), {"id", "score"} '
        '(ratings) or {"id", "ranking": [indices best first]} (rankings); no judge is loaded for that benchmark',
    )
    sel.add_argument(
        "--dataset-option", action="append", metavar="BENCHMARK:KEY=VALUE", help="a loader option (JSON value)"
    )
    sel.add_argument("--limit", type=int, help="the first N items of each benchmark (a quick look)")
    sel.add_argument("--dry-run", action="store_true", help="list what each benchmark needs and what is present")
    judge = p.add_argument_group("the judge (HarmonicEval's, pairwise for pairs)")
    add_judge_options(judge)
    judge.add_argument("--name", help="the judge's name on the card (default: its backend and model)")
    opt = p.add_argument_group("figures and output")
    opt.add_argument("--bootstrap", type=int, default=1000, help="resamples per figure (default %(default)s; 0 = none)")
    opt.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    opt.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default %(default)g)")
    opt.add_argument("--out", help="folder for card.json, card.md, card.png, signature.json (and runs/)")
    opt.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)
