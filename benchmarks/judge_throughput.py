"""HarmonicEval throughput of the local transformers judge against a naive loop, measured in one run.

    python benchmarks/judge_throughput.py                       # both 7B shapes on the GPU (about 5 min each)
    python benchmarks/judge_throughput.py --shape qwen2_vl_7b --n 512
    python benchmarks/judge_throughput.py --tiny --n 2          # tiny shapes on the CPU (smoke test)
    python benchmarks/judge_throughput.py --shape qwen2_vl_7b --n 256 --profile 64   # + where the GPU time goes
    python benchmarks/judge_throughput.py --shape qwen2_vl_7b --n 256 --compile      # regional torch.compile
    python benchmarks/judge_throughput.py --shape qwen2_vl_7b --n 256 --bound --steady 2048 --profile 96 \
        --json out.json                        # + the dense-forward bound, a long run and a profile, one process

What runs: HarmonicEval with all five criteria over N MMHE-like samples (a 448x448 image; half image
captions of 25-60 words, half VQA question + answer), with full-size architectures built from configs with
RANDOM weights (Qwen2-VL-7B and LLaVA-1.5-7B shapes; weights do not change speed, and the scores mean
nothing). The tokenizer is a byte-level BPE trained here on the benchmark's own text (its ids are in range
of the real vocabulary size the model is built with); the script prints the token counts it produced.

It prints, per shape:
* samples/s of the optimised judge (shared image prefix, each image encoded once per sample, large
  length-sorted batches with batch_size="auto", preprocessing in a background thread);
* samples/s of a naive reference loop measured in the SAME run on the first --naive-n samples: one
  request at a time, ``generate`` of the rating, one call per criterion, the image re-preprocessed and
  re-encoded for every call; and the ratio;
* prefill tokens/s actually run (prefixes once + suffixes) and the unshared-equivalent tokens/s;
* peak GPU memory (torch.cuda.max_memory_allocated);
* with ``--bound``, the dense-forward bound measured in the same process: the language model alone over
  8 x 512 random tokens (tokens/s, and MFU against a bf16 8192^3 matrix product timed beside it), divided by the
  tokens the judge ran per sample: the samples/s the judge would reach if every token it runs went as fast
  as a dense forward (the vision tower not counted); and the judge's share of it;
* where the answering thread waited for a batch still being prepared (the GPU idle for that reason).

Needs only torch, transformers, accelerate, numpy, pillow, tqdm (and torchvision for the Qwen2-VL
processor: without it that shape is skipped with a message).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_profile

import numpy as np
from PIL import Image

from mmjudge import HarmonicEval
from mmjudge.judges.transformers import TransformersJudge
from mmjudge.prompts import load_prompt_set
from mmjudge.tiny_models._tokenizers import _LLAVA_TEMPLATE, tokenizer

QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
LLAVA_SPECIAL = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
CHATML = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)  # Qwen2-VL's template, reduced to what HarmonicEval sends (default system prompt, image first)
LLAVA = _LLAVA_TEMPLATE  # LLaVA-1.5's conversation format, as the tiny models and llava-hf processors render it

# Full-size shapes, written out as dicts (random weights).
QWEN2_VL_7B = dict(
    text_config=dict(
        vocab_size=152064,
        bos_token_id=None,
        eos_token_id=None,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        max_position_embeddings=32768,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    ),
    vision_config=dict(
        depth=32,
        embed_dim=1280,
        hidden_size=3584,
        num_heads=16,
        mlp_ratio=4,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
        in_channels=3,
    ),
)
QWEN25_VL_7B = dict(
    text_config=dict(
        vocab_size=152064,
        bos_token_id=None,
        eos_token_id=None,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        max_position_embeddings=128000,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    ),
    vision_config=dict(
        depth=32,
        hidden_size=1280,
        intermediate_size=3420,
        num_heads=16,
        out_hidden_size=3584,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
        window_size=112,
        fullatt_block_indexes=[7, 15, 23, 31],
        hidden_act="silu",
        in_channels=3,
    ),
)  # Qwen2.5-VL-7B-Instruct's config.json: windowed attention in the vision tower, full in 4 blocks
LLAVA_15_7B = dict(
    text_config=dict(
        model_type="llama",
        vocab_size=32064,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
    ),
    vision_config=dict(
        model_type="clip_vision_model",
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        image_size=336,
        patch_size=14,
        projection_dim=768,
    ),
    vision_feature_layer=-2,
    vision_feature_select_strategy="default",
)


def _tiny(family: str, vocab: int) -> dict:
    """The same architecture with tiny sizes (CPU smoke test)."""
    # Qwen2-VL and Qwen2.5-VL share their language model; only the vision towers differ.
    mrope_text = dict(
        vocab_size=vocab,
        bos_token_id=None,
        eos_token_id=None,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]},
    )
    if family == "qwen2_5_vl":
        return dict(
            text_config=mrope_text,
            vision_config=dict(
                depth=2,
                hidden_size=32,
                intermediate_size=64,
                num_heads=4,
                out_hidden_size=64,
                patch_size=14,
                spatial_merge_size=2,
                temporal_patch_size=2,
                window_size=56,
                fullatt_block_indexes=[1],
            ),
        )
    if family == "qwen2_vl":
        return dict(
            text_config=mrope_text,
            vision_config=dict(
                depth=2,
                embed_dim=32,
                hidden_size=64,
                num_heads=4,
                mlp_ratio=2,
                patch_size=14,
                spatial_merge_size=2,
                temporal_patch_size=2,
                in_channels=3,
            ),
        )
    return dict(
        text_config=dict(
            model_type="llama",
            vocab_size=vocab,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        ),
        vision_config=dict(
            model_type="clip_vision_model",
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=56,
            patch_size=14,
            projection_dim=32,
        ),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
    )


# ------------------------------------------------------------------------------------------ data
_WORDS = [
    "a",
    "the",
    "man",
    "woman",
    "child",
    "dog",
    "cat",
    "bus",
    "train",
    "car",
    "bicycle",
    "street",
    "table",
    "kitchen",
    "window",
    "beach",
    "park",
    "field",
    "tree",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "yellow",
    "small",
    "large",
    "old",
    "young",
    "wooden",
    "metal",
    "standing",
    "sitting",
    "walking",
    "running",
    "holding",
    "looking",
    "next",
    "to",
    "near",
    "in",
    "on",
    "under",
    "behind",
    "front",
    "of",
    "with",
    "and",
    "while",
    "two",
    "three",
    "several",
    "people",
    "group",
    "plate",
    "pizza",
    "cup",
    "phone",
    "laptop",
    "sign",
    "building",
    "sky",
    "clouds",
    "water",
    "boat",
    "grass",
    "road",
    "snow",
    "mountain",
    "ball",
    "frisbee",
    "shirt",
    "jacket",
    "hat",
    "umbrella",
    "bag",
    "chair",
    "bench",
    "horse",
    "bird",
    "flowers",
    "light",
    "wall",
    "door",
    "floor",
    "background",
    "foreground",
]


def make_samples(n: int, size: int = 448, seed: int = 0) -> list[dict]:
    """MMHE-like samples: a distinct 448x448 image each; IC captions or VQA question + answer."""
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        pixels = np.random.default_rng(seed + i).integers(0, 255, (size // 8, size // 8, 3), dtype=np.uint8)
        image = Image.fromarray(pixels).resize((size, size), Image.BILINEAR)
        words = [rng.choice(_WORDS) for _ in range(rng.randint(25, 60))]
        text = " ".join(words).capitalize() + "."
        if i % 2:
            question = "What is " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))) + "?"
            samples.append(dict(task="vqa", image=image, text=" ".join(words[:20]) + ".", question=question))
        else:
            samples.append(dict(task="ic", image=image, text=text, question=None))
    return samples


def build_tokenizer(special: list[str], template: str, bos, eos: str, pad: str, corpus: list[str], vocab: int):
    """mmjudge's tiny-model byte-level BPE trained on the benchmark's own prompts only (so token counts
    per word are realistic)."""
    return tokenizer(special, template, bos, eos, pad, vocab_size=vocab, corpus=corpus)


def _corpus(samples: list[dict]) -> list[str]:
    prompts = load_prompt_set("harmonic_eval")
    corpus = []
    for s in samples[:64]:
        for c in prompts.criteria:
            corpus.append(prompts.render(c, s["task"], text=s["text"], question=s["question"]))
    return corpus + ["Score: 1 2 3 4 5"] * 4


def build_model(family: str, tiny: bool, device: str, samples: list[dict]):
    """(model, processor) with random weights, built on ``device`` directly."""
    import torch
    import transformers

    corpus = _corpus(samples)
    if family in ("qwen2_vl", "qwen2_5_vl"):
        qwen25 = family == "qwen2_5_vl"
        tok = build_tokenizer(QWEN_SPECIAL, CHATML, None, "<|im_end|>", "<|endoftext|>", corpus, 4000)
        ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
        cfg = _tiny(family, len(tok)) if tiny else (QWEN25_VL_7B if qwen25 else QWEN2_VL_7B)
        config = (transformers.Qwen2_5_VLConfig if qwen25 else transformers.Qwen2VLConfig)(
            **cfg,
            image_token_id=ids["<|image_pad|>"],
            video_token_id=ids["<|video_pad|>"],
            vision_start_token_id=ids["<|vision_start|>"],
            vision_end_token_id=ids["<|vision_end|>"],
        )
        config.text_config.eos_token_id, config.text_config.pad_token_id = ids["<|im_end|>"], ids["<|endoftext|>"]
        model_class = (
            transformers.Qwen2_5_VLForConditionalGeneration if qwen25 else transformers.Qwen2VLForConditionalGeneration
        )
        pixels = dict(min_pixels=56 * 56, max_pixels=(224 * 224 if tiny else 28 * 28 * 1280))
        image_processor = transformers.Qwen2VLImageProcessor(**pixels)
        processor = (transformers.Qwen2_5_VLProcessor if qwen25 else transformers.Qwen2VLProcessor)(
            image_processor=image_processor,
            video_processor=transformers.Qwen2VLVideoProcessor(**pixels),
            tokenizer=tok,
            chat_template=CHATML,
        )
    else:
        tok = build_tokenizer(LLAVA_SPECIAL, LLAVA, "<s>", "</s>", "<pad>", corpus, 4000)
        cfg = _tiny(family, len(tok)) if tiny else LLAVA_15_7B
        config = transformers.LlavaConfig(**cfg, image_token_id=tok.convert_tokens_to_ids("<image>"))
        config.text_config.pad_token_id = tok.pad_token_id
        model_class = transformers.LlavaForConditionalGeneration
        side = config.vision_config.image_size
        image_processor = transformers.CLIPImageProcessor(
            size={"shortest_edge": side}, crop_size={"height": side, "width": side}
        )
        processor = transformers.LlavaProcessor(
            image_processor=image_processor,
            tokenizer=tok,
            patch_size=14,
            vision_feature_select_strategy="default",
            num_additional_image_tokens=1,
            chat_template=LLAVA,
        )
    config._attn_implementation = "sdpa"
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        model = model_class._from_config(config, dtype=dtype)
    return model.eval(), processor


# ------------------------------------------------------------------------------------------ runs
def run_harmonic_eval(he: HarmonicEval, samples: list[dict]) -> dict:
    """HarmonicEval over ``samples`` (one compute call per task), all five criteria."""
    out = {}
    for task in ("ic", "vqa"):
        part = [s for s in samples if s["task"] == task]
        if part:
            questions = [s["question"] for s in part] if task == "vqa" else None
            out[task] = he.compute(
                predictions=[s["text"] for s in part],
                images=[s["image"] for s in part],
                questions=questions,
                task=task,
                progress=False,
            )
    return out


def naive_loop(judge: TransformersJudge, he: HarmonicEval, samples: list[dict]) -> None:
    """The reference: one request at a time, ``generate`` of the rating, one call per criterion, the
    image preprocessed and encoded again for every call."""
    import torch

    prompts = he.prompt_set
    for s in samples:
        for criterion in he.criteria:
            from mmjudge.judges.requests import RatingRequest, Turn

            sees = criterion in he.image_criteria
            request = RatingRequest(
                [Turn("user", prompts.render(criterion, s["task"], text=s["text"], question=s["question"]))],
                image=s["image"] if sees else None,
                answer_prefix=prompts.answer_prefix,
            )
            kwargs = {"images": [s["image"]]} if sees else {}
            inputs = judge.processor(text=[judge.render(request)], return_tensors="pt", **kwargs).to(judge.model.device)
            out = judge.model.generate(
                **inputs,
                max_new_tokens=1,
                do_sample=False,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=judge.tokenizer.pad_token_id,
            )
            probs = torch.softmax(out.logits[0][0].float(), dim=-1)
            [float(probs[ids].sum()) for ids in judge.choice_token_ids(prompts.scale)]


def _save_partial(args, result: dict) -> None:
    """The figures so far, written at once (a phase cut off by its time limit keeps what it measured)."""
    if args.json:
        import json

        Path(args.json).write_text(json.dumps([result], indent=1, default=str))


def _time_rating(judge) -> dict:
    """Accumulate the seconds spent inside ``judge.rate`` in the returned dict's ``seconds``."""
    spent = {"seconds": 0.0}
    rate = judge.rate

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return rate(*args, **kwargs)
        finally:
            spent["seconds"] += time.perf_counter() - start

    judge.rate = timed
    return spent


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def dense_bound(model, device: str, batch: int = 8, length: int = 512, reps: int = 10) -> dict:
    """Tokens/s of the language model alone (no vision tower, no LM head) over ``batch`` x ``length`` random
    tokens, and its MFU against an 8192^3 matrix product in the model's dtype timed in the same process."""
    import torch

    core = getattr(model, "model", model)
    lm = getattr(core, "language_model", None) or core
    config = lm.config
    vocab = int(config.vocab_size)
    ids = torch.randint(10, vocab - 1, (batch, length), device=device, generator=torch.Generator(device).manual_seed(0))

    def timed(fn, n: int) -> float:
        for _ in range(3):
            fn()
        _sync()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        _sync()
        return (time.perf_counter() - start) / n

    side = 8192 if str(device).startswith("cuda") else 256  # a CPU rehearsal times a small product instead
    with torch.inference_mode():
        per_pass = timed(lambda: lm(input_ids=ids, use_cache=False), reps)
        a = torch.randn(side, side, device=device, dtype=model.dtype)
        b = torch.randn(side, side, device=device, dtype=model.dtype)
        peak = 2 * side**3 / timed(lambda: a @ b, 20)
    params = sum(p.numel() for n, p in lm.named_parameters() if "embed_tokens" not in n)
    layers, hidden = int(config.num_hidden_layers), int(config.hidden_size)
    per_token = 2 * params + 2 * layers * length * hidden  # matrix products + causal attention (QK and PV)
    tokens_per_s = batch * length / per_pass
    return dict(
        tokens_per_s=tokens_per_s,
        mfu=tokens_per_s * per_token / peak,
        peak_tflops=peak / 1e12,
        shape=f"{batch}x{length}",
    )


def bench_shape(family: str, args) -> dict:
    import torch

    device = "cpu" if args.tiny else args.device
    samples = make_samples(args.n, size=args.image_size)
    t0 = time.perf_counter()
    model, processor = build_model(family, args.tiny, device, samples)
    judge = TransformersJudge(
        model=lambda: (model, processor),
        device=device,
        batch_size=args.batch_size,
        compile=args.compile,
        share_prefix=not args.no_share,
    )
    he = HarmonicEval(judge=judge, cache=False, min_mass=0)  # random weights: keep every rating (speed only)
    rating = _time_rating(judge)  # seconds inside judge.rate: the rest of a run is the metric around the judge
    params = sum(p.numel() for p in model.parameters()) / 1e9
    print(
        f"\n=== {family} ({'tiny' if args.tiny else 'full-size'}, {params:.2f} B params, RANDOM weights, "
        f"{judge.dtype}, {device}) built in {time.perf_counter() - t0:.0f} s"
    )

    # Warm-up on other samples, as many as fill full-size batches: the H100 runs of this round measured a first
    # pass 15-27% slower than the same work repeated (kernel choices and allocator growth for new shapes),
    # which a 4-sample warm-up did not absorb.
    run_harmonic_eval(he, make_samples(min(len(samples), args.warmup), size=args.image_size, seed=7))
    naive_samples = samples[: min(len(samples), args.naive_n)]
    naive_loop(judge, he, naive_samples[:1])
    _sync()

    t0 = time.perf_counter()
    naive_loop(judge, he, naive_samples)
    _sync()
    naive_s = time.perf_counter() - t0

    if torch.cuda.is_available() and device != "cpu":
        torch.cuda.reset_peak_memory_stats()
    judge.stats.__init__()
    rating["seconds"] = 0.0
    t0 = time.perf_counter()
    run_harmonic_eval(he, samples)
    _sync()
    fast_s = time.perf_counter() - t0
    stats = judge.stats
    peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() and device != "cpu" else float("nan")
    result = dict(
        family=family,
        samples=len(samples),
        fast=len(samples) / fast_s,
        naive=len(naive_samples) / naive_s if naive_samples else float("nan"),  # --naive-n 0: not measured
        tokens_per_s=stats.tokens / fast_s,
        unshared_per_s=stats.unshared_tokens / fast_s,
        peak_gib=peak,
        batch_size=judge.batch_size,
        tokens_per_request=stats.unshared_tokens / max(1, stats.requests),
        tokens_per_sample=stats.tokens / len(samples),
        naive_n=len(naive_samples),
        seconds=dict(
            wall=fast_s,
            forward=stats.model_seconds,
            prepare=stats.prepare_seconds,
            waiting_for_preparation=stats.wait_seconds,
            in_judge_rate=rating["seconds"],
        ),
        batches=stats.batches,
        transformers=_transformers_version(),
        device=torch.cuda.get_device_name() if torch.cuda.is_available() and device != "cpu" else "cpu",
    )
    result["ratio"] = result["fast"] / result["naive"]
    print(
        f"  optimised : {result['fast']:8.2f} samples/s  ({len(samples)} samples x 5 criteria in {fast_s:.1f} s, "
        f"batch_size auto -> {judge.batch_size})"
    )
    print(f"  naive     : {result['naive']:8.2f} samples/s  ({len(naive_samples)} samples, one generate per criterion)")
    print(f"  ratio     : {result['ratio']:8.1f} x naive")
    print(
        f"  prefill   : {result['tokens_per_s']:8.0f} tokens/s run ({stats.tokens} tokens; "
        f"{result['unshared_per_s']:.0f} tokens/s unshared-equivalent, "
        f"{result['tokens_per_request']:.0f} tokens/request, "
        f"{stats.padded_tokens / max(1, stats.tokens) - 1:.0%} padding)"
    )
    print(f"  peak GPU  : {peak:8.2f} GiB (torch.cuda.max_memory_allocated)")
    print(
        f"  time split: {stats.model_seconds:.1f} s in forward passes, {stats.prepare_seconds:.1f} s preparing "
        f"{stats.batches} batches (images, tokens; in a background thread), {stats.wait_seconds:.2f} s of the "
        f"{fast_s:.1f} s waiting for a batch still being prepared, {fast_s - rating['seconds']:.2f} s outside "
        "judge.rate (the metric around the judge)"
    )
    if args.bound:
        result["bound"] = bound = dense_bound(model, device, *((8, 512) if device != "cpu" else (2, 64)))
        bound["samples_per_s"] = bound["tokens_per_s"] / result["tokens_per_sample"]
        result["share_of_bound"] = result["fast"] / bound["samples_per_s"]
        print(
            f"  bound     : dense forward {bound['tokens_per_s']:.0f} tokens/s at {bound['shape']} (MFU "
            f"{bound['mfu']:.2f} of {bound['peak_tflops']:.0f} TFLOP/s measured), / {result['tokens_per_sample']:.0f} "
            f"tokens per sample = {bound['samples_per_s']:.1f} samples/s; this run {result['share_of_bound']:.0%}"
        )
    _save_partial(args, result)
    if args.ab_packed and judge.packed_vision:
        # The same run with the vision tower's attention one call per image/window (transformers' sdpa path).
        vision = judge.model.config.vision_config
        packed = vision._attn_implementation
        scores_packed = run_harmonic_eval(he, samples[:16])
        vision._attn_implementation = "sdpa"
        scores_plain = run_harmonic_eval(he, samples[:16])
        t0 = time.perf_counter()
        run_harmonic_eval(he, samples)
        _sync()
        result["per_image_vision"] = len(samples) / (time.perf_counter() - t0)
        vision._attn_implementation = packed
        diff = max(
            float(np.nanmax(np.abs(np.array(scores_packed[t]["overall"]) - np.array(scores_plain[t]["overall"]))))
            for t in scores_packed
        )
        print(
            f"  vision    : packed {result['fast']:.2f} samples/s vs one attention call per image/window "
            f"{result['per_image_vision']:.2f} ({result['fast'] / result['per_image_vision']:.2f}x); "
            f"overall scores of 16 samples differ by at most {diff:.2g} ({judge.dtype})"
        )
    if args.steady:
        # Steady state: the same judge over a longer run; nothing may grow with the run (caches, queues).
        longer = make_samples(args.steady, size=args.image_size, seed=1)
        judge.stats.__init__()
        t0 = time.perf_counter()
        run_harmonic_eval(he, longer)
        _sync()
        result["steady_n"], result["steady"] = len(longer), len(longer) / (time.perf_counter() - t0)
        result["steady_waiting_for_preparation"] = judge.stats.wait_seconds
        print(
            f"  steady    : {result['steady']:8.2f} samples/s over {len(longer)} samples "
            f"({result['steady'] / result['fast']:.2f} x the {len(samples)}-sample figure"
            + (f", {result['steady'] / result['bound']['samples_per_s']:.0%} of the bound" if args.bound else "")
            + f"; {judge.stats.wait_seconds:.2f} s waiting for preparation)"
        )
    _save_partial(args, result)
    if args.profile:
        from gpu_profile import labelled, profile_call

        core = getattr(model, "model", model)
        vision = getattr(core, "visual", None) or getattr(core, "vision_tower", None)
        try:
            with labelled(vision, "vision tower"):
                result["profile"] = profile_call(
                    lambda he=he: run_harmonic_eval(he, samples[: args.profile]), f"{family}, {args.profile} samples"
                )
        except Exception as err:  # the figures above are kept whatever the profiler does
            print(f"  PROFILE FAILED: {err!r}")
    del he, judge
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--shape", choices=["qwen2_vl_7b", "qwen2_5_vl_7b", "llava_15_7b", "both", "all"], default="both"
    )
    parser.add_argument("--n", type=int, default=384, help="samples (x5 criteria) for the optimised judge")
    parser.add_argument("--naive-n", type=int, default=32, help="samples for the naive reference loop")
    parser.add_argument("--warmup", type=int, default=64, help="samples run before timing (other images)")
    parser.add_argument("--batch-size", default="auto")
    parser.add_argument("--image-size", type=int, default=448)
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--compile", action="store_true", help="regional torch.compile: the MLPs and norms of every block"
    )
    parser.add_argument("--no-share", action="store_true", help="ablation: no shared image prefix")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="after the timed run, profile N samples: GPU busy share, kernel families, phases",
    )
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU (smoke test, not a timing)")
    parser.add_argument(
        "--steady", type=int, default=0, metavar="N", help="then N more samples: is the rate steady over a long run?"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    parser.add_argument(
        "--bound", action="store_true", help="also measure the dense-forward bound of the same shape (same process)"
    )
    parser.add_argument(
        "--ab-packed",
        dest="ab_packed",
        action="store_true",
        help="also time the vision tower with one attention call per image (transformers' sdpa path)",
    )
    args = parser.parse_args()
    if args.batch_size != "auto":
        args.batch_size = int(args.batch_size)
    warnings.simplefilter("ignore")
    import torch

    if not args.tiny and not torch.cuda.is_available():
        parser.error("no CUDA device: run on a GPU, or pass --tiny for the CPU smoke test")
    families = {
        "qwen2_vl_7b": ["qwen2_vl"],
        "qwen2_5_vl_7b": ["qwen2_5_vl"],
        "llava_15_7b": ["llava"],
        "both": ["qwen2_vl", "llava"],
        "all": ["qwen2_vl", "qwen2_5_vl", "llava"],
    }[args.shape]
    if importlib.util.find_spec("torchvision") is None:
        for family in [f for f in families if f.startswith("qwen")]:
            print(f"SKIP {family}: the Qwen processors need torchvision (pip install torchvision matching torch).")
            families.remove(family)
    if torch.cuda.is_available() and not args.tiny:
        print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    results = [bench_shape(f, args) for f in families]
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print("\nsummary (random weights: speed only, scores mean nothing)")
    print(f"  {'shape':10s} {'samples/s':>10s} {'naive':>8s} {'ratio':>7s} {'tokens/s':>10s} {'peak GiB':>9s}")
    for r in results:
        print(
            f"  {r['family']:10s} {r['fast']:10.2f} {r['naive']:8.2f} {r['ratio']:6.1f}x {r['tokens_per_s']:10.0f} "
            f"{r['peak_gib']:9.2f}"
        )


if __name__ == "__main__":
    main()
