"""``mmjudge compare --system NAME=FILE …``: rank systems from adaptively chosen head-to-head battles
(:func:`mmjudge.pairwise.arena.rank_systems`); the ranking mode of :mod:`mmjudge.commands.compare`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mmjudge import distributed
from mmjudge.commands.score import metric_kwargs, print_usage
from mmjudge.models import TINY_RANDOM
from mmjudge.stream.sources import parse_columns


def parse_systems(pairs: list[str]) -> dict[str, str]:
    """``--system NAME=FILE`` (repeated) → ``{name: file}``.

    >>> parse_systems(["base=a.jsonl", "ft=b.jsonl"])
    {'base': 'a.jsonl', 'ft': 'b.jsonl'}
    >>> parse_systems(["base=a.jsonl", "base=b.jsonl"])
    Traceback (most recent call last):
    ValueError: --system base is given twice; every system needs its own name.
    """
    systems: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise ValueError(f"--system expects NAME=FILE (e.g. --system base=base.jsonl), but got {pair!r}.")
        if name in systems:
            raise ValueError(f"--system {name} is given twice; every system needs its own name.")
        systems[name] = path
    return systems


def check_output_dir_spares_systems(output_dir: str, systems: dict[str, str], max_rounds: int | None) -> None:
    """No file the ranking writes into (or, with ``--overwrite``, deletes from) ``--output-dir`` is a system's
    outputs file, nor lies inside a system given as a folder (its data files are all read: the next run would
    read the rounds' rows as that system's): refused in one line before anything is touched."""
    from mmjudge.pairwise.arena import written_files
    from mmjudge.pairwise.schedule import DEFAULT_MAX_ROUNDS
    from mmjudge.paths import check_writes_spare_reads

    files = written_files(output_dir, max_rounds or DEFAULT_MAX_ROUNDS)
    writes = [("--output-dir", path, f"--output-dir {output_dir} (its {path.name})") for path in files]
    reads = [(f"--system {name}", path) for name, path in systems.items()]
    check_writes_spare_reads(writes, reads, folders_read_whole=True)  # a folder is read as one table (open_source)


def run_ranking(args: argparse.Namespace) -> int:
    import mmjudge
    from mmjudge.pairwise.arena import rank_systems

    systems = parse_systems(args.system)
    if len(systems) < 3:
        raise ValueError(
            f"--system: give three or more systems to rank (got {len(systems)}); compare two with --a and --b."
        )
    if not args.output_dir:
        raise ValueError("--system: give --output-dir, where the rounds' rows and the ranking go.")
    if args.a or args.b or args.output:
        raise ValueError("--system ranks systems into --output-dir; --a, --b and --output are for comparing two.")
    check_output_dir_spares_systems(args.output_dir, systems, args.max_rounds)
    say = print if not args.quiet and distributed.is_main() else (lambda *a, **k: None)
    rater = mmjudge.load("harmonic_eval", **metric_kwargs(args))
    metric = rater.pairwise(args.pairwise_prompts)
    if args.model == TINY_RANDOM:
        say(f"NOTE: '{TINY_RANDOM}' has RANDOM weights: its ranking means nothing.", file=sys.stderr)
    options: dict[str, Any] = {}
    for name in ("items_per_pair", "max_rounds", "bootstrap"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    anchors = [a.strip() for a in args.anchors.split(",") if a.strip()] if args.anchors else None

    def announce(number: int, battles: int) -> None:
        say(f"round {number}: {battles} battles", file=sys.stderr)

    ranking = rank_systems(
        metric,
        systems,
        args.output_dir,
        anchors=anchors,
        seed=args.seed,
        task=args.task,
        strict=args.strict,
        overwrite=args.overwrite,
        progress=not args.quiet,
        chunk_size=args.chunk_size,
        source_options={"kind": args.input_format, "split": args.split, "columns": parse_columns(args.columns)},
        on_round=announce,
        **options,
    )
    say(ranking.markdown())
    say(f"\nwrote ranking.json, ranking.md, win_rates.csv and the rounds' rows to {args.output_dir}")
    say(f"signature: {ranking.signature}")
    if distributed.is_main() and not args.quiet:
        print_usage(metric)
    return 3 if args.strict and ranking.no_preference else 0
