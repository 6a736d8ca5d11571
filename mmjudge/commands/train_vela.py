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

    config = TrainConfig(
        epochs=args.epochs,
        lr_llm=args.lr_llm,
        lr_projection=args.lr_projection,
        lr_head=args.lr_head,
        weight_decay=args.weight_decay,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        seed=args.seed,
        save_every=args.save_every,
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


def add_parser(sub) -> None:
    from mmjudge.metrics.vela.model import DEFAULT_LLM, VelaConfig
    from mmjudge.metrics.vela.training import TrainConfig

    d = TrainConfig()
    p = sub.add_parser(
        "train-vela",
        help="train VELA on LongCap-Arena (LoRA + head; resumable)",
        description="Train VELA (LoRA on the LLM, projection and criterion head; Long-CLIP frozen) on LongCap-Arena with "
        "the published configuration; validation Kendall tau-c per criterion each epoch, the best epoch kept in "
        "OUT/best. Interrupted? Run the same command again: it resumes exactly from OUT/last.",
        epilog="examples:\n  mmjudge train-vela --clip-model models/longclip-L --out runs/vela\n"
        "  mmjudge train-vela --clip-model models/longclip-L --out runs/vela --grad-accum 8 --data-dir ~/data/longcap\n",
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
    p.add_argument("--epochs", type=int, default=d.epochs, help=f"epochs (default {d.epochs})")
    p.add_argument(
        "--lr-llm", dest="lr_llm", type=float, default=d.lr_llm, help=f"LoRA learning rate (default {d.lr_llm})"
    )
    p.add_argument(
        "--lr-projection",
        dest="lr_projection",
        type=float,
        default=d.lr_projection,
        help=f"projection learning rate (default {d.lr_projection})",
    )
    p.add_argument(
        "--lr-head", dest="lr_head", type=float, default=d.lr_head, help=f"head learning rate (default {d.lr_head})"
    )
    p.add_argument(
        "--weight-decay",
        dest="weight_decay",
        type=float,
        default=d.weight_decay,
        help=f"AdamW weight decay (default {d.weight_decay})",
    )
    p.add_argument(
        "--batch-size",
        dest="batch_size",
        type=int,
        default=d.batch_size,
        help=f"samples per micro-batch (default {d.batch_size})",
    )
    p.add_argument(
        "--grad-accum", dest="grad_accum", type=int, default=d.grad_accum, help="micro-batches per optimizer step"
    )
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed (default {d.seed})")
    p.add_argument(
        "--save-every",
        dest="save_every",
        type=int,
        default=d.save_every,
        help=f"optimizer steps between resumable saves (default {d.save_every}; 0 = epoch ends only)",
    )
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
