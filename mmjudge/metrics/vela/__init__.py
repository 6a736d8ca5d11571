"""VELA (Matsuda et al., 2025): a fast long-caption metric, an LLM-hybrid judge.

Its home: the metric and its declaration (:mod:`.metric`); :mod:`mmjudge.metrics.vela.model` holds the model (R2C-LLM + I2C-Align + criterion head), checkpoints and loading;
:mod:`mmjudge.metrics.vela.training` trains it on LongCap-Arena (resumable). The metric front door is
:class:`mmjudge.metrics.vela.VELA` (``mmjudge.load("vela", checkpoint=DIR, clip_model=LONGCLIP_DIR)``).
"""

from mmjudge.metrics.vela.metric import VELA
from mmjudge.metrics.vela.model import (
    CRITERIA,
    CRITERION_NAMES,
    DEFAULT_LLM,
    VelaConfig,
    VelaModel,
    load_vela,
    new_vela,
)

__all__ = ["VELA", "CRITERIA", "CRITERION_NAMES", "DEFAULT_LLM", "VelaConfig", "VelaModel", "load_vela", "new_vela"]
