"""Tiny random vision-language models: Qwen2-VL, LLaVA-1.5, LLaVA-NeXT, Idefics3 (SmolVLM)."""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import _CHATML, _LLAVA_TEMPLATE, PathLike, llama_text, seed_all, tokenizer

VLM_FAMILIES = ("qwen2_vl", "llava", "llava_next", "idefics3")


def tiny_vlm(directory: PathLike, family: str = "qwen2_vl", seed: int = 0) -> str:
    """Write a tiny random vision-language model + processor to ``directory`` and return the path.

    Args:
        family: ``"qwen2_vl"`` (needs torchvision for its processor), ``"llava"`` (LLaVA-1.5 style,
            CLIP vision tower + Llama; works without torchvision), ``"llava_next"`` (LLaVA-NeXT any-resolution
            tiles) or ``"idefics3"`` (SmolVLM / Idefics3:
            image splitting into tiles, pixel-shuffle connector).
    """
    builders = {
        "qwen2_vl": _tiny_qwen2_vl,
        "llava": _tiny_llava,
        "llava_next": lambda out, seed: _tiny_llava(out, seed, anyres=True),
        "idefics3": _tiny_idefics3,
    }
    if family not in builders:
        raise ValueError(f"Unknown tiny VLM family {family!r}. Expected one of: {', '.join(builders)}.")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    builders[family](out, seed)
    return str(out)


def _tiny_qwen2_vl(out: Path, seed: int) -> None:
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    special = [
        "<|endoftext|>", "<|im_start|>", "<|im_end|>",
        "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
    ]  # fmt: skip
    template = _CHATML.replace("IMAGE_TOKENS", "<|vision_start|><|image_pad|><|vision_end|>")
    tok = tokenizer(special, template, None, "<|im_end|>", "<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in special}
    head_dim = 16
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
            bos_token_id=None,
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            tie_word_embeddings=False,
        ),
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
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    assert sum(config.text_config.rope_parameters["mrope_section"]) == head_dim // 2
    seed_all(seed)
    Qwen2VLForConditionalGeneration(config).save_pretrained(out)
    # Small images keep the tiny model fast: at most 16x16 patches of 14 px.
    image_processor = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
    video_processor = Qwen2VLVideoProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
    processor = Qwen2VLProcessor(
        image_processor=image_processor, video_processor=video_processor, tokenizer=tok, chat_template=template
    )
    processor.save_pretrained(out)


def _tiny_idefics3(out: Path, seed: int) -> None:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    tiles = [f"<row_{r}_col_{c}>" for r in range(1, 4) for c in range(1, 4)]
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<fake_token_around_image>", "<image>", "<global-img>",
               "<end_of_utterance>", *tiles]  # fmt: skip
    template = _CHATML.replace("IMAGE_TOKENS", "<image>")
    tok = tokenizer(special, template, "<|im_start|>", "<|im_end|>", "<|endoftext|>")
    config = Idefics3Config(
        text_config=llama_text(tok, eos="<|im_end|>"),
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8
        ),
        scale_factor=2,  # (32 / 8)² patches / 2² = 4 image tokens per tile
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    seed_all(seed)
    Idefics3ForConditionalGeneration(config).save_pretrained(out)
    # Images are resized to at most 64 px and split into 32 px tiles plus a global view, as SmolVLM does.
    image_processor = Idefics3ImageProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    Idefics3Processor(image_processor=image_processor, tokenizer=tok, image_seq_len=4, chat_template=template).save_pretrained(out)


def _tiny_llava(out: Path, seed: int, anyres: bool = False) -> None:
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
            model_type="clip_vision_model",
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=image_size,
            patch_size=patch,
            projection_dim=32,
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


# ------------------------------------------------------------------------------------------ CLIP


def tiny_answering_llava(directory: PathLike, answer: str = " 0.85", seed: int = 0, strength: float = 6.0) -> str:
    """Write a tiny LLaVA-1.5-style model whose greedy reply to any prompt ending in ``ASSISTANT:`` is ``answer``.

    The model is :func:`tiny_vlm` ``(…, "llava")`` with a few weights overwritten: the embeddings of the
    prompt's last token (``":"``) and of the answer's tokens point along orthogonal axes, and the output
    head maps each axis to the next answer token (then ``</s>``) with logit ``strength``. Every other
    digit token gets a seeded logit below that, so the digit distributions are spread out (useful to test
    score smoothing), and the random transformer layers still add a little prompt- and image-dependent
    noise. The answer's tokens must be distinct and differ from ``":"``. For tests only: proves plumbing.

    >>> import tempfile
    >>> from mmjudge.judges import load_judge, GenerationRequest, Turn
    >>> judge = load_judge("transformers", model=tiny_answering_llava(tempfile.mkdtemp(), " 0.85"))
    >>> judge.generate([GenerationRequest([Turn("user", "Rate the caption.")], max_new_tokens=8)], progress=False)
    ['0.85']
    """
    import torch
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    path = tiny_vlm(directory, "llava", seed=seed)
    tokenizer = AutoProcessor.from_pretrained(path).tokenizer
    start = tokenizer.encode("ASSISTANT:", add_special_tokens=False)[-1]
    chain = [start, *tokenizer.encode(answer, add_special_tokens=False), tokenizer.eos_token_id]
    if len(set(chain)) != len(chain):
        raise ValueError(f"Expected argument `answer` to have distinct tokens other than ':', but got {answer!r}.")
    model = LlavaForConditionalGeneration.from_pretrained(path)
    embed, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    if embed.data_ptr() == head.data_ptr():
        raise RuntimeError("tiny_answering_llava needs untied input and output embeddings.")
    hidden = embed.shape[1]
    if len(chain) - 1 > hidden:
        raise ValueError(f"Expected argument `answer` to have at most {hidden - 1} tokens, but got {len(chain) - 2}.")
    digits = sorted({i for d in "0123456789" for i in tokenizer.encode(d, add_special_tokens=False)[-1:]}
                    | {i for d in "0123456789" for i in tokenizer.encode(" " + d, add_special_tokens=False)[-1:]})
    generator = torch.Generator().manual_seed(seed)
    scale = hidden**0.5  # the final RMSNorm maps an axis vector to sqrt(hidden) along that axis
    with torch.no_grad():
        head.mul_(0.1)
        for axis, (token, following) in enumerate(zip(chain[:-1], chain[1:])):
            embed[token] = 0.0
            embed[token, axis] = 1.0
            head[:, axis] = 0.0
            head[digits, axis] = torch.rand(len(digits), generator=generator) * (strength - 1.0) / scale
            head[following, axis] = strength / scale
    model.save_pretrained(path)
    return path
