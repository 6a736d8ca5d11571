"""The judge interface: what every backend answers, and nothing about how.

A judge answers two kinds of requests:

* :class:`RatingRequest` — a conversation (optionally with one image), an optional assistant prefix
  that is teacher-forced, and a list of rating strings (``"1".."5"``). The judge returns, from ONE
  forward pass, the probability the model puts on each rating token at the answer position
  (:class:`RatingResult`). No sampling, no generation.
* :class:`GenerationRequest` — the same conversation, answered greedily up to ``max_new_tokens``
  (used for explanations and for reference paths that need free-running decoding).

:class:`Judge` is the whole protocol: ``rate`` and ``generate`` (a list of requests in, one answer per
request out, in order; each finished batch handed to ``on_batch``, which is how the cache stores answers
as they arrive), ``identity`` (what determines the answers: cache keys and signatures) and
``capabilities`` (a frozen :class:`Capabilities` value, settled when the judge is built). Local backends
get batching, prefetching and progress bars from :class:`mmjudge.judges.batched.BatchedJudge`; the
persistent cache (:mod:`mmjudge.judges.cached`) and data parallelism (:mod:`mmjudge.judges.data_parallel`)
are :class:`JudgeWrapper` s around any judge. The request and result values live in
:mod:`mmjudge.judges.requests`.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from mmjudge.judges.requests import (
    GenerationRequest,
    RatingRequest,
    RatingResult,
    ScoredGenerationRequest,
    ScoredText,
)

__all__ = [
    "BatchCallback",
    "Capabilities",
    "Judge",
    "JudgeCapabilityError",
    "JudgeWrapper",
    "find_layer",
    "innermost",
]

BatchCallback = Callable[[Sequence[int], list], None]
"""``on_batch(indices, answers)``: the positions (in the call's ``requests``) of one finished batch and their
answers."""


class JudgeCapabilityError(ValueError):
    """A metric needs something the judge backend cannot do (e.g. teacher forcing through a chat API)."""


@dataclass(frozen=True)
class Capabilities:
    """What a judge can do, settled when it is built (never probed when read). Metrics check these
    before they build requests (:meth:`Judge.require`) and take their documented fallback or say, in one
    sentence, what is missing.

    Attributes:
        teacher_forcing: the assistant's answer can be forced to start with ``answer_prefix`` (a local
            model can; OpenAI's chat API cannot; vLLM/SGLang can through ``continue_final_message``).
            Without it the backend reads the first rating the model generates.
        full_distribution: every token's probability is available; ``False`` for top-k APIs, whose
            results carry ``exact_mass=False``.
        reads_prefix_steps: ``read_prefix`` requests get the distributions inside the prefix.
        can_generate: free-running greedy generation (explanations, FLEUR's fallback).
        exact_choices: the probability of each choice is its full-vocabulary probability even though
            the judge does not see every token (a server that returns the log-probabilities of chosen
            token ids: vLLM's ``logprob_token_ids``, SGLang's ``token_ids_logprob``); results then carry
            ``exact_mass=True``. Implied by ``full_distribution``.
        sees_images: requests may carry an image. ``False`` for a text-only model (a causal LM without an
            image processor, e.g. SmolLM2): metrics rate what needs no image and mark the rest
            (HarmonicEval's ``needs_image`` status) or refuse in one sentence (FLEUR).
        scores_generation: :meth:`Judge.generate_scored` answers: generation that lists the most probable
            tokens at each generated position (chat APIs' ``logprobs``; a local model's softmax).

    >>> Capabilities(teacher_forcing=False).missing(("teacher_forcing", "can_generate"))
    ['teacher_forcing']
    """

    teacher_forcing: bool = True
    full_distribution: bool = True
    reads_prefix_steps: bool = False
    can_generate: bool = True
    exact_choices: bool = False
    sees_images: bool = True
    scores_generation: bool = False

    @property
    def exact_mass(self) -> bool:
        """Whether a rating's probability mass on the scale is exact (not a top-k lower bound)."""
        return self.full_distribution or self.exact_choices

    def missing(self, wanted: Sequence[str]) -> list[str]:
        """The capabilities of ``wanted`` this judge lacks."""
        known = {f.name for f in fields(self)}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise ValueError(f"Unknown capability {unknown[0]!r}; expected one of {sorted(known)}.")
        return [w for w in wanted if not getattr(self, w)]


class Judge(ABC):
    """The judge protocol. A backend sets :attr:`backend` and :attr:`capabilities` and implements
    :meth:`identity` and :meth:`rate` (and :meth:`generate` when it can generate).

    >>> from mmjudge.judges import load_judge
    >>> from mmjudge.judges.requests import RatingRequest, Turn
    >>> judge = load_judge("dummy")
    >>> [r] = judge.rate([RatingRequest(turns=[Turn("user", "Rate this: a dog.")])], progress=False)
    >>> len(r.probs), round(sum(r.probs), 6), judge.capabilities.can_generate
    (5, 1.0, True)
    """

    backend: ClassVar[str] = "base"
    capabilities: Capabilities = Capabilities()
    # The judge model's architecture (``config.model_type``, e.g. "llava") when known: metrics pick a
    # conversation format from it (FLEUR prompts LLaVA-1.5 in its original format).
    model_type: str | None = None

    @abstractmethod
    def identity(self) -> dict:
        """What determines this judge's outputs (backend, model id, revision, dtype, …), JSON-able: the
        cache keys' part. Must not include speed-only knobs like ``batch_size``, nor secrets.
        :meth:`signature_fields` (what a result's signature shows) and :meth:`describe` (its name in
        messages) are derived from it."""

    @abstractmethod
    def rate(
        self, requests: Sequence[RatingRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[RatingResult]:
        """One :class:`RatingResult` per request, in the order of ``requests``."""

    def generate(
        self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[str]:
        """Greedy generation for every request, in the order of ``requests``."""
        raise JudgeCapabilityError(f"The {self.backend!r} judge cannot generate text.")

    def generate_scored(
        self, requests: Sequence[ScoredGenerationRequest], progress: bool = True, on_batch: BatchCallback | None = None
    ) -> list[ScoredText]:
        """Greedy generation with the top alternatives at every generated position, in request order."""
        raise JudgeCapabilityError(
            f"The {self.backend!r} judge cannot list the probabilities of the tokens it generates."
        )

    def plan(self, requests: Sequence[RatingRequest]) -> list[list[int]]:
        """How this judge would batch ``requests`` (indices): wrappers that split work keep each batch in
        one share (requests about one image stay together). Default: one batch per request."""
        return [[i] for i in range(len(requests))]

    def usage_summary(self) -> str | None:
        """One line of what the judge cost (API backends: requests, tokens, price), or ``None``."""
        return None

    def uncached(self) -> contextlib.AbstractContextManager[None]:
        """A block in which this judge answers without reading or writing a persistent cache, and is as it was
        afterwards (what ``reproduce --timing`` times: the work, not a cache hit). A backend keeps no cache: by
        default this changes nothing; the cache layer steps aside (:class:`~mmjudge.judges.cached.CachedJudge`)."""
        return contextlib.nullcontext()

    def usage_report(self) -> dict[str, Any] | None:
        """:meth:`usage_summary` as data (API backends: requests, tokens, ``cost_usd``), or ``None``: a
        metric's ``compute`` result carries it as ``usage``."""
        return None

    # --------------------------------------------------------------------------------- derived facts
    def require(self, capability: str, metric: str, why: str) -> None:
        """Raise :class:`JudgeCapabilityError` unless this judge has ``capability``.

        >>> from mmjudge.judges import load_judge
        >>> judge = load_judge("dummy", teacher_forcing=False)
        >>> judge.require("teacher_forcing", "FLEUR", "it reads digits at forced positions")
        Traceback (most recent call last):
        mmjudge.judges.base.JudgeCapabilityError: FLEUR needs a judge with teacher_forcing (it reads digits at
        forced positions), but the 'dummy' backend has none.
        """
        if self.capabilities.missing([capability]):
            raise JudgeCapabilityError(
                f"{metric} needs a judge with {capability} ({why}), but the {self.backend!r} backend has none."
            )

    def require_images(self, metric: str, what: str) -> None:
        """Raise :class:`JudgeCapabilityError` unless this judge sees images: ``sees_images`` belongs to the
        model (a text-only one behind a backend that could show images), so the message names the judge.

        >>> from mmjudge.judges import load_judge
        >>> load_judge("dummy", sees_images=False).require_images("FLEUR", "rates a caption against its image")
        Traceback (most recent call last):
        mmjudge.judges.base.JudgeCapabilityError: FLEUR rates a caption against its image, and the judge dummy:dummy
        cannot see images (a text-only model); use a vision-language judge.
        """
        if not self.capabilities.sees_images:
            raise JudgeCapabilityError(
                f"{metric} {what}, and the judge {self.describe()} cannot see images (a text-only model); "
                "use a vision-language judge."
            )

    def signature_fields(self) -> dict[str, Any]:
        """The public part of :meth:`identity`, in a result's signature: ``judge`` (backend:model),
        ``revision`` and ``dtype`` where they apply (a backend may add the settings that change its answers).
        Never a local path (local folders appear as a fingerprint)."""
        ident = self.identity()
        out: dict[str, Any] = {"judge": f"{self.backend}:{ident.get('model', '')}".rstrip(":")}
        for key in ("revision", "dtype"):
            if ident.get(key):
                out[key] = ident[key]
        return out

    def describe(self) -> str:
        """The judge's name in messages, from :meth:`signature_fields`: ``transformers:org/model@rev``."""
        sig = self.signature_fields()
        return sig["judge"] + (f"@{sig['revision']}" if sig.get("revision") else "")


class JudgeWrapper(Judge):
    """A judge around another (``inner``): it answers as ``inner`` does — same identity, capabilities,
    model facts and cost — unless it overrides a method. Of the backend's own attributes, those in
    :attr:`FORWARDED` are read from ``inner`` (so callers never reach through ``.inner``); any other name
    is an ``AttributeError``, as on any object, never a silent pass-through."""

    # A backend's own facts that callers read through a wrapper: counters (the dummy's ``calls``, the local
    # backend's ``stats``, the API backend's ``usage``), what FLEUR's reference procedure and ``mmjudge
    # serve`` read of a local model (traces, token ids, tokenizer), and what the API backend settled on.
    FORWARDED: ClassVar[frozenset[str]] = frozenset(
        {"calls", "stats", "usage", "generate_trace", "choice_token_ids", "tokenizer"}
        | {"model_name", "endpoint", "servers", "prefill_mode", "mass_mode", "mode"}
    )

    def __init__(self, inner: Judge):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the wrapper lacks. "inner" itself is absent while unpickling: no recursion.
        if name in self.FORWARDED and "inner" in self.__dict__:
            return getattr(self.inner, name)
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r} (a judge wrapper passes on only the "
            f"judge protocol and {', '.join(sorted(self.FORWARDED))})"
        )

    @property
    def backend(self) -> str:  # type: ignore[override]
        return self.inner.backend

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        return self.inner.capabilities

    @property
    def model_type(self) -> str | None:  # type: ignore[override]
        return self.inner.model_type

    def identity(self) -> dict:
        return self.inner.identity()

    def signature_fields(self) -> dict[str, Any]:  # a backend may add fields: its own, not the default
        return self.inner.signature_fields()

    def rate(self, requests, progress=True, on_batch=None):
        return self.inner.rate(requests, progress=progress, on_batch=on_batch)

    def generate(self, requests, progress=True, on_batch=None):
        return self.inner.generate(requests, progress=progress, on_batch=on_batch)

    def generate_scored(self, requests, progress=True, on_batch=None):
        return self.inner.generate_scored(requests, progress=progress, on_batch=on_batch)

    def plan(self, requests):
        return self.inner.plan(requests)

    def usage_summary(self) -> str | None:
        return self.inner.usage_summary()

    def uncached(self) -> contextlib.AbstractContextManager[None]:
        return self.inner.uncached()

    def usage_report(self) -> dict[str, Any] | None:
        return self.inner.usage_report()


def innermost(judge: Judge) -> Judge:
    """The backend under every wrapper of ``judge`` (``judge`` itself when it wraps nothing).

    >>> from mmjudge.judges.dummy import DummyJudge
    >>> backend = DummyJudge()
    >>> innermost(JudgeWrapper(JudgeWrapper(backend))) is backend, innermost(backend) is backend
    (True, True)
    """
    while isinstance(judge, JudgeWrapper):
        judge = judge.inner
    return judge


def find_layer(judge: Judge | str | None, kind: type[Judge]) -> Judge | None:
    """The first layer of ``judge`` (itself, then each wrapper's ``inner``, down to the backend) that is a
    ``kind``, or ``None`` (also for a backend's name or ``None``): how the factory knows a judge is already
    cached or already split.

    >>> from mmjudge.judges.dummy import DummyJudge
    >>> backend = DummyJudge()
    >>> find_layer(JudgeWrapper(JudgeWrapper(backend)), DummyJudge) is backend
    True
    >>> find_layer("dummy", DummyJudge), find_layer(None, DummyJudge)
    (None, None)
    """
    layer: Judge | str | None = judge
    while layer is not None:
        if isinstance(layer, kind):
            return layer
        layer = layer.inner if isinstance(layer, JudgeWrapper) else None
    return None
