"""``mmjudge train-vela``: train VELA on LongCap-Arena (resumable: run the same command again).

Example::

    mmjudge convert-longclip longclip-L.pt models/longclip-L
    mmjudge train-vela --clip-model models/longclip-L --out runs/vela
    mmjudge score --metric vela --set checkpoint=runs/vela/best --set clip_model=models/longclip-L ...
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    import mmjudge
    from mmjudge.metrics.vela.training import TrainConfig, items_from_dataset, train_vela

    check_out_spares_inputs(args)
    config = TrainConfig(
        **{_field(flag): getattr(args, _field(flag)) for flag, _, _ in TRAINING_FLAGS},
        gradient_checkpointing=not args.no_gradient_checkpointing,
    )
    try:
        splits = {}
        for split in (args.train_split, args.val_split):
            data = mmjudge.load_dataset("longcap_arena", split=split, data_dir=args.data_dir)
            splits[split] = items_from_dataset(data)
    except (FileNotFoundError, OSError) as err:
        raise ValueError(f"LongCap-Arena could not be loaded ({str(err).splitlines()[0]}); pass --data-dir.") from None
    train, val = splits[args.train_split], splits[args.val_split]
    if args.limit:
        train, val = train[: args.limit], val[: args.limit]
    model_config = {k: v for k, v in (("projection_dim", args.projection_dim), ("max_length", args.max_length)) if v}
    try:
        result = train_vela(
            train,
            val,
            args.out,
            llm=args.llm,
            clip_model=args.clip_model,
            config=config,
            device=args.device,
            dtype=args.dtype,
            **model_config,
        )
    except (FileNotFoundError, OSError) as err:
        raise ValueError(str(err).splitlines()[0]) from None
    best = result["best"] or {}
    taus = ", ".join(f"{k} {v:.3f}" for k, v in (best.get("tau_c") or {}).items())
    print(f"best epoch {best.get('epoch')}: tau-c {taus}; checkpoint {result['best_dir']}")
    return 0


def check_out_spares_inputs(args: argparse.Namespace) -> None:
    """``--out`` receives ``best/`` and ``history.json`` and replaces ``last/`` at every save (the old one
    deleted): no input (``--clip-model``, ``--llm`` when a folder, ``--data-dir``) may be ``--out`` itself or lie
    inside what it writes. Refused in one line before any model loads."""
    import os

    from mmjudge.paths import same_file

    out = os.path.realpath(os.path.expanduser(args.out))
    written = {os.path.join(out, name): name for name in ("best", "last", "last.tmp", "history.json")}
    for flag, value in (("--clip-model", args.clip_model), ("--llm", args.llm), ("--data-dir", args.data_dir)):
        if not value or not os.path.lexists(os.path.expanduser(value)):
            continue  # a Hub id, or not there: nothing of it can be overwritten
        path = os.path.realpath(os.path.expanduser(value))
        if same_file(path, out):
            raise ValueError(
                f"--out {args.out} is the {flag} folder {value}: training writes best/, last/ and history.json among "
                "its files; give another --out."
            )
        for target, name in written.items():
            if path == target or path.startswith(target + os.sep):
                raise ValueError(
                    f"{flag} {value} lies inside --out {args.out}'s {name}, which training writes (last/ is deleted "
                    "and written again at every save); give another --out, or move the input."
                )


# The optimisation settings (TrainConfig fields, the flag's name in snake case), each defaulting to the
# published configuration.
TRAINING_FLAGS = (
    ("--epochs", int, "epochs (default {})"),
    ("--lr-llm", float, "LoRA learning rate (default {})"),
    ("--lr-projection", float, "projection learning rate (default {})"),
    ("--lr-head", float, "head learning rate (default {})"),
    ("--weight-decay", float, "AdamW weight decay (default {})"),
    ("--batch-size", int, "samples per micro-batch (default {})"),
    ("--grad-accum", int, "micro-batches per optimizer step (default {})"),
    ("--seed", int, "seed (default {})"),
    ("--save-every", int, "optimizer steps between resumable saves (default {}; 0 = epoch ends only)"),
)


def _field(flag: str) -> str:
    """The TrainConfig field of a flag: ``--lr-llm`` -> ``lr_llm``."""
    return flag[2:].replace("-", "_")


def add_parser(sub) -> None:
    from mmjudge.metrics.vela.model import DEFAULT_LLM, VelaConfig
    from mmjudge.metrics.vela.training import TrainConfig

    d = TrainConfig()
    p = sub.add_parser(
        "train-vela",
        help="train VELA on LongCap-Arena (LoRA + head; resumable)",
        description="Train VELA (LoRA on the LLM, projection and criterion head; Long-CLIP frozen) on LongCap-Arena "
        "with the published configuration; validation Kendall tau-c per criterion each epoch, the best epoch kept in "
        "OUT/best. Interrupted? Run the same command again: it resumes exactly from OUT/last.",
        epilog="examples:\n  mmjudge train-vela --clip-model models/longclip-L --out runs/vela\n"
        "  mmjudge train-vela --clip-model models/longclip-L --out runs/vela --grad-accum 8 "
        "--data-dir ~/data/longcap\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--clip-model",
        dest="clip_model",
        required=True,
        help="Long-CLIP folder in transformers format (mmjudge convert-longclip longclip-L.pt DIR)",
    )
    p.add_argument("--llm", default=DEFAULT_LLM, help=f"instruction LLM (default {DEFAULT_LLM})")
    p.add_argument(
        "--out", required=True, help="run folder: best/ (the checkpoint), last/ (resume state), history.json"
    )
    p.add_argument("--data-dir", dest="data_dir", help="local folder of LongCap-Arena's Parquet files")
    p.add_argument("--train-split", dest="train_split", default="train", help="training split (default train)")
    p.add_argument(
        "--val-split", dest="val_split", default="validation", help="validation split for tau-c (default validation)"
    )
    p.add_argument("--limit", type=int, help="use only the first N training and validation items (smoke runs)")
    for flag, kind, text in TRAINING_FLAGS:
        default = getattr(d, _field(flag))
        p.add_argument(flag, dest=_field(flag), type=kind, default=default, help=text.format(default))
    p.add_argument(
        "--projection-dim",
        dest="projection_dim",
        type=int,
        help=f"width of the projection (default {VelaConfig.projection_dim})",
    )
    p.add_argument("--max-length", dest="max_length", type=int, help="LLM prompt length limit in tokens")
    p.add_argument("--device", help="cuda, cuda:N or cpu (default: CUDA when available)")
    p.add_argument("--dtype", help="LLM dtype (default bf16 on GPU, fp32 on CPU)")
    p.add_argument(
        "--no-gradient-checkpointing",
        dest="no_gradient_checkpointing",
        action="store_true",
        help="keep activations (more memory, a little faster); checkpointing is used on GPU otherwise",
    )
    p.set_defaults(func=run)
