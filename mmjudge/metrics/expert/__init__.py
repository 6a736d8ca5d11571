"""EXPERT (Kim et al., ACL Findings 2025).

Its home: the metric and its declaration (:mod:`.metric`) and how the score is read off the judge's answer
(:mod:`.reading`). Its prompts are the ``expert`` prompt file in :mod:`mmjudge.prompts`; the LoRA adapter is
merged by the local judge (:mod:`mmjudge.judges.local.adapters`)."""

from mmjudge.metrics.expert.metric import (
    DEFAULT_ADAPTER,
    EXPERT,
    EXPLANATION_PROMPT,
    PROMPT_VERSION,
    SCORE_PROMPT,
    normalise_caption,
    pad_to_square,
)
from mmjudge.metrics.expert.reading import digit_position, explanation_parts, printed_number, smoothed

__all__ = [
    "DEFAULT_ADAPTER",
    "EXPERT",
    "EXPLANATION_PROMPT",
    "PROMPT_VERSION",
    "SCORE_PROMPT",
    "digit_position",
    "explanation_parts",
    "normalise_caption",
    "pad_to_square",
    "printed_number",
    "smoothed",
]
