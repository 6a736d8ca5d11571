"""FLEUR / RefFLEUR (Lee et al., ACL 2024).

Its home: the metric and its declaration (:mod:`.metric`), score arithmetic and parsing
(:mod:`.smoothing`) and the teacher-forced walk along the printed score (:mod:`.walk`). Its prompts
are the ``fleur`` prompt file in :mod:`mmjudge.prompts`."""

from mmjudge.metrics.fleur.metric import CONFIGS, EXPLAIN_TURN, FLEUR, FLEUR_PROMPT, PROMPT_VERSION, REFFLEUR_PROMPT
from mmjudge.metrics.fleur.smoothing import DIGITS, SCORE_PATTERN, parse_score, smooth_decimals, smooth_one
from mmjudge.metrics.fleur.walk import EXPECTED_NEXT, Walk

__all__ = [
    "CONFIGS",
    "DIGITS",
    "EXPECTED_NEXT",
    "EXPLAIN_TURN",
    "FLEUR",
    "FLEUR_PROMPT",
    "PROMPT_VERSION",
    "REFFLEUR_PROMPT",
    "SCORE_PATTERN",
    "Walk",
    "parse_score",
    "smooth_decimals",
    "smooth_one",
]
