"""A deterministic judge with no model, for pipeline tests, doctests and offline demos.

Its rating distribution is a pure function of the request (a hash of its payload), so results are
reproducible and caching can be tested; it proves plumbing only, never quality.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mmjudge.judges.base import Capabilities
from mmjudge.judges.batched import BatchedJudge
from mmjudge.judges.requests import (
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
    ScoredToken,
)


class DummyJudge(BatchedJudge):
    """Hash-based pseudo-judge. ``mass`` is the probability it puts on the scale (default 0.9).

    ``teacher_forcing=False`` / ``full_distribution=False`` make it declare the capabilities of a chat
    API (its results are then marked ``exact_mass=False``), ``can_generate=False`` those of a judge that
    only rates, ``sees_images=False`` those of a text-only model (it then refuses a request with an image,
    as a text-only local model does), to test how metrics react."""

    backend = "dummy"

    def __init__(
        self,
        mass: float = 0.9,
        batch_size: int = 8,
        seed: int = 0,
        model: str | None = None,
        teacher_forcing: bool = True,
        full_distribution: bool = True,
        can_generate: bool = True,
        sees_images: bool = True,
    ):
        # `model` is accepted (and ignored) so any metric's model option works with this judge.
        self.capabilities = Capabilities(
            teacher_forcing=bool(teacher_forcing),
            full_distribution=bool(full_distribution),
            can_generate=bool(can_generate),
            sees_images=bool(sees_images),
            scores_generation=bool(can_generate),
        )
        self.mass = float(mass)
        self.batch_size = batch_size
        self.seed = int(seed)
        self.calls = 0  # number of requests actually computed (tests use it to check cache hits)

    def identity(self) -> dict:
        return {"backend": self.backend, "model": "dummy", "mass": self.mass, "seed": self.seed}

    def _weights(self, request: RatingRequest, n: int) -> list[float]:
        digest = hashlib.sha256(f"{self.seed}|{request.payload()}".encode()).digest()
        raw = [1.0 + digest[i] for i in range(n)]
        total = sum(raw)
        return [self.mass * x / total for x in raw]

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        self.calls += len(requests)
        out = []
        for request in requests:
            if request.image is not None and not self.capabilities.sees_images:
                raise ValueError("dummy (sees_images=False) is a text-only judge but the request carries an image.")
            raw = self._weights(request, len(request.choices))
            greedy = request.choices[max(range(len(raw)), key=raw.__getitem__)]
            out.append(RatingResult(raw=raw, greedy=greedy, exact_mass=self.capabilities.full_distribution))
        return out

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        self.calls += len(requests)
        return [f"dummy explanation {hashlib.sha256(str(r.payload()).encode()).hexdigest()[:8]}" for r in requests]

    def _generate_scored_batch(self, requests: Sequence[ScoredGenerationRequest]) -> list[ScoredText]:
        # The same text as `generate`, one token per word, each listed alone with probability 1: it writes
        # no score, so metrics that read one report `no_rating` (plumbing only, as for every dummy answer).
        self.calls += len(requests)
        out = []
        for request in requests:
            text = f"dummy explanation {hashlib.sha256(str(request.payload()).encode()).hexdigest()[:8]}"
            words = text.split(" ")
            tokens = [
                ScoredToken(w if k == 0 else " " + w, [(w if k == 0 else " " + w, 1.0)]) for k, w in enumerate(words)
            ]
            out.append(ScoredText(text, tokens))
        return out
