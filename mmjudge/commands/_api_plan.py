"""``mmjudge score --dry-run`` / ``--max-cost`` / ``--set mode=batch``: a planning pass over the input before
anything is sent (:mod:`mmjudge.judges.openai.plan`). It counts the requests the cache does not hold and their
tokens and prints the estimated price for both modes (``--dry-run``: then stops, nothing sent), refuses a run
whose estimate is over ``--max-cost`` (one line, nothing sent), and in batch mode submits every uncached
request at once through the Batch API and waits, so the run that follows finds its answers in the cache."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from typing import Any

from mmjudge import distributed


def _backend(metric: Any) -> Any:
    from mmjudge.judges.base import innermost

    judge = getattr(metric, "judge", None)
    return None if judge is None else innermost(judge)


def wants_plan(args: argparse.Namespace, metric: Any) -> bool:
    """Whether this run needs a planning pass first."""
    backend = _backend(metric)
    batch = getattr(backend, "backend", "") == "openai" and getattr(backend, "mode", "sync") == "batch"
    return bool(args.dry_run or args.max_cost is not None or batch)


def plan_before_run(
    args: argparse.Namespace,
    metric: Any,
    items: Callable[[], Iterable[Any]],
    say: Callable[..., None],
    **stream_options: Any,
) -> bool:
    """Plan the run (see the module docs). Returns ``True`` when nothing more is to be done (a dry run)."""
    from mmjudge.judges.openai.plan import plan_run
    from mmjudge.stream import stream_rows

    backend = _backend(metric)
    if backend is None:
        if args.dry_run:
            say("this metric asks no judge: a run sends nothing and costs nothing.", file=sys.stderr)
        return bool(args.dry_run)
    api = getattr(backend, "backend", "") == "openai"
    if args.max_cost is not None and not api:
        raise ValueError("--max-cost prices requests to an API judge (--judge openai / --model openai:NAME).")
    if distributed.world_size() > 1:
        raise ValueError("--dry-run, --max-cost and mode=batch run in one process: start without torchrun.")
    batch = api and backend.mode == "batch" and not args.dry_run

    def consume() -> None:
        for _ in stream_rows(metric, items(), args.task, False, progress=False, **stream_options):
            pass

    plan = plan_run(metric, consume, batch=batch)
    try:
        if args.dry_run:  # the estimate is what was asked for: on stdout, even with --quiet
            print("\n".join(["dry run: " + line for line in plan.lines()] + ["dry run: nothing was sent."]))
            return True
        if args.max_cost is not None:
            backend.max_cost = float(args.max_cost)  # the run's own requests stay under it too
            backend.check_budget(plan.estimate, option="--max-cost")  # the whole run's estimate: BudgetError
        for line in plan.lines():  # (after the check: a refused run is one line)
            say("plan: " + line, file=sys.stderr)
        if batch:
            plan.submit(progress=not args.quiet)
    finally:
        plan.close()
    return False


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    """``--dry-run`` and ``--max-cost``."""
    parser.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        help="send nothing: count the requests the judge cache does not hold and their tokens, and print the "
        "estimated price synchronously and with --set mode=batch (API judges), then stop",
    )
    parser.add_argument(
        "--max-cost",
        dest="max_cost",
        type=_cost,
        metavar="USD",
        help="API judges: stop before sending anything when the run's estimated price is over USD",
    )


def _cost(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected an amount in US$ (e.g. 5 or 0.50), but got {text!r}")
    return value
