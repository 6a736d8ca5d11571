"""``mmjudge score``: score texts with any mmjudge metric and print a per-criterion table.

Examples::

    mmjudge score --task ic --image photo.jpg --text "A dog runs on the beach." --model Qwen/Qwen2.5-VL-7B-Instruct
    mmjudge score --examples --model tiny-random --explain
    mmjudge score --metric fleur --input items.jsonl --output scores.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from mmjudge import distributed
from mmjudge.commands._options import add_judge_options, judge_options
from mmjudge.models import TINY_RANDOM
from mmjudge.report import Report

TINY = TINY_RANDOM


def read_items(args: argparse.Namespace) -> list[dict]:
    if args.examples:
        from mmjudge.examples import load_examples

        return load_examples()
    if args.input:
        items = []
        with open(args.input, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        items.append(json.loads(line))
                    except json.JSONDecodeError as err:
                        raise ValueError(f"{args.input}:{n}: not valid JSON ({err}).") from None
        return items
    if args.text is None:
        raise ValueError("give --text (with --image …), --input FILE.jsonl or --examples.")
    item: dict[str, Any] = {"text": args.text, "image": args.image, "question": args.question}
    if args.box:
        item["box"] = [float(v) for v in args.box.split(",")]
    if args.references:
        item["references"] = args.references
    return [item]


def metric_kwargs(args: argparse.Namespace) -> dict:
    kwargs = judge_options(args)
    if args.gamma is not None:
        kwargs["gamma"] = args.gamma
    if args.explain:
        kwargs["explain"] = True
    if args.criteria:
        kwargs["criteria"] = args.criteria.split(",")
    return kwargs


def run(args: argparse.Namespace) -> int:
    import mmjudge

    items = read_items(args)
    if not items:
        raise ValueError("no items to score.")
    if args.model == TINY:
        print(f"NOTE: '{TINY}' is a model with RANDOM weights: it proves the pipeline, its scores mean nothing.")
    metric = mmjudge.load(args.metric, args.config, **metric_kwargs(args))
    report = Report.from_items(metric, items, default_task=args.task, progress=None, keep=["text"])
    for i, row in enumerate(report.rows):
        _print_table(i, row, report)
    for signature in report.signatures:
        print(f"signature: {signature}")
    if args.output and distributed.is_main():  # under a launcher, one process writes
        report.to_jsonl(args.output)
        print(f"wrote {len(report.rows)} rows to {args.output}")
    return 0


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
    p = sub.add_parser("score", help="score texts with a metric (default: harmonic_eval)")
    p.add_argument("--metric", default="harmonic_eval", help="metric name (see mmjudge.available_metrics())")
    p.add_argument("--config", default=None, help="metric configuration, e.g. reffleur")
    p.add_argument("--task", default="ic", help="ic, vqa, vdu or reg (default ic)")
    p.add_argument("--text", help="the text to evaluate")
    p.add_argument("--image", help="image file")
    p.add_argument("--question", help="question (vqa, vdu)")
    p.add_argument("--box", help="bounding box x,y,w,h (reg)")
    p.add_argument("--references", nargs="+", help="reference texts (reference-based metrics)")
    p.add_argument("--input", help="JSONL file: one object per line with text, image, question, box, task, id")
    p.add_argument("--examples", action="store_true", help="score the bundled examples")
    p.add_argument("--output", help="write per-item results as JSONL")
    add_judge_options(p)
    p.add_argument("--gamma", type=float)
    p.add_argument("--criteria", help="comma-separated subset of criteria")
    p.add_argument("--explain", action="store_true", help="add one explanation per criterion")
    p.set_defaults(func=run)


ENTRY = add_parser
