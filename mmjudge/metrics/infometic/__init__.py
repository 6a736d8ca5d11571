"""InfoMetIC, InfoMetIC+ and InfoCLIP (Hu et al., ACL 2023).

Its home: the metric and its declarations (:mod:`.metric`), the trained head and the formulas (:mod:`.model`),
the authors' checkpoint read into them (:mod:`.loading`), the caption's CLIP inputs (:mod:`.text`) and the
authors' precomputed region features (:mod:`.features`)."""

from mmjudge.metrics.infometic.features import RegionFeatures, RegionInput, assemble
from mmjudge.metrics.infometic.loading import split_checkpoint
from mmjudge.metrics.infometic.metric import CONFIGS, InfoMetIC
from mmjudge.metrics.infometic.model import InfoMetICHead, head_shape, infoclip_scores
from mmjudge.metrics.infometic.text import caption_ids

__all__ = [
    "CONFIGS",
    "InfoMetIC",
    "InfoMetICHead",
    "RegionFeatures",
    "RegionInput",
    "assemble",
    "caption_ids",
    "head_shape",
    "infoclip_scores",
    "split_checkpoint",
]
