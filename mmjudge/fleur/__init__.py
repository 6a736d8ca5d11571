"""FLEUR's pieces below the metric: score arithmetic and parsing (:mod:`.smoothing`) and the
teacher-forced walk along the printed score (:mod:`.walk`). The metric is :mod:`mmjudge.metrics.fleur`."""

from mmjudge.fleur.smoothing import DIGITS, SCORE_PATTERN, parse_score, smooth_decimals, smooth_one
from mmjudge.fleur.walk import EXPECTED_NEXT, Walk

__all__ = ["DIGITS", "SCORE_PATTERN", "parse_score", "smooth_decimals", "smooth_one", "EXPECTED_NEXT", "Walk"]
