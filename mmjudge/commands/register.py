"""``mmjudge register``: copy the evaluate shells into evaluate's module cache (bare-name loading)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from mmjudge.adapters.evaluate_registry import register

    for path in register(force=args.force):
        print(f"registered {path.parent.parent.name.split('--')[-1]}: {path}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "register",
        help="make evaluate.load('<name>') find mmjudge metrics offline",
        description="Copy mmjudge's evaluate shells (metrics/<name>/<name>.py) into evaluate's module cache "
        "(<HF_MODULES_CACHE>/evaluate_modules/metrics/evaluate-metric--<name>/), so evaluate.load('<name>') "
        "finds them by bare name offline. `import mmjudge` does this too unless MMJUDGE_NO_REGISTER=1.",
        epilog="examples:\n  mmjudge register\n  mmjudge register --force      # rewrite the copies\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--force", action="store_true", help="rewrite the copies even if present")
    p.set_defaults(func=run)
