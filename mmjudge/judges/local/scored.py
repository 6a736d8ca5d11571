"""Greedy generations read token by token: what a local judge's ``generate_scored`` answers, from one trace of
the full-vocabulary softmax at every generated step, and the ``generate`` keywords for stop strings.

>>> stopping(None, ())
{}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmjudge.judges.requests import ScoredGenerationRequest, ScoredText, ScoredToken


def stopping(tokenizer: Any, stop: Sequence[str]) -> dict:
    """``generate`` keywords that end a row once its text ends with one of ``stop`` (none: ``{}``)."""
    return {"stop_strings": list(stop), "tokenizer": tokenizer} if stop else {}


def scored_text(request: ScoredGenerationRequest, trace: Any, tokenizer: Any) -> ScoredText:
    """The answer to ``request`` from its generation ``trace`` (new token ids, the decoded text after each,
    each step's softmax): the ``top_logprobs`` most probable tokens at every step and, for ``token_probs``, their
    tokens' exact probabilities and which of them the generated token is. A tracked string's token is the last
    of its own encoding (EXPERT's ``tokenizer.encode("5")[-1]``). Token texts are the pieces the decoded text grew
    by, so they concatenate to it; a token that adds no text (end of turn, a lone word-boundary mark) is not
    listed."""
    import torch

    tracked = [tokenizer.encode(str(t))[-1] for t in request.token_probs]
    tokens, before = [], ""
    for token_id, text, probs in zip(trace.token_ids, trace.texts, trace.probs):
        piece, before = text[len(before) :], text
        values, ids = torch.topk(probs, min(int(request.top_logprobs), probs.numel()))
        top = [(tokenizer.decode([int(i)]), float(v)) for v, i in zip(values, ids)]
        if piece:
            exact = [float(probs[i]) for i in tracked] if tracked else None
            tokens.append(ScoredToken(piece, top, exact, tracked.index(token_id) if token_id in tracked else None))
    return ScoredText("".join(t.token for t in tokens), tokens)
