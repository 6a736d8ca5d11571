"""``mmjudge score``: score texts with any mmjudge metric, from one item to millions.

Examples::

    mmjudge score --task ic --image photo.jpg --text "A dog runs on the beach." --model Qwen/Qwen2.5-VL-7B-Instruct
    mmjudge score --examples --model tiny-random --explain
    mmjudge score --metric fleur --input items.jsonl --output scores.jsonl
    mmjudge score --input captions.parquet --columns text=caption,image=file_name --output scores.parquet
    torchrun --nproc_per_node 8 -m mmjudge.cli score --input items.jsonl --output scores.jsonl

``--input`` is read lazily (JSON Lines, CSV, Parquet, or a ``datasets`` dataset: a local folder or a Hub id
with ``--split``); rows are written as they finish to ``<output>.part-<rank>-of-<world>.jsonl`` and merged
into ``<output>`` when the run completes, a killed run resumes where it stopped when run again, and under
``torchrun`` / ``accelerate launch`` each process scores its own share (:mod:`mmjudge.stream`).

Exit status: 0 every item was scored; 2 a mistake in the command or its input files (one line), or with
``--strict`` the first item that could not be read; 3 with ``--strict``, the judge gave no rating for some
item; 4 some items could not be scored for their input (their rows hold the reason in ``error``; every
other row was written); 130 interrupted (the rows written so far are kept: run again to resume); 141 the reader of
stdout went away (``| head``; a run with ``--output`` goes on to complete its file instead).

A run refuses, before anything is touched, an ``--output`` whose files (the output, its part files, its merge
file) are the ``--input``, the ``--image`` or the judge cache (the same path, a link to it) or lie inside an
``--input`` folder, and a resume whose
part file was made from another input or with other settings (:mod:`mmjudge.stream.outputs`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path
from typing import Any

from mmjudge import distributed
from mmjudge.commands._api_plan import add_plan_options, plan_before_run, wants_plan
from mmjudge.commands._judge_flags import add_judge_options, judge_options
from mmjudge.metrics.harmonic_eval.scoring import DEFAULT_GAMMA
from mmjudge.metrics.statuses import NOT_ASKED, failure_line
from mmjudge.models import SMOLLM2, TINY_RANDOM
from mmjudge.report import CSV_LINE_END, csv_cell, json_safe
from mmjudge.stream import RunSummary, score_file, stream_rows
from mmjudge.stream.sources import FORMATS, open_source, parse_columns

# Exit statuses (documented in the module, --help and docs/conventions.md).
EXIT_UNRATED = 3  # --strict: the judge gave no rating for some item
EXIT_BAD_ITEMS = 4  # some items could not be scored for their input; their rows hold `error`
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT

EXAMPLES = """\
examples:
  mmjudge score --examples --model smollm2                   # offline, a real small text-only judge
  mmjudge score --examples --model tiny-random               # offline plumbing demo, random weights
  mmjudge score --task ic --image photo.jpg --text "A dog runs on the beach." --model Qwen/Qwen2.5-VL-7B-Instruct
  mmjudge score --task reg --image photo.jpg --box 10,20,100,50 --text "the red car"
  mmjudge score --metric fleur --input items.jsonl --output scores.jsonl --quiet
  mmjudge score --input data/ --split test --columns text=caption,image=image --output scores.parquet
  mmjudge score --metric baselines --config bleu --text "a dog" --references "a dog runs" --format jsonl
  mmjudge score --input items.jsonl --model openai:gpt-4o-2024-08-06 --dry-run   # requests, tokens, price
  mmjudge score --input items.jsonl --model openai:gpt-4o-2024-08-06 --set mode=batch --max-cost 20

exit status: 0 all scored; 2 a usage or input-file mistake (one line); 3 --strict and the judge gave no
rating for some item; 4 some items could not be scored for their input (rows written, reason in `error`);
130 interrupted (rows so far kept; run again to resume); 141 stdout's reader went away (| head)
"""


def read_items(args: argparse.Namespace) -> list[dict]:
    """The items given on the command line (``--text`` …) or ``--examples``, checked before any model loads."""
    if args.examples:
        from mmjudge.examples import load_examples

        return load_examples()
    if args.text is None:
        raise ValueError("give --text (with --image …), --input FILE or --examples.")
    item: dict[str, Any] = {"text": args.text, "image": args.image, "question": args.question}
    if args.box:
        item["box"] = parse_box(args.box)
    if args.references:
        item["references"] = args.references
    return [item]


def parse_box(text: str) -> list[float]:
    """``--box x,y,w,h``: four non-negative numbers (:func:`mmjudge.images.parse_box`).

    >>> parse_box("10,20,30,40")
    [10.0, 20.0, 30.0, 40.0]
    >>> parse_box("a,b,c,d")
    Traceback (most recent call last):
    ValueError: --box: expected four numbers x, y, w, h in pixels (e.g. --box 10,20,100,50), but got 'a,b,c,d'.
    """
    from mmjudge.images import parse_box as parse

    return parse(text, "--box", "--box 10,20,100,50")


def check_output(path: str | None, inputs: list[tuple[str, Any]] = ()) -> None:
    """An --output file can be written, and writing it (its part files, its merge file) destroys none of the
    ``inputs`` (``(flag, path)`` pairs): checked BEFORE anything is touched, so no work is lost to a typo."""
    if not path:
        return
    from mmjudge.stream.outputs import check_output_file, check_output_spares_inputs

    check_output_spares_inputs(path, list(inputs), distributed.rank(), distributed.world_size())
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"--output {path}: is a folder; give a file name such as {str(target / 'scores.jsonl')!r}.")
    check_output_file(path)  # /dev/null, a FIFO: taken for a complete output, deleted by --overwrite
    folder = target.parent
    if not folder.is_dir():
        raise FileNotFoundError(
            f"--output {path}: folder {str(folder)!r} does not exist; create it first (mkdir -p {folder})."
        )
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"--output {path}: folder {str(folder)!r} is not writable.")
    if target.exists() and not os.access(target, os.W_OK):  # would fail only after all the scoring
        raise PermissionError(
            f"--output {path}: the file exists and is not writable; give another name or make it writable."
        )


def files_read(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """What a run reads besides its input files, as ``(flag, path)`` pairs for :func:`check_output`: ``--image``
    and the judge cache (``--cache``, else the default file; none with ``--no-cache``). An ``--output`` written
    over one of them would destroy it (``--overwrite`` deletes it first).

    >>> import argparse
    >>> files_read(argparse.Namespace(image="cat.png", cache="c.sqlite", no_cache=False))
    [('--image', 'cat.png'), ('--cache', 'c.sqlite')]
    >>> files_read(argparse.Namespace(image=None, cache=None, no_cache=True))
    []
    """
    from mmjudge.paths import default_cache_path

    reads = [("--image", getattr(args, "image", None))]
    if not getattr(args, "no_cache", False):
        cache = getattr(args, "cache", None)
        reads.append(("--cache", cache) if cache else ("the judge cache", default_cache_path()))
    return [(flag, path) for flag, path in reads if path]


def metric_kwargs(args: argparse.Namespace) -> dict:
    kwargs = judge_options(args)
    if args.gamma is not None:
        kwargs["gamma"] = args.gamma
    if args.explain:
        kwargs["explain"] = True
    if args.criteria is not None:
        criteria = [c.strip() for c in args.criteria.split(",") if c.strip()]
        if not criteria:
            raise ValueError(
                f"--criteria {args.criteria!r} names no criterion; give e.g. --criteria fluency,clarity or leave it "
                "out for all."
            )
        kwargs["criteria"] = criteria
    return kwargs


def run(args: argparse.Namespace) -> int:
    import mmjudge

    check_output(args.output, [("--input", args.input), *files_read(args)])
    source_options = {"kind": args.input_format, "split": args.split, "columns": parse_columns(args.columns)}
    source, items = _inputs(args, source_options)
    # Notes go to stderr too, which a launcher does not silence: under torchrun only the main process speaks.
    say = print if not args.quiet and distributed.is_main() else (lambda *a, **k: None)
    try:
        metric = mmjudge.load(args.metric, args.config, **metric_kwargs(args))
        if args.model == TINY_RANDOM:  # after loading, so a bad option's error stays the only line
            say(
                f"NOTE: '{TINY_RANDOM}' is a model with RANDOM weights: it proves the pipeline, its scores mean "
                "nothing.",
                file=sys.stderr,
            )
        return _score(args, metric, source if args.input else items, source_options, say)
    except KeyboardInterrupt:
        print(interrupted_line(args.output), file=sys.stderr)
        return EXIT_INTERRUPTED


def interrupted_line(output: str | None) -> str:
    """What a Ctrl-C leaves behind, in one line: where the rows written so far are, and how to go on."""
    if not output:
        return "interrupted (nothing was written: give --output FILE to keep rows and resume a long run)."
    from mmjudge.stream.outputs import existing_parts

    parts = existing_parts(output)
    if not parts:
        return f"interrupted before any row was written to {output}."
    more = f" (and {len(parts) - 1} more parts)" if len(parts) > 1 else ""
    return f"interrupted: the rows written so far are in {parts[0]}{more}; run the same command again to resume."


def _score(args: argparse.Namespace, metric: Any, source: Any, source_options: dict, say: Any) -> int:
    """Score, print, and return the exit status (see the module)."""
    notes = not args.quiet and distributed.is_main()
    options = {"explain": True} if args.explain else {}
    if wants_plan(args, metric):  # --dry-run, --max-cost, mode=batch: a planning pass first, nothing sent
        reopen = (lambda: open_source(args.input, **source_options)) if args.input else (lambda: source)
        if plan_before_run(args, metric, reopen, say, chunk_size=args.chunk_size, **options):
            return 0
    # Items typed on the command line stop at their first mistake; a long --input records it and goes on.
    strict = args.strict or not args.input
    quiet = args.quiet or not distributed.is_main()
    printer = _RowPrinter(args.format, metric, quiet=quiet)
    # stdout holds only the rows when they are JSONL or CSV: notes go to stderr then.
    note_stream = sys.stderr if args.format != "table" else sys.stdout
    if args.output:
        summary = score_file(
            metric,
            args.input or source,  # a path: each process opens its own share
            args.output,
            task=args.task,
            strict=strict,
            overwrite=args.overwrite,
            progress=not args.quiet,
            chunk_size=args.chunk_size,
            source_options=source_options if args.input else None,
            on_row=printer.row if args.format != "table" or not args.input else None,
            on_start=lambda part: say(
                f"rows go to {part} as they finish; {args.output} is written when the run completes",
                file=sys.stderr,
            ),
            **options,
        )
        say(written_line(summary, args.output, "score"), file=note_stream)
    else:
        rows = stream_rows(
            metric,
            source,
            args.task,
            strict,
            chunk_size=args.chunk_size,
            progress=not args.quiet,
            **options,
        )
        summary = RunSummary()
        for _, row in rows:
            summary.count(row)
            printer.row(row)
    printer.finish()
    if notes:
        with contextlib.redirect_stdout(note_stream):
            _closing_lines(summary, args.model == TINY_RANDOM)
            print_usage(metric)
            print_unrated(metric, args.model)
    if summary.failed:  # rows are written; the status tells `&&` chains and CI that some items were not scored
        return EXIT_BAD_ITEMS
    # --strict: a run in which the judge gave no rating for some item is a failed run.
    return EXIT_UNRATED if args.strict and summary.unrated else 0


def _inputs(args: argparse.Namespace, source_options: dict) -> tuple[Any, list | None]:
    """``(the opened --input, None)``, or ``(None, the items typed on the command line)``."""
    if not args.input:
        if args.split or args.columns or args.input_format:
            raise ValueError(
                "--split, --columns and --input-format describe an --input; give --input FILE (or a dataset)."
            )
        return None, read_items(args)
    source = open_source(args.input, **source_options)
    if not source.total and source.kind in ("jsonl", "csv", "parquet"):
        raise ValueError(f"--input {args.input}: no items to score.")
    return source, None


def _closing_lines(summary: RunSummary, tiny_random: bool) -> None:
    total = summary.written + summary.resumed
    if summary.failed:
        print(
            f"{summary.failed} of {total} items could not be scored (their rows hold NaN and the reason in "
            f"`error`); first: {summary.first_failure}"
        )
    if summary.unrated:
        print(failure_line(summary.failures_by_output, summary.unrated, total))
        if tiny_random:
            print(
                f"('{TINY_RANDOM}' has random weights: it barely answers with a rating. --set min_mass=0 shows its "
                "renormalised numbers anyway; they mean nothing.)"
            )


def written_line(summary: Any, output: str, verb: str) -> str:
    """What a run with ``--output`` did to the file (``summary``: :func:`~mmjudge.stream.score_file`'s)."""
    if summary.complete:
        return f"{output} is complete already; nothing to do (pass --overwrite to {verb} again)."
    resumed = f" ({summary.resumed} were there from an earlier run)" if summary.resumed else ""
    return f"wrote {summary.written + summary.resumed} rows to {output}{resumed}"


class RowPrinter:
    """Rows on stdout as they finish: JSON Lines, CSV (a header first; every cell through
    :func:`~mmjudge.report.csv_cell`, CRLF line ends) or a per-row table that a subclass draws."""

    def __init__(self, fmt: str, quiet: bool):
        self.fmt, self.quiet = fmt, quiet
        self.count = 0
        self._csv: Any | None = None

    def row(self, row: dict) -> None:
        """Print one row (once stdout's reader is gone, :class:`mmjudge.cli.PipeGuard` ends the run, or, for a
        run writing ``--output``, lets it go on unheard)."""
        if self.quiet:
            return
        if self.fmt == "jsonl":
            import json

            sys.stdout.write(json.dumps(json_safe(row), ensure_ascii=False) + "\n")
        elif self.fmt == "csv":
            import csv

            if self._csv is None:
                self._csv = csv.DictWriter(
                    sys.stdout, fieldnames=list(row), lineterminator=CSV_LINE_END, extrasaction="ignore"
                )
                self._csv.writeheader()
            self._csv.writerow({k: csv_cell(v) for k, v in json_safe(row).items()})
        else:
            self._table(row)
        self.count += 1
        sys.stdout.flush()

    def _table(self, row: dict) -> None:
        raise NotImplementedError


class _RowPrinter(RowPrinter):
    """A metric's rows; the table is the per-item one, and the run's signatures are printed at the end."""

    def __init__(self, fmt: str, metric: Any, quiet: bool):
        super().__init__(fmt, quiet)
        self.spec = metric.spec
        self.signatures: dict[str, None] = {}

    def row(self, row: dict) -> None:
        if not self.quiet:
            self.signatures[row.get("signature", "")] = None
        super().row(row)

    def _table(self, row: dict) -> None:
        _print_table(self.count, row, self.spec)

    def finish(self) -> None:
        if not self.quiet and self.fmt == "table":
            for signature in self.signatures:
                print(f"signature: {signature}")


def print_unrated(metric: Any, model: str | None) -> None:
    """Criteria the judge was not asked (it cannot see images), what ``overall`` weighs instead, and one line
    on how to get image-aware scores."""
    unrated = getattr(metric, "unrated_criteria", None)
    if not unrated:
        return
    judge = "SmolLM2-135M-Instruct, a small text-only model" if model == SMOLLM2 else metric.judge.describe()
    print(
        f"Not rated: {', '.join(unrated)} (they look at the image, and the judge — {judge} — cannot see images); "
        f"overall weighs {', '.join(metric.rated_criteria)}."
    )
    print(
        "For image-aware scores, use a vision-language judge: --model Qwen/Qwen2.5-VL-7B-Instruct where the "
        "Hugging Face Hub is reachable, or --judge openai --set base_url=http://HOST:PORT/v1 for one behind an "
        "OpenAI-compatible server (docs/api_judges.md)."
    )


def print_usage(metric: Any) -> None:
    """The judge's paid usage (API backends: requests, tokens, cost), when it keeps any."""
    judge = getattr(metric, "judge", None)
    summary = judge.usage_summary() if judge is not None else None
    if summary:
        print(f"usage: {summary}")


def _print_table(i: int, row: dict, spec: Any) -> None:
    print(f"\n[{i}] task={row.get('task', '')}  text={row.get('text', '')!r}")
    if row.get("error"):
        print(f"  not scored: {row['error']}")
        return
    print(f"  {'':14s} {'score':>7s} {'sigma':>7s} {'weight':>7s}")
    missing = [k for k in spec.score_names() if row.get(f"{k}_status") not in (None, "ok", *NOT_ASKED)]
    not_asked = [k for k in spec.score_names() if row.get(f"{k}_status") in NOT_ASKED]
    for key in spec.score_names():  # primary first, criteria in their order
        if key not in row:
            continue
        status = row.get(f"{key}_status")
        if status not in (None, "ok"):  # no score: say why instead of an empty cell
            print(f"  {key:14s} {'—':>7s}  {status}: {row.get(f'{key}_note') or ''}".rstrip())
            continue
        cells = [_fmt(row.get(key)), _fmt(row.get(f"{key}_sigma")), _fmt(row.get(f"{key}_weight"))]
        if key == spec.primary and cells[0] == "" and missing:
            cells[0] = "—"
            print(f"  {key:14s} " + " ".join(f"{c:>7s}" for c in cells) + f"  (no rating for {', '.join(missing)})")
            continue
        # An overall over fewer criteria says so on its own line: it is not the five-criterion score.
        without = f"  (without {', '.join(not_asked)})" if key == spec.primary and not_asked else ""
        print(f"  {key:14s} " + " ".join(f"{c:>7s}" for c in cells) + without)
    for out in spec.outputs:
        if out.kind == "text" and row.get(out.name) and out.name.endswith("explanation"):
            print(f"  {out.name}: {row[out.name]}")


def _fmt(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "score",
        help="score texts with a metric (default: harmonic_eval)",
        description="Score texts written by vision-language models with an mmjudge metric; every row "
        "carries the metric's signature.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--metric", default="harmonic_eval", help="metric name (see mmjudge.available_metrics())")
    p.add_argument("--config", default=None, help="metric configuration, e.g. reffleur")
    p.add_argument("--task", default="ic", help="ic, vqa, vdu or reg (default ic)")
    p.add_argument("--text", help="the text to evaluate")
    p.add_argument("--image", help="image file")
    p.add_argument("--question", help="question (vqa, vdu)")
    p.add_argument("--box", help="bounding box x,y,w,h (reg)")
    p.add_argument("--references", nargs="+", help="reference texts (reference-based metrics)")
    p.add_argument(
        "--input",
        help="the items: a JSONL file (one object per line with text, image, question, box, "
        "references, task, id), a CSV file with those columns (references separated by '|'), a Parquet file, "
        "or a datasets dataset (a local folder or a Hub id); read lazily",
    )
    p.add_argument(
        "--input-format",
        dest="input_format",
        choices=FORMATS,
        help="the --input's format (default: from its suffix; folders and Hub ids are datasets)",
    )
    p.add_argument("--split", help="the split of a --input dataset with several")
    p.add_argument(
        "--columns",
        help="item key=column pairs for inputs with other column names, e.g. "
        "text=caption,image=file_name,references=refs",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first item that cannot be scored (one line naming it; by default its row records the "
        "reason and the run goes on), and end with exit status 3 when the judge gave no rating for some item",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="score --output again from the start; by default a run resumes where an earlier one stopped",
    )
    p.add_argument(
        "--chunk-size",
        dest="chunk_size",
        type=int,
        help="items scored together (each distinct image decoded once per chunk; default 256)",
    )
    p.add_argument("--examples", action="store_true", help="score the bundled examples")
    p.add_argument(
        "--output",
        help="write per-item rows to this file: CSV (.csv), Parquet (.parquet), else JSONL. Rows go to "
        "FILE.part-0-of-1.jsonl (one part per process) as they finish, and FILE is written, in input order, when the "
        "run completes; a killed run resumes when run again",
    )
    p.add_argument(
        "--format",
        choices=("table", "jsonl", "csv"),
        default="table",
        help="what to print on stdout (default table); JSON writes NaN as null",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing but errors (no table, notes or progress bars)")
    add_judge_options(p)
    add_plan_options(p)
    p.add_argument(
        "--gamma", type=float, help=f"harmonic weighting gamma in (0, 1] (harmonic_eval; default {DEFAULT_GAMMA})"
    )
    p.add_argument("--criteria", help="comma-separated subset of criteria")
    p.add_argument("--explain", action="store_true", help="add one explanation per criterion")
    p.set_defaults(func=run)
