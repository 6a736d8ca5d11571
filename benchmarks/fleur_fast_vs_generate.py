"""FLEUR: the teacher-forced fast path against the published procedure (greedy generate), same run.

    python benchmarks/fleur_fast_vs_generate.py [--n 32] [--batch-size 8] [--model FOLDER_OR_HUB_ID]

Default judge: a tiny random LLaVA-1.5 scripted to answer " 0.85" (mmjudge.testing.tiny_answering_llava):
it measures the pipeline's cost on CPU, not a 13B model's on a GPU. Timed, with the cache off:
  * fast            — FLEUR(method="fast"): batched teacher-forced passes (2-3 per sample), no generation
  * generate        — FLEUR(method="generate"): batched greedy generate + digit read-out through the judge
  * reference       — reference_scores(): the published procedure literally, one request at a time
Prints seconds and the ratios against `reference`, and checks the three agree.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))  # the literal FLEUR procedure

from fleur_reference import reference_scores
from mmjudge.judges.requests import GenerationRequest, Turn
from mmjudge.metrics.fleur import FLEUR
from mmjudge.testing import tiny_answering_llava


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--model")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    model = args.model or tiny_answering_llava(tempfile.mkdtemp(), " 0.85")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)) for _ in range(args.n)]
    texts = [f"A photo of object number {i} on a table." for i in range(args.n)]
    timings, scores = {}, {}
    for method in ("fast", "generate"):
        fleur = FLEUR(
            model=model, method=method, cache=False, batch_size=args.batch_size, max_new_tokens=args.max_new_tokens
        )
        fleur.compute(predictions=texts[:2], images=images[:2], progress=False)  # warm-up
        start = time.perf_counter()
        scores[method] = fleur.compute(predictions=texts, images=images, progress=False)["score"]
        timings[method] = time.perf_counter() - start
    requests = [
        GenerationRequest(
            [Turn("user", fleur.prompt(t))],
            image=i,
            max_new_tokens=args.max_new_tokens,
            conversation=fleur.conversation,
        )
        for t, i in zip(texts, images)
    ]
    start = time.perf_counter()
    scores["reference"] = [r["score"] for r in reference_scores(fleur.judge, requests)]
    timings["reference"] = time.perf_counter() - start
    gap = max(abs(a - b) for m in ("fast", "generate") for a, b in zip(scores[m], scores["reference"]))
    print(f"judge: {model}\nsamples: {args.n}, batch size {args.batch_size}")
    for name, seconds in timings.items():
        print(f"{name:>10s}: {seconds:7.2f} s  ({timings['reference'] / seconds:5.2f}x vs reference)")
    print(f"largest score difference to the reference: {gap:.2e}")


if __name__ == "__main__":
    main()
