"""Tiny Qwen-style VLMs: a vision transformer over 14/16 px patches merged 2x2, one placeholder token per
merged patch, and multimodal RoPE (M-RoPE: text, height and width positions) in the language model.
Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4V (GLM-4.1V); their processors need torchvision (video processor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.tiny_models._tokenizers import _CHATML, TINY_TOWER, family_template, seed_all, tokenizer

_QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
_QWEN_TEMPLATE = _CHATML.replace("IMAGE_TOKENS", "<|vision_start|><|image_pad|><|vision_end|>")
# The vision tower of Qwen2.5-VL, Qwen3-VL and GLM-4V (their own key names for the tiny sizes).
_VISION = dict(
    depth=2,
    hidden_size=32,
    intermediate_size=64,
    num_heads=4,
    out_hidden_size=64,
    spatial_merge_size=2,
    temporal_patch_size=2,
)
# The language model of every M-RoPE family here: 16-dim heads (64 / 4), whose rotary dims split over
# (text, height, width) positions.
_MROPE_TEXT = dict(
    TINY_TOWER, hidden_size=64, intermediate_size=128, num_key_value_heads=2, max_position_embeddings=4096
)
# Small images keep the tiny models fast: at most 16x16 patches.
_PIXELS = dict(min_pixels=56 * 56, max_pixels=224 * 224)


def _qwen_tokenizer() -> Any:
    """The ChatML tokenizer of the Qwen family: ends turns with ``<|im_end|>``, pads with ``<|endoftext|>``."""
    return tokenizer(_QWEN_SPECIAL, _QWEN_TEMPLATE, None, "<|im_end|>", "<|endoftext|>")


def _qwen_text(tok, mrope_section, **extra) -> dict:
    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
    return dict(
        vocab_size=len(tok),
        **_MROPE_TEXT,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope_section},
        bos_token_id=None,
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        **extra,
    )


def _qwen_ids(tok) -> dict:
    return dict(
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"),
    )


def _save(out: Path, seed: int, model: tuple, processor: tuple, tok: Any, template: str = _QWEN_TEMPLATE) -> None:
    """Seeded random weights and the processor: ``model`` is (class, config), ``processor`` (class, image
    processor class, video processor class, their pixel limits)."""
    model_cls, config = model
    processor_cls, image_cls, video_cls, pixels = processor
    seed_all(seed)
    model_cls(config).save_pretrained(out)
    processor_cls(
        image_processor=image_cls(**pixels), video_processor=video_cls(**pixels), tokenizer=tok, chat_template=template
    ).save_pretrained(out)


def tiny_qwen2_vl(out: Path, seed: int) -> None:
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    # mrope_section sums to head_dim / 2 (head_dim = 64 / 4 heads = 16)
    config = Qwen2VLConfig(
        text_config=_qwen_text(tok, [2, 3, 3], tie_word_embeddings=False),
        vision_config=dict(
            depth=2,
            embed_dim=32,
            hidden_size=64,
            num_heads=4,
            mlp_ratio=2,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            in_channels=3,
        ),
        **_qwen_ids(tok),
    )
    processor = (Qwen2VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor, _PIXELS)
    _save(out, seed, (Qwen2VLForConditionalGeneration, config), processor, tok)


def tiny_qwen2_5_vl(out: Path, seed: int) -> None:
    """Qwen2.5-VL: windowed attention in the vision tower (``window_size``), full attention in the blocks
    listed in ``fullatt_block_indexes``."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    config = Qwen2_5_VLConfig(
        text_config=_qwen_text(tok, [2, 3, 3]),
        vision_config=dict(_VISION, patch_size=14, window_size=56, fullatt_block_indexes=[1]),
        **_qwen_ids(tok),
    )
    processor = (Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor, _PIXELS)
    _save(out, seed, (Qwen2_5_VLForConditionalGeneration, config), processor, tok)


def tiny_qwen3_vl(out: Path, seed: int) -> None:
    """Qwen3-VL: 16 px patches with learned position embeddings, "deepstack" vision features added to the
    first language-model layers, interleaved M-RoPE."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    text = _qwen_text(tok, [2, 3, 3], head_dim=16)
    text["rope_parameters"]["mrope_interleaved"] = True
    config = Qwen3VLConfig(
        text_config=text,
        vision_config=dict(_VISION, patch_size=16, num_position_embeddings=64, deepstack_visual_indexes=[0]),
        **_qwen_ids(tok),
    )
    pixels = dict(size={"shortest_edge": 64 * 64, "longest_edge": 256 * 256}, patch_size=16)
    processor = (Qwen3VLProcessor, Qwen2VLImageProcessor, Qwen3VLVideoProcessor, pixels)
    _save(out, seed, (Qwen3VLForConditionalGeneration, config), processor, tok)


def tiny_glm4v(out: Path, seed: int) -> None:
    """GLM-4V (GLM-4.1V): ``<|begin_of_image|><|image|><|end_of_image|>``, M-RoPE on half of each head."""
    from transformers import (
        Glm4vConfig,
        Glm4vForConditionalGeneration,
        Glm4vImageProcessor,
        Glm4vProcessor,
        Glm4vVideoProcessor,
    )

    special = [
        "<|endoftext|>",
        "[gMASK]",
        "<|user|>",
        "<|assistant|>",
        "<|begin_of_image|>",
        "<|end_of_image|>",
        "<|image|>",
        "<|begin_of_video|>",
        "<|end_of_video|>",
        "<|video|>",
    ]
    template = family_template("<|user|>\n", "<|assistant|>\n", "<|begin_of_image|><|image|><|end_of_image|>")
    tok = tokenizer(special, template, None, "<|user|>", "<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in special}
    config = Glm4vConfig(
        text_config=dict(
            vocab_size=len(tok),
            **_MROPE_TEXT,
            eos_token_id=ids["<|user|>"],
            pad_token_id=ids["<|endoftext|>"],
            # rotary on half of each 16-dim head: 8 dims, 4 frequencies split over (t, h, w)
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 1, 1],
                "partial_rotary_factor": 0.5,
            },
        ),
        vision_config=dict(_VISION, patch_size=14, image_size=56),
        image_token_id=ids["<|image|>"],
        video_token_id=ids["<|video|>"],
        image_start_token_id=ids["<|begin_of_image|>"],
        image_end_token_id=ids["<|end_of_image|>"],
        video_start_token_id=ids["<|begin_of_video|>"],
        video_end_token_id=ids["<|end_of_video|>"],
    )
    pixels = dict(size={"shortest_edge": 56 * 56, "longest_edge": 224 * 224})
    processor = (Glm4vProcessor, Glm4vImageProcessor, Glm4vVideoProcessor, pixels)
    _save(out, seed, (Glm4vForConditionalGeneration, config), processor, tok, template)
