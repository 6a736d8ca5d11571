"""The ``mmjudge`` command line. Each module of :mod:`mmjudge.commands` adds one sub-command by
defining ``ENTRY = register`` where ``register(subparsers)`` adds its parser and sets ``func``."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from mmjudge import __version__, registry


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mmjudge", description="Evaluate text written by vision-language models.")
    parser.add_argument("--version", action="version", version=f"mmjudge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in registry.available("mmjudge.commands"):
        registry.entry("mmjudge.commands", name, "command")(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from mmjudge import distributed

    if not distributed.is_main():
        # Under torchrun / accelerate launch the other processes only answer their share of the judge's
        # requests (mmjudge.distributed); everything they would print repeats the main process's output.
        import contextlib
        import os

        os.environ["TQDM_DISABLE"] = "1"
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except ValueError as err:  # bad input: a clear message, not a traceback
        print(f"mmjudge {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
