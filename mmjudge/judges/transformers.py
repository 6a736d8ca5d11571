"""Local ``transformers`` models as judges: vision-language models and plain causal LMs.

One forward pass per batch reads the logits at the answer position (``logits_to_keep=1``); the
full-vocabulary softmax is summed over the token variants of each rating (``"3"``, ``" 3"``, ``"▁3"``).
Tested on tiny random Qwen2-VL, LLaVA-1.5, LLaVA-NeXT and Idefics3 (SmolVLM) models built by
:mod:`mmjudge.testing`, and on the real SmolLM2-135M-Instruct for the text-only path. Qwen2-VL / Qwen2.5-VL, LLaVA-1.5 / LLaVA-NeXT and
SmolVLM / Idefics3 checkpoints all load through ``AutoModelForImageTextToText`` + ``AutoProcessor``
and render prompts with the processor's own chat template.

>>> import tempfile
>>> from mmjudge.testing import tiny_vlm
>>> from mmjudge.judges import load_judge, RatingRequest, Turn
>>> from PIL import Image
>>> judge = load_judge("transformers", model=tiny_vlm(tempfile.mkdtemp(), "llava"))
>>> [r] = judge.rate([RatingRequest([Turn("user", "Rate 1-5.")], image=Image.new("RGB", (40, 40)))],
...                  progress=False)
>>> len(r.raw), 0 < r.mass <= 1
(5, True)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from mmjudge.judges.base import GenerationRequest, Judge, PrefixStep, RatingRequest, RatingResult
from mmjudge.models import ModelSource, load_pretrained, local_fingerprint  # noqa: F401  (re-exported)

logger = logging.getLogger(__name__)

# Word-boundary markers that tokenizers put in front of a piece ("Ġ3" in byte-level BPE, "▁3" in
# SentencePiece): a rating token with or without one is the same rating.
_BOUNDARY_MARKS = ("Ġ", "▁", " ")


def rating_token_ids(tokenizer: Any, choices: Sequence[str]) -> list[list[int]]:
    """For each choice string, the ids of every single token that spells exactly that choice.

    Raises:
        ValueError: if a choice has no single token, or two choices share a token.
    """
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    wanted = {str(c).strip(): i for i, c in enumerate(choices)}
    found: list[set[int]] = [set() for _ in choices]
    for token, token_id in tokenizer.get_vocab().items():
        if token_id in special or len(token) > 8:
            continue
        bare = token
        for mark in _BOUNDARY_MARKS:
            bare = bare.replace(mark, "")
        if bare in wanted and tokenizer.decode([token_id]).strip() == bare:
            found[wanted[bare]].add(token_id)
    for i, choice in enumerate(choices):  # tokenizers whose vocab keys are not the surface form
        for text in (str(choice), " " + str(choice)):
            ids = tokenizer.encode(text, add_special_tokens=False)
            if ids and tokenizer.decode([ids[-1]]).strip() == str(choice).strip():
                found[i].add(ids[-1])
    for choice, ids in zip(choices, found):
        if not ids:
            raise ValueError(
                f"The rating {choice!r} is not a single token of this tokenizer, so its probability cannot be "
                "read from one forward pass. Use a scale whose ratings are single tokens."
            )
    seen: dict[int, str] = {}
    for choice, ids in zip(choices, found):
        for token_id in ids:
            if token_id in seen:
                raise ValueError(f"Ratings {seen[token_id]!r} and {choice!r} share token id {token_id}.")
            seen[token_id] = choice
    return [sorted(ids) for ids in found]


@dataclass
class GenerationTrace:
    """One greedy generation: the new token ids, the decoded text after each of them, and the
    full-vocabulary softmax at each step (CPU float32 tensors)."""

    token_ids: list
    texts: list
    probs: list


def _load_processor(source: str, load_kwargs: dict) -> Any:
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


def _split_processor(processor: Any) -> tuple[Any, Any]:
    """``(processor or None, tokenizer)``: left padding (the answer position is then the last one in
    every row) and a pad token."""
    tokenizer = getattr(processor, "tokenizer", None) or processor
    if not hasattr(processor, "image_processor"):
        processor = None  # a bare tokenizer: text-only model
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return processor, tokenizer


class TransformersJudge(Judge):
    """A judge backed by a local or Hub ``transformers`` model.

    Args:
        model: Hub id, local folder, ``"tiny-random"`` (offline random-weight demo) or a callable
            returning ``(model, processor)`` (see :mod:`mmjudge.models`).
        revision: Hub revision (branch, tag or commit); recorded in signatures and cache keys.
        device: ``"cuda"``, ``"cpu"``, … (default: CUDA when available).
        dtype: ``"bfloat16"``, ``"float16"``, ``"float32"`` (default: bf16 on GPU, fp32 on CPU).
        batch_size: requests per forward pass.
        device_map: e.g. ``"auto"`` to spread a judge too large for one GPU over all visible GPUs.
        gguf_file: load a GGUF checkpoint from ``model`` (de-quantised by transformers).
        trust_remote_code: passed to ``from_pretrained``.
        model_kwargs: extra ``from_pretrained`` keyword arguments (e.g. ``attn_implementation``).
    """

    backend = "transformers"
    reads_prefix_steps = True

    def __init__(
        self,
        model: ModelSource,
        revision: Optional[str] = None,
        device: Optional[str] = None,
        dtype: Optional[str] = None,
        batch_size: int = 8,
        device_map: Any = None,
        gguf_file: Optional[str] = None,
        trust_remote_code: bool = False,
        model_kwargs: Optional[dict] = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        if int(batch_size) < 1:
            raise ValueError(f"Expected argument `batch_size` to be a positive integer, but got {batch_size!r}.")
        self.batch_size = int(batch_size)
        self.gguf_file = gguf_file
        def classes(processor):
            vlm = hasattr(processor, "image_processor")
            return [AutoModelForImageTextToText, AutoModelForCausalLM] if vlm else [AutoModelForCausalLM]

        loaded = load_pretrained(
            model, classes, processor_loader=_load_processor,
            device=device, dtype=dtype, revision=revision, device_map=device_map,
            trust_remote_code=trust_remote_code, gguf_file=gguf_file, model_kwargs=model_kwargs,
        )  # fmt: skip
        self.model = loaded.model
        self.processor, self.tokenizer = _split_processor(loaded.processor)
        self.model_identity = loaded.identity
        self.model_type = getattr(self.model.config, "model_type", None)
        self.device = loaded.device
        torch.set_grad_enabled(False)
        self._choice_ids: dict[tuple, list[list[int]]] = {}

    @property
    def dtype(self):
        return self.model.dtype

    def identity(self) -> dict:
        import torch

        return {
            "backend": self.backend,
            "model": self.model_identity.name,
            "revision": self.model_identity.revision,
            "gguf_file": self.gguf_file,
            "dtype": self.model_identity.dtype,
            "torch": torch.__version__.split("+")[0],
        }

    # -------------------------------------------------------------------------------------- prompting
    def _messages(self, request: RatingRequest) -> list[dict]:
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
            raise ValueError(f"{self.model_identity.label()} is a text-only model but the request carries an image.")
        if request.conversation is not None:  # a named format (e.g. FLEUR's llava_v1) instead of the template
            from mmjudge.judges.conversations import render_conversation

            image_token = getattr(self.processor, "image_token", "<image>") if request.image is not None else None
            return render_conversation(request.conversation, request.turns, image_token) + request.answer_prefix
        templater = self.processor if self.processor is not None else self.tokenizer
        if getattr(templater, "chat_template", None) or getattr(self.tokenizer, "chat_template", None):
            text = templater.apply_chat_template(self._messages(request), add_generation_prompt=True, tokenize=False)
        else:  # no chat template at all: a plain transcript
            text = "".join(f"{t.role.capitalize()}: {t.text}\n" for t in request.turns) + "Assistant:"
        return text + request.answer_prefix

    def _encode(self, requests: Sequence[RatingRequest], texts: Optional[Sequence[str]] = None):
        """Model inputs for ``requests`` (``texts``: their already rendered prompts)."""
        texts = texts if texts is not None else [self.render(r) for r in requests]
        images = [r.image for r in requests if r.image is not None]
        if self.processor is not None:
            kwargs = {"images": images} if images else {}
            inputs = self.processor(text=texts, return_tensors="pt", padding=True, **kwargs)
        else:
            inputs = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        return {k: v.to(self.model.device) if hasattr(v, "to") else v for k, v in inputs.items()}

    def _last_logits(self, inputs, keep: int = 1):
        """Logits of the last ``keep`` positions, shape (batch, keep, vocab), in float32."""
        try:
            out = self.model(**inputs, logits_to_keep=keep)
        except TypeError:  # models without logits_to_keep
            out = self.model(**inputs)
        return out.logits[:, -keep:, :].float()

    def prefix_offsets(self, text: str, answer_prefix: str) -> Optional[list[int]]:
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

    # -------------------------------------------------------------------------------------- answering
    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        import torch

        texts = [self.render(r) for r in requests]
        offsets = [self.prefix_offsets(t, r.answer_prefix) if r.read_prefix else None for t, r in zip(texts, requests)]
        keep = 1 + max((len(o) for o in offsets if o), default=0)
        probs = torch.softmax(self._last_logits(self._encode(requests, texts), keep), dim=-1).cpu()
        results = []
        for request, rows, prefix_offsets in zip(requests, probs, offsets):
            ids = self.choice_token_ids(request.choices)

            def read(row):
                return [float(row[i].sum()) for i in ids], self.tokenizer.decode([int(row.argmax())])

            raw, greedy = read(rows[-1])
            steps = None
            if request.read_prefix:
                # row -1 follows the whole prefix; the distribution before prefix token j is row -1 - count + j
                count = len(prefix_offsets or [])
                steps = [PrefixStep(o, *read(rows[-1 - count + j])) for j, o in enumerate(prefix_offsets or [])]
            results.append(RatingResult(raw=raw, greedy=greedy, steps=steps))
        return results

    def generate_trace(self, request: GenerationRequest) -> "GenerationTrace":
        """Greedy generation of one request, keeping the full-vocabulary distribution at every step
        (for reference procedures that read probabilities at generated positions; uncached)."""
        import torch

        inputs = self._encode([request])
        generated = self.model.generate(
            **inputs, max_new_tokens=request.max_new_tokens, do_sample=False, output_logits=True,
            return_dict_in_generate=True, pad_token_id=self.tokenizer.pad_token_id,
        )  # fmt: skip
        new_ids = generated.sequences[0, inputs["input_ids"].shape[1] :].tolist()
        texts = [self.tokenizer.decode(new_ids[: k + 1], skip_special_tokens=True) for k in range(len(new_ids))]
        probs = [torch.softmax(step[0].float(), dim=-1).cpu() for step in generated.logits[: len(new_ids)]]
        return GenerationTrace(token_ids=new_ids, texts=texts, probs=probs)

    def choice_token_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """Token ids of each choice (all their variants), as rating reads them."""
        key = tuple(choices)
        if key not in self._choice_ids:
            self._choice_ids[key] = rating_token_ids(self.tokenizer, key)
        return self._choice_ids[key]

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        inputs = self._encode(requests)
        output = self.model.generate(
            **inputs,
            max_new_tokens=max(r.max_new_tokens for r in requests),
            do_sample=False,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        new = output[:, inputs["input_ids"].shape[1] :]
        texts = []
        for request, ids in zip(requests, new):
            texts.append(self.tokenizer.decode(ids[: request.max_new_tokens], skip_special_tokens=True).strip())
        return texts


ENTRY = TransformersJudge
