"""CLIPScore / RefCLIPScore (Hessel et al., 2021).

Its home: the metric, its declaration and the pure formulas (:mod:`.metric`: ``clip_s``, ``ref_clip_s``).
The CLIP encoder it uses is shared with other metrics: :mod:`mmjudge.encoders.clip`.
"""

from mmjudge.metrics.clip_score.metric import CONFIGS, PREFIX, CLIPScore, W, clip_s, ref_clip_s

__all__ = ["CONFIGS", "PREFIX", "W", "CLIPScore", "clip_s", "ref_clip_s"]
