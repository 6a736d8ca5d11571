"""``mmjudge score``: score texts with any mmjudge metric and print a per-criterion table.

Examples::

    mmjudge score --task ic --image photo.jpg --text "A dog runs on the beach." --model Qwen/Qwen2.5-VL-7B-Instruct
    mmjudge score --examples --model tiny-random --explain
    mmjudge score --metric fleur --input items.jsonl --output scores.jsonl
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import sys
from pathlib import Path
from typing import Any, Optional

from mmjudge import distributed
from mmjudge.commands._options import add_judge_options, judge_options
from mmjudge.jsonl import JsonLineError, decode, json_lines
from mmjudge.models import TINY_RANDOM
from mmjudge.report import Report


EXAMPLES = """\
examples:
  mmjudge score --examples --model tiny-random               # offline demo, random weights
  mmjudge score --task ic --image photo.jpg --text "A dog runs on the beach." --model Qwen/Qwen2.5-VL-7B-Instruct
  mmjudge score --task reg --image photo.jpg --box 10,20,100,50 --text "the red car"
  mmjudge score --metric fleur --input items.jsonl --output scores.jsonl --quiet
  mmjudge score --metric baselines --config bleu --text "a dog" --references "a dog runs" --format jsonl
"""


def read_items(args: argparse.Namespace) -> list[dict]:
    """The items to score, every one checked before any model is loaded."""
    if args.examples:
        from mmjudge.examples import load_examples

        return load_examples()
    if args.input:
        return read_input_file(args.input)
    if args.text is None:
        raise ValueError("give --text (with --image …), --input FILE.jsonl or --examples.")
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


def read_input_file(path: str) -> list[dict]:
    """Items from a JSONL file (one object per line) or a CSV file with a header row (a byte-order
    mark is accepted). Each error names ``file:line``; duplicate ids name both lines."""
    source = Path(path)
    if source.is_dir():
        raise ValueError(f"--input {path}: is a folder; give a .jsonl or .csv file.")
    if not source.is_file():
        raise FileNotFoundError(f"--input {path}: no such file.")
    located: list[tuple[int, Any]] = []
    try:
        text = decode(source.read_bytes())
        if source.suffix.lower() != ".csv":
            located = list(json_lines(text))
    except JsonLineError as err:
        raise ValueError(f"{path}:{err.line}: {err.reason}") from None
    if source.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        for n, row in enumerate(reader, 2):
            item = {k.strip(): v for k, v in row.items() if k is not None and v not in (None, "")}
            if "references" in item:
                item["references"] = [r for r in item["references"].split("|") if r]
            if "box" in item:
                item["box"] = parse_box(item["box"])
            located.append((n, item))
    seen: dict[str, int] = {}
    for n, item in located:
        if not isinstance(item, dict):
            raise ValueError(f"{path}:{n}: expected a JSON object like {{\"text\": ..., \"image\": ...}}, but got {type(item).__name__}.")
        text_value = item.get("text")
        if not isinstance(text_value, str) or not text_value.strip():
            raise ValueError(f"{path}:{n}: 'text' must be a non-empty string, but got {text_value!r:.40}.")
        if item.get("id") is not None:
            key = str(item["id"])
            if key in seen:
                raise ValueError(f"{path}:{n}: id {key!r} is also on line {seen[key]}; ids must be unique.")
            seen[key] = n
    return [item for _, item in located]


def check_output(path: Optional[str]) -> None:
    """An --output file can be written: checked BEFORE scoring, so no work is lost to a typo."""
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"--output {path}: is a folder; give a file name such as {str(target / 'scores.jsonl')!r}.")
    folder = target.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"--output {path}: folder {str(folder)!r} does not exist; create it first (mkdir -p {folder}).")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"--output {path}: folder {str(folder)!r} is not writable.")
    if target.exists() and not os.access(target, os.W_OK):  # would fail only after all the scoring
        raise PermissionError(f"--output {path}: the file exists and is not writable; give another name or make it writable.")


def metric_kwargs(args: argparse.Namespace) -> dict:
    kwargs = judge_options(args)
    if args.gamma is not None:
        kwargs["gamma"] = args.gamma
    if args.explain:
        kwargs["explain"] = True
    if args.criteria is not None:
        criteria = [c.strip() for c in args.criteria.split(",") if c.strip()]
        if not criteria:
            raise ValueError(f"--criteria {args.criteria!r} names no criterion; give e.g. --criteria fluency,clarity or leave it out for all.")
        kwargs["criteria"] = criteria
    return kwargs


def run(args: argparse.Namespace) -> int:
    import mmjudge

    check_output(args.output)
    items = read_items(args)
    if not items:
        raise ValueError("no items to score.")
    # Notes go to stderr too, which a launcher does not silence: under torchrun only the main process speaks.
    notes = not args.quiet and distributed.is_main()
    say = print if notes else (lambda *a, **k: None)
    metric = mmjudge.load(args.metric, args.config, **metric_kwargs(args))
    if args.model == TINY_RANDOM:  # after loading, so a bad option's error stays the only line
        say(f"NOTE: '{TINY_RANDOM}' is a model with RANDOM weights: it proves the pipeline, its scores mean nothing.", file=sys.stderr)
    report = Report.from_items(metric, items, default_task=args.task, progress=False if args.quiet else None, keep=["text"])
    if not args.quiet:
        if args.format == "jsonl":
            sys.stdout.write(report.to_jsonl())
        elif args.format == "csv":
            sys.stdout.write(report.to_csv())
        else:
            for i, row in enumerate(report.rows):
                _print_table(i, row, report)
            for signature in report.signatures:
                print(f"signature: {signature}")
    if args.output and distributed.is_main():  # under a launcher, one process writes
        if args.output.lower().endswith(".csv"):
            report.to_csv(args.output)
        else:
            report.to_jsonl(args.output)
        say(f"wrote {len(report.rows)} rows to {args.output}", file=sys.stderr if args.format != "table" else sys.stdout)
    if notes:
        import contextlib

        # stdout holds only the rows when they are JSONL or CSV: notes go to stderr then.
        with contextlib.redirect_stdout(sys.stderr if args.format != "table" else sys.stdout):
            print_usage(metric)
    return 0


def print_usage(metric: Any) -> None:
    """The judge's paid usage (API backends: requests, tokens, cost), when it keeps any."""
    judge = getattr(metric, "judge", None)
    summary = getattr(getattr(judge, "inner", judge), "usage_summary", None)
    if callable(summary):
        print(f"usage: {summary()}")


def _print_table(i: int, row: dict, report: Report) -> None:
    print(f"\n[{i}] task={row.get('task', '')}  text={row.get('text', '')!r}")
    print(f"  {'':14s} {'score':>7s} {'sigma':>7s} {'weight':>7s}")
    for key in report.spec.score_names():  # primary first, criteria in their order
        if key not in row:
            continue
        cells = [_fmt(row.get(key)), _fmt(row.get(f"{key}_sigma")), _fmt(row.get(f"{key}_weight"))]
        print(f"  {key:14s} " + " ".join(f"{c:>7s}" for c in cells))
    for out in report.spec.outputs:
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
    p.add_argument("--input", help="JSONL file (one object per line with text, image, question, box, task, id) "
                   "or CSV file with those columns (references separated by '|')")
    p.add_argument("--examples", action="store_true", help="score the bundled examples")
    p.add_argument("--output", help="write per-item results to this file: CSV when it ends in .csv, else JSONL")
    p.add_argument("--format", choices=("table", "jsonl", "csv"), default="table",
                   help="what to print on stdout (default table); JSON writes NaN as null")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors (no table, notes or progress bars)")
    add_judge_options(p)
    p.add_argument("--gamma", type=float, help="harmonic weighting gamma in (0, 1] (harmonic_eval; default 0.5)")
    p.add_argument("--criteria", help="comma-separated subset of criteria")
    p.add_argument("--explain", action="store_true", help="add one explanation per criterion")
    p.set_defaults(func=run)
