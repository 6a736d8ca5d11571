"""VELA's regression head, a ``torch.nn.Module`` (its own module so that torch is imported only when VELA
is used: :mod:`mmjudge.metrics.vela.model` imports this lazily).

``features (n, feature_dim)`` → scores ``(n, criteria)`` in [0, 1]: ``z = projection(features)``, a learned
mode embedding ``e_m`` per criterion selecting its weight vector ``W_m = U e_m`` and bias
(:mod:`mmjudge.metrics.vela.model` explains why). Parameters: ``projection.*`` (projection group),
``mode_embedding``, ``criterion_weights``, ``mode_bias.*`` (head group).

>>> head = VelaHead(feature_dim=6, projection_dim=4, seed=0)
>>> type(head) is type(VelaHead(6, 4, seed=1)), tuple(head(torch.zeros(2, 6)).shape)
(True, (2, 3))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from mmjudge.metrics.vela.criteria import CRITERIA


class VelaHead(torch.nn.Module):
    """The regression head; ``seed`` makes its initial weights reproducible."""

    def __init__(
        self,
        feature_dim: int,
        projection_dim: int = 256,
        mode_dim: int = 8,
        criteria: Sequence[str] = CRITERIA,
        seed: int | None = None,
    ):
        super().__init__()
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.criteria = tuple(criteria)
        self.projection = torch.nn.Linear(feature_dim, projection_dim)
        self.mode_embedding = torch.nn.Embedding(len(self.criteria), mode_dim)
        self.criterion_weights = torch.nn.Parameter(torch.empty(projection_dim, mode_dim))  # U
        self.mode_bias = torch.nn.Linear(mode_dim, 1)  # c · e_m + b
        with torch.no_grad():
            bound = 1 / math.sqrt(feature_dim)
            self.projection.weight.uniform_(-bound, bound, generator=generator)
            self.projection.bias.uniform_(-bound, bound, generator=generator)
            self.mode_embedding.weight.normal_(0, 1, generator=generator)
            self.criterion_weights.normal_(0, 1 / math.sqrt(projection_dim * mode_dim), generator=generator)
            self.mode_bias.weight.zero_()
            self.mode_bias.bias.zero_()

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        z = self.projection(features.float())
        modes = self.mode_embedding.weight  # (criteria, mode_dim)
        weights = self.criterion_weights @ modes.t()  # (projection_dim, criteria): W_m = U e_m
        return z @ weights + self.mode_bias(modes).squeeze(-1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logits(features)).clamp(0.0, 1.0)
