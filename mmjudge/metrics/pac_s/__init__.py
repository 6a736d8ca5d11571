"""PAC-S / RefPAC-S / PAC-S++ / RefPAC-S++ and their sentence averages (Sarto et al., 2023, 2025).

Its home: the metric and its declaration (:mod:`.metric`); the authors' checkpoints read into a
``transformers`` CLIP, LoRA folded as their evaluation code computes it (:mod:`.checkpoints`). The formulas
are CLIP-S's (:mod:`mmjudge.metrics.clip_score`) with ``w = 2.0``; the CLIP encoder is shared
(:mod:`mmjudge.encoders.clip`).
"""

from mmjudge.metrics.pac_s.checkpoints import BACKBONES, Backbone, detect_backbone, fold_lora, read_pac_checkpoint
from mmjudge.metrics.pac_s.metric import CONFIGS, PACScore, W

__all__ = ["CONFIGS", "W", "PACScore", "BACKBONES", "Backbone", "detect_backbone", "fold_lora", "read_pac_checkpoint"]
