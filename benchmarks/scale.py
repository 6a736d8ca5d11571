"""Scoring at any size: peak memory and items/s of `mmjudge score` as the input grows, per torchrun
process, and the evaluate door against the engine door. Prints figures and ratios measured in the same
run; it asserts nothing (tests never time anything).

    python benchmarks/scale.py                      # 1k and 100k items, 2 processes at 2k and 20k, evaluate door
    python benchmarks/scale.py --million            # also 1,000,000 items (about 20 minutes on 2 cores)
    python benchmarks/scale.py --sizes 1000,20000 --skip-torchrun --images drawn

The items: the dummy judge (no model: the pipeline alone), HarmonicEval's five criteria, 500 distinct
320x240 PNG images cycled over the items (random noise, the slowest to decode; --images drawn: shapes,
like photos of simple scenes), one JSON object per line. Targets (issue "Any size"):

* peak RSS at 100,000 items <= 1.5x the peak at 1,000;
* 1,000,000 items finish under 2 GB peak RSS;
* 2 torchrun processes: each one's peak at 20,000 items <= 1.2x its peak at 2,000;
* the evaluate door <= 1.2x the engine door on 8 random 2000x1500 images.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

RANK_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys, time
    import mmjudge
    from mmjudge import distributed
    from mmjudge.stream import score_file
    started = time.perf_counter()
    metric = mmjudge.load("harmonic_eval", judge="dummy", cache=False)
    summary = score_file(metric, sys.argv[1], sys.argv[2], overwrite=True)
    with open(f"{sys.argv[3]}.rank{distributed.rank()}", "w") as f:
        json.dump({"peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "read": summary.read_by_process,
                   "seconds": time.perf_counter() - started}, f)
    """
)


def make_images(folder: Path, kind: str, n: int = 500) -> list[str]:
    import numpy as np
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    rng, paths = np.random.default_rng(0), []
    shapes = random.Random(0)
    for k in range(n):
        path = folder / f"{k}.png"
        if kind == "noise":
            Image.fromarray(rng.integers(0, 255, (240, 320, 3), dtype=np.uint8)).save(path)
        else:
            img = Image.new("RGB", (320, 240), tuple(shapes.randrange(256) for _ in range(3)))
            draw = ImageDraw.Draw(img)
            for _ in range(6):
                x, y = shapes.randrange(300), shapes.randrange(220)
                draw.ellipse(
                    [x, y, x + shapes.randrange(20, 120), y + shapes.randrange(20, 90)],
                    fill=tuple(shapes.randrange(256) for _ in range(3)),
                )
            img.save(path)
        paths.append(str(path))
    return paths


def make_items(path: Path, n: int, images: list[str]) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "id": f"item{i}",
                        "text": f"A photo number {i} of a scene with a few shapes.",
                        "image": images[i % len(images)],
                    }
                )
                + "\n"
            )
    return str(path)


def run_cli(items: str, out: Path) -> dict:
    """One `mmjudge score` process: wall seconds and its own peak RSS (os.wait4: the OS's accounting of that
    child alone, not the running maximum over every child so far)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mmjudge.cli",
            "score",
            "--input",
            items,
            "--output",
            str(out),
            "--judge",
            "dummy",
            "--no-cache",
            "--quiet",
            "--overwrite",
        ],
        env=env,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"mmjudge score exited with {proc.returncode}")
    return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024}


def run_ranks(items: str, out: Path, processes: int) -> list[dict]:
    script = out.parent / "rank_script.py"
    script.write_text(RANK_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    stats = out.parent / f"{out.name}.stats"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={processes}",
            str(script),
            items,
            str(out),
            str(stats),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    return [json.loads(Path(f"{stats}.rank{r}").read_text()) for r in range(processes)]


def evaluate_vs_engine(repeats: int = 9) -> tuple[float, float]:
    """Median seconds of the evaluate door and the engine door on the same 8 random 2000x1500 images."""
    import warnings

    import evaluate
    import numpy as np
    from PIL import Image

    import mmjudge

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (1500, 2000, 3), dtype=np.uint8)) for _ in range(8)]
    texts = [f"caption {i}" for i in range(8)]
    door = evaluate.load(str(ROOT / "metrics" / "harmonic_eval"), judge="dummy", cache=False)
    engine = mmjudge.load("harmonic_eval", judge="dummy", cache=False)
    times: dict[str, list[float]] = {"evaluate": [], "engine": []}
    for k in range(repeats + 1):  # alternate, first round a warm-up
        for name, metric in (("evaluate", door), ("engine", engine)):
            started = time.perf_counter()
            metric.compute(predictions=texts, images=images, progress=False)
            if k:
                times[name].append(time.perf_counter() - started)
    return statistics.median(times["evaluate"]), statistics.median(times["engine"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1000,100000", help="item counts for the single-process figure (default 1000,100000)"
    )
    parser.add_argument("--million", action="store_true", help="also score 1,000,000 items")
    parser.add_argument("--rank-sizes", default="2000,20000", help="item counts per torchrun run (default 2000,20000)")
    parser.add_argument("--skip-torchrun", action="store_true")
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--images", choices=("noise", "drawn"), default="noise")
    parser.add_argument("--dir", help="working folder (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="mmjudge-scale-"))
    images = make_images(work / f"images-{args.images}", args.images)
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    print(f"# mmjudge score, dummy judge, HarmonicEval (5 criteria), 500 distinct 320x240 {args.images} PNGs")
    small = make_items(work / "items-20.jsonl", 20, images)
    startup = run_cli(small, work / "out-20.jsonl")["seconds"]
    rows = {}
    print(f"{'items':>10} {'wall s':>8} {'items/s':>9} {'ms/item':>8} {'peak MB':>8}")
    for n in sizes:
        rows[n] = run_cli(make_items(work / f"items-{n}.jsonl", n, images), work / f"out-{n}.jsonl")
        per_item = (rows[n]["seconds"] - startup) / (n - 20) * 1000
        peak = rows[n]["peak_mb"]
        print(f"{n:>10,} {rows[n]['seconds']:>8.1f} {n / rows[n]['seconds']:>9.0f} {per_item:>8.3f} {round(peak):>8}")
    print(f"(ms/item: the pipeline after the {startup:.2f} s a 20-item run takes, i.e. without start-up)")
    if 1000 in rows and 100_000 in rows and rows[1000]["peak_mb"] and rows[100_000]["peak_mb"]:
        ratio = rows[100_000]["peak_mb"] / rows[1000]["peak_mb"]
        print(f"peak RSS 100k / 1k = {ratio:.2f} (target <= 1.5)")
    if 1_000_000 in rows and rows[1_000_000]["peak_mb"]:
        print(f"peak RSS at 1M items = {rows[1_000_000]['peak_mb']:.0f} MB (target < 2048)")
    if not args.skip_torchrun:
        ranks = {}
        for n in (int(s) for s in args.rank_sizes.split(",")):
            ranks[n] = run_ranks(make_items(work / f"rank-items-{n}.jsonl", n, images), work / f"rank-out-{n}.jsonl", 2)
            print(
                f"torchrun 2 processes, {n:,} items: "
                f"peak MB per rank {[round(r['peak_kb'] / 1024) for r in ranks[n]]}, "
                f"items read per rank {ranks[n][0]['read']}"
            )
        a, b = (int(s) for s in args.rank_sizes.split(","))
        worst = max(ranks[b][r]["peak_kb"] / ranks[a][r]["peak_kb"] for r in range(2))
        print(f"per-rank peak {b:,} / {a:,} items = {worst:.2f} at worst (target <= 1.2)")
    if not args.skip_evaluate:
        door, engine = evaluate_vs_engine()
        print(
            f"evaluate door {door * 1000:.0f} ms, engine door {engine * 1000:.0f} ms on 8 random 2000x1500 images: "
            f"ratio {door / engine:.2f} (target <= 1.2)"
        )


if __name__ == "__main__":
    main()
