"""The judge interface every backend implements.

A judge answers two kinds of requests:

* :class:`RatingRequest` — a conversation (optionally with one image), an optional assistant prefix
  that is teacher-forced, and a list of rating strings (``"1".."5"``). The judge returns, from ONE
  forward pass, the probability the model puts on each rating token at the answer position
  (:class:`RatingResult`). No sampling, no generation.
* :class:`GenerationRequest` — the same conversation, answered greedily up to ``max_new_tokens``
  (used for explanations and for reference paths that need free-running decoding).

Backends implement :meth:`Judge._rate_batch` (and optionally :meth:`Judge._generate_batch`) for one
batch; :meth:`Judge.rate` / :meth:`Judge.generate` plan batches (grouped, sorted by length), show a
progress bar and hand each finished batch to an ``on_batch`` callback — which is how the cache
(:mod:`mmjudge.cache`) stores results as they arrive, so an interrupted run loses at most one batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from PIL import Image

logger = logging.getLogger(__name__)

CAPABILITIES = ("teacher_forcing", "full_distribution", "reads_prefix_steps", "can_generate")

# Below this much probability mass on the scale the model is probably not answering with a rating.
LOW_MASS_WARNING = 0.5

BatchCallback = Callable[[Sequence[int], list], None]


@dataclass(frozen=True)
class Turn:
    """One chat turn. ``role`` is ``"user"`` or ``"assistant"``."""

    role: str
    text: str


@dataclass
class RatingRequest:
    """Ask for the probability of each rating at the position after ``answer_prefix``.

    Attributes:
        turns: the conversation; the image (if any) belongs to the first user turn, placed before
            its text.
        image: a PIL image or ``None`` for text-only requests.
        choices: rating strings, each must be a single token of the judge's vocabulary.
        answer_prefix: assistant text already "emitted" (teacher-forced) before the rating position.
        group: a label (e.g. the criterion) used to batch similar prompts together.
        conversation: a named prompt format of :mod:`mmjudge.judges.conversations` (e.g. ``"llava_v1"``)
            used instead of the processor's chat template; ``None`` (default) = the chat template.
        read_prefix: also return the distributions at every token boundary *inside* ``answer_prefix``
            (:attr:`RatingResult.steps`), from the same forward pass: a caller that expects the model to
            print the prefix can check it and read several positions at once. Backends that cannot
            (``Judge.reads_prefix_steps`` is ``False``) leave ``steps`` as ``None``.
        image_digest: sha256 of the image's decoded pixels (:func:`image_digest`); computed here when
            not given. A caller that sends one image in many requests computes it once and passes it.
    """

    turns: Sequence[Turn]
    image: Optional[Image.Image] = None
    choices: Sequence[str] = ("1", "2", "3", "4", "5")
    answer_prefix: str = ""
    group: str = ""
    conversation: Optional[str] = None
    read_prefix: bool = False
    image_digest: Optional[str] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.image is None:
            if self.image_digest is not None:
                raise ValueError("RatingRequest: `image_digest` was given without an image.")
        elif self.image_digest is None:
            self.image_digest = image_digest(self.image)

    def payload(self) -> dict:
        """Everything that determines the answer, as JSON-able data (for cache keys)."""
        return {
            "turns": [[t.role, t.text] for t in self.turns],
            "image": self.image_digest or "",
            "choices": list(self.choices),
            "answer_prefix": self.answer_prefix,
            # Only when set, so the keys of requests that use the chat template stay what they were.
            **({"conversation": self.conversation} if self.conversation is not None else {}),
            **({"read_prefix": True} if self.read_prefix else {}),
        }

    def length(self) -> int:
        return sum(len(t.text) for t in self.turns) + len(self.answer_prefix)


@dataclass
class GenerationRequest(RatingRequest):
    """Greedy continuation of the conversation, at most ``max_new_tokens`` tokens."""

    max_new_tokens: int = 128

    def payload(self) -> dict:
        data = super().payload()
        data.pop("choices")
        data["max_new_tokens"] = self.max_new_tokens
        return data


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
        mass_exact: ``True`` when ``raw`` comes from the full distribution; ``False`` when the judge
            only sees the top-k tokens (chat APIs): ratings outside the top k count as 0, so
            :attr:`mass` is a lower bound of the true mass.
    """

    raw: list[float]
    greedy: str = ""
    steps: Optional[list["PrefixStep"]] = None
    mass_exact: bool = True

    @property
    def mass(self) -> float:
        """Total probability the model put on the scale (a lower bound when ``mass_exact`` is False)."""
        return float(sum(self.raw))

    @property
    def probs(self) -> list[float]:
        """``raw`` renormalised over the scale (uniform if the model put no mass on it at all)."""
        total = self.mass
        if total <= 0:
            return [1.0 / len(self.raw)] * len(self.raw)
        return [x / total for x in self.raw]

    def to_json(self) -> dict:
        data: dict[str, Any] = {"raw": self.raw, "greedy": self.greedy}
        if not self.mass_exact:
            data["mass_exact"] = False
        if self.steps is not None:
            data["steps"] = [[step.offset, step.raw, step.greedy] for step in self.steps]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RatingResult":
        steps = data.get("steps")
        return cls(
            raw=[float(x) for x in data["raw"]],
            greedy=str(data.get("greedy", "")),
            steps=None if steps is None else [PrefixStep(int(o), [float(x) for x in r], str(g)) for o, r, g in steps],
            mass_exact=bool(data.get("mass_exact", True)),
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


def warn_low_mass(results: Sequence["RatingResult"], source: str, threshold: float = LOW_MASS_WARNING) -> None:
    """Warn when the judge put little probability on the rating scale: it is probably not answering
    in the expected format, and the renormalised distribution rests on a small remainder.

    Only exact masses count: a top-k judge's mass is a lower bound (a rating outside the top k reads
    as 0), so a small value there says nothing certain and is not warned about."""
    exact = [r.mass for r in results if r.mass_exact]
    low = [m for m in exact if m < threshold]
    if low:
        warnings.warn(
            f"{source}: the judge put under {threshold:.0%} of its probability on the rating scale in "
            f"{len(low)} of {len(exact)} ratings (lowest {min(low):.3f}), so it may not answer in the prompt's "
            "format. Check the judge model and prompt set (a chat/instruct model is expected); the per-criterion "
            "`_mass` outputs show which items are affected.",
            stacklevel=3,
        )


def image_digest(image: Image.Image) -> str:
    h = hashlib.sha256()
    h.update(f"{image.mode}|{image.size}|".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def request_key(identity: Mapping[str, Any], kind: str, request: RatingRequest) -> str:
    """sha256 over the judge's identity, the request kind and everything in the request."""
    blob = json.dumps({"judge": identity, "kind": kind, "request": request.payload()}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def plan_batches(requests: Sequence[RatingRequest], batch_size: int) -> list[list[int]]:
    """Indices of ``requests`` in batches of at most ``batch_size``: grouped by (group, has image),
    then sorted by length so a batch pads little. Deterministic for the same input."""
    if batch_size < 1:
        raise ValueError(f"Expected argument `batch_size` to be a positive integer, but got {batch_size}.")
    order = sorted(
        range(len(requests)),
        key=lambda i: (requests[i].group, requests[i].image is None, requests[i].length(), i),
    )
    batches: list[list[int]] = []
    for i in order:
        same_kind = batches and _batch_kind(requests[batches[-1][0]]) == _batch_kind(requests[i])
        if same_kind and len(batches[-1]) < batch_size:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def _batch_kind(request: RatingRequest) -> tuple:
    # A batch never mixes text-only and image requests: processors want all or none with images.
    return (request.group, request.image is None)


class JudgeCapabilityError(ValueError):
    """A metric needs something the judge backend cannot do (e.g. teacher forcing through a chat API)."""


class Judge(ABC):
    """Base class of judge backends. Subclasses set :attr:`backend` and implement
    :meth:`identity` and :meth:`_rate_batch`.

    Capabilities are class attributes that metrics check before they build requests
    (:meth:`require`): a metric that needs what a judge lacks says so in one sentence, or takes its
    documented fallback.

    * ``teacher_forcing`` — the assistant's answer can be forced to start with ``answer_prefix`` (a local
      model can; OpenAI's chat API cannot; vLLM/SGLang can through ``continue_final_message``). Without
      it the backend reads the first rating the model generates.
    * ``full_distribution`` — every token's probability is available; ``False`` for top-k APIs, whose
      results carry ``mass_exact=False``.
    * ``reads_prefix_steps`` — ``read_prefix`` requests get the distributions inside the prefix.
    * ``can_generate`` — free-running greedy generation (explanations, FLEUR's fallback).

    >>> from mmjudge.judges import load_judge
    >>> from mmjudge.judges.base import RatingRequest, Turn
    >>> judge = load_judge("dummy")
    >>> [r] = judge.rate([RatingRequest(turns=[Turn("user", "Rate this: a dog.")])], progress=False)
    >>> len(r.probs), round(sum(r.probs), 6)
    (5, 1.0)
    """

    backend: str = "base"
    batch_size: int = 8
    teacher_forcing: bool = True
    full_distribution: bool = True
    reads_prefix_steps: bool = False
    can_generate: bool = True
    # The judge model's architecture (``config.model_type``, e.g. "llava") when known: metrics pick a
    # conversation format from it (FLEUR prompts LLaVA-1.5 in its original format).
    model_type: Optional[str] = None

    def require(self, capability: str, metric: str, why: str) -> None:
        """Raise :class:`JudgeCapabilityError` unless this judge has ``capability``.

        >>> from mmjudge.judges import load_judge
        >>> judge = load_judge("dummy", teacher_forcing=False)
        >>> judge.require("teacher_forcing", "FLEUR", "it reads digits at forced positions")
        Traceback (most recent call last):
        mmjudge.judges.base.JudgeCapabilityError: FLEUR needs a judge with teacher_forcing (it reads digits at forced positions), but the 'dummy' backend has none.
        """
        if not getattr(self, capability):
            raise JudgeCapabilityError(
                f"{metric} needs a judge with {capability} ({why}), but the {self.backend!r} backend has none."
            )

    def signature_fields(self) -> dict[str, Any]:
        """The judge's part of a result signature: ``judge`` (backend:model), ``revision`` and
        ``dtype`` where they apply. Never a local path (local folders appear as a fingerprint)."""
        ident = self.identity()
        fields: dict[str, Any] = {"judge": f"{self.backend}:{ident.get('model', '')}".rstrip(":")}
        for key in ("revision", "dtype"):
            if ident.get(key):
                fields[key] = ident[key]
        return fields

    @abstractmethod
    def identity(self) -> dict:
        """What determines this judge's outputs (backend, model id, revision, dtype, …), JSON-able.
        Used in cache keys and signatures; must not include speed-only knobs like ``batch_size``."""

    @abstractmethod
    def _rate_batch(self, requests: Sequence[RatingRequest]) -> list[RatingResult]:
        """Rate one batch (already grouped and sorted)."""

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        raise NotImplementedError(f"The {self.backend!r} judge cannot generate text.")

    def describe(self) -> str:
        """Short human-readable name, e.g. ``transformers:org/model@rev``."""
        fields = self.signature_fields()
        return fields["judge"] + (f"@{fields['revision']}" if fields.get("revision") else "")

    def rate(
        self,
        requests: Sequence[RatingRequest],
        progress: bool = True,
        on_batch: Optional[BatchCallback] = None,
    ) -> list[RatingResult]:
        """Rate every request; results come back in the order of ``requests``."""
        return self._run(requests, self._rate_batch, progress, on_batch, "rating")

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: bool = True,
        on_batch: Optional[BatchCallback] = None,
    ) -> list[str]:
        """Greedy generation for every request, in the order of ``requests``."""
        return self._run(requests, self._generate_batch, progress, on_batch, "generating")

    def _plan(self, requests: Sequence[RatingRequest]) -> list[list[int]]:
        """Batches of request indices (a backend may group differently, e.g. to share image prefixes)."""
        return plan_batches(requests, self.batch_size)

    def _run(self, requests, batch_fn, progress, on_batch, label, prepare=None):
        """Run ``batch_fn`` over the planned batches. With ``prepare`` (CPU-side work such as image
        preprocessing and tokenisation), batch k+1 is prepared in a background thread while batch k runs
        (``batch_fn`` then receives what ``prepare`` returned)."""
        from mmjudge import distributed

        if distributed.is_distributed():
            # Under torchrun / accelerate launch: each process answers its share, all get every answer.
            return distributed.run_split(self, requests, batch_fn, progress, on_batch, label, prepare)
        return self._run_local(requests, batch_fn, progress, on_batch, label, prepare)

    def _run_local(self, requests, batch_fn, progress, on_batch, label, prepare=None):
        out: list = [None] * len(requests)
        batches = self._plan(requests) if requests else []
        for batch, answers in _answer_batches(batches, requests, batch_fn, prepare, progress, len(requests),
                                              f"{self.backend} judge {label}"):  # fmt: skip
            if len(answers) != len(batch):
                raise RuntimeError(f"{type(self).__name__} returned {len(answers)} answers for {len(batch)} requests.")
            for i, answer in zip(batch, answers):
                out[i] = answer
            if on_batch is not None:
                on_batch(batch, answers)
        return out


def _answer_batches(batches, requests, batch_fn, prepare, progress, total, desc):
    """Yield ``(batch, answers)``; with ``prepare``, the next batch is prepared while this one runs. The
    progress bar counts a batch once it is answered (not when its preparation starts, which with
    ``prepare`` is one batch ahead)."""
    import contextlib

    with contextlib.ExitStack() as stack:
        bar = None
        if progress and len(batches) > 1:
            from mmjudge.progress import progress_bar

            bar = stack.enter_context(progress_bar(total=total, desc=desc, unit="req"))
        for batch, answers in _answered(batches, requests, batch_fn, prepare):
            if bar is not None:
                bar.update(len(batch))
            yield batch, answers


def _answered(batches, requests, batch_fn, prepare):
    if prepare is None:
        for batch in batches:
            yield batch, batch_fn([requests[i] for i in batch])
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mmjudge-prepare") as pool:
        pending = None
        for batch in batches:
            future = pool.submit(prepare, [requests[i] for i in batch])
            if pending is not None:
                yield pending[0], batch_fn(pending[1].result())
            pending = (batch, future)
        if pending is not None:
            yield pending[0], batch_fn(pending[1].result())


def progress_batches(batches: list[list[int]], total: int, enabled: bool, desc: str) -> Iterator[list[int]]:
    """Yield batches of indices while a tqdm bar counts their items (shown for more than one batch)."""
    if not enabled or len(batches) <= 1:
        yield from batches
        return
    from mmjudge.progress import progress_bar

    with progress_bar(total=total, desc=desc, unit="req") as bar:
        for batch in batches:
            yield batch
            bar.update(len(batch))
