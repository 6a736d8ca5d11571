"""A judge that answers with distributions given in advance, for exact end-to-end tests.

>>> from mmjudge import HarmonicEval
>>> judge = ScriptedJudge({"fluency": [0, 0, 0, 1, 0], "clarity": [0, 0, 0.5, 0.5, 0]})
>>> out = HarmonicEval(judge=judge, criteria=["fluency", "clarity"], cache=False).compute(
...     predictions=["A dog."], progress=False)
>>> out["fluency"], out["clarity"], out["clarity_sigma"]
([4.0], [3.5], [0.5])
>>> [round(out[f"{c}_weight"][0], 6) for c in ("fluency", "clarity")], round(out["overall"][0], 6)
([0.984374, 0.015626], 3.992187)

Fluency's σ is 0 and is floored at 1e-3, so with γ = 0.75 its weight is 1e-3^(-2/3) = 100 against
clarity's 0.5^(-2/3) ≈ 1.587: the overall score leans on the criterion the judge is sure of.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from mmjudge.judges.base import Capabilities
from mmjudge.judges.batched import BatchedJudge
from mmjudge.judges.requests import GenerationRequest, RatingRequest, RatingResult

Distribution = Sequence[float]
Script = Mapping[str, Distribution] | Callable[[RatingRequest], Distribution | RatingResult]


class ScriptedJudge(BatchedJudge):
    """Rates each request with ``script[request.group]`` (the criterion for HarmonicEval), or
    ``script(request)`` when ``script`` is a function; the values are the raw probabilities of the
    choices (their sum is the mass). A function may also return a whole :class:`RatingResult` (e.g. to
    script the greedy token a FLEUR walk follows). Generation answers ``explanation``.

    Capabilities can be switched off to test how metrics react (``teacher_forcing=False``,
    ``can_generate=False`` …).
    """

    backend = "scripted"

    def __init__(
        self,
        script: Script,
        explanation: str = "scripted explanation",
        teacher_forcing: bool = True,
        full_distribution: bool = True,
        name: str = "scripted",
        can_generate: bool = True,
        sees_images: bool = True,
    ):
        self.script = script
        self.explanation = explanation
        self.capabilities = Capabilities(
            teacher_forcing=teacher_forcing,
            full_distribution=full_distribution,
            can_generate=can_generate,
            sees_images=sees_images,
        )
        self.name = name
        self.requests: list[RatingRequest] = []

    def identity(self) -> dict:
        return {"backend": self.backend, "model": self.name}

    def _distribution(self, request: RatingRequest) -> list[float]:
        if callable(self.script):
            values = self.script(request)
        else:
            if request.group not in self.script:
                raise KeyError(f"ScriptedJudge has no distribution for group {request.group!r}.")
            values = self.script[request.group]
        if len(values) != len(request.choices):
            raise ValueError(f"Scripted distribution {list(values)} does not fit the choices {list(request.choices)}.")
        return [float(v) for v in values]

    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        self.requests.extend(requests)
        out = []
        for request in requests:
            if callable(self.script):
                answer = self.script(request)
                if isinstance(answer, RatingResult):
                    out.append(answer)
                    continue
            raw = self._distribution(request)
            greedy = request.choices[max(range(len(raw)), key=raw.__getitem__)]
            out.append(RatingResult(raw=raw, greedy=greedy, exact_mass=self.capabilities.full_distribution))
        return out

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return [self.explanation for _ in requests]
