"""CLIP / Long-CLIP loading and embedding, with an image/text embedding cache.

:class:`ClipEncoder` loads any ``transformers`` ``CLIPModel`` checkpoint (OpenAI CLIP, or Long-CLIP
converted to the ``transformers`` format: its text tower has 248 positions instead of 77) and returns
L2-normalised embeddings. Images are preprocessed as OpenAI's CLIP does it: bicubic resize of the short
side to the model's input size (PIL), centre crop, scale to [0, 1], normalise with the checkpoint's
mean/std. Texts longer than the text tower are truncated (``<start> … <end>`` kept) with a warning.

Inputs are prepared on every core a few batches ahead of the device (:mod:`mmjudge.encoders.clip_inputs`:
images resized in a thread pool into pinned uint8 buffers and normalised on the device by a lookup table that
equals the CPU arithmetic bit for bit; texts tokenised once; batch k+1 launched before batch k is read back);
``pipeline=False`` runs one batch at a time with CPU-side normalisation, the reference the tests compare with.

Embeddings are cached in memory per encoder, keyed by content hash (image pixels, exact text) and the
encoder's identity, and optionally in a persistent :class:`~mmjudge.store.ResultStore` — the judge cache's
store and its :func:`~mmjudge.store.cached_map`, with the encoder's own keys.

>>> import tempfile
>>> from PIL import Image
>>> from mmjudge.testing import tiny_clip
>>> encoder = ClipEncoder(tiny_clip(tempfile.mkdtemp()))
>>> encoder.encode_images([Image.new("RGB", (48, 40), "red")]).shape
(1, 16)
>>> float((encoder.encode_texts(["a cat"]) ** 2).sum().round(6))  # unit length
1.0
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmjudge.batching import progress_batches
from mmjudge.encoders.clip_inputs import (
    ImageBatch,
    normalise_table,
    padded_text_batch,
    pipelined,
    pixels_from_uint8,
    preprocess_images,
    token_rows,
)
from mmjudge.errors import check_batch_size, check_bool
from mmjudge.images import image_digest
from mmjudge.store import ResultStore, cached_map

DEFAULT_CLIP = "openai/clip-vit-base-patch32"
# Embeddings kept in memory per encoder (the most recently used): a stream of any length stays within
# about this many vectors (50,000 x 768 float32 = 150 MB); the persistent store, when asked for, keeps all.
MAX_MEMORY_EMBEDDINGS = 50_000
PREPROCESS_VERSION = 1
# OpenAI CLIP's normalisation, used when a checkpoint ships no image-processor config.
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


class ClipEncoder:
    """A CLIP model that embeds images and texts (unit vectors), with caching.

    Args:
        model: Hub id or local folder of a ``CLIPModel`` checkpoint (default ``openai/clip-vit-base-patch32``),
            ``"tiny-random"``, or a callable returning ``(model, tokenizer)`` (:mod:`mmjudge.models`).
        revision: Hub revision.
        device: ``"cuda"``, ``"cpu"``, … (default: CUDA when available).
        dtype: ``"float16"``, ``"bfloat16"``, ``"float32"`` (default: fp16 on GPU, fp32 on CPU).
        max_text_positions: text length limit in tokens, ``<start>``/``<end>`` included; default the
            checkpoint's (77 for CLIP, 248 for Long-CLIP); cannot exceed it.
        batch_size: images or texts per forward pass.
        cache: ``None``/``False`` (memory only), ``True`` (the default mmjudge cache file) or a path:
            embeddings are also stored in that SQLite file.
        image_mean, image_std: the normalisation of pixels, when the checkpoint's own (its image-processor
            config, else OpenAI's) is not the one it was trained with (OpenCLIP's LAION ViT-L/14: 0.5).
        normalize: return unit-length embeddings (``True``, what cosines need) or the projected features as
            the model gives them (``False``: Polos feeds raw CLIP features to its head).
        identity: more fields that determine the embeddings (e.g. a checkpoint's fingerprint when ``model``
            is a callable); they join the cache keys.
        pipeline: prepare inputs on every core a few batches ahead of the device (default) or one batch at
            a time (``False``); the embeddings are equal bit for bit.
    """

    def __init__(
        self,
        model: str = DEFAULT_CLIP,
        revision: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_text_positions: int | None = None,
        batch_size: int = 64,
        cache: bool | str | os.PathLike | None = None,
        image_mean: Sequence[float] | None = None,
        image_std: Sequence[float] | None = None,
        normalize: bool = True,
        identity: dict[str, Any] | None = None,
        pipeline: bool = True,
    ):
        from transformers import CLIPModel

        from mmjudge.models import load_pretrained, load_tokenizer, resolve_source

        self.batch_size = check_batch_size(batch_size)
        source = resolve_source(model, family="clip")
        loaded = load_pretrained(
            source,
            [CLIPModel],
            processor_loader=load_tokenizer,
            device=device,
            dtype=dtype,
            gpu_dtype="float16",
            revision=revision,
        )
        self.model, self.tokenizer, self.model_identity = loaded.model, loaded.processor, loaded.identity
        self.device = loaded.device
        self.dtype = self.model.dtype
        positions = int(self.model.config.text_config.max_position_embeddings)
        if max_text_positions is not None and not 2 <= int(max_text_positions) <= positions:
            raise ValueError(
                f"Expected argument `max_text_positions` to be between 2 and the model's {positions} positions, "
                f"but got {max_text_positions}."
            )
        self.max_text_positions = int(max_text_positions or positions)
        self.image_size, self.mean, self.std = self._image_settings(source, revision)
        if image_mean is not None or image_std is not None:
            self.mean = tuple(float(v) for v in (image_mean if image_mean is not None else self.mean))
            self.std = tuple(float(v) for v in (image_std if image_std is not None else self.std))
        self.normalize = bool(normalize)
        self.pipeline = check_bool(pipeline, "pipeline")
        self._tables: dict[str, Any] = {}  # the normalisation lookup table, per device
        self.extra_identity = dict(identity or {})
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self.store: ResultStore | None = None
        if cache not in (None, False):
            from mmjudge.paths import default_cache_path

            self.store = ResultStore(default_cache_path() if cache is True else cache)
        self.computed = 0  # embeddings actually computed (tests use it to check cache hits)

    def _image_settings(self, source, revision):
        size = int(self.model.config.vision_config.image_size)
        if callable(source):
            return size, OPENAI_MEAN, OPENAI_STD
        try:
            from transformers import AutoImageProcessor

            processor = AutoImageProcessor.from_pretrained(str(source), revision=revision)
            crop = getattr(processor, "crop_size", None) or {}
            size = int(crop.get("height", size)) if isinstance(crop, dict) else size
            return size, tuple(processor.image_mean), tuple(processor.image_std)
        except (OSError, ValueError, TypeError, AttributeError):
            return size, OPENAI_MEAN, OPENAI_STD

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """While the block runs, embeddings are neither read from nor written to the persistent store (the
        in-memory ones stay); afterwards the store is in use again."""
        store, self.store = self.store, None
        try:
            yield
        finally:
            self.store = store

    def identity(self) -> dict:
        """What determines the embeddings (cache keys, signatures)."""
        out = {
            "model": self.model_identity.name,
            "revision": self.model_identity.revision,
            "dtype": self.model_identity.dtype,
            "max_text_positions": self.max_text_positions,
            "preprocess": f"bicubic-crop-{self.image_size}@{PREPROCESS_VERSION}",
        }
        # Only settings that differ from the defaults join the keys, so earlier caches stay valid.
        if self.mean != OPENAI_MEAN or self.std != OPENAI_STD:
            out["normalisation"] = [list(self.mean), list(self.std)]
        if not self.normalize:
            out["normalize"] = False
        return {**out, **self.extra_identity}

    def signature_fields(self) -> dict:
        """The encoder's part of a result signature (no local paths)."""
        ident = self.identity()
        return {
            "clip": ident["model"],
            "revision": ident["revision"],
            "dtype": ident["dtype"],
            "text_positions": ident["max_text_positions"],
            "preprocess": ident["preprocess"],
        }

    def describe(self) -> str:
        return f"clip:{self.model_identity.label()}"

    # ---------------------------------------------------------------------------------------- caching
    def _keys(self, kind: str, contents: list[str]) -> list[str]:
        """The cache key of each content: the SHA-256 of ``json.dumps({"encoder": identity, "kind": kind,
        "content": c}, sort_keys=True)``, with the part that is the same for every content serialised once (the
        same text: sorted, ``"content"`` comes first)."""
        tail = f', "encoder": {json.dumps(self.identity(), sort_keys=True)}, "kind": {json.dumps(kind)}}}'
        return [hashlib.sha256(f'{{"content": {json.dumps(c)}{tail}'.encode()).hexdigest() for c in contents]

    def _forget_oldest(self) -> None:
        while len(self._memory) > MAX_MEMORY_EMBEDDINGS:
            self._memory.popitem(last=False)

    def _cached(self, kind: str, contents: list[str], items: Sequence[Any], compute, progress: bool) -> np.ndarray:
        """Embeddings of ``items`` keyed by ``contents``: the cached ones looked up, the others computed by
        ``compute(batches of items)``, which yields one array per batch, in order."""
        keys = self._keys(kind, contents)

        def lookup(unique: list[str]) -> dict[str, np.ndarray]:
            found = {k: self._memory[k] for k in unique if k in self._memory}
            for k in found:
                self._memory.move_to_end(k)
            if self.store is not None and len(found) < len(unique):
                stored = self.store.get_many([k for k in unique if k not in found])
                for k, v in stored.items():
                    found[k] = self._memory[k] = np.asarray(v, dtype=np.float32)
                self._forget_oldest()
            return found

        def save(rows: list) -> None:
            self._memory.update(rows)
            self._forget_oldest()
            if self.store is not None:
                self.store.put_many([(k, v.tolist()) for k, v in rows])

        def embed(todo: list[int], keep) -> list[np.ndarray]:
            batches = [todo[s : s + self.batch_size] for s in range(0, len(todo), self.batch_size)]
            vectors: list[np.ndarray] = []
            blocks = compute([[items[i] for i in batch] for batch in batches])
            for _, block in zip(progress_batches(batches, len(todo), progress, f"CLIP {kind} embeddings"), blocks):
                done = len(vectors)
                vectors.extend(block)
                keep(list(range(done, len(vectors))), vectors[done:])
            self.computed += len(todo)
            return vectors

        vectors, _ = cached_map(keys, embed, lookup, save)
        return np.stack(vectors)

    # -------------------------------------------------------------------------------------- embedding
    def encode_images(
        self, images: Sequence[Image.Image], progress: bool = False, digests: Sequence[str | None] | None = None
    ) -> np.ndarray:
        """Image embeddings (unit length unless ``normalize=False``), ``(n, dim)`` float32, in the order of
        ``images`` (RGB PIL images);
        ``digests``: their :func:`~mmjudge.images.image_digest` when the caller has them already."""
        keys = (
            [d or image_digest(i) for d, i in zip(digests, images)]
            if digests is not None
            else [image_digest(i) for i in images]
        )
        return self._cached("image", keys, images, self._image_batches, progress)

    def encode_texts(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Text embeddings (unit length unless ``normalize=False``), ``(n, dim)`` float32; warns when texts it
        embeds are truncated."""
        texts = list(texts)
        if not self.pipeline:
            lengths = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]]
            self._warn_truncated(texts, {t for t, n in zip(texts, lengths) if n > self.max_text_positions})
            return self._cached("text", texts, texts, self._text_batches, progress)
        cut: set[str] = set()  # the texts the pipelined batches truncated (it tokenises each text once)
        vectors = self._cached("text", texts, texts, lambda batches: self._text_batches(batches, cut), progress)
        self._warn_truncated(texts, cut)
        return vectors

    def _warn_truncated(self, texts: list[str], cut: set[str]) -> None:
        long = [i for i, t in enumerate(texts) if t in cut]
        if long:
            tokens = len(self.tokenizer(texts[long[0]], add_special_tokens=True, verbose=False)["input_ids"])
            warnings.warn(
                f"{len(long)} of {len(texts)} texts are longer than the text encoder's {self.max_text_positions} "
                f"tokens and are truncated (first: #{long[0]}, {tokens} tokens). A Long-CLIP checkpoint (248 "
                "positions) reads longer captions.",
                stacklevel=3,
            )

    # ------------------------------------------------------------------------------------ device work
    def _image_batches(self, batches: list[list[Image.Image]]) -> Iterator[np.ndarray]:
        """One embedding array per batch of images, in order (see the module's description)."""
        import torch

        if not self.pipeline:
            for images in batches:
                with torch.profiler.record_function("mmjudge.encoders.clip.preprocess"):  # --profile labels
                    pixels = preprocess_images(images, self.image_size, self.mean, self.std).to(self.device, self.dtype)
                yield self._read(self._launch(lambda p=pixels: self.model.get_image_features(pixel_values=p)))
            return
        cuda = torch.device(self.device).type == "cuda"

        def launch(buffer):
            def forward():
                pixels = buffer.to(self.device, non_blocking=True)
                pixels = pixels_from_uint8(pixels, self._table()).to(self.dtype)
                return self.model.get_image_features(pixel_values=pixels)

            return self._launch(forward)

        yield from pipelined(batches, lambda images: ImageBatch(images, self.image_size, pin=cuda), launch, self._read)

    def _text_batches(self, batches: list[list[str]], cut: set | None = None) -> Iterator[np.ndarray]:
        """One embedding array per batch of texts, in order; the pipelined path tokenises all of them at once
        and adds the texts it truncated to ``cut``."""
        import torch

        pad, eos, side = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, self.tokenizer.padding_side
        if not self.pipeline:
            for texts in batches:
                batch = self.tokenizer(
                    texts, padding=True, truncation=True, max_length=self.max_text_positions, return_tensors="pt"
                )
                ids = batch["input_ids"]
                # Truncation must keep the end-of-text token: the text tower pools at it (as CLIP's own tokenizer).
                full = batch["attention_mask"].sum(dim=1) == ids.shape[1]
                ids[full, -1] = torch.where(ids[full, -1] == eos, ids[full, -1], torch.full_like(ids[full, -1], eos))
                yield self._read(self._launch(self._text_forward(ids, batch["attention_mask"])))
            return
        flat = [t for texts in batches for t in texts]
        rows, truncated = token_rows(self.tokenizer, flat, self.max_text_positions)
        if cut is not None:
            cut.update(flat[k] for k in truncated)
        cuda = torch.device(self.device).type == "cuda"
        starts = np.cumsum([0] + [len(texts) for texts in batches])

        def start(k: int) -> Any:
            return _Ready(padded_text_batch(rows[starts[k] : starts[k + 1]], pad, eos, side, pin=cuda))

        def launch(inputs):
            return self._launch(self._text_forward(*inputs))

        yield from pipelined(range(len(batches)), start, launch, self._read)

    def _text_forward(self, ids, mask):
        def forward():
            return self.model.get_text_features(
                input_ids=ids.to(self.device, non_blocking=True), attention_mask=mask.to(self.device, non_blocking=True)
            )

        return forward

    def _table(self):
        """The normalisation lookup table on the model's device (made once)."""
        key = str(self.device)
        if key not in self._tables:
            self._tables[key] = normalise_table(self.mean, self.std).to(self.device)
        return self._tables[key]

    def _launch(self, forward) -> tuple:
        """Queue ``forward()`` and the copy of its features to the CPU (pinned memory, on CUDA) without waiting:
        ``(features on the CPU, an event to wait for or None)``."""
        import torch

        with torch.inference_mode(), torch.profiler.record_function("mmjudge.encoders.clip.forward"):
            features = _pooled(forward()).float()
            if features.device.type != "cuda":
                return features, None
            host = torch.empty(features.shape, dtype=torch.float32, pin_memory=True)
            host.copy_(features, non_blocking=True)
            done = torch.cuda.Event()
            done.record()
        return host, done

    def _read(self, launched: tuple) -> np.ndarray:
        """The features of a :meth:`_launch` once they are on the CPU: unit vectors unless ``normalize=False``."""
        host, done = launched
        if done is not None:
            done.synchronize()
        vectors = host.numpy()
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True) if self.normalize else vectors.copy()


class _Ready:
    """A value already computed, read the way a pending one is (``result()``)."""

    def __init__(self, value: Any):
        self.value = value

    def result(self) -> Any:
        return self.value


def _pooled(output) -> Any:
    # transformers 5 returns a model output whose pooler_output is the projected embedding; 4.x a tensor.
    return getattr(output, "pooler_output", output)
