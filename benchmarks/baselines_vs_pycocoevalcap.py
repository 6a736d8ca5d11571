"""Speed of mmjudge's pure-Python BLEU/ROUGE-L/CIDEr-D (tokenisation included) against pycocoevalcap.

Generates a 17,000-pair caption corpus (5 references each), times both implementations in the same run
on the same machine, checks that every per-sentence score agrees to 1e-6, and prints the ratio.

    python benchmarks/baselines_vs_pycocoevalcap.py [--items 17000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mmjudge.metrics.baselines import Baselines, compute_bleu, compute_cider_d, compute_rouge_l, ptb_tokenize
from mmjudge.metrics.baselines.synthetic import synthetic_captions


def run_ours(candidates, references):
    timings = {}
    start = time.perf_counter()
    cands = ptb_tokenize(candidates)
    refs = [ptb_tokenize(group) for group in references]
    timings["tokenise"] = time.perf_counter() - start
    results = {}
    for name, function in (("bleu", compute_bleu), ("rouge_l", compute_rouge_l), ("cider", compute_cider_d)):
        start = time.perf_counter()
        results[name] = function(cands, refs)
        timings[name] = time.perf_counter() - start
    # the user-facing one-call suite: Baselines("coco") tokenises once and counts n-grams once for BLEU
    # and CIDEr-D; everything from raw strings to scores is timed
    start = time.perf_counter()
    coco = Baselines("coco").compute(predictions=candidates, references=references, progress=False)
    timings["coco"] = time.perf_counter() - start
    assert coco["bleu_4"] == results["bleu"][1][3].tolist() and coco["cider"] == results["cider"][1].tolist()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=17_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    candidates, references = synthetic_captions(args.items, seed=args.seed)
    print(f"corpus: {len(candidates)} candidates, {sum(map(len, references))} references")

    ours, ours_t = run_ours(candidates, references)
    theirs, theirs_t = run_pycocoevalcap(candidates, references)

    worst = 0.0
    for name in ("bleu", "rouge_l", "cider"):
        a = np.asarray(ours[name][1], dtype=np.float64)
        b = np.asarray(theirs[name][1], dtype=np.float64)
        worst = max(worst, float(np.abs(a - b).max()))
    print(f"largest per-sentence difference: {worst:.2e} ({'identical to 1e-6' if worst <= 1e-6 else 'MISMATCH'})")
    print(f"{'step':10} {'mmjudge (s)':>12} {'pycocoevalcap (s)':>18} {'speed-up':>9}")
    for step in ("tokenise", "bleu", "rouge_l", "cider"):
        print(f"{step:10} {ours_t[step]:12.2f} {theirs_t[step]:18.2f} {theirs_t[step] / ours_t[step]:8.1f}x")
    total_theirs = sum(theirs_t.values())
    total_ours = sum(ours_t[step] for step in ("tokenise", "bleu", "rouge_l", "cider"))
    print(f"{'total':10} {total_ours:12.2f} {total_theirs:18.2f} {total_theirs / total_ours:8.1f}x")
    print('one call, Baselines("coco"): tokenise + BLEU + ROUGE-L + CIDEr-D with shared n-gram counts')
    print(f"{'coco':10} {ours_t['coco']:12.2f} {total_theirs:18.2f} {total_theirs / ours_t['coco']:8.1f}x")
    if worst > 1e-6:
        raise SystemExit("scores differ from pycocoevalcap")


if __name__ == "__main__":
    main()
