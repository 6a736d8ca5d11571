"""``mmjudge compare``: head to head — is system A's text better than system B's, per criterion — and many
systems ranked from such pairs.

Examples::

    mmjudge compare --a new.jsonl --b old.jsonl --output pairs.jsonl
    mmjudge compare --text-a "A dog runs on the beach." --text-b "A dog." --image photo.jpg
    mmjudge compare --system base=base.jsonl --system ft=ft.jsonl --system big=big.jsonl --output-dir arena/

``--a`` and ``--b`` hold the same items in the same order (``id``, ``image``, ``question``, ``box``, ``task``),
each with its system's ``text``; rows are written as they finish, a killed run resumes, and under
``torchrun`` each process compares its own share (:mod:`mmjudge.stream`). Each row holds, per criterion,
P(A is better) under the criterion's name, the tie probability, the judge's position bias, and
``<criterion>_status`` / ``_note`` where the judge gave no answer. ``--system`` (three or more) ranks the
systems from pairs chosen adaptively (:mod:`mmjudge.pairwise.arena`).

Exit status (as ``score``'s): 0 every pair compared; 2 a mistake in the command or its input files (one line);
3 with ``--strict``, the judge gave no answer for some pair; 4 some pairs could not be compared for their input
(other ids in --b, a missing image…: every row is written, those rows hold the reason in ``error``).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from typing import Any

from mmjudge import distributed
from mmjudge.commands._judge_flags import add_judge_options
from mmjudge.commands.score import (
    EXIT_BAD_ITEMS,
    RowPrinter,
    check_output,
    files_read,
    metric_kwargs,
    parse_box,
    print_usage,
    written_line,
)
from mmjudge.models import TINY_RANDOM
from mmjudge.stream.sources import FORMATS, parse_columns

EXAMPLES = """\
examples:
  mmjudge compare --a new.jsonl --b old.jsonl --output pairs.jsonl       # two systems, every item
  mmjudge compare --text-a "A dog runs." --text-b "A dog." --image photo.jpg --model tiny-random
  mmjudge compare --a new.jsonl --b old.jsonl --criteria correctness,fluency --format jsonl
  mmjudge compare --system base=base.jsonl --system ft=ft.jsonl --system big=big.jsonl --output-dir arena/

exit status: 0 all compared; 2 a usage or input-file mistake (one line); 3 --strict and the judge gave no answer
for some pair; 4 some pairs could not be compared for their input (rows written, reason in `error`)
"""


def run(args: argparse.Namespace) -> int:
    import mmjudge

    if args.system:
        from mmjudge.commands.compare_rank import run_ranking

        return run_ranking(args)
    check_output(args.output, [("--a", args.a), ("--b", args.b), *files_read(args)])
    options = {"kind": args.input_format, "split": args.split, "columns": parse_columns(args.columns)}
    items = None
    if args.a or args.b:
        if not (args.a and args.b):
            raise ValueError("give both --a and --b (the two systems' outputs on the same items).")
        from mmjudge.pairwise.sources import check_same_length

        check_same_length(args.a, args.b, **options)
    else:
        items = [single_pair(args)]
    notes = not args.quiet and distributed.is_main()
    rater = mmjudge.load("harmonic_eval", **metric_kwargs(args))
    metric = rater.pairwise(args.pairwise_prompts)
    if args.model == TINY_RANDOM and notes:
        print(f"NOTE: '{TINY_RANDOM}' has RANDOM weights: its preferences mean nothing.", file=sys.stderr)
    from mmjudge.pairwise.summary import PairSummary

    summary = PairSummary(metric.criteria)
    note_stream = sys.stderr if args.format != "table" else sys.stdout
    if args.output:
        _compare_into_file(args, metric, items, options, summary, note_stream if notes else None)
    else:
        _compare_to_stdout(args, metric, items, options, summary)
    if notes:
        with contextlib.redirect_stdout(note_stream):
            if summary.pairs > 1 or args.format == "table":
                print("\n" + summary.table())
            print(f"signature: {metric.signature}")
            for line in summary.failure_lines():
                print(line)
            print_usage(metric)
    if summary.not_compared:  # as `score` does: rows written, the status says some pairs were not compared
        return EXIT_BAD_ITEMS
    return 3 if args.strict and summary.unanswered else 0


def _compare_into_file(
    args: argparse.Namespace, metric: Any, items: list | None, options: dict, summary: Any, notes: Any
) -> None:
    """``--output``: through :func:`mmjudge.stream.score_file` (part files, resume, shards); the summary is
    read back from the finished output, so rows of an earlier, resumed run count too."""
    from mmjudge.pairwise.sources import pair_source
    from mmjudge.pairwise.summary import output_rows
    from mmjudge.stream import score_file

    printer = PairPrinter(args.format, metric.criteria, quiet=args.quiet or not distributed.is_main())
    source = pair_source(args.a, args.b, **options) if items is None else items
    run_summary = score_file(
        metric,
        source,
        args.output,
        task=args.task,
        strict=args.strict or items is not None,
        overwrite=args.overwrite,
        progress=not args.quiet,
        chunk_size=args.chunk_size,
        keep=("text_a", "text_b"),
        on_row=printer.row if args.format != "table" or items is not None else None,
        **({"explain": True} if args.explain else {}),
    )
    if notes is not None:
        print(written_line(run_summary, args.output, "compare"), file=notes)
    if distributed.is_main():
        for row in output_rows(args.output):
            summary.add(row)


def _compare_to_stdout(args: argparse.Namespace, metric: Any, items: list | None, options: dict, summary: Any) -> None:
    """No ``--output``: rows printed as they finish."""
    from mmjudge.pairwise.sources import open_pairs
    from mmjudge.stream import stream_rows

    printer = PairPrinter(args.format, metric.criteria, quiet=args.quiet or not distributed.is_main())
    source = open_pairs(args.a, args.b, **options) if items is None else items
    strict = args.strict or items is not None
    explain = {"explain": True} if args.explain else {}
    for _, row in stream_rows(
        metric, source, args.task, strict, ("text_a", "text_b"), args.chunk_size, not args.quiet, **explain
    ):
        summary.add(row)
        printer.row(row)


def single_pair(args: argparse.Namespace) -> dict[str, Any]:
    """The pair typed on the command line, checked before any model loads."""
    if args.text_a is None or args.text_b is None:
        raise ValueError("give --a and --b (files), --text-a and --text-b (one pair), or --system NAME=FILE (ranking).")
    item: dict[str, Any] = {
        "text_a": args.text_a,
        "text_b": args.text_b,
        "image": args.image,
        "question": args.question,
    }
    if args.box:
        item["box"] = parse_box(args.box)
    return item


class PairPrinter(RowPrinter):
    """Rows on stdout as they finish (:class:`~mmjudge.commands.score.RowPrinter`), the table a short one per pair."""

    def __init__(self, fmt: str, criteria: list[str], quiet: bool):
        super().__init__(fmt, quiet)
        self.criteria = criteria

    def _table(self, row: dict) -> None:
        print(f"\n[{self.count}] id={row.get('id')}  task={row.get('task', '')}")
        print(f"  A: {row.get('text_a')!r}\n  B: {row.get('text_b')!r}")
        if row.get("error"):
            print(f"  not compared: {row['error']}")
            return
        print(f"  {'':14s} {'P(A>B)':>7s} {'verdict':>8s} {'tie':>6s} {'bias':>7s}")
        for name in ["overall", *self.criteria]:
            status = row.get(f"{name}_status")
            if status not in (None, "ok"):
                print(f"  {name:14s} {'—':>7s}  {status}: {row.get(f'{name}_note') or ''}".rstrip())
                continue
            value = row.get(name)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                print(f"  {name:14s} {'—':>7s}  (no preference on every criterion)")
                continue
            verdict = row.get("verdict" if name == "overall" else f"{name}_verdict") or ""
            tie, bias = row.get(f"{name}_tie"), row.get(f"{name}_position_bias")
            cells = f"{value:7.3f} {verdict:>8s} " + (f"{tie:6.3f} {bias:+7.3f}" if tie is not None else "")
            print(f"  {name:14s} {cells}".rstrip())
        for name in self.criteria:
            if row.get(f"{name}_explanation"):
                print(f"  {name}_explanation: {row[f'{name}_explanation']}")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="head to head: which of two systems' texts is better, per criterion (and rank many systems)",
        description="Compare two systems' texts about the same inputs with HarmonicEval's criteria: each pair is "
        "judged in both orders and the preference P(A is better) read from the judge's probabilities; or rank "
        "several systems (--system) from adaptively chosen pairs.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--a", help="system A's outputs: JSONL, CSV, Parquet or a dataset (text, image, question, box, id)")
    p.add_argument("--b", help="system B's outputs on the same items, in the same order")
    p.add_argument("--text-a", dest="text_a", help="one text of system A (with --text-b, --image …)")
    p.add_argument("--text-b", dest="text_b", help="one text of system B")
    p.add_argument("--image", help="image file (with --text-a/--text-b)")
    p.add_argument("--question", help="question (vqa, vdu)")
    p.add_argument("--box", help="bounding box x,y,w,h (reg)")
    p.add_argument("--task", default="ic", help="ic, vqa, vdu or reg (default ic), for items without their own")
    p.add_argument("--input-format", dest="input_format", choices=FORMATS, help="the inputs' format (default: suffix)")
    p.add_argument("--split", help="the split of input datasets with several")
    p.add_argument("--columns", help="item key=column pairs for inputs with other column names, e.g. text=caption")
    p.add_argument(
        "--output",
        help="write one row per pair to this file as they finish: CSV (.csv), Parquet (.parquet), else JSONL; "
        "a killed run resumes when run again",
    )
    p.add_argument("--format", choices=("table", "jsonl", "csv"), default="table", help="what to print on stdout")
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first pair that cannot be compared, and exit 3 when the judge gave no answer for some",
    )
    p.add_argument("--overwrite", action="store_true", help="start --output (or --output-dir) again from the start")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, help="pairs judged together (default 256)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "--system",
        action="append",
        metavar="NAME=FILE",
        help="rank systems (repeat, three or more): each system's outputs on the same items",
    )
    p.add_argument("--output-dir", dest="output_dir", help="ranking: where the rounds' rows and the ranking go")
    p.add_argument(
        "--anchors", help="ranking: comma-separated systems every other is compared with (default: 3 spread by order)"
    )
    p.add_argument(
        "--items-per-pair",
        dest="items_per_pair",
        type=int,
        default=None,
        help="ranking: items judged per pair of systems in a round (default 32)",
    )
    p.add_argument(
        "--max-rounds", dest="max_rounds", type=int, default=None, help="ranking: rounds at most (default 20)"
    )
    p.add_argument("--bootstrap", type=int, default=None, help="ranking: bootstrap resamples over items (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="ranking: seed of item sampling and bootstrap")
    add_judge_options(p)
    p.add_argument("--gamma", type=float, help="harmonic weighting gamma in (0, 1] of the overall preference")
    p.add_argument("--criteria", help="comma-separated subset of criteria")
    p.add_argument("--explain", action="store_true", help="add the judge's explanation per criterion (order AB)")
    p.add_argument(
        "--pairwise-prompts",
        dest="pairwise_prompts",
        default="harmonic_eval_pairwise",
        help="the pairwise prompt set: bundled name or .toml path (default harmonic_eval_pairwise)",
    )
    p.set_defaults(func=run)
