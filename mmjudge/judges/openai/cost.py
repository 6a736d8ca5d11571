"""What the ``openai`` judge costs: the tokens it paid for (:class:`Usage`), what a run would cost before it
is sent (:class:`Estimate`), and the dated list prices both are priced with (``prices.toml``: data,
not code; ``price_table=`` names another file of the same layout).

Prompt tokens of a request that is not sent yet are estimated: text with ``tiktoken`` when it is installed
and has the model's encoding, else one token per 4 UTF-8 bytes (OpenAI's rule of thumb for English), plus
3 tokens per message and 3 for the answer (OpenAI's cookbook "How to count tokens with tiktoken"); each
image the way the provider counts it (:func:`image_tokens`, the formula of OpenAI's "Images and vision"
guide, "Calculating costs"; ``detail`` is not sent, so ``auto``, counted as ``high``, the most it can be).
Completion tokens are the most the request allows (``max_tokens``). Batch prices are half the synchronous.

>>> table = load_prices()
>>> name, price = table.find("gpt-4o-2024-08-06")
>>> image_tokens(1024, 1024, price), image_tokens(2048, 4096, price), image_tokens(512, 512, price)
(765, 1105, 255)
>>> image_tokens(1024, 1024, table.find("gpt-4.1-mini")[1]), image_tokens(1800, 2400, table.find("gpt-4.1-nano")[1])
(1659, 3572)
>>> price.cost(1_000_000, 100_000), price.cost(1_000_000, 100_000, batch=True)
(3.5, 1.75)
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.judges.requests import GenerationRequest, RatingRequest, ScoredGenerationRequest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PRICES_FILE = Path(__file__).with_name("prices.toml")
TOKENS_PER_MESSAGE = 3  # OpenAI cookbook: every message is wrapped in <|start|>{role}\n{content}<|end|>\n
TOKENS_PER_REPLY = 3  # every reply is primed with <|start|>assistant<|message|>
BYTES_PER_TOKEN = 4  # OpenAI: "one token generally corresponds to ~4 characters of text for common English text"


@dataclass(frozen=True)
class Price:
    """One model's list prices (US$ per million tokens) and how it counts an image."""

    input: float
    output: float
    batch_input: float
    batch_output: float
    image: Mapping[str, float] = field(default_factory=dict)

    def cost(self, prompt_tokens: int, completion_tokens: int, batch: bool = False) -> float:
        """US$ for these tokens, synchronously or through the Batch API."""
        rates = (self.batch_input, self.batch_output) if batch else (self.input, self.output)
        return round((prompt_tokens * rates[0] + completion_tokens * rates[1]) / 1e6, 10)


@dataclass(frozen=True)
class PriceTable:
    """A dated price table: ``as_of``, where the prices were read (``source``), the file, and the models."""

    as_of: str
    source: str
    path: str
    models: Mapping[str, Price]

    def find(self, model: str) -> tuple[str, Price] | None:
        """The model's entry: its own name, else the longest listed name it extends with a ``-`` suffix
        (``gpt-4.1-2025-04-14`` -> ``gpt-4.1``), else ``None``."""
        if model in self.models:
            return model, self.models[model]
        prefixes = [name for name in self.models if model.startswith(name + "-")]
        if not prefixes:
            return None
        name = max(prefixes, key=len)
        return name, self.models[name]

    def describe(self) -> str:
        where = "" if Path(self.path) == PRICES_FILE else f", {self.path}"
        return f"list prices as of {self.as_of}{where}"


@functools.lru_cache(maxsize=8)
def load_prices(path: str | os.PathLike | None = None) -> PriceTable:
    """The price table at ``path`` (default: the one shipped), checked; one line for a bad file."""
    where = Path(path) if path else PRICES_FILE
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
        models = {
            str(name): Price(
                float(entry["input"]),
                float(entry["output"]),
                float(entry["batch_input"]),
                float(entry["batch_output"]),
                {str(k): float(v) for k, v in dict(entry.get("image") or {}).items()},
            )
            for name, entry in dict(data["models"]).items()
        }
        return PriceTable(str(data["as_of"]), str(data.get("source", "")), str(where), models)
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"price_table {str(where)!r}: cannot read it as a price table ({type(err).__name__}: {err}); it needs "
            "`as_of` and [models.NAME] entries with input, output, batch_input, batch_output (see prices.toml)."
        ) from None


def image_tokens(width: int, height: int, price: Price | None) -> int:
    """Prompt tokens of one image of ``width`` × ``height`` pixels for a model counting images as ``price``
    says (OpenAI's "Images and vision" guide, "Calculating costs"; ``detail`` high, which ``auto`` may be).
    Without a formula (no price entry), the tile formula of GPT-4o."""
    image = dict(price.image) if price is not None else {"base": 85.0, "tile": 170.0}
    if "multiplier" in image:
        patches = _patches(width, height)
        return math.ceil(patches * image["multiplier"])
    w, h = float(width), float(height)
    if max(w, h) > 2048:  # fit inside 2048 x 2048
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:  # shortest side down to 768
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(round(w, 6) / 512) * math.ceil(round(h, 6) / 512)
    return int(image.get("base", 85) + image.get("tile", 170) * tiles)


def _patches(width: int, height: int, patch: int = 32, most: int = 1536) -> int:
    """32-px patches covering the image, scaled down to at most ``most`` patches (OpenAI's steps A-B)."""
    if math.ceil(width / patch) * math.ceil(height / patch) <= most:
        return math.ceil(width / patch) * math.ceil(height / patch)
    shrink = math.sqrt(patch * patch * most / (width * height))
    shrink *= min(
        math.floor(width * shrink / patch) / (width * shrink / patch),
        math.floor(height * shrink / patch) / (height * shrink / patch),
    )
    # (rounded first: the shrink makes one side a whole number of patches, which floating point misses)
    return min(most, math.ceil(round(width * shrink / patch, 6)) * math.ceil(round(height * shrink / patch, 6)))


@functools.lru_cache(maxsize=4)
def _encoding(model: str) -> Any:
    try:
        import tiktoken

        return tiktoken.encoding_for_model(model)
    except Exception:  # not installed, an unknown model, or its encoding file not downloadable here
        return None


def text_tokens(text: str, model: str = "") -> int:
    """Tokens of ``text``: ``tiktoken``'s count when it knows the model, else one per 4 UTF-8 bytes.

    >>> text_tokens("Rate this caption."), text_tokens("")
    (5, 0)
    """
    encoding = _encoding(model) if model else None
    if encoding is not None:
        return len(encoding.encode(text))
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


@dataclass
class Estimate:
    """What requests not sent yet would cost: their count, prompt tokens (images separately counted), and
    the most completion tokens they allow."""

    requests: int = 0
    prompt_tokens: int = 0
    image_tokens: int = 0
    completion_tokens: int = 0
    cached: int = 0  # requests the cache answers (free)

    def add(self, prompt_tokens: int, image_tokens: int, completion_tokens: int) -> None:
        self.requests += 1
        self.prompt_tokens += prompt_tokens + image_tokens
        self.image_tokens += image_tokens
        self.completion_tokens += completion_tokens

    def cost(self, price: Price | None, batch: bool = False) -> float | None:
        return None if price is None else price.cost(self.prompt_tokens, self.completion_tokens, batch)


def estimate_call(
    estimate: Estimate,
    messages: list[dict],
    image_size: tuple[int, int] | None,
    max_tokens: int,
    model: str,
    price: Price | None,
) -> None:
    """Add one chat call to ``estimate``: its messages' text, its image (if any) and ``max_tokens``."""
    text = 0
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text += TOKENS_PER_MESSAGE + sum(
            text_tokens(str(p.get("text", "")), model) for p in parts if p.get("type") == "text"
        )
    images = image_tokens(*image_size, price) if image_size else 0
    estimate.add(text + TOKENS_PER_REPLY, images, int(max_tokens))


@dataclass
class Usage:
    """Tokens and requests paid for by this judge: synchronous and through the Batch API (billed at batch
    prices). Cache hits cost nothing and are not counted; nor are the one or two small requests that
    identify the server when the judge is built."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    failed: int = 0
    batch_requests: int = 0
    batch_prompt_tokens: int = 0
    batch_completion_tokens: int = 0
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, usage: Mapping[str, Any] | None, batch: bool = False) -> None:
        """Count one answered request and the tokens its ``usage`` reports (request threads call this)."""
        usage = usage if isinstance(usage, Mapping) else {}
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        with self._lock:
            self._add(prompt, completion, batch)

    def count_failure(self) -> None:
        with self._lock:
            self.failed += 1

    def _add(self, prompt: int, completion: int, batch: bool) -> None:
        if batch:
            self.batch_requests += 1
            self.batch_prompt_tokens += prompt
            self.batch_completion_tokens += completion
        else:
            self.requests += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def cost(self, price: Price | None) -> float | None:
        """US$ at list prices (synchronous tokens at sync prices, batch tokens at batch prices)."""
        if price is None:
            return None
        sync = price.cost(self.prompt_tokens, self.completion_tokens)
        return round(sync + price.cost(self.batch_prompt_tokens, self.batch_completion_tokens, batch=True), 10)

    def report(self, price: Price | None) -> dict[str, Any]:
        """JSON-able usage and cost (``cost_usd`` None when the model has no list price)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("_")}
        out["cost_usd"] = self.cost(price)
        return out


class BudgetError(ValueError):
    """Sending would cost more than ``max_cost`` allows: nothing was sent (one line from the CLI)."""


class CostMixin:
    """The ``openai`` judge's prices, estimates, budget and usage reports (it sets ``prices``, ``usage``,
    ``max_cost``, ``mode``, ``model_name``, ``prefill_mode`` and ``max_tokens``)."""

    prices: PriceTable
    usage: Usage
    max_cost: float | None
    mode: str
    model_name: str
    prefill_mode: str
    max_tokens: int

    def describe(self) -> str:  # the judge's own
        raise NotImplementedError

    def price(self) -> Any:
        """This model's entry in the price table, or ``None``."""
        found = self.prices.find(self.model_name)
        return found[1] if found else None

    def estimate(self, requests: Sequence[RatingRequest | GenerationRequest], into: Estimate | None = None) -> Estimate:
        """What sending ``requests`` would cost at most: prompt tokens (images as the provider counts them) and
        the completion tokens they allow (:mod:`~mmjudge.judges.openai.cost`). Nothing is encoded or sent."""
        estimate = into if into is not None else Estimate()
        price, continued = self.price(), self.prefill_mode == "continue"
        for request in requests:
            turns = [{"content": t.text} for t in request.turns]
            if isinstance(request, (GenerationRequest, ScoredGenerationRequest)):
                most = request.max_new_tokens
                prefix = continued and bool(request.answer_prefix) and isinstance(request, GenerationRequest)
            else:
                most, prefix = (1 if continued else self.max_tokens), continued
            if prefix:
                turns.append({"content": request.answer_prefix})
            size = request.image.size if request.image is not None else None
            estimate_call(estimate, turns, size, most, self.model_name, price)
        return estimate

    def check_budget(self, estimate: Estimate, option: str = "max_cost") -> None:
        """``BudgetError`` (nothing sent) when spending ``estimate`` would pass ``max_cost``. ``option``: how
        the message names the limit (``--max-cost`` from the command line, which checks a whole run's plan)."""
        if self.max_cost is None:
            return
        price = self.price()
        if price is None:
            table = "--set price_table=FILE" if option.startswith("--") else "price_table=FILE"
            raise BudgetError(
                f"{option}: {self.describe()} has no list price in {self.prices.path}, so its cost cannot be "
                f"bounded; pass {table} or drop {option}. Nothing was sent."
            )
        spent = self.usage.cost(price) or 0.0
        cost = estimate.cost(price, batch=self.mode == "batch") or 0.0
        if spent + cost > self.max_cost:
            after = f" after ${spent:.4f} spent" if spent else ""
            raise BudgetError(
                f"{estimate.requests} requests to {self.describe()} would cost about ${cost:.4f} (mode={self.mode}, "
                f"{self.prices.describe()}){after}, over {option} {self.max_cost:g}: nothing was sent."
            )

    def usage_report(self) -> dict[str, Any]:
        """Usage and cost as data (``cost_usd`` None for a model without a list price)."""
        return {"model": self.model_name, "mode": self.mode, **self.usage.report(self.price())}

    def usage_summary(self) -> str:
        """One line: requests, tokens and (for models with a known price) the cost in US$."""
        u = self.usage
        line = (
            f"{self.describe()}: {u.requests} requests, {u.prompt_tokens} prompt + {u.completion_tokens} "
            f"completion tokens, {u.retries} retries"
        )
        if u.batch_requests:
            line += (
                f"; batch: {u.batch_requests} requests, {u.batch_prompt_tokens} + {u.batch_completion_tokens} tokens"
            )
        if u.failed:
            line += f", {u.failed} failed (no score, not cached)"
        cost = u.cost(self.price())
        if cost is not None:
            line += f", about ${cost:.4f} at list prices"
        return line
