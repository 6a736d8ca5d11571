"""Tiny random checkpoints in other projects' own file formats: what the PAC-S and Polos readers are
given in tests, doctests and benchmarks. Random weights prove plumbing and speed, never quality.

* :func:`openai_clip_state` — an OpenAI-CLIP ViT state dict (``clip.model.CLIP`` keys), optionally with the
  LoRA factors of PAC-S++'s ``models/clip_lora`` model;
* :func:`tiny_pac_s` — ``torch.save({"state_dict": …})`` of one, as the PAC-S authors' files are;
* :func:`tiny_polos` — a PyTorch-Lightning-style ``reprod.ckpt`` (``state_dict``, ``hyper_parameters``, …)
  with ``hparams.yaml`` beside it, as Polos's ``reprod.zip`` holds.

>>> import tempfile
>>> sorted(k for k in openai_clip_state(100, lora_rank=2) if "lora" in k)[:2]
['transformer.resblocks.0.attn.in_proj_weight_lora_A', 'transformer.resblocks.0.attn.in_proj_weight_lora_B']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.tiny_models._tokenizers import PathLike


def _block(prefix: str, width: int, r: Any, lora_rank: int) -> dict:
    out = {
        f"{prefix}attn.in_proj_weight": r(3 * width, width),
        f"{prefix}attn.in_proj_bias": r(3 * width),
        f"{prefix}attn.out_proj.weight": r(width, width),
        f"{prefix}attn.out_proj.bias": r(width),
        f"{prefix}ln_1.weight": 1 + r(width),
        f"{prefix}ln_1.bias": r(width),
        f"{prefix}mlp.c_fc.weight": r(4 * width, width),
        f"{prefix}mlp.c_fc.bias": r(4 * width),
        f"{prefix}mlp.c_proj.weight": r(width, 4 * width),
        f"{prefix}mlp.c_proj.bias": r(width),
        f"{prefix}ln_2.weight": 1 + r(width),
        f"{prefix}ln_2.bias": r(width),
    }
    if lora_rank:  # PAC-S++'s LoRA MultiheadAttention and LoRA Linear layers
        k = lora_rank
        out.update(
            {
                f"{prefix}attn.in_proj_weight_lora_A": r(k, width),
                f"{prefix}attn.in_proj_weight_lora_B": r(3 * width, k),
                f"{prefix}attn.out_proj.lora_A": r(k, width),
                f"{prefix}attn.out_proj.lora_B": r(width, k),
                f"{prefix}mlp.c_fc.lora_A": r(k, width),
                f"{prefix}mlp.c_fc.lora_B": r(4 * width, k),
                f"{prefix}mlp.c_proj.lora_A": r(k, 4 * width),
                f"{prefix}mlp.c_proj.lora_B": r(width, k),
            }
        )
    return out


def openai_clip_state(
    vocab_size: int,
    positions: int = 77,
    width: int = 64,
    vision_width: int = 64,
    layers: int = 2,
    patch: int = 8,
    grid: int = 4,
    embed_dim: int = 32,
    lora_rank: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """A random OpenAI-format CLIP ViT state dict (widths multiples of 64: heads = width / 64, as OpenAI's
    ``build_model`` infers them); ``lora_rank`` > 0 adds PAC-S++'s LoRA factors (attention, MLP and the
    patch convolution)."""
    import torch

    gen = torch.Generator().manual_seed(seed)

    def r(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen) * 0.05

    state = {
        "positional_embedding": r(positions, width),
        "text_projection": r(width, embed_dim),
        "logit_scale": torch.tensor(4.6052),
        "visual.class_embedding": r(vision_width),
        "visual.positional_embedding": r(grid * grid + 1, vision_width),
        "visual.proj": r(vision_width, embed_dim),
        "visual.conv1.weight": r(vision_width, 3, patch, patch),
        "visual.ln_pre.weight": 1 + r(vision_width),
        "visual.ln_pre.bias": r(vision_width),
        "visual.ln_post.weight": 1 + r(vision_width),
        "visual.ln_post.bias": r(vision_width),
        "token_embedding.weight": r(vocab_size, width),
        "ln_final.weight": 1 + r(width),
        "ln_final.bias": r(width),
    }
    if lora_rank:
        state["visual.conv1.lora_A"] = r(lora_rank * patch, 3 * patch)
        state["visual.conv1.lora_B"] = r(vision_width * patch, lora_rank * patch)
    for i in range(layers):
        state.update(_block(f"transformer.resblocks.{i}.", width, r, lora_rank))
        state.update(_block(f"visual.transformer.resblocks.{i}.", vision_width, r, lora_rank))
    return state


def tiny_pac_s(directory: PathLike, plus: bool = False, seed: int = 0, **shape: int) -> dict[str, str]:
    """A tiny random PAC-S (``plus``: PAC-S++, LoRA rank 4) checkpoint file in the authors' format and a
    tiny CLIP tokenizer for it; returns ``{"checkpoint": …, "clip_tokenizer": …}`` to pass to
    ``mmjudge.load("pac_s", …)``. ``shape``: :func:`openai_clip_state`'s sizes."""
    import torch
    from transformers import AutoTokenizer

    from mmjudge.tiny_models.clip import tiny_clip

    out = Path(directory)
    tokenizer = tiny_clip(out / "tokenizer", seed=seed)
    vocab = len(AutoTokenizer.from_pretrained(tokenizer))
    state = openai_clip_state(vocab, lora_rank=4 if plus else 0, seed=seed, **shape)
    path = out / ("PAC++_tiny-random.pth" if plus else "pac_s_tiny-random.pth")
    torch.save({"state_dict": state}, path)
    return {"checkpoint": str(path), "clip_tokenizer": tokenizer}


def tiny_roberta_tokenizer(directory: PathLike) -> str:
    """A tiny byte-level BPE with RoBERTa's special tokens and ids (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2) and
    its ``<s> … </s>`` wrapping, saved as a ``transformers`` tokenizer folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from mmjudge.tiny_models._tokenizers import _CORPUS

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
    )  # fmt: skip
    fast.save_pretrained(directory)
    return str(directory)


def polos_state(
    text_vocab: int, clip_vocab: int, hidden: int = 64, layers: int = 2, seed: int = 0, intermediate: int | None = None
) -> dict[str, Any]:
    """A random Polos ``state_dict`` with the authors' keys: ``encoder.model.*`` (a RoBERTa), ``scalar_mix.*``
    (weights for every hidden-state layer, ``gamma``, the dropout buffers), ``ff.0.ff.linear_1..3`` and
    ``clip.*`` (an OpenAI-format CLIP, :func:`openai_clip_state`)."""
    import torch
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=text_vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
        intermediate_size=intermediate or 2 * hidden, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
        layer_norm_eps=1e-5,
    )  # fmt: skip
    state = {f"encoder.model.{k}": v for k, v in RobertaModel(config).state_dict().items()}
    gen = torch.Generator().manual_seed(seed + 1)
    for i in range(layers + 1):
        state[f"scalar_mix.scalar_parameters.{i}"] = torch.randn(1, generator=gen)
    state["scalar_mix.gamma"] = 1 + 0.1 * torch.randn(1, generator=gen)
    state["scalar_mix.dropout_mask"] = torch.zeros(layers + 1)
    state["scalar_mix.dropout_fill"] = torch.full((layers + 1,), -1e20)
    clip = openai_clip_state(clip_vocab, seed=seed + 2)
    sizes = [4 * hidden + 6 * clip["text_projection"].shape[1], 96, 48, 1]
    for i in range(3):
        state[f"ff.0.ff.linear_{i + 1}.weight"] = torch.randn(sizes[i + 1], sizes[i], generator=gen) / sizes[i] ** 0.5
        state[f"ff.0.ff.linear_{i + 1}.bias"] = 0.1 * torch.randn(sizes[i + 1], generator=gen)
    state.update({f"clip.{k}": v for k, v in clip.items()})
    return state


POLOS_HPARAMS = {  # the authors' configs/polos-trainer.yaml, model part (hidden sizes: the tiny head's)
    "model": "PolosEstimator", "encoder_model": "BERT", "pretrained_model": "princeton-nlp/sup-simcse-roberta-base",
    "layer": "mix", "scalar_mix_dropout": 0.1, "pool": "cls", "dropout": 0.1, "activations": "Tanh",
    "hidden_sizes": "96,48", "final_activation": False, "loss": "mse", "batch_size": 64,
}  # fmt: skip


def tiny_polos(directory: PathLike, seed: int = 0, clip_vocab: int | None = None) -> dict[str, str]:
    """A tiny random Polos ``reprod/reprod.ckpt`` (a PyTorch-Lightning-style checkpoint dict) with
    ``hparams.yaml`` beside it, a tiny RoBERTa tokenizer and, unless ``clip_vocab`` is given (e.g. 49408 for
    OpenAI's BPE), a tiny CLIP tokenizer; returns ``{"checkpoint", "text_tokenizer", "clip_tokenizer"}``
    (without ``clip_tokenizer`` when ``clip_vocab`` is given) to pass to ``mmjudge.load("polos", …)``."""
    import torch
    import yaml
    from transformers import AutoTokenizer

    from mmjudge.tiny_models.clip import tiny_clip

    out = Path(directory)
    text_tok = tiny_roberta_tokenizer(out / "roberta")
    paths = {"text_tokenizer": text_tok}
    if clip_vocab is None:
        paths["clip_tokenizer"] = tiny_clip(out / "clip_tokenizer", seed=seed)
        clip_vocab = len(AutoTokenizer.from_pretrained(paths["clip_tokenizer"]))
    state = polos_state(len(AutoTokenizer.from_pretrained(text_tok)), clip_vocab, seed=seed)
    folder = out / "reprod"
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint = {
        "epoch": 3,
        "global_step": 1234,
        "pytorch-lightning_version": "1.3.8",
        "state_dict": state,
        "hyper_parameters": dict(POLOS_HPARAMS),
    }
    torch.save(checkpoint, folder / "reprod.ckpt")
    (folder / "hparams.yaml").write_text(yaml.safe_dump(POLOS_HPARAMS), encoding="utf-8")
    return {"checkpoint": str(folder / "reprod.ckpt"), **paths}
