"""VELA throughput with full-size architectures, next to HarmonicEval and FLEUR on the same samples.

    python benchmarks/vela_throughput.py                     # on a GPU: Qwen2.5-3B + CLIP ViT-L/14 (248 positions)
    python benchmarks/vela_throughput.py --tiny --n 4        # CPU smoke test with tiny shapes (no timing meaning)
    python benchmarks/vela_throughput.py --skip-judges --batch-sizes 64 --profile   # where the GPU time goes
    python benchmarks/vela_throughput.py --skip-judges --batch-sizes 64 --compile   # regional torch.compile

Models are built from configs written below with RANDOM weights (no downloads): speed only, never quality.
VELA = Qwen2.5-3B-Instruct-shaped LLM (one forward pass over references + candidate, no LM head) +
Long-CLIP-L-shaped CLIP (ViT-L/14 at 224 px, 248 text positions) + the head. The judges HarmonicEval (5
teacher-forced criterion passes) and FLEUR (fast path: teacher-forced digit read-out) run on a
LLaVA-1.5-7B-shaped VLM (Llama-7B + CLIP ViT-L/14-336, 576 image tokens).

Texts: candidates of ~100 words and one reference of ~130 words, as LongCap-Arena's averages. The tokenizers
are byte-level BPEs trained here on the benchmark's own words, so a word is about one token; real
Qwen2.5 / Llama tokenizers give ~1.3 tokens per English word (the token counts are printed). Images are
random 640x480 RGB (resizing and cropping run on the CPU in a thread pool of up to 16 workers, one per core, as
in the metrics).

With random weights FLEUR's fast path falls back to generation for every sample (the judge never prints
a number), so its figure is an upper bound unless ``--fleur-max-new-tokens 8`` is given.

Prints samples/s and ms/sample for each VELA batch size (end to end through the metric, and where the time
goes: LLM, CLIP, head), the judges' figures, and the ratios against them, all measured in this run.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_profile

from mmjudge.models import resolve_device, resolve_dtype

# ------------------------------------------------------------------------------------- shapes
QWEN25_3B = dict(
    hidden_size=2048,
    intermediate_size=11008,
    num_hidden_layers=36,
    num_attention_heads=16,
    num_key_value_heads=2,
    vocab_size=151936,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    hidden_act="silu",
)
CLIP_L14_LONG = dict(
    text_config=dict(
        vocab_size=49408,
        hidden_size=768,
        intermediate_size=3072,
        num_hidden_layers=12,
        num_attention_heads=12,
        max_position_embeddings=248,
        hidden_act="quick_gelu",
    ),
    vision_config=dict(
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        image_size=224,
        patch_size=14,
        hidden_act="quick_gelu",
    ),
    projection_dim=768,
)
LLAVA15_7B = dict(
    text_config=dict(
        model_type="llama",
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32064,
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
        hidden_act="quick_gelu",
    ),
    vision_feature_layer=-2,
    vision_feature_select_strategy="default",
    projector_hidden_act="gelu",
)
# Tiny shapes for the CPU smoke test (--tiny).
TINY_QWEN = dict(
    QWEN25_3B,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=4096,
)
TINY_CLIP = dict(
    text_config=dict(
        CLIP_L14_LONG["text_config"],
        vocab_size=4096,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
    ),
    vision_config=dict(
        CLIP_L14_LONG["vision_config"],
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=32,
        patch_size=8,
    ),
    projection_dim=16,
)
TINY_LLAVA = dict(
    LLAVA15_7B,
    text_config=dict(
        LLAVA15_7B["text_config"],
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=4096,
    ),
    vision_config=dict(
        LLAVA15_7B["vision_config"],
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=32,
        patch_size=8,
        projection_dim=32,
    ),
)

WORDS = [
    "the",
    "a",
    "an",
    "of",
    "on",
    "in",
    "with",
    "near",
    "behind",
    "under",
    "above",
    "beside",
    "large",
    "small",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "wooden",
    "metal",
    "glass",
    "old",
    "new",
    "bright",
    "dark",
    "tall",
    "short",
    "round",
    "square",
    "man",
    "woman",
    "child",
    "dog",
    "cat",
    "bird",
    "car",
    "bus",
    "bicycle",
    "tree",
    "building",
    "window",
    "door",
    "table",
    "chair",
    "plate",
    "cup",
    "bottle",
    "street",
    "road",
    "sidewalk",
    "grass",
    "sky",
    "cloud",
    "water",
    "river",
    "bridge",
    "mountain",
    "field",
    "wall",
    "floor",
    "roof",
    "sign",
    "light",
    "lamp",
    "shadow",
    "background",
    "foreground",
    "left",
    "right",
    "center",
    "top",
    "bottom",
    "corner",
    "edge",
    "surface",
    "stands",
    "sits",
    "holds",
    "walks",
    "runs",
    "looks",
    "wears",
    "carries",
    "shows",
    "appears",
    "contains",
    "covers",
    "surrounds",
    "faces",
    "leans",
    "rests",
    "shirt",
    "jacket",
    "hat",
    "shoe",
    "bag",
    "flower",
    "leaf",
    "branch",
    "fence",
    "pole",
    "wire",
    "tile",
    "brick",
    "stone",
    "sand",
    "snow",
    "rock",
    "painting",
    "picture",
]


def _texts(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(seed)

    def passage(words: int) -> str:
        sentences, left = [], words
        while left > 0:
            k = min(left, rng.randint(8, 16))
            sentences.append(" ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + ".")
            left -= k
        return " ".join(sentences)

    return [passage(100) for _ in range(n)], [[passage(130)] for _ in range(n)]


def _images(n: int, size: tuple[int, int], seed: int = 0) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)) for _ in range(n)]


def _bpe(special: list[str], template: str, bos: Any, eos: str, pad: str, extra_corpus: list[str], vocab_size: int):
    """mmjudge's tiny-model byte-level BPE, trained on the benchmark's words and the metrics' prompts too."""
    from mmjudge.tiny_models._tokenizers import _CORPUS, tokenizer

    corpus = _CORPUS * 4 + [" ".join(WORDS), " ".join(WORDS).capitalize() + "."] * 4 + extra_corpus
    return tokenizer(special, template, bos, eos, pad, vocab_size=vocab_size, corpus=corpus)


def _prompt_corpus() -> list[str]:
    from mmjudge.prompts import load_prompt_file

    out = []
    for name in ("vela", "fleur", "harmonic_eval"):

        def walk(value):
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, dict):
                for v in value.values():
                    walk(v)

        walk(load_prompt_file(name))
    return out * 2


def build_vela(tiny: bool, device: str):
    import torch
    from tokenizers import processors
    from transformers import CLIPConfig, CLIPModel, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from mmjudge.encoders.clip import ClipEncoder
    from mmjudge.metrics.vela import new_vela
    from mmjudge.tiny_models._tokenizers import _CHATML

    dtype = getattr(torch, resolve_dtype(None, device))
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = _bpe(special, _CHATML, None, "<|im_end|>", "<|endoftext|>", _prompt_corpus(), 2000)
    shape = TINY_QWEN if tiny else QWEN25_3B
    config = Qwen2Config(
        **shape, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tok.pad_token_id, bos_token_id=None
    )
    with torch.device(device):
        llm = Qwen2ForCausalLM(config).to(dtype).eval()
    # CLIP: the same kind of BPE, wrapped like CLIP's (<|startoftext|> … <|endoftext|>, 248 positions).
    bos, eos = "<|startoftext|>", "<|endoftext|>"
    ctok = _bpe([bos, eos], "", bos, eos, eos, [], 2000)
    ctok._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        special_tokens=[(bos, ctok.convert_tokens_to_ids(bos)), (eos, ctok.convert_tokens_to_ids(eos))],
    )
    ctok = PreTrainedTokenizerFast(
        tokenizer_object=ctok._tokenizer,
        bos_token=bos,
        eos_token=eos,
        pad_token=eos,
        model_max_length=248,
        padding_side="right",
    )
    cshape = TINY_CLIP if tiny else CLIP_L14_LONG
    cconfig = CLIPConfig(
        **{
            **cshape,
            "text_config": dict(
                cshape["text_config"],
                eos_token_id=ctok.eos_token_id,
                bos_token_id=ctok.bos_token_id,
                pad_token_id=ctok.eos_token_id,
            ),
        }
    )
    with torch.device(device):
        clip = CLIPModel(cconfig).to(getattr(torch, resolve_dtype(None, device, "float16"))).eval()
    encoder = ClipEncoder(lambda: (clip, ctok), device=device)
    vela = new_vela(lambda: (llm, tok), clip_encoder=encoder, device=device, lora_r=0, projection_dim=256, seed=42)
    return vela


def build_llava(tiny: bool, device: str):
    import torch
    import transformers

    from mmjudge.tiny_models._tokenizers import _LLAVA_TEMPLATE

    special = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
    tok = _bpe(special, _LLAVA_TEMPLATE, "<s>", "</s>", "<pad>", _prompt_corpus(), 2000)
    shape = TINY_LLAVA if tiny else LLAVA15_7B
    text = dict(
        shape["text_config"],
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    config = transformers.LlavaConfig(
        **{**shape, "text_config": text}, image_token_id=tok.convert_tokens_to_ids("<image>")
    )
    with torch.device(device):
        model = (
            transformers.LlavaForConditionalGeneration(config).to(getattr(torch, resolve_dtype(None, device))).eval()
        )
    size, patch = shape["vision_config"]["image_size"], shape["vision_config"]["patch_size"]
    processor = transformers.LlavaProcessor(
        image_processor=transformers.CLIPImageProcessor(
            size={"shortest_edge": size}, crop_size={"height": size, "width": size}
        ),
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_TEMPLATE,
    )
    return model, processor


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(fn) -> float:
    _sync()
    start = time.perf_counter()
    fn()
    _sync()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (CPU smoke test; timings mean nothing)")
    parser.add_argument("--n", type=int, help="samples for VELA (default 512 on GPU, 4 with --tiny)")
    parser.add_argument(
        "--judge-n", dest="judge_n", type=int, help="samples for HarmonicEval / FLEUR (default 64; = n with --tiny)"
    )
    parser.add_argument("--batch-sizes", dest="batch_sizes", default="1,8,32,64", help="VELA batch sizes")
    parser.add_argument("--judge-batch-size", dest="judge_batch_size", type=int, default=16)
    parser.add_argument("--skip-judges", dest="skip_judges", action="store_true", help="VELA only")
    parser.add_argument(
        "--fleur-max-new-tokens",
        dest="fleur_max_new_tokens",
        type=int,
        default=512,
        help="FLEUR's generation cap (default 512, its own). A random-weight judge never prints a number, "
        "so FLEUR's fast path falls back to generating this many tokens for every sample; a real "
        "judge prints '0.xy' in about 4 tokens: use 8 for a figure closer to a real model's",
    )
    parser.add_argument("--device")
    parser.add_argument(
        "--profile", action="store_true", help="profile the best batch size: GPU busy share, kernels, phases"
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile the LLM's and CLIP's repeated blocks")
    parser.add_argument(
        "--check-overlap",
        dest="check_overlap",
        action="store_true",
        help="score once with the CLIP branch on its own stream and once sequentially; print the largest difference",
    )
    parser.add_argument("--json", help="also write VELA's figures as JSON")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch

    from mmjudge.metrics.fleur import FLEUR
    from mmjudge.metrics.harmonic_eval import HarmonicEval
    from mmjudge.metrics.vela import VELA

    device = resolve_device(args.device)
    n = args.n or (4 if args.tiny else 512)
    judge_n = min(n, args.judge_n or (n if args.tiny else 64))
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    candidates, references = _texts(n)
    images = _images(n, (64, 48) if args.tiny else (640, 480))
    print(
        f"device: {torch.cuda.get_device_name() if device.startswith('cuda') else 'cpu'}; torch {torch.__version__}; "
        f"shapes: {'tiny' if args.tiny else 'full (Qwen2.5-3B + CLIP ViT-L/14-248; LLaVA-1.5-7B)'}; random weights"
    )

    vela = build_vela(args.tiny, device)
    ids = vela.prompt_ids(references, candidates)
    clip_tokens = [len(x) for x in vela.clip.tokenizer(candidates)["input_ids"]]
    print(
        f"VELA prompt tokens: mean {np.mean([len(i) for i in ids]):.0f}; "
        f"CLIP candidate tokens: mean {np.mean(clip_tokens):.0f} "
        f"(≤248); words: candidate 100, reference 130"
    )
    metric = VELA(vela=vela, batch_size=batch_sizes[0], compile=args.compile)
    summary: dict = {"n": n, "compile": args.compile, "batches": {}, "device": device}
    if device.startswith("cuda"):
        summary["device"] = torch.cuda.get_device_name()
    metric.compute(predictions=candidates[:2], images=images[:2], references=references[:2], progress=False)  # warm-up
    results = {}
    for bs in batch_sizes:
        metric.batch_size = bs
        vela.clip._memory.clear()  # no embedding cache hits between runs
        seconds = _timed(
            lambda m=metric: m.compute(predictions=candidates, images=images, references=references, progress=False)
        )
        vela.clip._memory.clear()
        timings: dict = {}
        vela.score(candidates, images, references, batch_size=bs, timings=timings)
        results[bs] = seconds
        summary["batches"][bs] = dict(
            samples_per_s=n / seconds, ms_per_sample_apart={k: 1000 * v / n for k, v in timings.items()}
        )
        parts = ", ".join(f"{k} {1000 * v / n:.2f}" for k, v in timings.items())
        print(
            f"VELA batch {bs:3d}: {n / seconds:8.1f} samples/s  {1000 * seconds / n:8.2f} ms/sample  "
            f"(ms/sample: {parts})"
        )
    best_bs = min(results, key=results.get)
    vela_ms = 1000 * results[best_bs] / n
    if args.check_overlap:
        # The CLIP branch on its own CUDA stream (overlap) must give the sequential path's scores.
        vela.clip._memory.clear()
        overlapped = vela.score(candidates, images, references, batch_size=best_bs, overlap=True)
        vela.clip._memory.clear()
        sequential = vela.score(candidates, images, references, batch_size=best_bs, overlap=False)
        summary["overlap_max_diff"] = float(np.abs(overlapped - sequential).max())
        print(
            f"VELA overlap (CLIP on its own stream) vs sequential, {n} samples: "
            f"max |diff| {summary['overlap_max_diff']:.3g}"
        )
        # The CLIP branch with its inputs prepared one batch at a time (the sequential path) gives the same scores.
        vela.clip._memory.clear()
        vela.clip.pipeline = False
        one_at_a_time = vela.score(candidates, images, references, batch_size=best_bs)
        vela.clip.pipeline = True
        summary["clip_pipeline_max_diff"] = float(np.abs(overlapped - one_at_a_time).max())
        print(
            "VELA with CLIP inputs one batch at a time vs pipelined: "
            f"max |diff| {summary['clip_pipeline_max_diff']:.3g}"
        )
    if args.profile:
        from gpu_profile import profile_call

        metric.batch_size = best_bs
        vela.clip._memory.clear()
        try:
            summary["profile"] = profile_call(
                lambda m=metric: m.compute(
                    predictions=candidates, images=images, references=references, progress=False
                ),
                f"VELA batch {best_bs}, {n} samples",
            )
        except Exception as err:  # the figures above are kept whatever the profiler does
            print(f"PROFILE FAILED: {err!r}")
    print(
        f"VELA best: batch {best_bs}, {vela_ms:.2f} ms/sample = {260 / vela_ms:.1f}x faster than the published "
        "260 ms (RTX 3090)"
    )
    summary["best"] = dict(batch_size=best_bs, samples_per_s=1000 / vela_ms)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(summary, indent=1, default=str))
    del metric, vela
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    if args.skip_judges:
        return 0

    model, processor = build_llava(args.tiny, device)
    judge_opts = dict(model=lambda: (model, processor), cache=False, batch_size=args.judge_batch_size, device=device)
    sub = dict(predictions=candidates[:judge_n], images=images[:judge_n])
    judges = {
        "HarmonicEval (5 criteria)": HarmonicEval(**judge_opts),
        "FLEUR (fast path)": FLEUR(**judge_opts, max_new_tokens=args.fleur_max_new_tokens),
    }
    for name, judge in judges.items():
        judge.compute(predictions=candidates[:2], images=images[:2], progress=False)  # warm-up
        seconds = _timed(lambda judge=judge: judge.compute(**sub, progress=False))
        ms = 1000 * seconds / judge_n
        print(
            f"{name:>26s}: {judge_n / seconds:8.1f} samples/s  {ms:8.2f} ms/sample  "
            f"-> VELA is {ms / vela_ms:.1f}x faster"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
