"""Tiny random CLIP models (77 positions, or 248 like Long-CLIP)."""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import _CORPUS, TINY_TOWER, PathLike, seed_all


def tiny_clip(directory: PathLike, max_position_embeddings: int = 77, seed: int = 0) -> str:
    """Write a tiny random ``CLIPModel`` + tokenizer + image processor (32 px images) to ``directory``.

    ``max_position_embeddings=248`` gives a Long-CLIP-shaped text tower. The tokenizer lowercases and
    wraps texts in ``<|startoftext|>`` … ``<|endoftext|>`` like CLIP's; it is a byte-level BPE trained on
    a few sentences, not CLIP's vocabulary.

    >>> import tempfile
    >>> from transformers import CLIPModel
    >>> path = tiny_clip(tempfile.mkdtemp(), max_position_embeddings=248)
    >>> CLIPModel.from_pretrained(path).config.text_config.max_position_embeddings
    248
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, PreTrainedTokenizerFast

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    bos, eos = "<|startoftext|>", "<|endoftext|>"
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[bos, eos],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([s.lower() for s in _CORPUS] * 4, trainer=trainer)
    bos_id, eos_id = tok.token_to_id(bos), tok.token_to_id(eos)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, bos_id), (eos, eos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token=eos,  # as in OpenAI's CLIP checkpoints on the Hub
        model_max_length=max_position_embeddings,
        padding_side="right",
    )
    size = 32
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(fast),
            **TINY_TOWER,
            max_position_embeddings=max_position_embeddings,
            bos_token_id=bos_id,
            eos_token_id=eos_id,  # not 2: the text tower then pools at the first end-of-text token
            pad_token_id=eos_id,
        ),
        vision_config=dict(TINY_TOWER, image_size=size, patch_size=8),
        projection_dim=16,
    )
    seed_all(seed)
    CLIPModel(config).save_pretrained(out)
    fast.save_pretrained(out)
    CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size}).save_pretrained(out)
    return str(out)


# ------------------------------------------------------------------------------ scripted LLaVA
