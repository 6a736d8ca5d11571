"""Sentence-averaged similarity for long captions: the ``_avg`` rows of VELA's Table 1 (CLIP-S_avg,
PAC-S_avg, PAC-S++_avg).

A CLIP text tower reads 77 tokens, far fewer than a 100-word caption. The ``_avg`` variants split the
caption into sentences, score each sentence against the image with the metric's own formula, and take the
mean. The VELA paper's Japanese version (``seeds/002``) lists these rows but defers their definition to an
appendix it does not contain; the procedure here is the one the VELA authors' group ships in CaptionEvalKit
(``capevalkit/metrics/pacscore_metric.py``, ``--sentence-average``): split after ``.``, ``!`` or ``?``
followed by whitespace, and at line breaks; drop empty pieces; a caption with no such boundary is one
sentence; every sentence gets the metric's usual prefix; the caption's score is the arithmetic mean.

>>> split_sentences("A dog runs. It is brown!  Is it happy?\\nYes")
['A dog runs.', 'It is brown!', 'Is it happy?', 'Yes']
>>> split_sentences("3.5 m tall, e.g.a tree")  # no whitespace after the dots: one sentence
['3.5 m tall, e.g.a tree']
>>> mean_per_item([[1.0, 0.0], [0.5]])
[0.5, 0.5]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SPLIT_VERSION = "capevalkit-sentences@1"
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see the module's description); never empty."""
    parts = [part.strip() for part in _BOUNDARY.split(text) if part.strip()]
    return parts or [text]


def mean_per_item(scores: Sequence[Sequence[float]]) -> list[float]:
    """The arithmetic mean of each item's sentence scores."""
    return [float(sum(s) / len(s)) for s in scores]
