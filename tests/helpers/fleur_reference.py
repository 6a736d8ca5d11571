"""FLEUR's published procedure taken literally, for tests and benchmarks (never the metric's path).

Greedy ``generate`` keeping every step's distribution (:meth:`TransformersJudge.generate_trace`), the
first ``0.xy`` / ``1.0`` in the decoded text, and the digit probabilities at the generated digit
tokens. The metric's teacher-forced fast path must agree with it (``tests/metrics/test_fleur.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mmjudge.judges.base import Judge
from mmjudge.judges.requests import GenerationRequest
from mmjudge.metrics.fleur import DIGITS, parse_score, smooth_decimals, smooth_one


def reference_scores(judge: Judge, requests: Sequence[GenerationRequest]) -> list[dict]:
    """The published procedure, literally, for a ``transformers`` judge: greedy ``generate`` keeping
    each step's logits, find the first ``0.xy`` / ``1.0`` in the decoded text, and smooth with the
    full-vocabulary softmax at the generated digit tokens. One request at a time (no padding), uncached.

    Returns one dict per request: ``text``, ``score`` (NaN when no score was printed) and ``raw_score``.
    """
    # `generate_trace` is the local backend's own (uncached); a wrapper such as the cache passes it through.
    if not callable(getattr(judge, "generate_trace", None)):
        raise ValueError(f"reference_scores needs a transformers judge, but got the {judge.backend!r} backend.")
    digit_ids = judge.choice_token_ids(DIGITS)
    out = []
    for request in requests:
        trace = judge.generate_trace(request)
        pieces = trace.texts
        text = pieces[-1] if pieces else ""
        match = parse_score(text)
        if match is None:
            out.append({"text": text.strip(), "score": math.nan, "raw_score": math.nan})
            continue

        def digit_probs(char_pos: int, pieces=pieces, trace=trace) -> list[float]:
            step = next(k for k, piece in enumerate(pieces) if len(piece) > char_pos)  # token holding that char
            return [float(trace.probs[step][ids].sum()) for ids in digit_ids]

        if match.group("one"):
            score, number = smooth_one(digit_probs(match.start())), 1.0
        else:
            second = digit_probs(match.start("d2")) if match.group("d2") else None
            score, number = smooth_decimals(digit_probs(match.start("d1")), second), float(match.group(0))
        out.append({"text": text.strip(), "score": score, "raw_score": number})
    return out
