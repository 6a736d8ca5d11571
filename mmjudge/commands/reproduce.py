"""``mmjudge reproduce``: rebuild the papers' tables cell by cell and compare with the published numbers.

Examples::

    mmjudge reproduce --dry-run --table all
    mmjudge reproduce --table harmonic_eval_8 --metrics bleu,rouge_l,meteor,cider --benchmarks flickr8k_expert \\
        --data-dir flickr8k_expert=~/data/flickr8k --out out/table8
    mmjudge reproduce --table harmonic_eval_8 --metrics fleur --data-dir flickr8k_expert=~/data/flickr8k \\
        --scores fleur@flickr8k_expert=results/fleur_flickr8k_expert.txt
    mmjudge reproduce --table vela_1 --metrics clip_s --timing --out out/vela

Prints each table in the paper's layout (published | ours [95% CI] ✓ / ✗ / — not run, with the reason) and,
with ``--out``, writes ``cells.json``, ``cells.md`` and ``cells.csv`` there. A second run recomputes only
what changed; a killed run resumes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mmjudge.commands._judge_flags import named_key_values
from mmjudge.paths import check_out_folder, not_a_regular_file

EXAMPLES = """\
examples:
  mmjudge reproduce --dry-run --table all
  mmjudge reproduce --table harmonic_eval_8 --metrics bleu,rouge_l,meteor,cider --benchmarks flickr8k_expert \\
      --data-dir flickr8k_expert=~/data/flickr8k --out out/table8
  mmjudge reproduce --table fleur_1 --metrics fleur --benchmarks flickr8k_expert \\
      --data-dir flickr8k_expert=~/data/flickr8k --scores fleur=results/fleur_flickr8k_expert.txt
  mmjudge reproduce --table vela_1 --metrics clip_s --timing --out out/vela
"""


def _pairs(values: list[str] | None, flag: str, sep: str = "=") -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        key, found, rest = value.partition(sep)
        if not found or not key or not rest:
            raise ValueError(f"{flag} expects NAME{sep}VALUE, but got {value!r}.")
        out.append((key.strip(), rest.strip()))
    return out


def _scores(args: argparse.Namespace, cells) -> dict[tuple[str, str], list[str]]:
    """``--scores ROW[@BENCHMARK]=FILE`` (repeatable; several files for one row and benchmark are read together)."""
    out: dict[tuple[str, str], list[str]] = {}
    for target, path in _pairs(args.scores, "--scores"):
        row, _, benchmark = target.partition("@")
        problem = not_a_regular_file(Path(path).expanduser())
        if problem is not None:
            raise ValueError(f"--scores {target}={path}: {problem}; give the score file.")
        if not Path(path).expanduser().is_file():
            raise FileNotFoundError(f"--scores {target}={path}: no such file.")
        benchmarks = sorted({c.benchmark for c in cells if c.row.key == row})
        if not benchmarks:
            known = ", ".join(sorted({c.row.key for c in cells}))
            raise ValueError(f"--scores {target}: no selected cell has metric {row!r} (selected: {known}).")
        if not benchmark:
            if len(benchmarks) > 1:
                raise ValueError(
                    f"--scores {target}: {row!r} has cells on {', '.join(benchmarks)}; say which: "
                    f"--scores {row}@BENCHMARK={path}."
                )
            benchmark = benchmarks[0]
        elif benchmark not in benchmarks:
            raise ValueError(
                f"--scores {target}: {row!r} has no selected cell on {benchmark!r} ({', '.join(benchmarks)})."
            )
        out.setdefault((row, benchmark), []).append(str(Path(path).expanduser()))
    return out


def check_out_spares_inputs(out: str | None, scores: dict, data_dirs: dict[str, str]) -> None:
    """No file ``--out`` receives (:func:`mmjudge.reproduce.output.output_files`) is a ``--scores`` file or a file
    of a ``--data-dir``: refused in one line before anything is read or written."""
    from mmjudge.paths import check_writes_spare_reads
    from mmjudge.reproduce.output import output_files

    if not out:
        return
    writes = [("--out", path, f"--out {out} (its {path.name})") for path in output_files(out)]
    reads = [("--scores", path) for paths in scores.values() for path in paths]
    reads += [(f"--data-dir {name}", folder) for name, folder in data_dirs.items()]
    check_writes_spare_reads(writes, reads)


def run(args: argparse.Namespace) -> int:
    from mmjudge.reproduce import Settings, dry_run_text, markdown, plan, reproduce
    from mmjudge.reproduce.tables import load_tables, select_cells

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()] if args.benchmarks else None
    check_out_folder(args.out)
    if args.bootstrap < 0 or args.timing_samples < 1:
        raise ValueError("--bootstrap must be 0 or more and --timing-samples at least 1.")
    cells = select_cells(load_tables(), args.table, metrics, benchmarks)
    data_dirs = {name: str(Path(folder).expanduser()) for name, folder in _pairs(args.data_dir, "--data-dir")}
    scores = _scores(args, cells)
    check_out_spares_inputs(args.out, scores, data_dirs)
    settings = Settings(
        data_dirs=data_dirs,
        dataset_options=named_key_values(args.dataset_option, "--dataset-option"),
        scores=scores,
        options=named_key_values(args.option, "--option"),
        cache=False if args.no_cache else (args.cache or True),
        bootstrap=args.bootstrap,
        seed=args.seed,
        confidence=args.confidence,
        timing=args.timing,
        timing_samples=args.timing_samples,
        progress=not args.quiet,
        out=args.out,
    )
    if args.dry_run:
        print(dry_run_text(plan(args.table, metrics, benchmarks, settings)), end="")
        return 0
    result = reproduce(args.table, metrics, benchmarks, settings)
    print(markdown(result), end="")
    if args.out:
        print(f"wrote cells.json, cells.md, cells.csv{', timing.json' if result.timings else ''} to {args.out}")
    return 0


def add_parser(sub) -> None:
    from mmjudge.reproduce.tables import load_tables

    p = sub.add_parser(
        "reproduce",
        help="rebuild the papers' tables cell by cell against the published numbers",
        description="Recompute the cells of the papers' tables (HarmonicEval Tables 8 and 9, VELA Table 1, FLEUR "
        "Table 1) with bootstrap intervals and compare each with its published number.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sel = p.add_argument_group("cells")
    sel.add_argument("--table", default="all", choices=[*load_tables(), "all"], help="which table (default all)")
    sel.add_argument("--metrics", help="rows to run, comma-separated (e.g. bleu,rouge_l,meteor,cider)")
    sel.add_argument("--benchmarks", help="benchmarks to run, comma-separated (e.g. flickr8k_expert)")
    sel.add_argument("--dry-run", action="store_true", help="list every cell with what it needs and what is present")
    src = p.add_argument_group("inputs")
    src.add_argument(
        "--data-dir", action="append", metavar="BENCHMARK=DIR", help="a benchmark's data folder (repeatable)"
    )
    src.add_argument(
        "--dataset-option",
        action="append",
        metavar="BENCHMARK:KEY=VALUE",
        help="a loader option (JSON value), e.g. flickr8k_expert:expected_counts={}",
    )
    src.add_argument(
        "--scores",
        action="append",
        metavar="METRIC[@BENCHMARK]=FILE",
        help="per-item scores someone else produced (JSONL/CSV by id or by image and text, or FLEUR's result .txt); "
        "repeatable, several files for one metric and benchmark are read together",
    )
    src.add_argument(
        "--option",
        action="append",
        metavar="METRIC:KEY=VALUE",
        help="a metric option (JSON value), e.g. clip_s:model=/models/clip or vela:checkpoint=runs/vela/best",
    )
    src.add_argument("--cache", help="judge cache file (default ~/.cache/mmjudge/judge_cache.sqlite)")
    src.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    opt = p.add_argument_group("meta-evaluation and output")
    opt.add_argument("--bootstrap", type=int, default=1000, help="resamples per figure (default %(default)s; 0 = none)")
    opt.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    opt.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default %(default)g)")
    opt.add_argument(
        "--timing", action="store_true", help="also time each metric per sample (VELA Table 1's last column)"
    )
    opt.add_argument("--timing-samples", type=int, default=20, help="items timed per metric (default %(default)s)")
    opt.add_argument("--out", help="folder for cells.json, cells.md, cells.csv (and timing.json)")
    opt.add_argument("--quiet", action="store_true", help="no per-cell progress lines on stderr")
    p.set_defaults(func=run)
