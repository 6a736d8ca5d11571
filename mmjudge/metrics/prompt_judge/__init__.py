"""Prompt-only judges (G-VEval, GPT-FLEUR, VELA's GPT-4o rows): the metric and its reading rules."""

from mmjudge.metrics.prompt_judge.metric import CONFIGS, FAMILIES, PROMPT_CONFIGS, PromptConfig, PromptJudge
from mmjudge.metrics.prompt_judge.reading import READINGS, Reading, read, read_after_marker, read_fleur_decimal

__all__ = [
    "CONFIGS",
    "FAMILIES",
    "PROMPT_CONFIGS",
    "READINGS",
    "PromptConfig",
    "PromptJudge",
    "Reading",
    "read",
    "read_after_marker",
    "read_fleur_decimal",
]
