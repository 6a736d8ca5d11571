"""Classic reference-based captioning metrics with the numbers papers report.

Its home: the metric and its declaration (:mod:`.metric`: ``Baselines``) and the scorers below.

Plain functions over tokenised strings, in the style of pycocoevalcap's ``compute_score``: each takes
``candidates`` (one string per item) and ``references`` (a list of strings per item) and returns
``(corpus_score, per_item_scores)``. Tokenise once with :func:`ptb_tokenize` (pycocoevalcap's PTB
tokenisation, lower-casing and punctuation removal, without Java) and pass the result to every scorer.

* :func:`compute_bleu` — BLEU-1..4 (closest reference length, per-sentence scores as pycocoevalcap).
* :func:`compute_rouge_l` — ROUGE-L, β = 1.2.
* :func:`compute_cider_d` — CIDEr-D, σ = 6; **document frequencies come from the references of the
  whole call** (score a test set in one call).
* :func:`compute_meteor` — METEOR 1.5 via the official jar (needs Java; one long-lived process).
* :class:`BERTScorer`, :class:`BARTScorer` — model-based scores (transformers).

* :class:`SpiceScorer` — SPICE 1.0 via the official jar (Java and Stanford CoreNLP 3.6.0's two jars, which
  no registry ships: :mod:`mmjudge.metrics.baselines.spice` says where they go).

>>> from mmjudge.metrics.baselines import ptb_tokenize, compute_bleu, compute_cider_d
>>> cands = ptb_tokenize(["A dog runs on the beach.", "Two cats sleep."])
>>> refs = [ptb_tokenize(["A dog is running on the beach!", "a dog on the sand"]), ptb_tokenize(["Two cats sleeping."])]
>>> cands
['a dog runs on the beach', 'two cats sleep']
>>> corpus, per_item = compute_bleu(cands, refs)
>>> round(corpus[1], 4), per_item.shape  # BLEU-2
(0.6667, (4, 2))
"""

from mmjudge.metrics.baselines._inputs import check_pairs
from mmjudge.metrics.baselines.bartscore import BARTScorer
from mmjudge.metrics.baselines.bertscore import BERTScorer
from mmjudge.metrics.baselines.bleu import compute_bleu
from mmjudge.metrics.baselines.cider import compute_cider_d, document_frequencies
from mmjudge.metrics.baselines.meteor import MeteorScorer, compute_meteor
from mmjudge.metrics.baselines.metric import Baselines
from mmjudge.metrics.baselines.ngrams import NgramCounts, count_pair_ngrams
from mmjudge.metrics.baselines.rouge import compute_rouge_l, lcs_length
from mmjudge.metrics.baselines.spice import SpiceScorer
from mmjudge.metrics.baselines.tokenize import PUNCTUATIONS, ptb_tokenize

__all__ = [
    "Baselines",
    "BARTScorer",
    "BERTScorer",
    "MeteorScorer",
    "SpiceScorer",
    "PUNCTUATIONS",
    "check_pairs",
    "compute_bleu",
    "compute_cider_d",
    "compute_meteor",
    "compute_rouge_l",
    "count_pair_ngrams",
    "NgramCounts",
    "document_frequencies",
    "lcs_length",
    "ptb_tokenize",
]
