"""Reading a rating distribution out of a chat-completions answer's ``logprobs.content`` list: which
generated position holds the rating, and each rating's probability there, from a top-k list or from the
token ids a request named (``logprob_token_ids``). Pure functions of the answer, no HTTP.

>>> content = [{"token": "Score", "top_logprobs": [{"token": "Score", "logprob": 0.0}]},
...            {"token": ":", "top_logprobs": [{"token": ":", "logprob": 0.0}]},
...            {"token": " 4", "top_logprobs": [{"token": " 4", "logprob": -0.2231435513},
...                                             {"token": "5", "logprob": -1.6094379124},
...                                             {"token": "1", "logprob": -9999.0}]}]
>>> r = read_rating(content, ["1", "2", "3", "4", "5"], first_position=False)
>>> [round(x, 6) for x in r.raw], r.greedy, r.exact_mass
([0.0, 0.0, 0.0, 0.8, 0.2], ' 4', False)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mmjudge.judges.requests import RatingResult, ScoredText, ScoredToken

LOGPROB_FLOOR = -9999.0  # OpenAI's "not in the top k" value
TOKEN_ID_PREFIX = "token_id:"  # vLLM's spelling of a token with return_tokens_as_token_ids


def rating_result(raw: list[float], greedy: str, exact: bool, error: str | None = None) -> RatingResult:
    """The backend's one constructor of results: whether the mass is exact is said here only (so a rename of
    ``RatingResult.exact_mass`` is one line for this backend)."""
    return RatingResult(raw=raw, greedy=greedy, exact_mass=exact, error=error)


def _prob(entry: Mapping[str, Any]) -> float:
    logprob = float(entry.get("logprob", LOGPROB_FLOOR))
    return 0.0 if logprob <= LOGPROB_FLOOR or not math.isfinite(logprob) else math.exp(logprob)


def bare_token(token: str) -> str:
    """A token string without the word-boundary marks tokenizers spell (``"Ġ3"``, ``"▁3"``, ``" 3"`` -> ``"3"``)."""
    for mark in ("Ġ", "▁", " "):
        token = token.replace(mark, "")
    return token.strip()


def _choice_of(token: str, choices: Sequence[str], id_choices: Mapping[int, int] | None = None) -> int | None:
    """The choice a listed token spells: by its text, or, for a server that spells tokens as
    ``token_id:N`` (vLLM's ``return_tokens_as_token_ids``), by the id when the judge knows it."""
    token = str(token)
    if id_choices is not None and token.startswith(TOKEN_ID_PREFIX) and token[len(TOKEN_ID_PREFIX) :].isdigit():
        return id_choices.get(int(token[len(TOKEN_ID_PREFIX) :]))
    bare = token.strip()
    for i, choice in enumerate(choices):
        if bare == str(choice).strip():
            return i
    return None


def rating_position(
    content: Sequence[Mapping[str, Any]], choices: Sequence[str], id_choices: Mapping[int, int] | None = None
) -> int | None:
    """Index of the generated position to read: the first whose token is a whole rating; else the
    position right after a generated ``"Score:"``; else ``None`` (the rating is absent, or split over
    several tokens so no single position holds it).

    >>> toks = lambda *t: [{"token": x, "top_logprobs": []} for x in t]
    >>> rating_position(toks("Your", " evaluation", " score", " is", " 5", "."), ["1", "2", "3", "4", "5"])
    4
    >>> rating_position(toks("Score", ":", " ", "1", "0"), ["10", "20"])
    2
    >>> rating_position(toks("I", " cannot"), ["1", "2"]) is None
    True
    """
    for i, entry in enumerate(content):
        if _choice_of(entry.get("token", ""), choices, id_choices) is not None:
            return i
    text = ""
    for i, entry in enumerate(content):
        if text.rstrip().lower().endswith("score:"):
            return i
        text += str(entry.get("token", ""))
    return None


def read_rating(
    content: Sequence[Mapping[str, Any]],
    choices: Sequence[str],
    first_position: bool,
    exact: bool = False,
    id_choices: Mapping[int, int] | None = None,
) -> RatingResult:
    """The rating distribution in one chat-completions ``logprobs.content`` list.

    ``first_position``: read position 0 (the server continued the forced prefix); otherwise the
    position :func:`rating_position` finds. Each rating's probability sums every listed token that
    spells it (``"4"``, ``" 4"``). ``exact``: the list holds the rating tokens the request named
    (``logprob_token_ids``) with full-vocabulary log-probabilities, each token id once (two ids may decode
    to one text: both count), and the result is ``exact_mass``; otherwise it is a top-k list, a rating
    outside it is 0 (a lower bound of the mass) and a text listed twice counts once. ``id_choices`` maps
    token ids to choices for servers that spell tokens as ``token_id:N``. With no position to read, every
    rating is 0 and ``greedy`` holds the generated text.

    >>> entry = {"token": "4", "top_logprobs": [{"token": "4", "logprob": -0.5}, {"token": " 4", "logprob": -2.0},
    ...                                         {"token": "token_id:7", "logprob": -3.0}]}
    >>> r = read_rating([entry], ["3", "4"], first_position=True, exact=True, id_choices={7: 0})
    >>> [round(x, 4) for x in r.raw], r.exact_mass
    ([0.0498, 0.7419], True)
    """
    choices = [str(c) for c in choices]
    position = (0 if content else None) if first_position else rating_position(content, choices, id_choices)
    if position is None:
        return rating_result([0.0] * len(choices), "".join(str(e.get("token", "")) for e in content), exact)
    entry = content[position]
    raw = [0.0] * len(choices)
    tops = entry.get("top_logprobs") or [
        {"token": entry.get("token", ""), "logprob": entry.get("logprob", LOGPROB_FLOOR)}
    ]
    seen: set[str] = set()
    for top in tops:
        token = str(top.get("token", ""))
        # A top-k list naming one text twice must not count it twice; with chosen ids the server lists
        # each id once, and two ids can decode to the same text (both are the rating's variants).
        if token in seen and (not exact or token.startswith(TOKEN_ID_PREFIX)):
            continue
        seen.add(token)
        k = _choice_of(token, choices, id_choices)
        if k is not None:
            raw[k] += _prob(top)
    return rating_result(raw, str(entry.get("token", "")), exact)


def listed_choice_tokens(
    entry: Mapping[str, Any], choices: Sequence[str], id_choices: Mapping[int, int] | None = None
) -> int:
    """How many of the position's listed tokens spell a choice (to check a server honoured ``logprob_token_ids``)."""
    return sum(
        _choice_of(str(t.get("token", "")), choices, id_choices) is not None for t in entry.get("top_logprobs") or []
    )


def scored_text(content: list) -> ScoredText:
    """A generated answer with the listed alternatives at each position, from ``logprobs.content``.

    >>> scored_text([{"token": "0", "logprob": 0.0, "top_logprobs": [{"token": "0", "logprob": 0.0}]}]).text
    '0'
    """
    tokens = []
    for entry in content:
        listed = entry.get("top_logprobs") or [entry]
        tops = [(str(t.get("token", "")), _prob(t)) for t in listed if isinstance(t, dict)]
        tokens.append(ScoredToken(str(entry.get("token", "")), tops))
    return ScoredText("".join(t.token for t in tokens), tokens)
