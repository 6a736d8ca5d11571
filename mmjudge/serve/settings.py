"""What ``mmjudge serve`` allows: its limits and its API key, checked once, before the model loads.

>>> ServeSettings(max_tokens=0, options=True)
Traceback (most recent call last):
ValueError: --max-tokens must be a positive integer, but got 0.
>>> ServeSettings(header_timeout=float("nan"))
Traceback (most recent call last):
ValueError: Expected header_timeout to be above 0 seconds, but got nan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TOKENS_LIMIT = 1024
DEFAULT_REQUEST_TIMEOUT = 300.0
API_KEY_ENV = "MMJUDGE_API_KEY"
# A VLM judge never needs more: 6000x6000 (8000x4500 at 16:9) holds a 24-megapixel camera's pictures whole
# and decodes into 108 MB of RGB, and the judges' processors shrink it anyway (transformers' Qwen2-VL
# processor to about 1 megapixel by default, Idefics3's to a long side of 1456). PIL's own limit, 89
# megapixels, let one request take 268 MB of RGB (after 358 MB of RGBA), times the requests decoding at once.
DEFAULT_MAX_IMAGE_PIXELS = 36_000_000


@dataclass
class ServeSettings:
    """What a server allows: ``api_key`` (``None``: no key), ``max_tokens`` (the largest a request may ask
    for), ``request_timeout`` (seconds), ``max_body_bytes``, ``max_logprobs``, and what holds a hostile
    client off: ``max_prompt_chars`` (a request's text, refused before any tokenising), ``max_image_pixels``
    (a request's image, refused from its header, before its pixels are decoded), ``header_timeout``
    and ``body_timeout`` (seconds a connection has to send a request's headers, then its body),
    ``max_connections`` (in all) and ``max_connections_per_client`` (from one address). Checked on creation
    (``ValueError``); ``options=True``: the errors name ``mmjudge serve``'s options (``--max-tokens``)."""

    api_key: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS_LIMIT
    max_logprobs: int = 20
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_body_bytes: int = MAX_BODY_BYTES
    max_prompt_chars: int = 1_000_000
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    max_connections: int = 512
    max_connections_per_client: int = 32
    options: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError(f"The API key is empty: give a non-empty --api-key (or {API_KEY_ENV}).")
        counts = ("max_tokens", "max_logprobs", "max_body_bytes", "max_prompt_chars", "max_image_pixels")
        for name in (*counts, "max_connections", "max_connections_per_client"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self._refuse(name, "a positive integer", value)
        for name in ("request_timeout", "header_timeout", "body_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                self._refuse(name, "above 0 seconds", value)

    def _refuse(self, name: str, rule: str, value: Any) -> None:
        if self.options:
            raise ValueError(f"--{name.replace('_', '-')} must be {rule}, but got {value!r}.")
        raise ValueError(f"Expected {name} to be {rule}, but got {value!r}.")
