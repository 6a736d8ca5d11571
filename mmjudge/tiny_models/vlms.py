"""Tiny random vision-language models of every family the judge is tested on (:data:`VLM_FAMILIES`).

Each is a 2-layer model with a small vision tower and a byte-level BPE tokenizer in the family's own chat
markup, saved with ``save_pretrained`` so it loads through ``AutoModelForImageTextToText`` +
``AutoProcessor`` like a real checkpoint; random weights prove plumbing and exact arithmetic, never quality.
The builders live in modules grouped by how the image reaches the language model:
:mod:`~mmjudge.tiny_models.qwen_style` (M-RoPE), :mod:`~mmjudge.tiny_models.llava_style` (projected
placeholders), :mod:`~mmjudge.tiny_models.idefics_style` (tile markup), :mod:`~mmjudge.tiny_models.sliding_window`
(sliding-window language models) and :mod:`~mmjudge.tiny_models.mllama` (cross-attention).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mmjudge.tiny_models import idefics_style, llava_style, mllama, qwen_style, sliding_window
from mmjudge.tiny_models._tokenizers import PathLike

_BUILDERS: dict[str, Callable[[Path, int], None]] = {
    "qwen2_vl": qwen_style.tiny_qwen2_vl,
    "llava": llava_style.tiny_llava,
    "llava_next": lambda out, seed: llava_style.tiny_llava(out, seed, anyres=True),
    "idefics3": idefics_style.tiny_idefics3,
    "qwen2_5_vl": qwen_style.tiny_qwen2_5_vl,
    "qwen3_vl": qwen_style.tiny_qwen3_vl,
    "llava_onevision": llava_style.tiny_llava_onevision,
    "internvl": llava_style.tiny_internvl,
    "mistral3": llava_style.tiny_mistral3,
    "glm4v": qwen_style.tiny_glm4v,
    "gemma3": sliding_window.tiny_gemma3,
    "mllama": mllama.tiny_mllama,
    "smolvlm": idefics_style.tiny_smolvlm,
    "aya_vision": sliding_window.tiny_aya_vision,
}
VLM_FAMILIES = tuple(_BUILDERS)


def tiny_vlm(directory: PathLike, family: str = "qwen2_vl", seed: int = 0) -> str:
    """Write a tiny random vision-language model + processor of ``family`` (:data:`VLM_FAMILIES`, named by
    transformers' ``model_type``) to ``directory`` and return the path.

    Raises:
        ValueError: an unknown family.
    """
    if family not in _BUILDERS:
        raise ValueError(f"Unknown tiny VLM family {family!r}. Expected one of: {', '.join(VLM_FAMILIES)}.")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    _BUILDERS[family](out, seed)
    return str(out)


# ------------------------------------------------------------------------------ scripted LLaVA


def tiny_answering_vlm(
    directory: PathLike,
    family: str = "llava",
    answer: str = " 0.85",
    seed: int = 0,
    strength: float = 6.0,
    amplitude: float = 1.0,
) -> str:
    """Write a tiny model of ``family`` whose greedy reply to a prompt in its chat template (ending with the
    template's assistant header, e.g. ``ASSISTANT:`` for LLaVA, ``<start_of_turn>model\\n`` for Gemma 3) is
    ``answer``.

    The model is :func:`tiny_vlm` ``(…, family)`` with a few weights overwritten: the embeddings of the
    prompt's last token and of the answer's tokens point along orthogonal axes (length ``amplitude``: larger
    for language models whose layers add normalised outputs to the residual, as Gemma 3's do), and the output
    head maps each axis to the next answer token (then the end-of-turn token) with logit ``strength``.
    Every other digit token gets a seeded logit below that, so the digit distributions are spread out
    (useful to test score smoothing), and the random transformer layers still add a little prompt- and
    image-dependent noise. The answer's tokens must be distinct and differ from the prompt's last token.
    For tests only: proves plumbing.

    >>> import tempfile
    >>> from mmjudge.judges import load_judge
    >>> from mmjudge.judges.requests import GenerationRequest, Turn
    >>> model = tiny_answering_vlm(tempfile.mkdtemp(), "gemma3", " 0.85", amplitude=16)
    >>> judge = load_judge("transformers", model=model)
    >>> judge.generate([GenerationRequest([Turn("user", "Rate the caption.")], max_new_tokens=8)], progress=False)
    ['0.85']
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = tiny_vlm(directory, family, seed=seed)
    processor = AutoProcessor.from_pretrained(path)
    tokenizer = processor.tokenizer
    header = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "text", "text": "x"}]}], add_generation_prompt=True, tokenize=False
    )
    start = tokenizer.encode(header, add_special_tokens=False)[-1]
    chain = [start, *tokenizer.encode(answer, add_special_tokens=False), tokenizer.eos_token_id]
    if len(set(chain)) != len(chain):
        raise ValueError(
            f"Expected argument `answer` to have distinct tokens other than {tokenizer.decode([start])!r}, but got "
            f"{answer!r}."
        )
    model = AutoModelForImageTextToText.from_pretrained(path)
    embed, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    if embed.data_ptr() == head.data_ptr():
        raise RuntimeError(f"tiny_answering_vlm needs untied input and output embeddings ({family} ties them).")
    hidden = embed.shape[1]
    if len(chain) - 1 > hidden:
        raise ValueError(f"Expected argument `answer` to have at most {hidden - 1} tokens, but got {len(chain) - 2}.")
    digits = sorted(
        {i for d in "0123456789" for i in tokenizer.encode(d, add_special_tokens=False)[-1:]}
        | {i for d in "0123456789" for i in tokenizer.encode(" " + d, add_special_tokens=False)[-1:]}
    )
    generator = torch.Generator().manual_seed(seed)
    scale = hidden**0.5  # the final norm maps an axis vector to sqrt(hidden) along that axis
    with torch.no_grad():
        head.mul_(0.1)
        for axis, (token, following) in enumerate(zip(chain[:-1], chain[1:])):
            embed[token] = 0.0
            embed[token, axis] = amplitude
            head[:, axis] = 0.0
            head[digits, axis] = torch.rand(len(digits), generator=generator) * (strength - 1.0) / scale
            head[following, axis] = strength / scale
    model.save_pretrained(path)
    return path


def tiny_answering_llava(directory: PathLike, answer: str = " 0.85", seed: int = 0, strength: float = 6.0) -> str:
    """:func:`tiny_answering_vlm` of the LLaVA-1.5 family (FLEUR's published judge).

    >>> import tempfile
    >>> from mmjudge.judges import load_judge
    >>> from mmjudge.judges.requests import GenerationRequest, Turn
    >>> judge = load_judge("transformers", model=tiny_answering_llava(tempfile.mkdtemp(), " 0.85"))
    >>> judge.generate([GenerationRequest([Turn("user", "Rate the caption.")], max_new_tokens=8)], progress=False)
    ['0.85']
    """
    return tiny_answering_vlm(directory, "llava", answer, seed=seed, strength=strength)
