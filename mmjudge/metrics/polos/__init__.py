"""Polos (Wada et al., CVPR 2024): SimCSE-RoBERTa + CLIP features into a head trained on human judgments.

Its home: the metric and its declaration (:mod:`.metric`), the formulas (:mod:`.head`: the layer mix's
group normalisation, the feature vector), and the authors' Lightning checkpoint read into our own modules
(:mod:`.model`; no Lightning, no pytorch-nlp).
"""

from mmjudge.metrics.polos.head import group_layer_norm_cls, pair_features, scalar_mix_cls
from mmjudge.metrics.polos.metric import Polos
from mmjudge.metrics.polos.model import PolosModel, read_polos_checkpoint

__all__ = ["Polos", "PolosModel", "read_polos_checkpoint", "group_layer_norm_cls", "pair_features", "scalar_mix_cls"]
