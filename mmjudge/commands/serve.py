"""``mmjudge serve``: an OpenAI-compatible chat-completions endpoint over a local judge model.

Examples::

    mmjudge serve --model Qwen/Qwen2.5-VL-7B-Instruct --port 8000
    mmjudge score --judge openai --set base_url=http://127.0.0.1:8000/v1 --examples

The ``openai`` judge recognises this server (its ``Server`` header) and, with no options, continues the
forced answer prefix and reads each rating's exact probability (``logprob_token_ids``), so its scores equal
the local backend's.
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from mmjudge.judges import load_judge
    from mmjudge.serve import make_server

    if args.max_logprobs < 1:
        raise ValueError(f"--max-logprobs must be a positive integer, but got {args.max_logprobs}.")
    options = {k: getattr(args, k) for k in ("revision", "device", "dtype", "gguf_file") if getattr(args, k)}
    judge = load_judge("transformers", model=args.model, **options)
    server = make_server(judge, args.host, args.port, args.served_model_name, args.max_logprobs)
    host, port = server.server_address[:2]
    name = server.RequestHandlerClass.engine.model_name
    print(
        f"mmjudge serve: {name} at http://{host}:{port}/v1 (continue_final_message, logprob_token_ids, "
        f"top_logprobs <= {args.max_logprobs}; Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve a local judge model as an OpenAI-compatible chat endpoint")
    p.add_argument("--model", required=True, help="Hub id or folder of the judge model")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default %(default)s)")
    p.add_argument("--served-model-name", help="the name clients use (default: the model's id or fingerprint)")
    p.add_argument(
        "--max-logprobs", type=int, default=20, help="largest top_logprobs a client may ask for (default %(default)s)"
    )
    p.add_argument("--revision", help="model revision (Hub branch, tag or commit)")
    p.add_argument("--device", help="cpu, cuda, cuda:N or mps (default: cuda when available, else cpu)")
    p.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on a GPU, float32 on the CPU)")
    p.add_argument(
        "--gguf-file", dest="gguf_file", help="GGUF file inside the model folder or repo (llama.cpp weights)"
    )
    p.set_defaults(func=run)
