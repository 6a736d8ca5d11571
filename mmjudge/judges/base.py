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
are :class:`JudgeWrapper` s around any judge.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from PIL import Image

from mmjudge.images import image_digest

logger = logging.getLogger(__name__)

BatchCallback = Callable[[Sequence[int], list], None]
"""``on_batch(indices, answers)``: the positions (in the call's ``requests``) of one finished batch and their
answers."""


@dataclass(frozen=True)
class Turn:
    """One chat turn. ``role`` is ``"user"`` or ``"assistant"``."""

    role: str
    text: str


@dataclass
class _Conversation:
    """What both kinds of request carry: the conversation, its image, a forced answer start."""

    turns: Sequence[Turn]
    image: Image.Image | None = None
    answer_prefix: str = ""
    group: str = ""
    conversation: str | None = None
    image_digest: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.image is None:
            if self.image_digest is not None:
                raise ValueError(f"{type(self).__name__}: `image_digest` was given without an image.")
        elif self.image_digest is None:
            self.image_digest = image_digest(self.image)

    def _conversation_payload(self, **between: Any) -> dict:
        # The key order is part of the contract: the dummy judge hashes this dict's text, so its numbers
        # (and the doctests that print them) depend on it. `between` goes after the image.
        return {
            "turns": [[t.role, t.text] for t in self.turns],
            "image": self.image_digest or "",
            **between,
            "answer_prefix": self.answer_prefix,
            # Only when set, so the keys of requests that use the chat template stay what they were.
            **({"conversation": self.conversation} if self.conversation is not None else {}),
        }

    def length(self) -> int:
        return sum(len(t.text) for t in self.turns) + len(self.answer_prefix)


@dataclass
class RatingRequest(_Conversation):
    """Ask for the probability of each rating at the position after ``answer_prefix``.

    Attributes:
        turns: the conversation; the image (if any) belongs to the first user turn, placed before
            its text.
        image: a PIL image or ``None`` for text-only requests.
        answer_prefix: assistant text already "emitted" (teacher-forced) before the rating position.
        group: a label (e.g. the criterion) used to batch similar prompts together.
        conversation: a named prompt format of :mod:`mmjudge.judges.conversations` (e.g. ``"llava_v1"``)
            used instead of the processor's chat template; ``None`` (default) = the chat template.
        image_digest: sha256 of the image's decoded pixels (:func:`mmjudge.images.image_digest`); computed
            here when not given. A caller that sends one image in many requests computes it once.
        choices: rating strings, each must be a single token of the judge's vocabulary.
        read_prefix: also return the distributions at every token boundary *inside* ``answer_prefix``
            (:attr:`RatingResult.steps`), from the same forward pass: a caller that expects the model to
            print the prefix can check it and read several positions at once. Judges without
            ``capabilities.reads_prefix_steps`` leave ``steps`` as ``None``.
    """

    choices: Sequence[str] = ("1", "2", "3", "4", "5")
    read_prefix: bool = False

    def payload(self) -> dict:
        """Everything that determines the answer, as JSON-able data (for cache keys)."""
        data = self._conversation_payload(choices=list(self.choices))
        if self.read_prefix:
            data["read_prefix"] = True
        return data

    def follow_up(self, answer: str, question: str, max_new_tokens: int) -> GenerationRequest:
        """This conversation continued, to be generated: the assistant answered ``answer`` after the prefix,
        the user asks ``question`` (the "Why?" of an explanation); the same image, group and format."""
        turns = [*self.turns, Turn("assistant", self.answer_prefix + answer), Turn("user", question)]
        same = dict(image=self.image, group=self.group, conversation=self.conversation, image_digest=self.image_digest)
        return GenerationRequest(turns, max_new_tokens=max_new_tokens, **same)


@dataclass
class GenerationRequest(_Conversation):
    """Greedy continuation of the conversation, at most ``max_new_tokens`` tokens."""

    max_new_tokens: int = 128

    def payload(self) -> dict:
        data = self._conversation_payload()
        data["max_new_tokens"] = self.max_new_tokens
        return data


@dataclass
class ScoredGenerationRequest(_Conversation):
    """Greedy continuation of the conversation (at most ``max_new_tokens`` tokens) that also returns, at
    every generated position, the ``top_logprobs`` most probable tokens and their probabilities — what a
    chat API's ``logprobs`` give. Prompt-based judges whose score is a number written somewhere in a
    reasoned answer (G-VEval's ``$85$``, FLEUR's ``0.85`` on an API) read it from here."""

    max_new_tokens: int = 128
    top_logprobs: int = 20

    def payload(self) -> dict:
        data = self._conversation_payload()
        data["max_new_tokens"] = self.max_new_tokens
        data["top_logprobs"] = self.top_logprobs
        return data


@dataclass
class ScoredToken:
    """One generated token: its text and the listed alternatives at its position, ``(text, probability)``
    pairs, most probable first (the generated token among them when it was listed)."""

    token: str
    top: list[tuple[str, float]]


@dataclass
class ScoredText:
    """The answer to a :class:`ScoredGenerationRequest`: the generated ``text``, and ``tokens`` whose texts
    concatenate to it. ``error``: why there is no answer (a request that failed after its retries); such
    an answer is never cached.

    >>> answer = ScoredText("0.8", [ScoredToken("0", [("0", 0.9)]), ScoredToken(".", [(".", 1.0)]),
    ...                             ScoredToken("8", [("8", 0.6), ("7", 0.3)])])
    >>> ScoredText.from_json(answer.to_json()) == answer
    True
    """

    text: str
    tokens: list[ScoredToken]
    error: str | None = None

    def to_json(self) -> dict:
        return {"text": self.text, "tokens": [[t.token, [[a, p] for a, p in t.top]] for t in self.tokens]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoredText:
        return cls(
            text=str(data["text"]),
            tokens=[ScoredToken(str(tok), [(str(a), float(p)) for a, p in top]) for tok, top in data["tokens"]],
        )


@dataclass
class RatingResult:
    """The judge's answer to one :class:`RatingRequest`.

    Attributes:
        raw: probability of each choice under the model's full-vocabulary softmax (summed over the
            token variants of that choice, e.g. ``"3"`` and ``" 3"``).
        greedy: the single most probable token at that position, decoded (to check the model would
            really have answered with a rating).
        steps: with ``read_prefix``, one :class:`PrefixStep` per token of ``answer_prefix`` (the
            distribution *before* that token), in order; ``[]`` when the prefix's tokens cannot be
            aligned with its characters, ``None`` when not asked for or not supported.
        exact_mass: ``True`` when ``raw`` is exact (the full distribution, or exact choice probabilities:
            :attr:`Capabilities.exact_mass`); ``False`` when the judge only sees the top-k tokens (chat
            APIs): ratings outside the top k count as 0, so :attr:`mass` is a lower bound of the true mass.
        error: why the judge gave no answer (a request that failed after its retries, a malformed
            reply); ``raw`` is then all zeros. Such a result is never cached.
    """

    raw: list[float]
    greedy: str = ""
    steps: list[PrefixStep] | None = None
    exact_mass: bool = True
    error: str | None = None

    @property
    def mass(self) -> float:
        """Total probability the model put on the scale (a lower bound when ``exact_mass`` is False)."""
        return float(sum(self.raw))

    @property
    def probs(self) -> list[float]:
        """``raw`` renormalised over the scale; NaN when the judge put no mass on it at all (it gave no
        rating: there is no distribution to renormalise, and inventing one would make a score)."""
        total = self.mass
        if not total > 0:
            return [math.nan] * len(self.raw)
        return [x / total for x in self.raw]

    def to_json(self) -> dict:
        data: dict[str, Any] = {"raw": self.raw, "greedy": self.greedy}
        if not self.exact_mass:
            data["mass_exact"] = False  # the stored key keeps its first name: cache files written before still read
        if self.steps is not None:
            data["steps"] = [[step.offset, step.raw, step.greedy] for step in self.steps]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RatingResult:
        steps = data.get("steps")
        return cls(
            raw=[float(x) for x in data["raw"]],
            greedy=str(data.get("greedy", "")),
            steps=None if steps is None else [PrefixStep(int(o), [float(x) for x in r], str(g)) for o, r, g in steps],
            exact_mass=bool(data.get("mass_exact", True)),
        )


@dataclass
class PrefixStep:
    """The judge's distribution at a token boundary inside the answer prefix.

    Attributes:
        offset: characters of ``answer_prefix`` before this position (0 = the start of the answer).
        raw: probability of each choice there (as :attr:`RatingResult.raw`).
        greedy: the most probable token there, decoded.
    """

    offset: int
    raw: list[float]
    greedy: str


def request_key(identity: Mapping[str, Any], kind: str, request: RatingRequest) -> str:
    """sha256 over the judge's identity, the request kind and everything in the request."""
    blob = json.dumps({"judge": identity, "kind": kind, "request": request.payload()}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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
