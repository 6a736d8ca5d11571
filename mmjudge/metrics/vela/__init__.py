"""VELA (Matsuda et al., 2025): a fast long-caption metric, an LLM-hybrid judge.

Its home: the metric and its declaration (:mod:`.metric`); the model (R2C-LLM + I2C-Align + criterion
head, :mod:`.model`, :mod:`.head`); building and loading it (:mod:`.loading`);
:mod:`mmjudge.metrics.vela.training` trains it on LongCap-Arena (resumable). The metric front door is
:class:`mmjudge.metrics.vela.VELA` (``mmjudge.load("vela", checkpoint=DIR, clip_model=LONGCLIP_DIR)``).
"""

from mmjudge.metrics.vela.criteria import CRITERIA, CRITERION_NAMES
from mmjudge.metrics.vela.loading import load_vela, new_vela
from mmjudge.metrics.vela.metric import VELA
from mmjudge.metrics.vela.model import DEFAULT_LLM, VelaConfig, VelaModel

__all__ = ["VELA", "CRITERIA", "CRITERION_NAMES", "DEFAULT_LLM", "VelaConfig", "VelaModel", "load_vela", "new_vela"]
