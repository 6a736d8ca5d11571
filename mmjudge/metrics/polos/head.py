"""Polos's formulas (Wada et al., CVPR 2024), as its ``PolosEstimator`` computes them at evaluation.

* **Sentence embedding** (SimCSE-RoBERTa, ``layer: mix``, ``pool: cls``): every hidden-state layer k
  (embeddings + each block) is layer-normalised with one mean and variance taken over all unmasked tokens
  and channels of a *normalisation group* of texts (:func:`group_layer_norm_cls`), mixed as
  ``gamma · Σ_k softmax(s)_k · norm_k``, and the first (``<s>``) position is the embedding. In the authors'
  code the group is the batch ``predict`` was given; here it is each text alone unless asked otherwise
  (:class:`mmjudge.metrics.polos.Polos`' ``norm_batch_size``).
* **Features** for a candidate c, one reference r and the image v (:func:`pair_features`), with SimCSE
  embeddings ``t`` and raw (unnormalised) CLIP ViT-B/32 features ``e`` (texts prefixed "A photo depicts "):
  ``[t_r, t_c, |t_c − t_r|, t_c ⊙ t_r, e_v, e_c, |e_v − e_c|, e_v ⊙ e_c, |e_r − e_c|, e_r ⊙ e_c]``.
* **Score**: a feed-forward head (linear layers with an activation between them, then a sigmoid) per
  reference, and the maximum over the references.

>>> import torch
>>> t = torch.ones(1, 2)
>>> pair_features(t, 2 * t, 3 * t, 4 * t, 5 * t)[0].tolist()
[1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 1.0, 1.0, 12.0, 12.0, 1.0, 1.0, 20.0, 20.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LAYER_NORM_EPS = 1e-12  # ScalarMixWithDropout's


def group_layer_norm_cls(hidden: Any, mask: Any, groups: Any) -> Any:
    """The first position of ``hidden`` ``(n, T, H)`` layer-normalised with statistics pooled over each
    group of texts: mean and variance over every unmasked token and channel of the texts sharing a group
    id (``groups``: ``(n,)`` long, ids 0..g-1; ``mask``: ``(n, T)`` 1 for tokens, 0 for padding).
    Returns ``(n, H)``."""
    import torch

    m = mask.to(hidden.dtype).unsqueeze(-1)
    width = hidden.shape[-1]
    count = int(groups.max()) + 1
    per_text = m.sum(dim=(1, 2)) * width
    elements = torch.zeros(count, dtype=hidden.dtype, device=hidden.device).index_add(0, groups, per_text)
    sums = torch.zeros_like(elements).index_add(0, groups, (hidden * m).sum(dim=(1, 2)))
    mean = (sums / elements)[groups]
    centred = (hidden - mean[:, None, None]) * m
    squares = torch.zeros_like(elements).index_add(0, groups, (centred**2).sum(dim=(1, 2)))
    variance = (squares / elements)[groups]
    return (hidden[:, 0, :] - mean[:, None]) / torch.sqrt(variance[:, None] + LAYER_NORM_EPS)


def scalar_mix_cls(layers: Sequence[Any], mask: Any, groups: Any, weights: Any, gamma: Any) -> Any:
    """``gamma · Σ_k softmax(weights)_k · group_layer_norm_cls(layers[k])``: the first position of
    Polos's layer mix, ``(n, H)``."""
    import torch

    mix = torch.softmax(weights, dim=0)
    return gamma * sum(mix[k] * group_layer_norm_cls(h, mask, groups) for k, h in enumerate(layers))


def pair_features(ref_text: Any, cand_text: Any, image: Any, cand_clip: Any, ref_clip: Any) -> Any:
    """Polos's feature vector per (candidate, reference) pair (see the module's description)."""
    import torch

    return torch.cat(
        (
            ref_text,
            cand_text,
            torch.abs(cand_text - ref_text),
            cand_text * ref_text,
            image,
            cand_clip,
            torch.abs(image - cand_clip),
            image * cand_clip,
            torch.abs(ref_clip - cand_clip),
            ref_clip * cand_clip,
        ),
        dim=1,
    )
