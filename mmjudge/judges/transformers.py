"""Local ``transformers`` models as judges: vision-language models and plain causal LMs.

One forward pass per batch reads the logits at the answer position (``logits_to_keep=1``); the
full-vocabulary softmax is summed over the token variants of each rating (``"3"``, ``" 3"``, ``"▁3"``).
Tested on tiny random Qwen2-VL, LLaVA-1.5, LLaVA-NeXT and Idefics3 (SmolVLM) models built by
:mod:`mmjudge.testing`, and on the real SmolLM2-135M-Instruct for the text-only path. Qwen2-VL / Qwen2.5-VL, LLaVA-1.5 / LLaVA-NeXT and
SmolVLM / Idefics3 checkpoints all load through ``AutoModelForImageTextToText`` + ``AutoProcessor``
and render prompts with the processor's own chat template.

Throughput (see ``benchmarks/judge_throughput.py``): requests are planned so that the requests about one
image sit in one batch; each distinct image is preprocessed and encoded once per batch; requests that
share a token prefix covering the image (HarmonicEval's Correctness and Completeness: system prompt +
image) run that prefix once and branch from its KV cache; CPU-side preparation of the next batch runs in
a background thread while the model works; ``batch_size="auto"`` sizes batches from free GPU memory and
halves them on an out-of-memory error. None of this changes a result beyond float rounding (tested to
1e-5 against the plain path), and none of it enters cache keys or signatures.

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

import inspect
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from mmjudge.errors import check_bool
from mmjudge.judges.base import GenerationRequest, Judge, PrefixStep, RatingRequest, RatingResult
from mmjudge.models import ModelSource, compile_repeated_blocks, load_pretrained

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
    """One greedy generation: the new token ids, the decoded text after each of them, the
    full-vocabulary softmax at each step (CPU float32 tensors), and how many tokens the prompt had
    (image tokens included, as the model saw it)."""

    token_ids: list
    texts: list
    probs: list
    prompt_tokens: int = 0


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


# batch_size="auto": requests per batch on CPU; at most this many on GPU; share of free GPU memory used.
CPU_AUTO_BATCH = 8
# Text-only requests take the shared-prefix path only when it saves at least this share of their tokens.
MIN_SHARED_FRACTION = 0.2
MAX_AUTO_BATCH = int(os.environ.get("MMJUDGE_MAX_AUTO_BATCH", "256"))
AUTO_MEMORY_FRACTION = 0.5


@dataclass
class ThroughputStats:
    """What the model was fed: requests, tokens actually run (prefix once + suffixes) and the tokens the
    same requests would have cost unshared (benchmarks report prefill tokens/s from these)."""

    requests: int = 0
    tokens: int = 0
    unshared_tokens: int = 0
    padded_tokens: int = 0  # positions computed, padding included
    prepare_seconds: float = 0.0  # CPU-side preparation (in the background thread when prefetching)
    model_seconds: float = 0.0  # forward passes, until the probabilities are back on the CPU

    def add(self, requests: int, tokens: int, unshared: Optional[int] = None, padded: Optional[int] = None) -> None:
        self.padded_tokens += tokens if padded is None else padded
        self.requests += requests
        self.tokens += tokens
        self.unshared_tokens += tokens if unshared is None else unshared


@dataclass
class _PreparedBatch:
    requests: list
    offsets: list
    keep: int
    inputs: Optional[dict] = None
    shared: Optional[dict] = field(default=None)


def _left_pad(rows: Sequence[Sequence[int]], pad: int):
    """(ids, attention_mask) tensors, left-padded (the read position is the last one in every row)."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, row in enumerate(rows):
        if row:
            ids[k, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[k, width - len(row):] = 1
    return ids, mask


def _text_config(model: Any) -> Any:
    config = model.config
    return getattr(config, "text_config", None) or config


def _vocab_size(model: Any) -> int:
    return int(getattr(_text_config(model), "vocab_size", 32000))


def _bytes_per_token(model: Any) -> int:
    """A generous estimate of GPU memory per token in one forward pass: the KV cache of every layer
    plus the transient activations of one layer (MLP intermediate, attention, residual copies)."""
    cfg = _text_config(model)
    hidden = int(getattr(cfg, "hidden_size", 4096))
    layers = int(getattr(cfg, "num_hidden_layers", 32))
    heads = int(getattr(cfg, "num_attention_heads", 32))
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
    intermediate = int(getattr(cfg, "intermediate_size", 4 * hidden))
    width = 2 if str(model.dtype) in ("torch.bfloat16", "torch.float16") else 4
    return width * (layers * 2 * kv_heads * head_dim + 4 * intermediate + 8 * hidden)


class TransformersJudge(Judge):
    """A judge backed by a local or Hub ``transformers`` model.

    Args:
        model: Hub id, local folder, ``"tiny-random"`` (offline random-weight demo) or a callable
            returning ``(model, processor)`` (see :mod:`mmjudge.models`).
        revision: Hub revision (branch, tag or commit); recorded in signatures and cache keys.
        device: ``"cuda"``, ``"cpu"``, … (default: CUDA when available).
        dtype: ``"bfloat16"``, ``"float16"``, ``"float32"`` (default: bf16 on GPU, fp32 on CPU).
        batch_size: requests per forward pass, or ``"auto"`` (default): on CUDA, sized from free memory and
            the batch's token count; on CPU, 8. A batch that runs out of GPU memory is split in halves.
        share_prefix: run a token prefix shared by several requests of a batch (system prompt + image)
            once and branch from its KV cache (same results; faster when several criteria see one image).
        prefetch: prepare the next batch (images, tokenisation) in a background thread.
        compile: ``torch.compile`` the model's repeated blocks (decoder layers, vision blocks; dynamic shapes),
            see :func:`mmjudge.models.compile_repeated_blocks`; off by default.
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
        batch_size: Union[int, str] = "auto",
        device_map: Any = None,
        gguf_file: Optional[str] = None,
        trust_remote_code: bool = False,
        model_kwargs: Optional[dict] = None,
        share_prefix: bool = True,
        prefetch: bool = True,
        compile: bool = False,
    ):
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        self.auto_batch = batch_size == "auto"
        if not self.auto_batch and (isinstance(batch_size, bool) or not str(batch_size).isdigit() or int(batch_size) < 1):
            raise ValueError(
                f"Expected argument `batch_size` to be a positive integer or 'auto', but got {batch_size!r}."
            )
        self.batch_size = CPU_AUTO_BATCH if self.auto_batch else int(batch_size)
        # Strict: `--set prefetch=no` arrives as the string "no", which bool() would read as true.
        self.share_prefix = check_bool(share_prefix, "share_prefix")
        self.prefetch = check_bool(prefetch, "prefetch")
        compile = check_bool(compile, "compile")
        trust_remote_code = check_bool(trust_remote_code, "trust_remote_code")
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
        self._choice_ids: dict[tuple, list[list[int]]] = {}
        # Fast (Rust) tokenizers are not thread-safe ("Already borrowed"): with prefetch the next batch is
        # tokenised in a background thread while this one is answered, so every tokenisation that can
        # overlap (preparing a batch, a rating scale's token ids, the out-of-memory re-preparation) holds
        # this lock. Re-entrant: preparing a batch also looks up its rating scales.
        self._tokenizer_lock = threading.RLock()
        self._placeholder_cache: dict[tuple, list[int]] = {}
        self._auto_sized = False
        self.stats = ThroughputStats()
        if compile:
            # Regional: the decoder layers and vision blocks, each compiled once for all of its copies, with
            # dynamic shapes (batches differ in length; without it every new shape would recompile).
            compile_repeated_blocks(self.model, dynamic=True)

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

    def _encode(self, requests: Sequence[RatingRequest], texts: Optional[Sequence[str]] = None, to_device: bool = True):
        """Model inputs for ``requests`` (``texts``: their already rendered prompts)."""
        texts = texts if texts is not None else [self.render(r) for r in requests]
        images = [r.image for r in requests if r.image is not None]
        if self.processor is not None:
            kwargs = {"images": images} if images else {}
            inputs = self.processor(text=texts, return_tensors="pt", padding=True, **kwargs)
        else:
            inputs = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        if not to_device:
            return dict(inputs)
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

    # -------------------------------------------------------------------------------------- planning
    def _plan(self, requests: Sequence[RatingRequest]) -> list[list[int]]:
        """Batches that keep the requests about one image together (so they can share its encoding and
        prefix) and text-only requests of one group together (so they can share a rubric), length-sorted
        otherwise. Text-only and image requests never share a batch; criteria
        may (the answer of each request does not depend on its neighbours)."""
        if self.auto_batch and not self._auto_sized:
            self._size_batches(requests)
        # The requests about one image stay adjacent; images are ordered by size (same number of image
        # tokens) and then by the longest prompt about them, so a batch pads little.
        group_length: dict = {}
        for r in requests:
            if r.image is not None:
                group_length[r.image_digest] = max(group_length.get(r.image_digest, 0), r.length())
        order = sorted(
            range(len(requests)),
            key=lambda i: (
                requests[i].image is None,
                requests[i].image.size if requests[i].image is not None else (0, 0),
                group_length.get(requests[i].image_digest, 0),
                requests[i].image_digest or requests[i].group,  # text-only: one criterion's rubric together
                requests[i].length(),
                i,
            ),
        )
        batches: list[list[int]] = []
        for i in order:
            if batches and (requests[batches[-1][0]].image is None) == (requests[i].image is None) \
                    and len(batches[-1]) < self.batch_size:  # fmt: skip
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _size_batches(self, requests: Sequence[RatingRequest]) -> None:
        """``batch_size="auto"``: on CUDA, as many requests as the free memory holds at the token length of
        the longest request (measured by tokenising it), capped at :data:`MAX_AUTO_BATCH`; on CPU, a fixed
        :data:`CPU_AUTO_BATCH`. Out-of-memory errors still halve a batch (:meth:`_rate_prepared`)."""
        import torch

        self._auto_sized = True
        device = torch.device(self.model.device)
        if device.type != "cuda" or not requests:
            self.batch_size = CPU_AUTO_BATCH
            return
        longest = max(requests, key=lambda r: (r.length(), r.image is not None))
        tokens = int(self._encode([longest])["input_ids"].shape[1])
        free, _ = torch.cuda.mem_get_info(device)
        per_request = tokens * _bytes_per_token(self.model) + 2 * 4 * _vocab_size(self.model)  # + fp32 logits
        self.batch_size = int(max(1, min(MAX_AUTO_BATCH, (free * AUTO_MEMORY_FRACTION) // per_request)))
        logger.info("batch_size='auto': %d requests per batch (%d tokens, %.1f GiB free)", self.batch_size,
                    tokens, free / 2**30)  # fmt: skip

    # -------------------------------------------------------------------------------------- answering
    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        import torch

        prepare = self._prepare_rating if self.prefetch else None
        batch_fn = self._rate_prepared if self.prefetch else self._rate_batch
        # Gradients off for the judge's own passes only: switching them off process-wide (as loading once
        # did) silently broke any training that ran later in the same process (VELA's, a user's).
        with torch.no_grad():
            return self._run(requests, batch_fn, progress, on_batch, "rating", prepare)

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        return self._rate_prepared(self._prepare_rating(requests))

    def _prepare_rating(self, requests: Sequence[RatingRequest]) -> "_PreparedBatch":
        """CPU-side work of one batch: render, tokenise, preprocess each distinct image once, and find the
        shared prefixes. Runs in a background thread while the previous batch is on the model."""
        started = time.perf_counter()
        with self._tokenizer_lock:
            batch = self._prepare_rating_inputs(requests)
        self.stats.prepare_seconds += time.perf_counter() - started
        return batch

    def _prepare_rating_inputs(self, requests: Sequence[RatingRequest]) -> "_PreparedBatch":
        for choices in dict.fromkeys(tuple(r.choices) for r in requests):
            self.choice_token_ids(choices)  # here, so reading the answers never tokenises on the main thread
        texts = [self.render(r) for r in requests]
        offsets = [self.prefix_offsets(t, r.answer_prefix) if r.read_prefix else None for t, r in zip(texts, requests)]
        keep = 1 + max((len(o) for o in offsets if o), default=0)
        batch = _PreparedBatch(list(requests), offsets, keep)
        if self.share_prefix and (self.processor is not None or all(r.image is None for r in requests)):
            batch.shared = self._shared_inputs(requests, texts, keep)
        if batch.shared is None:
            batch.inputs = self._encode(requests, texts, to_device=False)
            mrope = self._mrope_positions(batch.inputs)
            if mrope is not None:
                batch.inputs["position_ids"] = mrope[0]
        return batch

    def _shared_inputs(self, requests: Sequence[RatingRequest], texts: Sequence[str], keep: int) -> Optional[dict]:
        """Inputs for the prefix-sharing path, or ``None`` when this processor or batch does not allow it
        (or it would save little).

        Why common-prefix analysis of the token ids, and not a hint from the metric: the judge interface
        stays "requests in, results out", every metric benefits, and sharing is only done where it is
        provably the same computation: rows whose ids agree up to a point have identical keys/values up to
        that point, so that prefix is computed once and each request continues from a copy of its cache.
        Results equal the plain path up to float rounding. Candidates for one prefix are the requests about
        one image (same digest: system prompt + image, e.g. HarmonicEval's Correctness and Completeness) or,
        without an image, the requests of one group (e.g. one criterion: its whole rubric comes before the
        text under evaluation); the shared length is then measured on the token ids.

        Images: the processor is called once per batch on the DISTINCT images (with a bare image
        placeholder as text), which gives their pixel tensors and how many placeholder tokens each expands
        to; each prompt is then expanded and tokenised the way the processor does (placeholder repeated).
        Processors whose expansion is not a plain repetition (e.g. Idefics3's tile markup), prompts with
        other than one image placeholder, and prefixes that would not cover the whole image fall back to
        the plain path.
        """
        import torch

        with_images = requests[0].image is not None
        if any((r.image is not None) != with_images for r in requests):
            return None
        vision: dict = {}
        image_token_id = None
        if with_images:
            image_token = getattr(self.processor, "image_token", None)
            image_token_id = self.tokenizer.convert_tokens_to_ids(image_token) if image_token else None
            if image_token_id is None or any(t.count(image_token) != 1 for t in texts):
                return None
            keys = [r.image_digest for r in requests]
            digests = list(dict.fromkeys(keys))
            first = {d: next(r.image for r in requests if r.image_digest == d) for d in digests}
            vision = self.processor(text=[image_token] * len(digests), images=[first[d] for d in digests],
                                    return_tensors="pt", padding=True)  # fmt: skip
            counts = {}
            for d, row, mask in zip(digests, vision["input_ids"], vision["attention_mask"]):
                n = int((row == image_token_id).sum())
                if row[mask.bool()].tolist() != self._placeholder_ids(image_token, n):
                    return None  # the placeholder does not expand to a plain repetition
                counts[d] = n
            expanded = [t.replace(image_token, image_token * counts[k]) for t, k in zip(texts, keys)]
            ids = self.tokenizer(expanded)["input_ids"]
        else:
            keys = [r.group for r in requests]
            digests = list(dict.fromkeys(keys))
            # The plain path's tokenisation: the processor's (special tokens as it adds them) or, for a
            # text-only model, the bare tokenizer without special tokens (the chat template has them).
            ids = self.tokenizer(list(texts), add_special_tokens=self.processor is not None)["input_ids"]
        # One prefix per key: the longest common prefix of its requests' ids, leaving `keep` positions to
        # read in every request and, with images, covering the image placeholder entirely.
        prefix_len = {}
        for d in digests:
            rows = [ids[i] for i, k in enumerate(keys) if k == d]
            common = min(len(x) for x in rows) - keep
            for pos in range(common):
                if any(x[pos] != rows[0][pos] for x in rows[1:]):
                    common = pos
                    break
            if with_images:
                last_image = max(p for p, t in enumerate(rows[0]) if t == image_token_id)
                if common <= last_image:
                    return None
            prefix_len[d] = max(common, 0)
        saved = sum((keys.count(d) - 1) * prefix_len[d] for d in digests)
        total = sum(len(x) for x in ids)
        if not with_images and saved < MIN_SHARED_FRACTION * total:
            return None  # two passes for little: the plain path is as fast
        pad = self.tokenizer.pad_token_id
        row_of = [digests.index(k) for k in keys]
        prefixes = [ids[keys.index(d)][: prefix_len[d]] for d in digests]
        if any(not p for p in prefixes):
            return None
        suffixes = [x[prefix_len[k]:] for x, k in zip(ids, keys)]
        prefix_ids, prefix_mask = _left_pad(prefixes, pad)
        suffix_ids, suffix_mask = _left_pad(suffixes, pad)
        prefix_inputs = {"input_ids": prefix_ids, "attention_mask": prefix_mask}
        for key, value in vision.items():
            if key in ("input_ids", "attention_mask"):
                continue
            if key == "mm_token_type_ids":  # per token: 1 on image placeholders (Qwen2-VL's M-RoPE needs it)
                prefix_inputs[key] = (prefix_ids == image_token_id).to(value.dtype)
            elif hasattr(value, "shape") and value.dim() >= 2 and value.shape[:2] == vision["input_ids"].shape:
                return None  # another per-token input this code does not know how to rebuild
            else:
                prefix_inputs[key] = value
        return {
            "prefix": prefix_inputs,
            "mrope": self._mrope_positions(prefix_inputs) if with_images else None,
            "images": with_images,
            "suffix_ids": suffix_ids,
            "suffix_mask": suffix_mask,
            "row_of": torch.tensor(row_of, dtype=torch.long),
            "tokens": int(prefix_mask.sum() + suffix_mask.sum()),
            "unshared_tokens": total,
        }

    def _placeholder_ids(self, image_token: str, count: int) -> list[int]:
        """Token ids of ``count`` image placeholders in a row (images of one size give one count: cached)."""
        key = (image_token, count)
        if key not in self._placeholder_cache:
            self._placeholder_cache[key] = self.tokenizer(image_token * count)["input_ids"]
        return self._placeholder_cache[key]

    def _mrope_positions(self, inputs: dict):
        """``(position_ids (3, batch, length), rope_deltas (batch, 1))`` for a batch with images, computed on
        the CPU by the model's own ``get_rope_index`` (Qwen2-VL and its successors); ``None`` for models
        without multimodal RoPE, or when it cannot be computed here (the model then does it itself).

        Why on the CPU, in the preparing thread: on the GPU that function walks the batch row by row with
        device-to-host reads in every step, hundreds of synchronisations per batch of images, each leaving
        the GPU idle while Python catches up. Here it costs milliseconds and overlaps the previous batch.
        Same function, same inputs: the same positions.
        """
        core = getattr(self.model, "model", None)
        rope_index = getattr(core, "get_rope_index", None)
        if rope_index is None or not hasattr(core, "rope_deltas") or "image_grid_thw" not in inputs:
            return None
        accepted = inspect.signature(rope_index).parameters
        kwargs = {k: inputs[k] for k in ("image_grid_thw", "attention_mask", "mm_token_type_ids") if k in inputs and k in accepted}
        try:
            positions, deltas = rope_index(inputs["input_ids"], **kwargs)
        except (TypeError, ValueError, RuntimeError, IndexError, StopIteration) as err:
            logger.debug("M-RoPE positions left to the model: %s", err)
            return None
        return positions, deltas

    def _rate_prepared(self, batch: "_PreparedBatch") -> list[RatingResult]:
        import torch
        from torch.profiler import record_function  # labels for benchmarks' --profile; near-free otherwise

        started = time.perf_counter()
        try:
            if batch.shared is not None:
                logits = self._shared_logits(batch.shared, batch.keep)
            else:
                inputs = {k: v.to(self.model.device) if hasattr(v, "to") else v for k, v in batch.inputs.items()}
                ids = inputs["input_ids"]
                real = int(inputs["attention_mask"].sum()) if "attention_mask" in inputs else ids.numel()
                with record_function("mmjudge.judge.forward"):
                    logits = self._last_logits(inputs, batch.keep)
                # Counted after the forward pass (as _shared_logits does): a batch that runs out of memory
                # is counted once, by the halves that succeed.
                self.stats.add(len(batch.requests), real, padded=ids.numel())
        except torch.cuda.OutOfMemoryError:
            if len(batch.requests) == 1:
                raise
            # Halve and retry: results do not depend on how requests are batched.
            torch.cuda.empty_cache()
            half = len(batch.requests) // 2
            self.batch_size = max(1, min(self.batch_size, half))
            logger.warning("Out of GPU memory with %d requests per batch; continuing with %d.", len(batch.requests), half)
            return self._rate_batch(batch.requests[:half]) + self._rate_batch(batch.requests[half:])
        with record_function("mmjudge.judge.read"):
            ratings, greedy = self._reduce_on_device(batch.requests, torch.softmax(logits, dim=-1))
        self.stats.model_seconds += time.perf_counter() - started
        return self._read_ratings(batch.requests, ratings, greedy, batch.offsets)

    def _reduce_on_device(self, requests, probs):
        """``(ratings, greedy)`` on the CPU from ``probs`` (batch, keep, vocab) on the model's device: per
        request, each rating's probability summed over its token variants ``(keep, choices)``, and the greedy
        token id ``(keep,)``. Reduced where the probabilities are, so a few numbers per request cross to
        the CPU instead of the full-vocabulary rows (about 150 MB per batch of 240 with a 152k vocabulary)."""
        import torch

        ratings: list = [None] * len(requests)
        for choices in dict.fromkeys(tuple(r.choices) for r in requests):
            rows = [k for k, r in enumerate(requests) if tuple(r.choices) == choices]
            id_lists = self.choice_token_ids(choices)
            flat = torch.tensor([i for ids in id_lists for i in ids]).to(probs.device, non_blocking=True)
            owner = torch.tensor([c for c, ids in enumerate(id_lists) for _ in ids]).to(probs.device, non_blocking=True)
            picked = probs if len(rows) == len(requests) else probs[torch.tensor(rows).to(probs.device, non_blocking=True)]
            picked = picked.index_select(-1, flat)
            sums = torch.zeros(*picked.shape[:-1], len(id_lists), dtype=picked.dtype, device=picked.device)
            sums = sums.index_add_(-1, owner, picked).cpu()
            for k, row in zip(rows, sums):
                ratings[k] = row
        return ratings, probs.argmax(dim=-1).cpu()

    def _shared_logits(self, shared: dict, keep: int):
        """Run each distinct prefix once, copy its KV cache to the requests that continue it, then run the
        suffixes: (batch, keep, vocab) float32 logits, as :meth:`_last_logits` returns for the full prompts."""
        import torch
        from torch.profiler import record_function

        device = self.model.device
        prefix = {k: v.to(device) if hasattr(v, "to") else v for k, v in shared["prefix"].items()}
        row_of = shared["row_of"].to(device)
        suffix_ids, suffix_mask = shared["suffix_ids"].to(device), shared["suffix_mask"].to(device)
        core = getattr(self.model, "model", None)
        mrope = core is not None and hasattr(core, "rope_deltas")
        if mrope:
            core.rope_deltas = None  # never reuse M-RoPE offsets from an earlier call
        precomputed = shared.get("mrope")  # M-RoPE positions computed on the CPU while preparing
        if precomputed is not None:
            prefix["position_ids"] = precomputed[0].to(device)
        elif not (mrope and shared["images"]):
            # Prefixes of different lengths are left-padded: count positions from each row's first real
            # token (as the suffix positions below do), not from the padded row's start.
            prefix["position_ids"] = (prefix["attention_mask"].long().cumsum(dim=1) - 1).clamp(min=0)
        with record_function("mmjudge.judge.prefix"):
            out = self.model(**prefix, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        deltas = precomputed[1] if precomputed is not None else getattr(core, "rope_deltas", None)
        cache.batch_select_indices(row_of)  # row i of the cache = the prefix of request i
        mask = torch.cat([prefix["attention_mask"][row_of], suffix_mask], dim=1)
        # Positions continue from each prefix's real (unpadded) length, as in the unshared prompt.
        positions = prefix["attention_mask"].sum(dim=1)[row_of, None] + suffix_mask.long().cumsum(dim=1) - 1
        positions = positions.masked_fill(suffix_mask == 0, 1)
        if deltas is not None:  # Qwen2-VL M-RoPE: text after the image is offset by rope_deltas, on 3 axes
            positions = (positions + deltas.to(device)[row_of]).unsqueeze(0).expand(3, -1, -1)
        with record_function("mmjudge.judge.suffix"):
            out = self.model(input_ids=suffix_ids, attention_mask=mask, position_ids=positions,
                             past_key_values=cache, use_cache=True, logits_to_keep=keep)  # fmt: skip
        if mrope:
            core.rope_deltas = None
        self.stats.add(len(suffix_ids), shared["tokens"], shared["unshared_tokens"],
                       prefix["input_ids"].numel() + suffix_ids.numel())  # fmt: skip
        return out.logits[:, -keep:, :].float()

    def _read_ratings(self, requests, ratings, greedy_ids, offsets) -> list[RatingResult]:
        """Results from :meth:`_reduce_on_device`'s per-request ratings and greedy ids (row -1: the answer)."""
        results = []
        for request, rows, greedy_row, prefix_offsets in zip(requests, ratings, greedy_ids, offsets):

            def read(position):
                return rows[position].tolist(), self.tokenizer.decode([int(greedy_row[position])])

            raw, greedy = read(-1)
            steps = None
            if request.read_prefix:
                # row -1 follows the whole prefix; the distribution before prefix token j is row -1 - count + j
                count = len(prefix_offsets or [])
                steps = [PrefixStep(o, *read(-1 - count + j)) for j, o in enumerate(prefix_offsets or [])]
            results.append(RatingResult(raw=raw, greedy=greedy, steps=steps))
        return results

    def generate_trace(self, request: GenerationRequest) -> "GenerationTrace":
        """Greedy generation of one request, keeping the full-vocabulary distribution at every step
        (for reference procedures that read probabilities at generated positions; uncached)."""
        import torch

        with self._tokenizer_lock:
            inputs = self._encode([request])
        generated = self.model.generate(
            **inputs, max_new_tokens=request.max_new_tokens, do_sample=False, output_logits=True,
            return_dict_in_generate=True, pad_token_id=self.tokenizer.pad_token_id,
        )  # fmt: skip
        new_ids = generated.sequences[0, inputs["input_ids"].shape[1] :].tolist()
        texts = [self.tokenizer.decode(new_ids[: k + 1], skip_special_tokens=True) for k in range(len(new_ids))]
        probs = [torch.softmax(step[0].float(), dim=-1).cpu() for step in generated.logits[: len(new_ids)]]
        return GenerationTrace(token_ids=new_ids, texts=texts, probs=probs, prompt_tokens=int(inputs["input_ids"].shape[1]))

    def choice_token_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """Token ids of each choice (all their variants), as rating reads them."""
        key = tuple(choices)
        if key not in self._choice_ids:
            with self._tokenizer_lock:
                if key not in self._choice_ids:
                    self._choice_ids[key] = rating_token_ids(self.tokenizer, key)
        return self._choice_ids[key]

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        with self._tokenizer_lock:
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
