"""A request as the exact text and tensors a local model reads: the processor (VLMs) or tokenizer (text
models), the chat template or a named conversation format, the teacher-forced answer prefix.

>>> from mmjudge.judges.requests import Turn
>>> transcript([Turn("user", "Rate it.")])
'User: Rate it.\\nAssistant:'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mmjudge.judges.requests import RatingRequest, Turn

logger = logging.getLogger(__name__)


def load_processor(source: str, load_kwargs: dict) -> Any:
    """The model's processor (VLMs) or tokenizer (text-only / GGUF)."""
    from transformers import AutoProcessor, AutoTokenizer

    if not load_kwargs.get("gguf_file"):
        try:
            processor = AutoProcessor.from_pretrained(source, **load_kwargs)
            if hasattr(processor, "image_processor") or hasattr(processor, "get_vocab"):
                return processor
        except (OSError, ValueError, KeyError, TypeError) as err:
            logger.info("No processor for %s (%s); using its tokenizer.", source, err)
    return AutoTokenizer.from_pretrained(source, **load_kwargs)


def split_processor(processor: Any) -> tuple[Any, Any]:
    """``(processor or None, tokenizer)``: left padding (the answer position is then the last one in
    every row) and a pad token."""
    tokenizer = getattr(processor, "tokenizer", None) or processor
    if not hasattr(processor, "image_processor"):
        processor = None  # a bare tokenizer: text-only model
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return processor, tokenizer


def transcript(turns: Sequence[Turn]) -> str:
    """A plain ``Role: text`` transcript, for models without any chat template."""
    return "".join(f"{t.role.capitalize()}: {t.text}\n" for t in turns) + "Assistant:"


class PromptRenderer:
    """Renders requests for one model: ``processor`` (``None`` for a text-only model) and its ``tokenizer``;
    ``label`` names the model in errors."""

    def __init__(self, processor: Any, tokenizer: Any, label: str):
        self.processor, self.tokenizer, self.label = processor, tokenizer, label

    def messages(self, request: RatingRequest) -> list[dict]:
        """The chat-template messages: the image (if any) before the first turn's text."""
        messages = []
        for k, turn in enumerate(request.turns):
            if self.processor is None:
                messages.append({"role": turn.role, "content": turn.text})
                continue
            content = [{"type": "text", "text": turn.text}]
            if k == 0 and request.image is not None:
                content.insert(0, {"type": "image"})
            messages.append({"role": turn.role, "content": content})
        return messages

    def render(self, request: RatingRequest) -> str:
        """The exact text fed to the model (chat template + teacher-forced answer prefix)."""
        if request.image is not None and self.processor is None:
            raise ValueError(f"{self.label} is a text-only model but the request carries an image.")
        if request.conversation is not None:  # a named format (e.g. FLEUR's llava_v1) instead of the template
            from mmjudge.judges.conversations import render_conversation

            image_token = getattr(self.processor, "image_token", "<image>") if request.image is not None else None
            return render_conversation(request.conversation, request.turns, image_token) + request.answer_prefix
        templater = self.processor if self.processor is not None else self.tokenizer
        if getattr(templater, "chat_template", None) or getattr(self.tokenizer, "chat_template", None):
            text = templater.apply_chat_template(self.messages(request), add_generation_prompt=True, tokenize=False)
        else:  # no chat template at all: a plain transcript
            text = transcript(request.turns)
        return text + request.answer_prefix

    def encode(self, requests: Sequence[RatingRequest], texts: Sequence[str] | None = None) -> dict:
        """Model inputs (CPU tensors) for ``requests`` (``texts``: their already rendered prompts)."""
        texts = texts if texts is not None else [self.render(r) for r in requests]
        if self.processor is not None:
            kwargs = {"images": images_per_prompt(requests)} if any(r.image is not None for r in requests) else {}
            inputs = self.processor(text=list(texts), return_tensors="pt", padding=True, **kwargs)
        else:
            inputs = self.tokenizer(list(texts), return_tensors="pt", padding=True, add_special_tokens=False)
        return dict(inputs)

    def prefix_offsets(self, text: str, answer_prefix: str) -> list[int] | None:
        """Character offset, inside ``answer_prefix``, of each of its tokens in the rendered prompt ``text``
        (which ends with it); ``None`` when a token straddles the prompt/prefix boundary (or the tokenizer
        gives no offsets)."""
        start = len(text) - len(answer_prefix)
        try:
            spans = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        except (NotImplementedError, TypeError, ValueError, KeyError):  # slow tokenizers have no offsets
            return None
        offsets = []
        for begin, end in spans:
            if begin < start < end:
                return None
            if begin >= start and end > begin:
                offsets.append(begin - start)
        return offsets


def images_per_prompt(requests: Sequence[RatingRequest]) -> list[list]:
    """The batch's images as processors want them: one list per prompt (``[[a], [b]]``, ``[]`` for a prompt
    without an image). Why not a flat ``[a, b]``: Gemma 3, Mllama and SmolVLM processors read a flat list
    as ONE prompt with two images and refuse a batch of two prompts; the others flatten a nested list.

    >>> from PIL import Image
    >>> from mmjudge.judges.requests import Turn
    >>> a = Image.new("RGB", (4, 4))
    >>> images_per_prompt([RatingRequest([Turn("user", "x")], image=a), RatingRequest([Turn("user", "y")])])
    [[<PIL.Image.Image image mode=RGB size=4x4 at ...>], []]
    """
    return [[r.image] if r.image is not None else [] for r in requests]


def to_device(inputs: dict, device: Any) -> dict:
    """Every tensor of ``inputs`` on ``device`` (other values as they are); copies from pinned memory do not
    wait (:func:`pin_inputs`)."""
    return {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in inputs.items()}


def pin_inputs(inputs: dict, dtypes: dict | None = None) -> dict:
    """``inputs`` with every CPU tensor in pinned (page-locked) memory, so its copy to a CUDA device neither
    waits nor blocks the launching thread (done in the preparing thread); ``dtypes``: inputs cast on the way
    (the model would cast them first thing)."""
    import torch

    out = {}
    for name, value in inputs.items():
        if not hasattr(value, "pin_memory") or value.device.type != "cpu":
            out[name] = value
        elif name in (dtypes or {}):
            out[name] = torch.empty(value.shape, dtype=dtypes[name], pin_memory=True).copy_(value)
        else:
            out[name] = value.pin_memory()
    return out
