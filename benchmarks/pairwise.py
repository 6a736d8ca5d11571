"""Head-to-head targets: judge calls per pair, shared-prefix tokens, and ranking 20 systems with few pairs.

    python benchmarks/pairwise.py                       # both parts, CPU, about a minute
    python benchmarks/pairwise.py --part calls --model Qwen/Qwen2.5-VL-7B-Instruct --n 64   # a real judge (GPU)
    python benchmarks/pairwise.py --part ranking --seeds 5

Part ``calls``: HarmonicEval.compare over N pairs (448x448 images, captions of 10-30 words) on a local
transformers judge (default: the tiny random-weight Qwen2-VL built here — it proves plumbing and counts
tokens, its preferences mean nothing). It prints the judge requests per pair (target: at most 2 x criteria,
both orders of each criterion) and the prefill tokens actually run against the same requests unshared (the
judge's ``stats``, as ``judge_throughput.py`` reports them for ratings), and the same figures for rating both
texts of every pair with HarmonicEval, for comparison.

Part ``ranking``: synthetic systems with known strengths. 20 systems with θ evenly spread over [-3, 3]
(given in a shuffled order), 500 items; each output's latent quality is θ + N(0, noise²); the judge's
preference on a battle is σ(quality_a - quality_b). The adaptive schedule (mmjudge.pairwise.schedule, its
defaults: 3 anchors, 32 items per pair per round, at most 20 rounds) runs until neighbours' 95% bootstrap
intervals separate. It prints, per noise level and seed, the battles judged as a share of all pairs (every
pair of systems on every item: 190 x 500; target at most 25%), whether every two neighbours separated, the
Spearman correlation of the strengths with the truth, and the rounds.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))  # the ranking simulation

import numpy as np
from PIL import Image

WORDS = "a the dog cat man woman child red blue green small large runs sits on in near beach park street".split()  # noqa: SIM905


def captions(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 30))).capitalize() + "." for _ in range(n)]


def calls_part(args: argparse.Namespace) -> None:
    from mmjudge import HarmonicEval

    model = args.model
    if model is None:
        from mmjudge.tiny_models import tiny_vlm

        family = "qwen2_vl"
        try:
            import torchvision  # noqa: F401
        except ImportError:
            family = "llava"
        model = tiny_vlm(tempfile.mkdtemp(), family)
        print(f"judge: tiny random-weight {family} (counts and plumbing only)")
    rng = random.Random(0)
    images = [
        Image.new("RGB", (448, 448), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        for _ in range(args.n)
    ]
    a, b = captions(args.n, rng), captions(args.n, rng)
    he = HarmonicEval(model=model, cache=False, min_mass=0, batch_size=args.batch_size)
    k = len(he.criteria)
    started = time.perf_counter()
    he.compare(a, b, images=images, progress=False)
    seconds = time.perf_counter() - started
    stats = he.judge.stats
    pairs = dict(requests=stats.requests, tokens=stats.tokens, unshared=stats.unshared_tokens, seconds=seconds)
    stats.requests = stats.tokens = stats.unshared_tokens = stats.padded_tokens = 0
    started = time.perf_counter()
    he.compute(predictions=a + b, images=images + images, progress=False)
    ratings = dict(requests=stats.requests, tokens=stats.tokens, unshared=stats.unshared_tokens)
    ratings["seconds"] = time.perf_counter() - started
    print(f"\n{args.n} pairs, {k} criteria")
    print(
        f"  compare : {pairs['requests'] / args.n:.1f} judge requests per pair "
        f"(target <= {2 * k}: both orders per criterion)"
    )
    for name, s in (("compare", pairs), ("rate both", ratings)):
        saved = 1 - s["tokens"] / s["unshared"]
        print(
            f"  {name:9s}: {s['tokens']:,} prefill tokens run, {s['unshared']:,} unshared ({saved:.0%} shared), "
            f"{s['tokens'] / args.n:,.0f} per pair, {s['seconds']:.1f} s"
        )


def synthetic_ranking(noise: float, seed: int, n_systems: int = 20, n_items: int = 500, spread: float = 3.0) -> dict:
    from scipy.stats import spearmanr

    from ranking_simulation import simulate_ranking

    run = simulate_ranking(n_systems, n_items, spread, noise, seed)
    plan, history, theta, rounds = run.plan, run.history, run.theta, run.rounds
    fit = plan.fit(history)
    order = np.argsort(fit.strength)
    separated = sum(fit.separable(int(x), int(y)) for x, y in zip(order[:-1], order[1:]))
    return dict(
        share=len(history) / (n_systems * (n_systems - 1) // 2 * n_items),
        separated=separated,
        neighbours=n_systems - 1,
        spearman=float(spearmanr(fit.strength, theta)[0]),
        rounds=rounds,
        battles=len(history),
    )


def ranking_part(args: argparse.Namespace) -> None:
    print("\nranking 20 systems (500 items; all pairs = 95,000 battles)")
    print(
        f"  {'noise':>5s} {'seed':>4s} {'battles':>8s} {'share':>7s} {'separated':>10s} {'spearman':>9s} {'rounds':>6s}"
    )
    for noise in args.noise:
        for seed in range(args.seeds):
            r = synthetic_ranking(noise, seed)
            print(
                f"  {noise:5.2f} {seed:4d} {r['battles']:8,d} {r['share']:7.1%} "
                f"{r['separated']:>5d}/{r['neighbours']:<4d} {r['spearman']:9.4f} {r['rounds']:6d}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("calls", "ranking", "both"), default="both")
    parser.add_argument("--model", help="judge model (default: a tiny random-weight VLM built here)")
    parser.add_argument("--n", type=int, default=8, help="pairs for the calls part")
    parser.add_argument("--batch-size", dest="batch_size", default=16, type=int)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 0.75, 1.0])
    args = parser.parse_args()
    if args.part in ("calls", "both"):
        calls_part(args)
    if args.part in ("ranking", "both"):
        ranking_part(args)


if __name__ == "__main__":
    main()
