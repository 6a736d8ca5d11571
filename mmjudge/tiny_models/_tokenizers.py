"""Tokenizers and the shared text-model config of the tiny models: a byte-level BPE trained here on a
few sentences, with ChatML or LLaVA-1.5 chat templates."""

from __future__ import annotations

import os

PathLike = str | os.PathLike

_CORPUS = [
    "Your task is to rate the candidate caption for the given image on a scale of 1 to 5.",
    "Evaluation Criterion: Correctness, Completeness, Clarity, Fluency, Conciseness.",
    "Rating Scale: 1 Very Low, 2 Low, 3 Moderate, 4 High, 5 Extremely High.",
    "A dog runs on the beach. Two people ride bikes down a street. The answer is yes.",
    "Question: what colour is the bus? Answer: red. Expression: the man on the left.",
    "Why? Tell me the reason. Score: 0.0 0.5 1.0 0.25 0.75 0123456789",
    "A photo depicts a cat sitting on a mat next to a window.",
]

# A chat template in the Qwen style (ChatML). Content may be a string or a list of typed parts;
# images become the model's own image placeholder.
_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}IMAGE_TOKENS"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# LLaVA-1.5 ("llava_v1") conversation format, as llava-hf processors render it.
_LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% if message['role'] == 'user' %} {% else %}</s>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def family_template(
    user: str, assistant: str, image: str, user_end: str = "", assistant_end: str = "", system: str = ""
) -> str:
    """A Jinja chat template in a family's own markup: each message is its role's header (``user``,
    ``assistant``; ``system`` defaults to the user's), its content (an image part becomes ``image``) and
    its role's end marker; the generation prompt is the assistant header.

    >>> from jinja2 import Template
    >>> msg = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}]
    >>> template = Template(family_template("[INST]", "", "[IMG]", user_end="[/INST]"))
    >>> template.render(messages=msg, add_generation_prompt=True)
    '[INST][IMG]Hi[/INST]'
    """
    system = system or user
    return (
        "{% for message in messages %}"
        f"{{% if message['role'] == 'user' %}}{user}{{% elif message['role'] == 'system' %}}{system}"
        f"{{% else %}}{assistant}{{% endif %}}"
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        f"{{% for part in message['content'] %}}{{% if part['type'] == 'image' %}}{image}"
        "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
        f"{{% if message['role'] == 'assistant' %}}{assistant_end}{{% else %}}{user_end}{{% endif %}}"
        f"{{% endfor %}}{{% if add_generation_prompt %}}{assistant}{{% endif %}}"
    )


def tokenizer(
    special: list[str],
    chat_template: str,
    bos: str | None,
    eos: str,
    pad: str,
    vocab_size: int = 600,
    corpus: list[str] | None = None,
    named: dict | None = None,
):
    """A byte-level BPE with ``vocab_size`` entries trained on ``corpus`` (default: a few prompt-like
    sentences), left padding, ``chat_template`` set. The benchmarks train it on their own texts. ``named``:
    model-specific special tokens the processor reads as tokenizer attributes (e.g. Gemma 3's
    ``{"boi_token": "<start_of_image>"}``); each must also be in ``special``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4 if corpus is None else corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=None,
        padding_side="left",
        **({"extra_special_tokens": named} if named else {}),
    )
    fast.chat_template = chat_template
    return fast


# The size of every tiny tower (text or vision) unless a family needs otherwise: 2 layers of width 32 with
# 4 heads, small enough to build in a second on a CPU.
TINY_TOWER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


def llama_text(tok, eos: str, bos: str | None = None) -> dict:
    """A 2-layer Llama text config (as a dict) sized for ``tok``: the LM inside every tiny model here."""
    return dict(
        model_type="llama",
        vocab_size=len(tok),
        **TINY_TOWER,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.convert_tokens_to_ids(bos) if bos else None,
        eos_token_id=tok.convert_tokens_to_ids(eos),
        pad_token_id=tok.pad_token_id,
    )


def seed_all(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
