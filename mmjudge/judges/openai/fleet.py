"""What the ``openai`` judge settles about its fleet when it is built (or, for what a cached run never needs,
when it first sends): the model's name, each server's kind (:mod:`mmjudge.judges.openai.servers`), whether
the fleet continues an assistant prefix (``prefill``), whether it lists chosen token ids' log-probabilities
(``mass``), the rating tokens' ids, and how many requests to keep in flight.

>>> default_concurrency(["vllm", "vllm"]), default_concurrency(["openai"]), default_concurrency(["llama.cpp"])
(128, 8, 8)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mmjudge.judges.openai.reading import TOKEN_ID_PREFIX, bare_token
from mmjudge.judges.openai.servers import ServerInfo, identify
from mmjudge.judges.openai.transport import APIError, Server, Transport

logger = logging.getLogger(__name__)

# Requests in flight per server, by kind. vLLM and SGLang batch whatever arrives (continuous batching), so
# a few dozen in flight keep a GPU busy (at 200 ms per answer, 64 in flight is ~300 answers/s); OpenAI's
# limits are per account, paced by its rate-limit headers; the others answer one or a few at a time.
PREFILL_MODES = ("auto", "continue", "none")
MASS_MODES = ("auto", "exact", "top-k")
MODES = ("sync", "batch")
CONCURRENCY_BY_KIND = {"vllm": 64, "sglang": 64}
DEFAULT_CONCURRENCY = 8


def default_concurrency(kinds: Sequence[str | None]) -> int:
    """Requests in flight for a fleet of servers of these kinds: the sum of each member's (a fleet of
    servers that batch gets more), at least :data:`DEFAULT_CONCURRENCY`."""
    per_server = [CONCURRENCY_BY_KIND.get(str(kind), 0) for kind in kinds]
    return max(DEFAULT_CONCURRENCY, sum(per_server)) if all(per_server) else DEFAULT_CONCURRENCY


def identify_fleet(transport: Transport, model: str, need_kind: bool) -> str:
    """``GET /v1/models`` of each server when the model or the servers' kinds are needed: the model's name
    (each server's only one, the same across a fleet) and what each server is. Returns the model's name."""
    if model and not need_kind:
        return model
    names: list[list[str]] = []
    for server in transport.servers:
        listing, headers = transport.models(server)
        data = listing.get("data", []) if isinstance(listing, dict) else []
        names.append([str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")])
        if need_kind and server.info is None:
            server.info = identify(lambda path, s=server: transport.get_once(s, path), headers, listing)
    if model:
        return model
    where = ", ".join(s.endpoint for s in transport.servers)
    if any(len(n) != 1 for n in names):
        served = sorted({x for n in names for x in n})
        raise ValueError(f"The server at {where} serves {len(served)} models ({', '.join(served)}): pass `model=`.")
    if len({n[0] for n in names}) > 1:
        raise ValueError(
            f"The servers {where} serve different models ({', '.join(n[0] for n in names)}); a fleet must serve one."
        )
    return names[0][0]


def identify_quietly(transport: Transport) -> None:
    """Each server's kind, for what only speed depends on (how many requests in flight), asked once, when
    the first request is sent, never failing: a server that does not say stays unknown."""
    for server in transport.servers:
        if server.info is not None:
            continue
        try:
            listing, headers = transport.models(server, once=True)
        except (APIError, ValueError):  # asked once: a server that does not answer now is read as unknown
            server.info = ServerInfo("unknown", "", "no answer when first asked")
            continue
        server.info = identify(lambda path, s=server: transport.get_once(s, path), headers, listing)


def every_server(transport: Transport, fact: str, probe: Callable[[Server], bool]) -> bool:
    """Whether every server of the fleet has ``fact`` (a ``ServerInfo`` field): what its kind is known to do,
    else what ``probe`` finds. Every server unknown is probed, even once one says no."""
    verdicts = []
    for server in transport.servers:
        known = getattr(server.info, fact) if server.info is not None else None
        verdicts.append(known if known is not None else probe(server))
    return all(verdicts)


def probe_prefill(transport: Transport, server: Server, model: str) -> str:
    """For a server of no known kind, the last resort: does it continue a final assistant message? A
    counting sequence continues with " 8" when continued. A refusal of the fields means no; an accepted
    request whose model does not count on proves nothing either way, so it is an error asking for
    ``prefill=``, never read as "no" (a weak model would silently lose the forced prefix)."""
    messages = [
        {"role": "user", "content": "Count from 1 to 20, separated by commas."},
        {"role": "assistant", "content": "1, 2, 3, 4, 5, 6, 7,"},
    ]
    fields = {"model": model, "messages": messages, "temperature": 0, "max_tokens": 3}
    extra = {"continue_final_message": True, "add_generation_prompt": False}
    try:
        answer = transport.chat(fields, extra, server=server, client_errors=False)
    except APIError as err:
        if err.status is None:
            raise  # unreachable or failing: that says nothing about continuation
        transport.raise_for_credentials(err)
        logger.info("%s at %s: no assistant continuation (%s)", transport.describe(), server.endpoint, err)
        return "none"
    choices = answer.get("choices") or [{}]
    text = str((choices[0].get("message") or {}).get("content") or "")
    if text.lstrip().startswith("8"):
        return "continue"
    raise ValueError(
        f"Cannot tell whether the server at {server.endpoint} ({server.info.describe() if server.info else 'unknown'}) "
        f"continues an assistant message: it accepted continue_final_message, but its model answered {text!r} to a "
        "counting prompt, which proves neither. Pass prefill='continue' if the server implements vLLM's "
        "continue_final_message, else prefill='none'."
    )


def probe_choice_logprobs(transport: Transport, server: Server, model: str) -> bool:
    """Does the server list the log-probabilities of the token ids a request names (vLLM's
    ``logprob_token_ids``)? One one-token request naming ids 0 and 1, spelled ``token_id:N``
    (``return_tokens_as_token_ids``): both listed means yes; ignored or refused means no."""
    fields = {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0,
        "max_tokens": 1,
        "logprobs": True,
    }
    extra = {"logprob_token_ids": [0, 1], "return_tokens_as_token_ids": True}
    try:
        answer = transport.chat(fields, extra, server=server, client_errors=False)
    except APIError as err:
        if err.status is None:
            raise
        transport.raise_for_credentials(err)
        return False
    choices = answer.get("choices") or [{}]
    content = (choices[0].get("logprobs") or {}).get("content") or [{}]
    listed = {str(t.get("token")) for t in content[0].get("top_logprobs") or [] if isinstance(t, dict)}
    return {f"{TOKEN_ID_PREFIX}0", f"{TOKEN_ID_PREFIX}1"} <= listed


class ChoiceTokens:
    """The rating tokens' ids in the server's own tokenizer, asked once per rating string when first needed
    (so a cached run asks nothing): the single token ``POST /tokenize`` (vLLM's route, ``mmjudge serve``'s
    too) gives for ``"3"`` and for ``" 3"`` (with its token string, the last token when it spells it)."""

    def __init__(self, transport: Transport, model: Callable[[], str]):
        self.transport, self.model = transport, model
        self._known: dict[str, list[tuple[int, str]]] = {}
        self._lock = threading.Lock()

    def ids(self, choices: Sequence[str]) -> list[list[int]]:
        out = []
        for choice in (str(c) for c in choices):
            # One thread tokenizes, the others wait for its answer (the request threads all start at once).
            with self._lock:
                known = self._known.get(choice)
                if known is None:
                    known = self._known[choice] = self._tokenize(choice)
            out.append([i for i, _ in known])
        owner: dict[int, str] = {}
        for choice, ids in zip(choices, out):
            for token_id in ids:
                if owner.setdefault(token_id, str(choice)) != str(choice):
                    where = self.transport.describe()
                    raise ValueError(
                        f"Ratings {owner[token_id]!r} and {choice!r} share token id {token_id} on {where}."
                    )
        return out

    def _tokenize(self, choice: str) -> list[tuple[int, str]]:
        found: dict[int, str] = {}
        for text in (choice, " " + choice):
            body = {"model": self.model(), "prompt": text, "add_special_tokens": False, "return_token_strs": True}
            try:
                answer: Any = self.transport.post_root("/tokenize", body, client_errors=False)
            except APIError as err:
                if err.status is None:
                    raise
                where = f"{self.transport.describe()} at {self.transport.servers[0].endpoint}"
                raise ValueError(
                    f"{where}: mass='exact' needs the server's POST /tokenize (vLLM, mmjudge serve), which answered "
                    f"HTTP {err.status}. Use mass='top-k'."
                ) from None
            tokens = [int(t) for t in answer.get("tokens") or []]
            strings = answer.get("token_strs") or []
            if len(tokens) == 1:
                found.setdefault(tokens[0], text)
            elif tokens and len(strings) == len(tokens) and bare_token(str(strings[-1])) == choice.strip():
                found.setdefault(tokens[-1], str(strings[-1]))
        if not found:
            raise ValueError(
                f"The rating {choice!r} is not a single token of {self.transport.describe()}'s tokenizer, so its "
                "probability cannot be read at one position. Use a scale whose ratings are single tokens."
            )
        return sorted(found.items())


def check_options(
    prefill: str,
    mass: str,
    top_logprobs: int,
    max_tokens: int,
    max_concurrency: Any,
    max_retries: int,
    mode: str,
    poll_interval: float,
) -> None:
    """One line for an option the ``openai`` judge cannot take (before anything is sent)."""
    if prefill not in PREFILL_MODES:
        raise ValueError(f"Expected argument `prefill` to be one of {PREFILL_MODES}, but got {prefill!r}.")
    if mass not in MASS_MODES:
        raise ValueError(f"Expected argument `mass` to be one of {MASS_MODES}, but got {mass!r}.")
    if mode not in MODES:
        raise ValueError(f"Expected argument `mode` to be one of {MODES}, but got {mode!r}.")
    if int(top_logprobs) < 1:
        raise ValueError(f"Expected argument `top_logprobs` to be a positive integer, but got {top_logprobs!r}.")
    concurrency_ok = max_concurrency in (None, "auto") or (str(max_concurrency).isdigit() and int(max_concurrency) >= 1)
    if int(max_tokens) < 1 or not concurrency_ok or int(max_retries) < 0:
        raise ValueError("Expected `max_tokens` >= 1, `max_concurrency` >= 1 (or 'auto') and `max_retries` >= 0.")
    if not float(poll_interval) > 0:
        raise ValueError(f"Expected argument `poll_interval` to be a number of seconds > 0, but got {poll_interval!r}.")
