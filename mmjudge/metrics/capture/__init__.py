"""CAPTURE (Dong et al. 2024): detailed captions scored by matching the objects, attributes and relations of
their scene graphs with the references'.

Its home: the metric and its declaration (:mod:`.metric`), the matching formulas (:mod:`.matching`), the
parser's text to elements (:mod:`.graphs`), the NLTK steps (:mod:`.text`) and the two models (:mod:`.models`).
"""

from mmjudge.metrics.capture.matching import Graph, PairScore, match, prf, score_pair, synonym_score
from mmjudge.metrics.capture.metric import CAPTURE, package_stop_words

__all__ = ["CAPTURE", "Graph", "PairScore", "match", "package_stop_words", "prf", "score_pair", "synonym_score"]
