"""Tiny LLaVA-style VLMs: a vision tower and a projector whose outputs replace the image placeholder tokens
of a decoder-only language model. LLaVA-1.5, LLaVA-NeXT, LLaVA-OneVision (any-resolution tiles), InternVL
(``<img>`` … ``</img>`` markup around the placeholders) and Mistral3 / Pixtral (rows of ``[IMG]`` separated
by ``[IMG_BREAK]``, closed by ``[IMG_END]``).
"""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import (
    _CHATML,
    _LLAVA_TEMPLATE,
    TINY_TOWER,
    family_template,
    llama_text,
    seed_all,
    tokenizer,
)

# The vision towers see 32 px tiles of 8 px patches: 16 patches per tile.
_VISION = dict(TINY_TOWER)


def qwen2_text(tok, eos: str) -> dict:
    """A 2-layer Qwen2 text config (the LM of LLaVA-OneVision and InternVL checkpoints)."""
    text = llama_text(tok, eos=eos)
    text.update(model_type="qwen2", hidden_size=64, intermediate_size=128, tie_word_embeddings=False)
    return text


def tiny_llava(out: Path, seed: int, anyres: bool = False) -> None:
    """LLaVA-1.5 style (``anyres=False``) or LLaVA-NeXT (``anyres=True``: a global view plus tiles chosen
    from ``image_grid_pinpoints``)."""
    import transformers

    kind = "LlavaNext" if anyres else "Llava"
    special = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
    tok = tokenizer(special, _LLAVA_TEMPLATE, "<s>", "</s>", "<pad>")
    image_size, patch = 32, 8
    grid = {"image_grid_pinpoints": [[32, 64], [64, 32], [64, 64]]} if anyres else {}
    config = getattr(transformers, f"{kind}Config")(
        text_config=llama_text(tok, eos="</s>", bos="<s>"),
        vision_config=dict(
            model_type="clip_vision_model", **_VISION, image_size=image_size, patch_size=patch, projection_dim=32
        ),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        **grid,
    )
    seed_all(seed)
    getattr(transformers, f"{kind}ForConditionalGeneration")(config).save_pretrained(out)
    image_processor = getattr(transformers, "LlavaNextImageProcessor" if anyres else "CLIPImageProcessor")(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}, **grid
    )
    processor = getattr(transformers, f"{kind}Processor")(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_TEMPLATE,
    )
    processor.save_pretrained(out)


def tiny_llava_onevision(out: Path, seed: int) -> None:
    """LLaVA-OneVision: SigLIP tower, Qwen2 LM, any-resolution tiles up to 2x2 with a newline per row."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    template = _CHATML.replace("IMAGE_TOKENS", "<image>\n")
    tok = tokenizer(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"],
        template,
        None,
        "<|im_end|>",
        "<|endoftext|>",
    )
    grid = [[32, 32], [32, 64], [64, 32], [64, 64]]
    config = LlavaOnevisionConfig(
        text_config=qwen2_text(tok, eos="<|im_end|>"),
        vision_config=dict(model_type="siglip_vision_model", **_VISION, image_size=32, patch_size=8),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        video_token_id=tok.convert_tokens_to_ids("<video>"),
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=grid,
        vision_aspect_ratio="anyres_max_9",
    )
    seed_all(seed)
    LlavaOnevisionForConditionalGeneration(config).save_pretrained(out)
    size = {"height": 32, "width": 32}
    LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size=size, image_grid_pinpoints=grid),
        video_processor=LlavaOnevisionVideoProcessor(size=size),
        tokenizer=tok,
        num_image_tokens=16,
        vision_feature_select_strategy="full",
        chat_template=template,
    ).save_pretrained(out)


def tiny_internvl(out: Path, seed: int) -> None:
    """InternVL (the transformers-native ``internvl`` type, as in ``OpenGVLab/InternVL3-*-hf``): 32 px tiles
    plus a thumbnail, pixel-shuffled to 4 tokens each, between ``<img>`` and ``</img>``."""
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    named = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    template = _CHATML.replace("IMAGE_TOKENS", "<IMG_CONTEXT>\n")
    tok = tokenizer(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *named.values()],
        template,
        None,
        "<|im_end|>",
        "<|endoftext|>",
        named=named,
    )
    config = InternVLConfig(
        text_config=qwen2_text(tok, eos="<|im_end|>"),
        vision_config=dict(**_VISION, image_size=[32, 32], patch_size=[8, 8]),
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=4,  # (32 / 8)² patches, pixel-shuffled by downsample_ratio 0.5
        downsample_ratio=0.5,
        tie_word_embeddings=False,  # tiny models keep input and output embeddings apart (tiny_answering_vlm)
    )
    seed_all(seed)
    InternVLForConditionalGeneration(config).save_pretrained(out)
    size = {"height": 32, "width": 32}
    InternVLProcessor(
        image_processor=GotOcr2ImageProcessor(size=size, crop_to_patches=True, min_patches=1, max_patches=4),
        video_processor=InternVLVideoProcessor(size=size),
        tokenizer=tok,
        image_seq_length=4,
        chat_template=template,
    ).save_pretrained(out)


def tiny_mistral3(out: Path, seed: int) -> None:
    """Mistral3 (Mistral-Small-3.1 / Pixtral-style): a Pixtral tower over 8 px patches merged 2x2, each row of
    image tokens closed by ``[IMG_BREAK]``, the last by ``[IMG_END]``."""
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration, PixtralImageProcessor, PixtralProcessor

    special = ["<unk>", "<s>", "</s>", "<pad>", "[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]"]
    template = family_template("[INST]", "", "[IMG]", user_end="[/INST]", assistant_end="</s>")
    tok = tokenizer(special, template, "<s>", "</s>", "<pad>")
    text = llama_text(tok, eos="</s>", bos="<s>")
    # Mistral-Small-3.1's language model has no sliding window (MistralConfig's default would set 4,096).
    text.update(model_type="mistral", head_dim=8, tie_word_embeddings=False, sliding_window=None)
    config = Mistral3Config(
        text_config=text,
        vision_config=dict(model_type="pixtral", **_VISION, head_dim=8, image_size=64, patch_size=8),
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        spatial_merge_size=2,
        vision_feature_layer=-1,
        tie_word_embeddings=False,
    )
    seed_all(seed)
    Mistral3ForConditionalGeneration(config).save_pretrained(out)
    PixtralProcessor(
        image_processor=PixtralImageProcessor(size={"longest_edge": 64}, patch_size=16),
        tokenizer=tok,
        patch_size=8,
        spatial_merge_size=2,
        chat_template=template,
    ).save_pretrained(out)
