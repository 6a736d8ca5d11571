"""Speed of mmjudge's BLEU/ROUGE-L/CIDEr-D (tokenisation included) against pycocoevalcap, in the same run.

The default corpus has Flickr8k-Expert's shape (:func:`mmjudge.metrics.baselines.synthetic.flickr8k_expert_shaped`):
1,000 images with 5 generated captions each, 5,664 (image, candidate) pairs whose candidate is one of
those captions, each repeated for its 3 human judgments: 16,992 rows, 101,952 texts, about 5,000 distinct.
``--corpus synthetic`` gives ``--items`` pairs with fresh captions each (nothing repeats).

Timed, each the best of ``--repeat`` runs: pycocoevalcap (its Java PTB tokenizer, then Bleu(4), Rouge(),
Cider() on the tokenised dicts); mmjudge's plain functions step by step; the one-call ``Baselines("coco")``
(the engine) and ``evaluate.load("metrics/baselines", "coco")`` (the evaluate door), both from raw strings
to scores. Every per-sentence score is checked against pycocoevalcap's (≤ 1e-6) and the door against the
engine (equal).

Measured (2 CPU cores shared with other jobs, load average 9-18, so every figure is the best of 3 and the
CPU seconds are printed too; see docs/baselines.md): Flickr8k-Expert shape, pycocoevalcap 45.8 s wall /
18.1 s CPU, the engine 1.83 s / 0.56 s (25x wall, 32x CPU), the door 1.84 s / 0.59 s (door / engine 1.01);
17,000 fresh pairs (nothing repeats, tokenising 100,560 distinct texts dominates): pycocoevalcap 43.4 s /
21.4 s CPU, the engine 10.3 s / 3.75 s (4.2x wall, 5.7x CPU), the door 8.6 s / 3.43 s. On a quiet machine
(load 0.1), Flickr8k-Expert shape: pycocoevalcap 16.41 s, the engine 0.53 s (30.7x), the door 0.53 s (31.1x).

    python benchmarks/baselines_vs_pycocoevalcap.py [--corpus flickr8k-expert|synthetic] [--items 17000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from mmjudge.metrics.baselines import (
    Baselines,
    compute_bleu,
    compute_cider_d,
    compute_rouge_l,
    count_pair_ngrams,
    ptb_tokenize,
)
from mmjudge.metrics.baselines.synthetic import flickr8k_expert_shaped, synthetic_captions

STEPS = ("tokenise", "bleu", "rouge_l", "cider")


def run_ours(candidates, references):
    """The plain functions, pycocoevalcap style: tokenise once, then each scorer (BLEU and CIDEr-D share
    the n-gram counts)."""
    timings = {}
    start = time.perf_counter()
    cands = ptb_tokenize(candidates)
    flat = ptb_tokenize([r for group in references for r in group])
    rest = iter(flat)
    refs = [[next(rest) for _ in group] for group in references]
    counts = count_pair_ngrams(cands, refs)
    timings["tokenise"] = time.perf_counter() - start
    results = {}
    steps = {
        "bleu": lambda: compute_bleu(cands, refs, counts=counts),
        "rouge_l": lambda: compute_rouge_l(cands, refs),
        "cider": lambda: compute_cider_d(cands, refs, counts=counts),
    }
    for name, step in steps.items():
        start = time.perf_counter()
        results[name] = step()
        timings[name] = time.perf_counter() - start
    return results, timings


def run_pycocoevalcap(candidates, references):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    timings = {}
    start = time.perf_counter()
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(references)})
    res = tokenizer.tokenize({i: [{"caption": c}] for i, c in enumerate(candidates)})
    timings["tokenise"] = time.perf_counter() - start
    results = {}
    for name, scorer in (("bleu", Bleu(4)), ("rouge_l", Rouge()), ("cider", Cider())):
        start = time.perf_counter()
        kwargs = {"verbose": 0} if name == "bleu" else {}
        results[name] = scorer.compute_score(gts, res, **kwargs)
        timings[name] = time.perf_counter() - start
    return results, timings


def cpu_seconds():
    """CPU time of this process and its finished children (pycocoevalcap's Java tokenizer): a figure that a
    busy shared machine disturbs less than wall time."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(function, repeat):
    """``(best wall seconds, best CPU seconds, last result)`` over ``repeat`` runs."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), cpu_seconds()
        result = function()
        best, best_cpu = min(best, time.perf_counter() - start), min(best_cpu, cpu_seconds() - cpu)
    return best, best_cpu, result


def best_steps(function, repeat):
    """Per-step best of ``repeat`` runs of a step-timing function, the best CPU seconds of a whole run, and
    its last results."""
    best, best_cpu = dict.fromkeys(STEPS, float("inf")), float("inf")
    for _ in range(repeat):
        cpu = cpu_seconds()
        results, timings = function()
        best_cpu = min(best_cpu, cpu_seconds() - cpu)
        best = {step: min(best[step], timings[step]) for step in STEPS}
    return results, best, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("flickr8k-expert", "synthetic"), default="flickr8k-expert")
    parser.add_argument("--items", type=int, default=17_000, help="pairs of the synthetic corpus")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.corpus == "synthetic":
        candidates, references = synthetic_captions(args.items, seed=args.seed)
    else:
        candidates, references = flickr8k_expert_shaped(seed=args.seed)
    texts = candidates + [r for group in references for r in group]
    print(f"corpus ({args.corpus}): {len(candidates)} rows, {len(texts)} texts, {len(set(texts))} distinct")

    import evaluate

    engine = Baselines("coco")
    door = evaluate.load(str(ROOT / "metrics" / "baselines"), "coco")
    theirs, theirs_t, theirs_cpu = best_steps(lambda: run_pycocoevalcap(candidates, references), args.repeat)
    ours, ours_t, _ = best_steps(lambda: run_ours(candidates, references), args.repeat)
    engine_s, engine_cpu, coco = timed(
        lambda: engine.compute(predictions=candidates, references=references, progress=False), args.repeat
    )
    door_s, door_cpu, via_door = timed(
        lambda: door.compute(predictions=candidates, references=references, progress=False), args.repeat
    )

    pairs = [(ours[name][1], theirs[name][1]) for name in ("bleu", "rouge_l", "cider")]
    pairs += [(coco[f"bleu_{k + 1}"], theirs["bleu"][1][k]) for k in range(4)]
    pairs += [(coco[name], theirs[name][1]) for name in ("rouge_l", "cider")]
    worst = max(float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b)).max()) for a, b in pairs)
    same_door = all(via_door[k] == coco[k] for k in ("bleu_1", "bleu_4", "rouge_l", "cider", "corpus_cider"))
    print(f"largest per-sentence difference: {worst:.2e} ({'identical to 1e-6' if worst <= 1e-6 else 'MISMATCH'})")
    print(f"door == engine: {same_door}")
    print(f"{'step':10} {'mmjudge (s)':>12} {'pycocoevalcap (s)':>18} {'speed-up':>9}")
    for step in STEPS:
        print(f"{step:10} {ours_t[step]:12.2f} {theirs_t[step]:18.2f} {theirs_t[step] / ours_t[step]:8.1f}x")
    total_theirs = sum(theirs_t.values())
    total_ours = sum(ours_t.values())
    print(f"{'total':10} {total_ours:12.2f} {total_theirs:18.2f} {total_theirs / total_ours:8.1f}x")
    print("one call from raw strings: tokenise + BLEU-1..4 + ROUGE-L + CIDEr-D (each distinct item once)")
    for label, seconds in (("engine", engine_s), ("door", door_s)):
        print(f"{label:10} {seconds:12.2f} {total_theirs:18.2f} {total_theirs / seconds:8.1f}x")
    print(f"door / engine: {door_s / engine_s:.2f}")
    print(
        f"CPU seconds (Java included): pycocoevalcap {theirs_cpu:.2f}, engine {engine_cpu:.2f} "
        f"({theirs_cpu / engine_cpu:.1f}x), door {door_cpu:.2f} ({theirs_cpu / door_cpu:.1f}x)"
    )
    if worst > 1e-6 or not same_door:
        raise SystemExit("scores differ from pycocoevalcap, or the door from the engine")


if __name__ == "__main__":
    main()
