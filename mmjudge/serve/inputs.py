"""A request's model inputs, made in the request's own thread so that the model thread never tokenises.

A 60 MB prompt tokenised on the model thread held every other request for 100 s. Here each request is
rendered and tokenised alone, by one of a few private copies of the model's processor (fast tokenizers
are not thread-safe, and the model thread keeps the original to decode answers), and refused there if its
text is too long or it does not fit the model's context; the model thread only pads and stacks what is
ready (:func:`collate`), which equals encoding the batch at once (left padding; tested).

>>> import torch
>>> a = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.tensor([[1, 1, 1]])}
>>> b = {"input_ids": torch.tensor([[8]]), "attention_mask": torch.tensor([[1]])}
>>> batch = collate([a, b], pad_id=0)
>>> batch["input_ids"].tolist(), batch["attention_mask"].tolist()
([[5, 6, 7], [0, 0, 8]], [[1, 1, 1], [0, 0, 1]])
>>> collate([a, {**b, "pixel_values": torch.zeros(1, 3)}], pad_id=0) is None  # unlike inputs: encode the batch
True
"""

from __future__ import annotations

import contextlib
import copy
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from mmjudge.serve.protocol import ChatParams, RequestError

# Per-token inputs and what pads them on the left (input_ids: the tokenizer's pad id).
_PER_TOKEN = {"input_ids": None, "attention_mask": 0, "token_type_ids": 0, "mm_token_type_ids": 0}


class RendererPool:
    """Up to ``size`` private copies of a judge's :class:`~mmjudge.judges.local.prompting.PromptRenderer`
    (its processor or tokenizer), made on first need and lent to one thread at a time."""

    def __init__(self, prompts: Any, size: int = 4, lock: Any = None):
        self.prompts, self.size = prompts, size
        self._copying = lock or threading.Lock()  # the original's own lock: it is copied while in use
        self._free: queue.Queue = queue.Queue()
        self._made = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def borrow(self) -> Iterator[Any]:
        try:
            renderer = self._free.get_nowait()
        except queue.Empty:
            with self._lock:
                make = self._made < self.size
                self._made += make
            # deepcopy keeps the processor's tokenizer and the renderer's the same object
            if make:
                with self._copying:
                    renderer = copy.deepcopy(self.prompts)
            else:
                renderer = self._free.get()
        try:
            yield renderer
        finally:
            self._free.put(renderer)


def prepare(params: ChatParams, renderer: Any, max_model_len: int | None) -> None:
    """Render and tokenise one request with ``renderer`` (a ``PromptRenderer`` no other thread uses now),
    filling ``params.text``, ``params.inputs`` and ``params.prompt_tokens``; a prompt that with its
    ``max_tokens`` exceeds ``max_model_len`` is refused (OpenAI's words). Its text was bounded before
    (``--max-prompt-chars``, :data:`~mmjudge.serve.protocol.MAX_MESSAGES`), so this work is too."""
    try:
        text = renderer.render(params.request)
    except ValueError as err:  # e.g. an image for a text-only model
        raise RequestError(str(err), "messages") from None
    inputs = renderer.encode([params.request], [text])
    length = int(inputs["input_ids"].shape[1])
    if max_model_len and length + params.max_tokens > max_model_len:
        raise RequestError(
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{length + params.max_tokens} tokens ({length} in the messages, {params.max_tokens} in the completion).",
            "messages",
        )
    params.text, params.inputs, params.prompt_tokens = text, inputs, length


def collate(parts: Sequence[dict], pad_id: int) -> dict | None:
    """One left-padded batch from single-request inputs; ``None`` when they do not stack (inputs of other
    keys, or image tensors of other shapes: a processor pads those its own way, so the batch is encoded
    whole)."""
    import torch
    import torch.nn.functional as F

    keys = set(parts[0])
    if any(set(part) != keys for part in parts) or any(part["input_ids"].shape[0] != 1 for part in parts):
        return None
    width = max(int(part["input_ids"].shape[1]) for part in parts)
    batch = {}
    for key in parts[0]:
        values = [part[key] for part in parts]
        if not all(isinstance(v, torch.Tensor) for v in values):
            return None
        if key in _PER_TOKEN:
            if any(v.shape != part["input_ids"].shape for v, part in zip(values, parts)):
                return None
            fill = pad_id if _PER_TOKEN[key] is None else _PER_TOKEN[key]
            values = [F.pad(v, (width - v.shape[1], 0), value=fill) for v in values]
        elif any(v.shape[1:] != values[0].shape[1:] for v in values):
            return None
        batch[key] = torch.cat(values)
    return batch
