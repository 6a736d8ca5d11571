"""Tiny VLMs whose language model mixes sliding-window and full attention layers: Gemma 3 (real window
1,024 tokens) and Aya Vision (Cohere2, 4,096). The tiny ones get a window of :data:`TINY_WINDOW` tokens, so
that ordinary test prompts are longer than it: a KV cache reused past the window must respect it.
"""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import TINY_TOWER, family_template, seed_all, tokenizer

TINY_WINDOW = 32
# One layer of each kind, as the real models alternate them.
_LAYERS = ["sliding_attention", "full_attention"]
_SIGLIP = dict(TINY_TOWER, model_type="siglip_vision_model", image_size=32, patch_size=8)


def _text(tok, model_type: str, eos: str, bos: str, window: int, **extra) -> dict:
    return dict(
        model_type=model_type,
        vocab_size=len(tok),
        **TINY_TOWER,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=4096,
        sliding_window=window,
        layer_types=_LAYERS,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        bos_token_id=tok.convert_tokens_to_ids(bos),
        eos_token_id=tok.convert_tokens_to_ids(eos),
        **extra,
    )


def tiny_gemma3(out: Path, seed: int, window: int = TINY_WINDOW) -> None:
    """Gemma 3: SigLIP tower pooled to 4 soft tokens per image between ``<start_of_image>`` and
    ``<end_of_image>``; the image's soft tokens attend to each other both ways (``token_type_ids``)."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessor, Gemma3Processor

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    special = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", *named.values()]
    template = family_template(
        "<start_of_turn>user\n",
        "<start_of_turn>model\n",
        "<start_of_image>",
        user_end="<end_of_turn>\n",
        assistant_end="<end_of_turn>\n",
    )
    tok = tokenizer(special, template, "<bos>", "<end_of_turn>", "<pad>", named=named)
    config = Gemma3Config(
        text_config=_text(
            tok,
            "gemma3_text",
            "<end_of_turn>",
            "<bos>",
            window,
            query_pre_attn_scalar=8,
            rope_parameters={t: {"rope_type": "default", "rope_theta": 10000.0} for t in _LAYERS},
        ),
        vision_config=_SIGLIP,
        mm_tokens_per_image=4,
        boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
        tie_word_embeddings=False,  # the real ones tie them; tiny models keep them apart (tiny_answering_vlm)
    )
    seed_all(seed)
    Gemma3ForConditionalGeneration(config).save_pretrained(out)
    Gemma3Processor(
        image_processor=Gemma3ImageProcessor(size={"height": 32, "width": 32}),
        tokenizer=tok,
        image_seq_length=4,
        chat_template=template,
    ).save_pretrained(out)


def tiny_aya_vision(out: Path, seed: int, window: int = TINY_WINDOW) -> None:
    """Aya Vision: SigLIP tower over 32 px tiles plus a global view, 4 tokens each after pixel shuffling,
    Cohere2 language model."""
    from transformers import (
        AyaVisionConfig,
        AyaVisionForConditionalGeneration,
        AyaVisionProcessor,
        GotOcr2ImageProcessor,
    )

    markup = [
        "<image>",
        "<|START_OF_IMG|>",
        "<|END_OF_IMG|>",
        "<|IMG_PATCH|>",
        "<|IMG_LINE_BREAK|>",
        "TILE",
        "TILE_GLOBAL",
    ]
    special = [
        "<PAD>",
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
        "<|START_OF_TURN_TOKEN|>",
        "<|USER_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
        *markup,
    ]
    template = family_template(
        "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "<image>",
        user_end="<|END_OF_TURN_TOKEN|>",
        assistant_end="<|END_OF_TURN_TOKEN|>",
    )
    tok = tokenizer(special, template, "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", "<PAD>")
    config = AyaVisionConfig(
        text_config=_text(tok, "cohere2", "<|END_OF_TURN_TOKEN|>", "<BOS_TOKEN>", window),
        vision_config=_SIGLIP,
        downsample_factor=2,  # 16 patches per tile -> 4 tokens
        image_token_index=tok.convert_tokens_to_ids("<|IMG_PATCH|>"),
        tie_word_embeddings=False,
    )
    seed_all(seed)
    AyaVisionForConditionalGeneration(config).save_pretrained(out)
    image_processor = GotOcr2ImageProcessor(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=4
    )
    AyaVisionProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=8,
        img_size=32,
        downsample_factor=2,
        chat_template=template,
    ).save_pretrained(out)
