"""A tiny Mllama (Llama 3.2 Vision): the image is not in the token sequence; one ``<|image|>`` token marks
where it is, and dedicated cross-attention layers let every later token read the image's tiles (the
processor's per-token ``cross_attention_mask`` says which)."""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import TINY_TOWER, family_template, seed_all, tokenizer


def tiny_mllama(out: Path, seed: int) -> None:
    """Layer 0 self-attention, layer 1 cross-attention; 32 px tiles of 8 px patches, at most 2 tiles."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessor, MllamaProcessor

    special = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|eot_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|image|>",
        "<|python_tag|>",
        "<|finetune_right_pad_id|>",
    ]
    # As Llama 3.2's template: it starts with <|begin_of_text|> (the processor adds one only if missing).
    template = "<|begin_of_text|>" + family_template(
        "<|start_header_id|>user<|end_header_id|>\n\n",
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|image|>",
        user_end="<|eot_id|>",
        assistant_end="<|eot_id|>",
    )
    tok = tokenizer(special, template, "<|begin_of_text|>", "<|eot_id|>", "<|finetune_right_pad_id|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in special}
    config = MllamaConfig(
        text_config=dict(
            vocab_size=len(tok),
            **TINY_TOWER,
            num_key_value_heads=2,
            cross_attention_layers=[1],
            max_position_embeddings=4096,
            bos_token_id=ids["<|begin_of_text|>"],
            eos_token_id=ids["<|eot_id|>"],
            pad_token_id=ids["<|finetune_right_pad_id|>"],
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        vision_config=dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_global_layers=1,
            attention_heads=4,
            image_size=32,
            patch_size=8,
            max_num_tiles=2,
            intermediate_layers_indices=[0],
            vision_output_dim=64,
            supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]],
        ),
        image_token_index=ids["<|image|>"],
    )
    seed_all(seed)
    MllamaForConditionalGeneration(config).save_pretrained(out)
    MllamaProcessor(
        image_processor=MllamaImageProcessor(size={"height": 32, "width": 32}, max_image_tiles=2),
        tokenizer=tok,
        chat_template=template,
    ).save_pretrained(out)
