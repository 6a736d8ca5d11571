"""CLIP's pipelined inputs equal the sequential path bit for bit: uint8 pixels normalised by the lookup table
against the CPU's float arithmetic (values and memory layout), one tokenisation against the tokenizer's own
truncation and padding, and whole encoders (images and texts, any batch size) with ``pipeline=True`` against
``pipeline=False``. On a GPU the same comparison runs at full size in ``benchmarks/caption_metrics_throughput.py
--check-sequential``."""

import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from mmjudge.encoders.clip import OPENAI_MEAN, OPENAI_STD, ClipEncoder
from mmjudge.encoders.clip_inputs import (
    normalise_table,
    padded_text_batch,
    pipelined,
    pixels_from_uint8,
    preprocess_images,
    token_rows,
    uint8_batch,
)

RNG = np.random.default_rng(0)
# Noise images of several sizes and modes (portrait, landscape, odd sizes, grey, palette, alpha).
IMAGES = [
    Image.fromarray(RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in ((37, 61), (90, 45), (33, 33))
] + [
    Image.fromarray(RNG.integers(0, 256, (50, 70), dtype=np.uint8), "L"),
    Image.fromarray(RNG.integers(0, 256, (41, 52, 3), dtype=np.uint8)).convert("P"),
    Image.fromarray(RNG.integers(0, 256, (48, 64, 4), dtype=np.uint8), "RGBA"),
]
TEXTS = ["a dog", "Two people ride bikes &amp; smile", "a cat sits on a mat " * 30, "x", "the same " * 9, "a cat sits"]


@pytest.mark.parametrize(
    "mean, std", [(OPENAI_MEAN, OPENAI_STD), ((0.5,) * 3, (0.5,) * 3), ((0.1, 0.7, 0.33), (0.9, 0.05, 1.7))]
)
@pytest.mark.parametrize("size", [16, 23])
def test_lookup_table_equals_the_cpu_arithmetic_bit_for_bit(mean, std, size):
    reference = preprocess_images(IMAGES, size, mean, std)
    got = pixels_from_uint8(uint8_batch(IMAGES, size), normalise_table(mean, std))
    assert got.dtype == torch.float32 and got.shape == reference.shape == (len(IMAGES), 3, size, size)
    assert torch.equal(got, reference)  # every value, not just close
    assert got.stride() == reference.stride()  # the same layout: a model's kernels see the same tensor
    assert float(reference.std()) > 0.1  # noise: the comparison covers many values


def test_the_table_covers_every_uint8_value_exactly():
    table = normalise_table(OPENAI_MEAN, OPENAI_STD)
    all_values = Image.fromarray(np.arange(256, dtype=np.uint8).reshape(16, 16).repeat(3).reshape(16, 16, 3))
    expected = preprocess_images([all_values], 16, OPENAI_MEAN, OPENAI_STD)
    # size 16 on a 16x16 image: the resize keeps the pixels, so every uint8 value passes through the table
    assert torch.equal(pixels_from_uint8(uint8_batch([all_values], 16), table), expected)


@pytest.fixture(scope="module")
def tokenizers(clip_dir):
    from transformers import AutoTokenizer

    from mmjudge.encoders.clip_tokenizer import clip_bpe_tokenizer, installed_bpe_file

    found = {"tiny": AutoTokenizer.from_pretrained(clip_dir)}
    if installed_bpe_file() is not None:
        found["openai"] = clip_bpe_tokenizer(None)  # OpenAI's cleaning + BPE, as PAC-S and Polos tokenise
    return found


@pytest.mark.parametrize("name", ["tiny", "openai"])
@pytest.mark.parametrize("max_length", [77, 8])
def test_one_tokenisation_equals_the_tokenizers_truncation_and_padding(tokenizers, name, max_length):
    if name not in tokenizers:
        pytest.skip("OpenAI's BPE vocabulary comes with open-clip-torch")
    tok = tokenizers[name]
    rows, cut = token_rows(tok, TEXTS, max_length)
    full = tok(TEXTS, add_special_tokens=True)["input_ids"]
    assert rows == tok(TEXTS, truncation=True, max_length=max_length)["input_ids"]
    assert cut == [k for k, ids in enumerate(full) if len(ids) > max_length] and cut  # some were cut
    inner = getattr(tok, "tokenizer", tok)  # the cleaning wrapper reads its tokenizer's padding side
    for side in ("right", "left"):
        inner.padding_side = side
        for part in (slice(0, 3), slice(2, 6), slice(3, 4)):
            expected = tok(TEXTS[part], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            ids = expected["input_ids"]
            unpadded = expected["attention_mask"].sum(dim=1) == ids.shape[1]
            ids[unpadded, -1] = tok.eos_token_id  # what the encoder does to rows without padding
            got_ids, got_mask = padded_text_batch(rows[part], tok.pad_token_id, tok.eos_token_id, side)
            assert torch.equal(got_ids, ids) and torch.equal(got_mask, expected["attention_mask"]), (side, part)
    inner.padding_side = "right"


@pytest.mark.parametrize("batch_size", [1, 2, 5, 64])
@pytest.mark.parametrize("normalize", [True, False])
def test_pipelined_encoder_equals_the_sequential_path(clip_dir, batch_size, normalize):
    encoders = {p: ClipEncoder(clip_dir, batch_size=batch_size, normalize=normalize, pipeline=p) for p in (True, False)}
    caught = {}
    for pipeline, encoder in encoders.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            texts = encoder.encode_texts(TEXTS)
        caught[pipeline] = [str(w.message) for w in seen]
        images = encoder.encode_images(IMAGES)
        encoders[pipeline] = (images, texts)
    assert np.array_equal(encoders[True][0], encoders[False][0])  # bit for bit
    assert np.array_equal(encoders[True][1], encoders[False][1])
    assert caught[True] == caught[False] and "1 of 6 texts are longer" in caught[True][0]
    assert encoders[True][0].shape == (len(IMAGES), 16) and float(np.abs(encoders[True][0]).sum()) > 0


def test_pipelined_launches_the_next_batch_before_reading_one():
    events = []

    class Started:
        def __init__(self, batch):
            events.append(f"start {batch}")
            self.batch = batch

        def result(self):
            return self.batch

    def launch(batch):
        events.append(f"launch {batch}")
        return batch

    def read(batch):
        events.append(f"read {batch}")
        return batch * 10

    assert list(pipelined(range(4), Started, launch, read, depth=2)) == [0, 10, 20, 30]
    assert events.index("launch 1") < events.index("read 0") and events.index("launch 3") < events.index("read 2")
    assert events.index("start 2") < events.index("launch 1")  # two batches prepared ahead
    assert events[-1] == "read 3"


def test_cache_keys_are_the_sha256_of_the_whole_json_record(clip_dir):
    """The keys of caches already on disk: the record serialised whole, per content (what _keys computes with
    the encoder's part serialised once)."""
    import hashlib
    import json

    encoder = ClipEncoder(clip_dir, identity={"checkpoint": "sha256-x", "é": ["ü", 1]})
    contents = ["a dog", 'quote " and \\\\ backslash', "café ☕", "", "0" * 64]
    for kind in ("text", "image"):
        expected = [
            hashlib.sha256(
                json.dumps({"encoder": encoder.identity(), "kind": kind, "content": c}, sort_keys=True).encode("utf-8")
            ).hexdigest()
            for c in contents
        ]
        assert encoder._keys(kind, contents) == expected
