"""Prefix sharing in every tested VLM family: prompt tokens the shared path runs against the plain path's,
and wall time of both, on HarmonicEval-shaped requests (two image criteria, one text-only criterion, four
samples, one image repeated) over each family's tiny random-weight model. Prints figures and ratios
measured in the same run; asserts nothing. Tiny models on a CPU: the token counts carry over to real
checkpoints (they follow from the prompts), the wall times only show the plumbing does not cost more.

    python benchmarks/families.py                  # every family, 3 repeats each
    python benchmarks/families.py --families gemma3,mllama --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing


def requests_like_harmonic_eval():
    from PIL import Image

    from mmjudge.judges.requests import RatingRequest, Turn

    images = [Image.new("RGB", (60 + 12 * i, 40 + 4 * i), (200, 30 * i, 30)) for i in range(3)]
    images.append(images[0].copy())
    requests = []
    for criterion, sees in (("Correctness", True), ("Completeness", True), ("Fluency", False)):
        rubric = (
            f"Your task is to rate the candidate {'caption for the given image' if sees else 'text'} on a scale of 1 "
            f"to 5. Evaluation Criterion: {criterion}. Rating Scale: 1 Very Low, 2 Low, 3 Moderate, 4 High, "
            "5 Extremely High. "
        )
        for i, image in enumerate(images):
            caption = "a red square" + " on green grass under a bright sky" * (3 * i)
            requests.append(
                RatingRequest(
                    [Turn("user", rubric + "Caption: " + caption)],
                    answer_prefix="Score: ",
                    image=image if sees else None,
                    group=criterion,
                )
            )
    return requests


def main() -> None:
    import transformers

    from mmjudge.judges import load_judge
    from mmjudge.testing import VLM_FAMILIES, tiny_vlm

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--families", default=",".join(VLM_FAMILIES), help="comma-separated model_type names (default: all)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed runs of each path; the median is printed (default: %(default)s)"
    )
    args = parser.parse_args()
    transformers.utils.logging.disable_progress_bar()  # one line per family, not two loading bars
    requests = requests_like_harmonic_eval()
    print(f"{len(requests)} requests per run (8 with an image, 4 text-only); wall: median of {args.repeats} runs")
    print(
        f"{'family':<16} {'tokens shared':>13} {'tokens plain':>12} {'ratio':>6} "
        f"{'wall shared':>11} {'wall plain':>10} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for family in args.families.split(","):
            model = tiny_vlm(Path(folder) / family, family)
            figures = {}
            for name, share in (("shared", True), ("plain", False)):
                judge = load_judge("transformers", model=model, batch_size=16, share_prefix=share, prefetch=False)
                judge.rate(requests, progress=False)  # warm-up: first-call costs out of the timing
                walls = []
                for _ in range(args.repeats):
                    before = judge.stats.tokens
                    start = time.perf_counter()
                    judge.rate(requests, progress=False)
                    walls.append(time.perf_counter() - start)
                    tokens = judge.stats.tokens - before
                figures[name] = (tokens, statistics.median(walls))
            (ts, ws), (tp, wp) = figures["shared"], figures["plain"]
            print(
                f"{family:<16} {ts:>13} {tp:>12} {ts / tp:>6.2f} {ws:>10.3f}s {wp:>9.3f}s {ws / wp:>6.2f}", flush=True
            )


if __name__ == "__main__":
    main()
