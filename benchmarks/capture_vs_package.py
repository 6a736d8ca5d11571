"""Development-time check: mmjudge's CAPTURE against the authors' capture-metric 0.1.13 code, on tiny random models,
in one process with CUDA patched out. Not part of CI (the package needs CUDA, Hub models and online NLTK data).

Needs, beside mmjudge's own environment: ``pip install --no-deps capture-metric==0.1.13 FactualSceneGraph==0.7.3
sentence-transformers tabulate scikit-learn narwhals`` and WordNet (Debian ``wordnet-base wordnet-sense-index``).

    python benchmarks/capture_vs_package.py SEED N_ITEMS

prints the largest per-item difference of CAPTURE and of each category's F1, and how many texts' elements differ.
Measured 2026-11: seed 1, 24 items: 1.2e-7 (float32 rounding), 0 texts differ (docs/caption_metrics.md).
"""

import contextlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ["RANK"] = "1"  # the package's import-time nltk.download is skipped (no network)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np
import torch

from mmjudge.metrics.capture.text import TextTools
from mmjudge.tiny_models.capture import WORDS, tiny_nltk_data, tiny_scene_graph_parser, tiny_sentence_encoder

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
work = tempfile.mkdtemp()
P, E, N = (
    tiny_scene_graph_parser(work + "/p", seed=seed),
    tiny_sentence_encoder(work + "/e", seed=seed),
    tiny_nltk_data(work + "/n"),
)
tools = TextTools(N)  # puts the tiny data and the Debian WordNet folder on nltk.data.path
import nltk

print("nltk path", nltk.data.path[:3])
import transformers

if not hasattr(transformers.PreTrainedTokenizerBase, "as_target_tokenizer"):
    transformers.PreTrainedTokenizerBase.as_target_tokenizer = lambda self: contextlib.nullcontext()
    print("patched as_target_tokenizer (removed in transformers 5)")
import capture_metric.capture as cm
from factual_scene_graph.parser.scene_graph_parser import SceneGraphParser as FSGParser
from sentence_transformers import SentenceTransformer


class ST(SentenceTransformer):
    def to(self, *a, **k):
        return self


cm.SentenceTransformer = lambda name: ST(E, device="cpu")
cm.SceneGraphParser = lambda ckpt, device="cpu": FSGParser(P, device="cpu")
cm.torch.cuda.is_available = lambda: False
torch.cuda.set_device = lambda *a: None


def in_process(self, partitioned, desc="parsing"):
    import collections

    out = collections.defaultdict(list)
    for part in partitioned:
        for parsed in self.parse_samples(part, "cpu:0", desc):
            out[parsed[0]].append(parsed[1:])
    return out


cm.CAPTURE.process_samples_multiprocessing = in_process
# numpy 2: statistics.mean() of Python floats mixed with float32 raises in the package (only its parse_results use it)
cm.mean = lambda xs: float(np.mean([float(x) for x in xs]))

rng = random.Random(seed)
content = [w for w in WORDS if w not in ("generate", "scene", "graph", ":", "(", ")", ",", ".")]


def sentence():
    return " ".join(rng.choice(content) for _ in range(rng.randint(6, 14))).capitalize() + "."


def text():
    return " ".join(sentence() for _ in range(rng.randint(1, 3)))


n = int(sys.argv[2]) if len(sys.argv) > 2 else 14
preds = {f"s{i}": [text()] for i in range(n)}
refs = {f"s{i}": [text() for _ in range(rng.randint(1, 3))] for i in range(n)}
preds["s0"] = refs["s0"][:1]  # a candidate equal to a reference

t = time.time()
pkg = cm.CAPTURE()
# return_parse_results=True fails in the package itself here: statistics.mean() of Python floats and the
# float32 values soft matching gives ("don't know how to coerce float and float32")
score, scores = pkg.compute_score(refs, preds)
print("package", round(time.time() - t, 1), "s")

import mmjudge

t = time.time()
ours = mmjudge.load("capture", parser=P, encoder=E, nltk_data=N)
keys = list(preds)
out = ours.compute(predictions=[preds[k][0] for k in keys], references=[refs[k] for k in keys], progress=False)
print("mmjudge", round(time.time() - t, 1), "s")
pkg_by_key = dict(zip(list(refs), scores))
delta = max(abs(pkg_by_key[k] - v) for k, v in zip(keys, out["capture"]))
print("per-item capture max |delta|:", delta, "corpus |delta|:", abs(score - out["mean_capture"]))
# each category's F1 through the package's compute_f_score on the package's own parses
deltas = {"object": 0.0, "attribute": 0.0, "relation": 0.0}
for i, k in enumerate(keys):
    cand = pkg.sample_to_parse_results((k, preds[k][0]))[1:]
    results = [pkg.compute_f_score(pkg.sample_to_parse_results((k, r))[1:], cand) for r in refs[k]]
    for name, idx in (("object", 3), ("attribute", 6), ("relation", 9)):
        deltas[name] = max(deltas[name], abs(float(np.mean([r[idx] for r in results])) - out[f"{name}_f1"][i]))
print("category F1 max |delta|:", deltas)
nonzero = sum(1 for v in out["capture"] if v > 0)
print("items:", len(keys), "nonzero:", nonzero, "values:", [round(v, 4) for v in out["capture"]])
# the elements: our ordered graphs vs the package's sets
diff = 0
for k in keys:
    for textk in preds[k] + refs[k]:
        _, objs, attrs, rels = pkg.sample_to_parse_results((k, textk))
        g = ours.graph(textk)
        flat = sorted(a for v in attrs.values() for a in v)
        if (sorted(objs), flat, sorted(rels)) != (sorted(g.objects), sorted(g.attributes), sorted(g.relations)):
            diff += 1
print("texts whose elements differ:", diff)
