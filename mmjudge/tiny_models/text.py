"""The tiny random causal LM (text-only judge path, VELA's LLM in tests)."""

from __future__ import annotations

from pathlib import Path

from mmjudge.tiny_models._tokenizers import _CHATML, PathLike, llama_text, seed_all, tokenizer


def tiny_text_lm(directory: PathLike, seed: int = 0) -> str:
    """Write a 2-layer random Llama-style causal LM + tokenizer with a ChatML template to ``directory``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(directory)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = tokenizer(special, _CHATML, "<|im_start|>", "<|im_end|>", "<|endoftext|>")
    text = llama_text(tok, eos="<|im_end|>", bos="<|im_start|>")
    text.pop("model_type")
    config = LlamaConfig(**text, tie_word_embeddings=False)
    seed_all(seed)
    LlamaForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)
