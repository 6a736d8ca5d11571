"""CLIPScore / RefCLIPScore (Hessel et al., 2021).

Its home: the metric, its declaration and the pure formulas (:mod:`.metric`: ``clip_s``, ``ref_clip_s``;
:mod:`.sentences`: the sentence split and mean of the ``_avg`` variant, shared with PAC-S).
The CLIP encoder it uses is shared with other metrics: :mod:`mmjudge.encoders.clip`.
"""

from mmjudge.metrics.clip_score.metric import CONFIGS, PREFIX, CLIPScore, W, clip_s, ref_clip_s, similarity_chunk
from mmjudge.metrics.clip_score.sentences import mean_per_item, split_sentences

__all__ = [
    "CONFIGS",
    "PREFIX",
    "W",
    "CLIPScore",
    "clip_s",
    "ref_clip_s",
    "similarity_chunk",
    "split_sentences",
    "mean_per_item",
]
