"""Samples/s of PAC-S, PAC-S++, the sentence averages and Polos beside CLIP-S, measured in one run.

    python benchmarks/caption_metrics_throughput.py                              # CPU, tiny random weights
    python benchmarks/caption_metrics_throughput.py --device cuda --full-size    # GPU, full-size shapes
    python benchmarks/caption_metrics_throughput.py --device cuda --full-size --only clip_score polos \
        --n 2048 --check-sequential 512 --profile 512 --json out.json   # + equality with one batch at a time

Every metric loads a checkpoint file written here in its authors' format (``torch.save({"state_dict"})``
for PAC-S, a Lightning-style ``reprod.ckpt`` for Polos) with RANDOM weights: speed only, never quality.
``--full-size`` uses the published shapes: CLIP ViT-B/32 (PAC-S, PAC-S_avg, Polos's CLIP, and CLIP-S),
OpenCLIP ViT-L/14 (PAC-S ViT-L), OpenAI ViT-L/14 + LoRA rank 4 (PAC-S++ ViT-L, PAC-S++_avg), RoBERTa-base
(Polos's SimCSE encoder) — the ViT-L/14 rows are what VELA's Table 1 times for the ``_avg`` baselines in
CaptionEvalKit's reproduction.

Inputs: ``--n`` items (default 256), each its own random 480x360 image (``--full-size``; 64x48 otherwise),
a ~100-word candidate of ~6 sentences (LongCap-Arena's length) and 3 references; nothing repeats, so no
embedding is served from a cache. Batch size 64 (``--batch-size``). CLIP texts use OpenAI's BPE when
``open-clip-torch`` is installed, else a tiny BPE (more tokens per word: a slower, conservative figure);
Polos's RoBERTa side always uses a tiny BPE (RoBERTa's vocabulary cannot be downloaded here).
Prints one line per metric: samples/s, ms/sample, load seconds, and the device. ``--check-sequential N``
scores the first N items again with every CLIP encoder one batch at a time (``pipeline=False``: CPU-side
normalisation, one batch on the device at a time) and prints the largest difference of any output (0 expected:
the pipelined inputs equal the sequential ones bit for bit). ``--profile N`` profiles N items of each row
(GPU busy share, kernels, synchronisations; ``benchmarks/gpu_profile.py``).

``--host-only`` measures what the CPU side costs alone: the image and text towers are replaced by stubs that
return deterministic embeddings of the right shape computed from the inputs (a few pixel bytes, the token
ids), and the device-side pixel normalisation by a view of those bytes, so everything else — image
resizing, tokenisation and text cleaning, chunking, checks, cache keys, result assembly — runs for real.
Each row then also prints the scoring thread's own CPU time per item (``time.thread_time``: the serial part,
which sets the pace when the pool's work is spread over many cores) and all threads' CPU time per item;
``--cprofile N`` prints where the scoring thread's time goes over N items (cProfile sees that thread only).

    python benchmarks/caption_metrics_throughput.py --full-size --host-only --n 2048 \
        --only clip_score pac_s_vitb32:pac_s --cprofile 512
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

# Full-size shapes (OpenAI / OpenCLIP CLIP state dicts): text width, vision width, layers, patch, grid, embed.
VIT_B32 = dict(width=512, vision_width=768, layers=12, patch=32, grid=7, embed_dim=512)
VIT_L14 = dict(width=768, vision_width=1024, layers=12, patch=14, grid=16, embed_dim=768)
TINY = dict(width=64, vision_width=64, layers=2, patch=8, grid=4, embed_dim=32)
WORDS = ["the", "a", "dog", "cat", "man", "woman", "red", "blue", "green", "wooden", "large", "small", "sits", "runs"]
WORDS += ["near", "under", "beside", "street", "table"]


def clip_state(shape: dict, vocab: int, lora: int = 0, vision_layers: int | None = None, seed: int = 0) -> dict:
    """An OpenAI-format state dict; ``vision_layers`` differs from the text's for ViT-L/14 (24 vs 12)."""
    from mmjudge.tiny_models.checkpoints import openai_clip_state

    state = openai_clip_state(vocab, lora_rank=lora, seed=seed, **shape)
    if vision_layers and vision_layers != shape["layers"]:
        deeper = openai_clip_state(vocab, lora_rank=lora, seed=seed + 1, **dict(shape, layers=vision_layers))
        state = {k: v for k, v in state.items() if not k.startswith("visual.")}
        state.update({k: v for k, v in deeper.items() if k.startswith("visual.")})
    return state


def write_checkpoints(folder: Path, full: bool, only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{row name: mmjudge.load keyword arguments}`` for every metric of the run (``only``: the checkpoints of
    those rows are written, the others skipped: a ViT-L/14 state dict takes seconds to draw)."""
    import torch
    from transformers import AutoTokenizer

    from mmjudge.encoders.clip_tokenizer import installed_bpe_file
    from mmjudge.tiny_models.clip import tiny_clip

    tokenizer: Any = None if installed_bpe_file() is not None else tiny_clip(folder / "clip_tok")
    vocab = 49408 if tokenizer is None else len(AutoTokenizer.from_pretrained(tokenizer))
    b32, l14 = (VIT_B32, VIT_L14) if full else (TINY, TINY)
    runs: dict[str, dict[str, Any]] = {}

    def pac(name: str, state: dict, config: str, **extra: Any) -> None:
        path = folder / f"{name}.pth"
        if not path.exists():
            torch.save({"state_dict": state}, path)
        runs[f"{name}:{config}"] = dict(config=config, checkpoint=str(path), clip_tokenizer=tokenizer, **extra)

    def wanted(*names: str) -> bool:
        return only is None or any(n in only for n in names)

    if wanted("pac_s_vitb32:pac_s", "pac_s_vitb32:ref_pac_s", "pac_s_vitb32:pac_s_avg"):
        pac("pac_s_vitb32", clip_state(b32, vocab), "pac_s", backbone="ViT-B/32")
        runs["pac_s_vitb32:ref_pac_s"] = dict(runs["pac_s_vitb32:pac_s"], config="ref_pac_s")
        runs["pac_s_vitb32:pac_s_avg"] = dict(runs["pac_s_vitb32:pac_s"], config="pac_s_avg")
    if wanted(*(f"{a}:{b}" for a in ("pac_s_vitl14", "pac_s_plus_vitl14") for b in ("pac_s", "pac_s_avg"))) or wanted(
        "pac_s_plus_vitl14:pac_s_plus", "pac_s_plus_vitl14:pac_s_plus_avg"
    ):
        _write_vit_l(pac, runs, l14, vocab, full)
    if wanted("polos"):
        _write_polos(folder, runs, full, vocab, tokenizer)
    if wanted("clip_score", "clip_score:clip_score_avg"):
        clip_dir = folder / "clip_s"
        if not (clip_dir / "config.json").exists():
            from mmjudge.encoders.clip_tokenizer import clip_bpe_tokenizer
            from mmjudge.encoders.longclip import convert_longclip

            tok = clip_bpe_tokenizer(tokenizer).tokenizer
            convert_longclip(clip_state(b32, vocab), clip_dir, tokenizer=tok)
        runs["clip_score"] = dict(metric="clip_score", config="clip_score", model=str(clip_dir))
        runs["clip_score:clip_score_avg"] = dict(metric="clip_score", config="clip_score_avg", model=str(clip_dir))
    return runs


def _write_vit_l(pac: Any, runs: dict, l14: dict, vocab: int, full: bool) -> None:
    """PAC-S ViT-L/14 (OpenCLIP) and PAC-S++ ViT-L/14 (OpenAI + LoRA rank 4) rows."""
    pac(
        "pac_s_vitl14",
        clip_state(l14, vocab, vision_layers=24 if full else None),
        "pac_s",
        backbone="open_clip_ViT-L/14",
    )
    runs["pac_s_vitl14:pac_s_avg"] = dict(runs["pac_s_vitl14:pac_s"], config="pac_s_avg")
    lora = clip_state(l14, vocab, lora=4, vision_layers=24 if full else None)
    pac("pac_s_plus_vitl14", lora, "pac_s_plus", backbone="ViT-L/14")
    runs["pac_s_plus_vitl14:pac_s_plus_avg"] = dict(runs["pac_s_plus_vitl14:pac_s_plus"], config="pac_s_plus_avg")


def _write_polos(folder: Path, runs: dict, full: bool, vocab: int, tokenizer: Any) -> None:
    """Polos's Lightning-style ``reprod.ckpt``: RoBERTa-base + CLIP ViT-B/32 + the head."""
    import torch
    from transformers import AutoTokenizer

    from mmjudge.tiny_models.checkpoints import polos_state, tiny_roberta_tokenizer

    text_tok = tiny_roberta_tokenizer(folder / "roberta")
    polos = polos_state(
        50265 if full else len(AutoTokenizer.from_pretrained(text_tok)),
        vocab,
        hidden=768 if full else 64,
        layers=12 if full else 2,
        intermediate=3072 if full else None,
    )
    if full:  # Polos's CLIP is ViT-B/32 (512-d features) and its head 6144 -> 2304 -> 1152 -> 1
        polos = {k: v for k, v in polos.items() if not k.startswith(("clip.", "ff."))}
        polos.update({f"clip.{k}": v for k, v in clip_state(VIT_B32, vocab).items()})
        gen = torch.Generator().manual_seed(0)
        for i, (fan_in, fan_out) in enumerate([(6144, 2304), (2304, 1152), (1152, 1)]):
            polos[f"ff.0.ff.linear_{i + 1}.weight"] = torch.randn(fan_out, fan_in, generator=gen) / fan_in**0.5
            polos[f"ff.0.ff.linear_{i + 1}.bias"] = torch.zeros(fan_out)
    (folder / "reprod").mkdir(exist_ok=True)
    hparams = {"layer": "mix", "pool": "cls", "activations": "Tanh", "final_activation": False}
    torch.save({"state_dict": polos, "hyper_parameters": hparams}, folder / "reprod" / "reprod.ckpt")
    runs["polos"] = dict(
        metric="polos",
        checkpoint=str(folder / "reprod" / "reprod.ckpt"),
        text_tokenizer=text_tok,
        clip_tokenizer=tokenizer,
    )


def make_items(n: int, size: tuple[int, int], seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(16)).capitalize() + "."

    return [
        {
            "text": " ".join(sentence() for _ in range(6)),
            "image": Image.fromarray(noise.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)),
            "references": [" ".join(sentence() for _ in range(3)) for _ in range(3)],
        }
        for _ in range(n)
    ]


def load_metric(run: dict, device: str, batch_size: int) -> tuple[Any, float]:
    """(the metric, seconds it took to load)."""
    import mmjudge

    options = {k: v for k, v in run.items() if k not in ("metric", "config") and v is not None}
    start = time.perf_counter()
    metric = mmjudge.load(
        run.get("metric", "pac_s"), run.get("config"), device=device, batch_size=batch_size, **options
    )
    return metric, time.perf_counter() - start


def columns(metric: Any, part: list[dict]) -> dict:
    out = {"predictions": [it["text"] for it in part], "images": [it["image"] for it in part]}
    if any(i.name == "references" for i in metric.spec.inputs):
        out["references"] = [it["references"] for it in part]
    return out


def encoders(metric: Any) -> list:
    """The metric's CLIP encoders (their in-memory caches are cleared between timed runs)."""
    from mmjudge.encoders.clip import ClipEncoder

    return [part for part in metric.cached_parts() if isinstance(part, ClipEncoder)]


def measure(metric: Any, items: list[dict], device: str, batch_size: int) -> float:
    """Scoring seconds for all items, after one warm-up chunk of other items."""
    metric.compute(**columns(metric, make_items(batch_size, items[0]["image"].size, seed=99)), progress=False)
    for encoder in encoders(metric):
        encoder._memory.clear()
    _sync(device)
    start = time.perf_counter()
    metric.compute(**columns(metric, items), progress=False)
    _sync(device)
    return time.perf_counter() - start


def sequential_difference(metric: Any, items: list[dict], device: str) -> tuple[float, float]:
    """(largest difference of any per-item output between the pipelined encoders and one batch at a time, the
    samples/s of one batch at a time: the baseline, measured beside)."""
    outputs, rate = {}, 0.0
    for pipeline in (False, True):
        for encoder in encoders(metric):
            encoder._memory.clear()
            encoder.pipeline = pipeline
        _sync(device)
        start = time.perf_counter()
        outputs[pipeline] = metric.compute(**columns(metric, items), progress=False)
        _sync(device)
        rate = rate or len(items) / (time.perf_counter() - start)
    worst = 0.0
    for name, values in outputs[False].items():
        if isinstance(values, list) and values and isinstance(values[0], float):
            worst = max(worst, float(np.nanmax(np.abs(np.array(outputs[True][name]) - np.array(values)))))
    return worst, rate


def stub_towers(metric: Any) -> None:
    """Replace the metric's CLIP towers by deterministic stubs (``--host-only``): the image embedding is the
    first ``dim`` pixel bytes of the resized image plus one, the text embedding the token ids padded with
    zeros plus one — cheap, input-dependent (two runs that feed different inputs differ), never a model."""
    import torch

    from mmjudge.encoders import clip as clip_module

    # One torch thread: the stubs' few tensor operations must not spin OpenMP workers against the pool (a
    # GPU run does no CPU tensor arithmetic on the scoring thread).
    torch.set_num_threads(1)
    for encoder in encoders(metric):
        dim = int(encoder.model.config.projection_dim)

        def image_features(pixel_values: Any, dim: int = dim) -> Any:
            return pixel_values.reshape(len(pixel_values), -1)[:, :dim].float() + 1.0

        def text_features(input_ids: Any, attention_mask: Any, dim: int = dim) -> Any:
            out = torch.ones((len(input_ids), dim), dtype=torch.float32)
            width = min(dim, input_ids.shape[1])
            out[:, :width] += (input_ids[:, :width] * attention_mask[:, :width]).float()
            return out

        encoder.model.get_image_features = image_features
        encoder.model.get_text_features = text_features
    # The lookup-table normalisation runs on the GPU in a real run: here only the bytes the stub reads.
    clip_module.pixels_from_uint8 = lambda pixels, table: pixels.reshape(len(pixels), -1)[:, :1024]


def host_costs(metric: Any, items: list[dict], batch_size: int) -> dict:
    """Wall, scoring-thread CPU and all-threads CPU microseconds per item of one ``compute`` over ``items``
    (after a warm-up chunk, nothing cached)."""
    metric.compute(**columns(metric, make_items(batch_size, items[0]["image"].size, seed=99)), progress=False)
    for encoder in encoders(metric):
        encoder._memory.clear()
    part = columns(metric, items)
    wall, thread, process = time.perf_counter(), time.thread_time(), time.process_time()
    metric.compute(**part, progress=False)
    scale = 1e6 / len(items)
    return {
        "wall_us": (time.perf_counter() - wall) * scale,
        "thread_cpu_us": (time.thread_time() - thread) * scale,
        "process_cpu_us": (time.process_time() - process) * scale,
    }


def cprofile_rows(metric: Any, items: list[dict], top: int = 60) -> None:
    """Print the scoring thread's cProfile in CPU time (``time.thread_time``: waits for the pool and for the
    GIL do not count), top functions by own time, then by cumulative time."""
    import cProfile
    import pstats

    for encoder in encoders(metric):
        encoder._memory.clear()
    part = columns(metric, items)
    profiler = cProfile.Profile(time.thread_time)
    profiler.runcall(lambda: metric.compute(**part, progress=False))
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--full-size", action="store_true", help="the published shapes (ViT-B/32, ViT-L/14, RoBERTa-base)"
    )
    parser.add_argument("--n", type=int, default=256, help="items scored per metric (default 256)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--only", nargs="*", help="rows to run (names as printed)")
    parser.add_argument("--folder", help="where the random checkpoints are written (default: a temporary folder)")
    parser.add_argument(
        "--check-sequential",
        type=int,
        default=0,
        metavar="N",
        help="score the first N items again one batch at a time; print the largest difference",
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N items of each row")
    parser.add_argument(
        "--host-only", action="store_true", help="stub the towers: time the CPU side alone (µs per item)"
    )
    parser.add_argument(
        "--cprofile", type=int, default=0, metavar="N", help="with --host-only: cProfile N items of each row"
    )
    parser.add_argument("--json", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # truncation warnings: the ~100-word captions are longer than 77 tokens
    import torch

    torch.manual_seed(0)
    folder = Path(args.folder or tempfile.mkdtemp(prefix="caption-metrics-"))
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    runs = write_checkpoints(folder, args.full_size, args.only)
    items = make_items(args.n, (480, 360) if args.full_size else (64, 48))
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    shapes = "full-size" if args.full_size else "tiny"
    print(
        f"# {device_name} ({torch.get_num_threads()} torch threads), {shapes} random weights, {args.n} items, "
        f"batch {args.batch_size}; checkpoints written in {time.perf_counter() - start:.1f} s"
    )
    print(f"{'row':36s} {'samples/s':>10s} {'ms/sample':>10s} {'load s':>7s}")
    results = []
    for name, run in runs.items():
        if args.only and name not in args.only:
            continue
        metric, loaded = load_metric(run, args.device, args.batch_size)
        if args.host_only:
            stub_towers(metric)
            costs = host_costs(metric, items, args.batch_size)
            seconds = costs["wall_us"] * args.n / 1e6
        else:
            costs = {}
            seconds = measure(metric, items, args.device, args.batch_size)
        row = {"row": name, "samples_per_s": args.n / seconds, "n": args.n, "load_s": loaded, "device": device_name}
        print(f"{name:36s} {args.n / seconds:10.1f} {1000 * seconds / args.n:10.2f} {loaded:7.1f}", flush=True)
        if costs:
            row.update(costs)
            print(
                f"  {name}: host only, µs/item: wall {costs['wall_us']:.0f}, scoring thread CPU "
                f"{costs['thread_cpu_us']:.0f}, all threads CPU {costs['process_cpu_us']:.0f}",
                flush=True,
            )
            if args.cprofile:
                cprofile_rows(metric, items[: args.cprofile])
        if args.check_sequential:
            diff, rate = sequential_difference(metric, items[: args.check_sequential], args.device)
            row["max_diff_vs_sequential"], row["sequential_samples_per_s"] = diff, rate
            print(
                f"  {name}: one batch at a time {rate:.1f} samples/s; max |diff| of any output over "
                f"{args.check_sequential} items: {diff:.3g}",
                flush=True,
            )
        if args.profile:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from gpu_profile import profile_call

            for encoder in encoders(metric):
                encoder._memory.clear()
            part = columns(metric, items[: args.profile])
            try:
                row["profile"] = profile_call(lambda m=metric, p=part: m.compute(**p, progress=False), name, top=5)
            except Exception as err:  # the figures above are kept whatever the profiler does
                print(f"  PROFILE FAILED: {err!r}")
        results.append(row)
        del metric
        if args.json:  # after every row: a run cut off by its time limit keeps what it measured
            import json

            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
