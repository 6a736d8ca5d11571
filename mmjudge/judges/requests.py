"""What a judge is asked and what it answers: the request and result values every backend, wrapper and
cache shares, beside the judge protocol (:mod:`mmjudge.judges.base`).

* :class:`RatingRequest` → :class:`RatingResult`: the probability of each rating token at the answer
  position, from one forward pass (with :class:`PrefixStep` s inside a read prefix);
* :class:`GenerationRequest` → text, greedily; :class:`ScoredGenerationRequest` → :class:`ScoredText`
  (the text with the most probable tokens at each generated position);
* :func:`request_key`: the cache key of a request for a judge's identity.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from mmjudge.images import image_digest


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
    """Greedy continuation of the conversation, at most ``max_new_tokens`` tokens; generation also ends once
    the text ends with one of the ``stop`` strings (kept in the text), as LLaVA's scripts stop at their
    conversation separator (``"###"`` in ``llava_v0``)."""

    max_new_tokens: int = 128
    stop: tuple[str, ...] = ()

    def payload(self) -> dict:
        data = self._conversation_payload()
        data["max_new_tokens"] = self.max_new_tokens
        if self.stop:  # only when set: the keys of requests without stop strings stay what they were
            data["stop"] = list(self.stop)
        return data


@dataclass
class ScoredGenerationRequest(_Conversation):
    """Greedy continuation of the conversation (at most ``max_new_tokens`` tokens) that also returns, at
    every generated position, the ``top_logprobs`` most probable tokens and their probabilities — what a
    chat API's ``logprobs`` give. Prompt-based judges whose score is a number written somewhere in a
    reasoned answer (G-VEval's ``$85$``, FLEUR's ``0.85`` on an API) read it from here."""

    max_new_tokens: int = 128
    top_logprobs: int = 20
    stop: tuple[str, ...] = ()
    # Strings whose own token (the last token of the tokenizer's encoding of the string alone: how reference
    # code such as EXPERT's looks a digit's id up) is followed at every generated position: each
    # ScoredToken then carries their exact probabilities (`probs`) and which of them it is (`index`).
    token_probs: tuple[str, ...] = ()

    def payload(self) -> dict:
        data = self._conversation_payload()
        data["max_new_tokens"] = self.max_new_tokens
        data["top_logprobs"] = self.top_logprobs
        if self.stop:  # only when set, as for GenerationRequest
            data["stop"] = list(self.stop)
        if self.token_probs:
            data["token_probs"] = list(self.token_probs)
        return data


@dataclass
class ScoredToken:
    """One generated token: its text and the listed alternatives at its position, ``(text, probability)``
    pairs, most probable first (the generated token among them when it was listed). For a request with
    ``token_probs``: ``probs``, the full-vocabulary probability of each of those strings' tokens at this
    position, and ``index``, which of them this token is (``None``: none)."""

    token: str
    top: list[tuple[str, float]]
    probs: list[float] | None = None
    index: int | None = None


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
        tokens = []
        for t in self.tokens:  # [token, top] or, with token_probs, [token, top, probs, index]
            tokens.append([t.token, [[a, p] for a, p in t.top]] + ([t.probs, t.index] if t.probs is not None else []))
        return {"text": self.text, "tokens": tokens}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoredText:
        tokens = []
        for tok, top, *tracked in data["tokens"]:
            probs, index = (tracked + [None, None])[:2]
            tokens.append(
                ScoredToken(
                    str(tok),
                    [(str(a), float(p)) for a, p in top],
                    [float(p) for p in probs] if probs is not None else None,
                    int(index) if index is not None else None,
                )
            )
        return cls(text=str(data["text"]), tokens=tokens)


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
