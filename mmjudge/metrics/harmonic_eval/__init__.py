"""HarmonicEval (Ohi et al.): a VLM judge rates a text 1-5 per criterion; smoothed scores, harmonic weighting.

Its home: the metric and its declaration (:mod:`.metric`) and the pure math on rating distributions
(:mod:`.scoring`). Its prompts are the ``harmonic_eval`` prompt set in :mod:`mmjudge.prompts`.
"""

from mmjudge.metrics.harmonic_eval.metric import DEFAULT_MODEL, HarmonicEval, harmonic_eval_spec
from mmjudge.metrics.harmonic_eval.scoring import DEFAULT_GAMMA, Aggregate, aggregate, harmonic_weights, sigma, smooth

__all__ = [
    "DEFAULT_GAMMA",
    "DEFAULT_MODEL",
    "Aggregate",
    "HarmonicEval",
    "aggregate",
    "harmonic_eval_spec",
    "harmonic_weights",
    "sigma",
    "smooth",
]
