"""Tiny Idefics-style VLMs: the image is split into tiles plus a global view, each written as
``<fake_token_around_image><row_r_col_c><image>…`` markup and pixel-shuffled into a few tokens.
Idefics3 and SmolVLM / SmolVLM2 (whose processor needs the ``num2words`` package).
"""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import _CHATML, TINY_TOWER, family_template, llama_text, seed_all, tokenizer

_TILES = [f"<row_{r}_col_{c}>" for r in range(1, 4) for c in range(1, 4)]
_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    "<end_of_utterance>",
    *_TILES,
]
# 32 px tiles of 8 px patches: (32 / 8)² patches / 2² (scale_factor) = 4 image tokens per tile.
_VISION = dict(TINY_TOWER, image_size=32, patch_size=8)
# Images are resized to at most 64 px and split into 32 px tiles plus a global view, as SmolVLM does.
_SIZES = dict(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})


def tiny_idefics3(out: Path, seed: int) -> None:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    template = _CHATML.replace("IMAGE_TOKENS", "<image>")
    tok = tokenizer(_SPECIAL, template, "<|im_start|>", "<|im_end|>", "<|endoftext|>")
    config = Idefics3Config(
        text_config=llama_text(tok, eos="<|im_end|>"),
        vision_config=_VISION,
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    seed_all(seed)
    Idefics3ForConditionalGeneration(config).save_pretrained(out)
    Idefics3Processor(
        image_processor=Idefics3ImageProcessor(**_SIZES), tokenizer=tok, image_seq_len=4, chat_template=template
    ).save_pretrained(out)


def tiny_smolvlm(out: Path, seed: int) -> None:
    """SmolVLM2 (``smolvlm`` type): Idefics3's layout with SmolVLM's chat format (``User:`` /
    ``Assistant:``, turns closed by ``<end_of_utterance>``)."""
    from transformers import (
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    template = family_template(
        "<|im_start|>User:",
        "Assistant:",
        "<image>",
        user_end="<end_of_utterance>\n",
        assistant_end="<end_of_utterance>\n",
    )
    tok = tokenizer([*_SPECIAL, "<video>"], template, "<|im_start|>", "<end_of_utterance>", "<|endoftext|>")
    config = SmolVLMConfig(
        text_config=llama_text(tok, eos="<end_of_utterance>"),
        vision_config=dict(model_type="smolvlm_vision", **_VISION),
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    seed_all(seed)
    SmolVLMForConditionalGeneration(config).save_pretrained(out)
    SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(**_SIZES),
        video_processor=SmolVLMVideoProcessor(**_SIZES),
        tokenizer=tok,
        image_seq_len=4,
        chat_template=template,
    ).save_pretrained(out)
