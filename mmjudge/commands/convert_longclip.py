"""``mmjudge convert-longclip``: a Long-CLIP (or OpenAI CLIP) ``.pt`` checkpoint → a ``transformers`` folder.

Example::

    mmjudge convert-longclip longclip-L.pt ~/models/longclip-L-hf
    mmjudge score --metric clip_score --set model=~/models/longclip-L-hf ...
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from mmjudge.encoders.longclip import convert_longclip

    try:
        out = convert_longclip(args.checkpoint, args.out_dir, tokenizer=None if args.no_tokenizer else args.tokenizer)
    except (FileNotFoundError, OSError) as err:  # the CLI turns ValueError into one error line
        raise ValueError(str(err).splitlines()[0]) from None
    print(f"wrote {out}")
    return 0


def add_parser(sub) -> None:
    from mmjudge.encoders.longclip import DEFAULT_TOKENIZER

    p = sub.add_parser(
        "convert-longclip",
        help="convert a Long-CLIP / OpenAI CLIP .pt checkpoint to a transformers CLIPModel folder",
        description="Convert a Long-CLIP (248 text positions; its two positional tables become one) or OpenAI CLIP "
        ".pt state dict into a stock transformers CLIPModel folder with a tokenizer and image processor, loadable by "
        "CLIPScore, ClipEncoder and VELA.",
        epilog="examples:\n  mmjudge convert-longclip longclip-L.pt models/longclip-L\n"
        "  mmjudge convert-longclip longclip-L.pt models/longclip-L --tokenizer ~/clip-vit-large-patch14\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("checkpoint", help="the .pt file, e.g. longclip-L.pt from BeichenZhang/LongCLIP-L")
    p.add_argument("out_dir", help="folder to write (config.json, model.safetensors, tokenizer, image processor)")
    p.add_argument(
        "--tokenizer",
        default=DEFAULT_TOKENIZER,
        help=f"CLIP tokenizer to ship with it: Hub id or folder (default {DEFAULT_TOKENIZER}, the vocabulary of "
        "Long-CLIP-L); saved with model_max_length = the text positions (248)",
    )
    p.add_argument("--no-tokenizer", action="store_true", help="write the weights and image processor only")
    p.set_defaults(func=run)
