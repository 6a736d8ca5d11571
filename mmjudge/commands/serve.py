"""``mmjudge serve``: an OpenAI-compatible chat-completions endpoint over a local judge model.

Examples::

    MMJUDGE_API_KEY=$(openssl rand -hex 16) mmjudge serve --model Qwen/Qwen2.5-VL-7B-Instruct --port 8000
    OPENAI_API_KEY=$MMJUDGE_API_KEY mmjudge score --judge openai --set base_url=http://127.0.0.1:8000/v1 --examples

The ``openai`` judge recognises this server (its ``Server`` header) and, with no options, continues the
forced answer prefix and reads each rating's exact probability (``logprob_token_ids``), so its scores equal
the local backend's. Concurrent requests are batched through the model; ``stream=true`` streams.
"""

from __future__ import annotations

import argparse
import importlib.util
import os

from mmjudge.serve.settings import DEFAULT_MAX_IMAGE_PIXELS

# The limits that hold hostile clients off (ServeSettings' fields of the same names).
_LIMITS = (
    "max_prompt_chars",
    "max_image_pixels",
    "header_timeout",
    "body_timeout",
    "max_connections",
    "max_connections_per_client",
)


def _api_key(args: argparse.Namespace) -> str | None:
    """The key from --api-key, else MMJUDGE_API_KEY; refuses to serve other machines without one unless
    --no-api-key says so."""
    from mmjudge.serve.server import is_loopback
    from mmjudge.serve.settings import API_KEY_ENV

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV)
    if args.no_api_key:
        if key is not None:
            raise ValueError(f"--no-api-key contradicts the API key given (--api-key or {API_KEY_ENV}): drop one.")
        return None
    if key is None and not is_loopback(args.host):
        raise ValueError(
            f"--host {args.host} lets other machines in, and no API key is set: set --api-key (or {API_KEY_ENV}), "
            "or pass --no-api-key to serve without a key on purpose."
        )
    return key


def run(args: argparse.Namespace) -> int:
    from mmjudge.judges import load_judge
    from mmjudge.serve.server import make_server
    from mmjudge.serve.settings import ServeSettings

    # Every setting is checked here, before the model loads: a refusal costs nothing.
    key = _api_key(args)
    limits = {name: getattr(args, name) for name in _LIMITS}
    settings = ServeSettings(key, args.max_tokens, args.max_logprobs, args.request_timeout, **limits, options=True)
    if args.max_batch_size < 1:  # the model thread's own settings (it checks them once the model is loaded)
        raise ValueError(f"--max-batch-size must be a positive integer, but got {args.max_batch_size}.")
    if args.batch_wait_ms < 0:
        raise ValueError(f"--batch-wait-ms must be at least 0, but got {args.batch_wait_ms:g}.")
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(f"mmjudge serve needs {' and '.join(missing)}: pip install 'mmjudge[serve]'")
    options = {k: getattr(args, k) for k in ("revision", "device", "dtype", "gguf_file") if getattr(args, k)}
    judge = load_judge("transformers", model=args.model, **options)
    server = make_server(
        judge,
        args.host,
        args.port,
        args.served_model_name,
        settings=settings,
        max_batch_size=args.max_batch_size,
        batch_wait=args.batch_wait_ms / 1000,
    )
    print(
        f"mmjudge serve: {server.engine.model_name} at {server.url} ("
        + ("API key required" if key else "no API key")
        + f"; max_tokens <= {args.max_tokens}, top_logprobs <= {args.max_logprobs}, "
        f"batches of <= {args.max_batch_size}; Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()  # uvicorn ends the requests in flight (5 s at most), then re-raises the signal
    except KeyboardInterrupt:  # Ctrl-C is how a foreground server stops: no traceback
        print("mmjudge serve: stopped", flush=True)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve a local judge model as an OpenAI-compatible chat endpoint")
    p.add_argument("--model", required=True, help="Hub id or folder of the judge model")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default %(default)s)")
    p.add_argument(
        "--api-key",
        help="clients must send `Authorization: Bearer <key>` (default: the environment variable MMJUDGE_API_KEY; "
        "prefer it: a command line is visible to other local users)",
    )
    p.add_argument(
        "--no-api-key",
        action="store_true",
        help="serve without a key although --host is not loopback (anyone who reaches the port uses the model)",
    )
    p.add_argument("--served-model-name", help="the name clients use (default: the model's id or fingerprint)")
    _add_limits(p)
    p.add_argument("--revision", help="model revision (Hub branch, tag or commit)")
    p.add_argument("--device", help="cpu, cuda, cuda:N or mps (default: cuda when available, else cpu)")
    p.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on a GPU, float32 on the CPU)")
    p.add_argument(
        "--gguf-file", dest="gguf_file", help="GGUF file inside the model folder or repo (llama.cpp weights)"
    )
    p.set_defaults(func=run)


def _add_limits(p) -> None:
    """What one request, one connection and one client may take (ServeSettings checks them once)."""
    p.add_argument(
        "--max-tokens",
        type=int,
        default=1024,
        help="largest max_tokens a request may ask for; above it: 400 (default %(default)s)",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=300.0,
        help="seconds a request may take, waiting included: an answer still running is cut there "
        "(finish_reason length), one still waiting gets 503 (default %(default)s)",
    )
    p.add_argument(
        "--max-logprobs", type=int, default=20, help="largest top_logprobs a client may ask for (default %(default)s)"
    )
    p.add_argument(
        "--max-prompt-chars",
        type=int,
        default=1_000_000,
        help="most characters of text a request's messages may hold (also a /tokenize prompt); above it: 400, "
        "before any tokenising (default %(default)s)",
    )
    p.add_argument(
        "--max-image-pixels",
        type=int,
        default=DEFAULT_MAX_IMAGE_PIXELS,
        help="most pixels (width x height) a request's image may have; above it: 400, read from the image's "
        "header before any pixel is decoded (default %(default)s: 6000x6000)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a connection has to send a request's headers, from its opening or its previous answer; "
        "then it is closed (408 if it had started) (default %(default)s)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=60.0,
        help="seconds a request's body may take to arrive after its headers; then 408 (default %(default)s)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=512,
        help="open connections in all; beyond it: 503 (default %(default)s)",
    )
    p.add_argument(
        "--max-connections-per-client",
        type=int,
        default=32,
        help="open connections from one client address (an IPv6 /64); beyond it: 429 at once. Behind a reverse "
        "proxy every client has the proxy's address: raise it to --max-connections (default %(default)s)",
    )
    p.add_argument(
        "--max-batch-size", type=int, default=16, help="requests run together in one batch (default %(default)s)"
    )
    p.add_argument(
        "--batch-wait-ms",
        type=float,
        default=5.0,
        help="how long an idle server gathers requests into a batch, in milliseconds (default %(default)s)",
    )
