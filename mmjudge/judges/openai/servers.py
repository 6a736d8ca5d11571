"""What serves an OpenAI-compatible endpoint, and what that kind of server is known to support.

The ``openai`` judge asks this once, when it is built (capabilities are a value, never an HTTP call when
read). Each server kind says what it is in a header of every answer or at an endpoint of its own, found in
its sources (paths in ``docs/api_judges.md``):

================  ==========================================================  ==========  ==============
kind              how it says so                                              continues   chosen-id
                                                                              a prefix    log-probs
================  ==========================================================  ==========  ==============
openai            host ``api.openai.com``, or an ``openai-version`` header      no          no
mmjudge           header ``Server: mmjudge-serve/<version>`` (``GET /server_info``)  yes   yes
vllm              ``GET /version`` answers exactly ``{"version": …}``            yes         asked (1 request)
sglang            ``GET /get_server_info`` has ``version`` and ``model_path``    yes         no (chat route)
llama.cpp         ``GET /props`` has ``default_generation_settings``             no          no
llama-cpp-python  ``GET /openapi.json`` titled "🦙 llama.cpp Python API"          no          no
unknown           none of the above                                           probed      asked
================  ==========================================================  ==========  ==============

"Continues a prefix": the server continues a final assistant message (vLLM's ``continue_final_message`` +
``add_generation_prompt=false``). "Chosen-id log-probs": the answer lists the full-vocabulary
log-probability of token ids the request names (vLLM's ``logprob_token_ids``); vLLM has it only since
PR #43463 (2026-05), so one small request asks the server itself. ``GET /v1/models``'s ``owned_by``
(``vllm``, ``sglang``, ``llamacpp``, ``me``, ``mmjudge``) only orders the checks: it is a hint, not proof.

>>> answers = {"/version": {"version": "0.11.0"}}
>>> info = identify(answers.get, headers={}, listing={"data": [{"id": "m", "owned_by": "vllm"}]})
>>> info.kind, info.version, info.continues, info.choice_logprobs, info.evidence
('vllm', '0.11.0', True, None, 'GET /version')
>>> identify({}.get, headers={"Server": "mmjudge-serve/0.1.0"}, listing={}).describe()
'mmjudge 0.1.0 (header Server: mmjudge-serve/0.1.0)'
>>> identify({}.get, headers={"server": "uvicorn"}, listing={}).kind
'unknown'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# kind -> (continues a final assistant message, returns log-probs of chosen token ids); None = unknown,
# to be asked of the server. Data, not logic: what each kind's sources say (docs/api_judges.md).
KNOWN: dict[str, tuple[bool | None, bool | None]] = {
    "openai": (False, False),
    "mmjudge": (True, True),
    "vllm": (True, None),
    "sglang": (True, False),
    "llama.cpp": (False, False),
    "llama-cpp-python": (False, False),
    "azure": (False, False),
    "unknown": (None, None),
}

Getter = Callable[[str], Any]
"""``get(path)``: the decoded JSON of ``GET <server root><path>``, or ``None`` (no such route, not JSON)."""


@dataclass(frozen=True)
class ServerInfo:
    """One server's kind, version and the evidence that said so."""

    kind: str
    version: str = ""
    evidence: str = ""

    @property
    def continues(self) -> bool | None:
        """Whether it continues a final assistant message (``None``: unknown)."""
        return KNOWN[self.kind][0]

    @property
    def choice_logprobs(self) -> bool | None:
        """Whether it returns the log-probabilities of chosen token ids (``None``: to be asked)."""
        return KNOWN[self.kind][1]

    def describe(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.kind}{version}" + (f" ({self.evidence})" if self.evidence else "")


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


def from_headers(headers: Mapping[str, str]) -> ServerInfo | None:
    """The kind a server's answer headers name (``mmjudge serve``, OpenAI), else ``None``.

    >>> from_headers({"openai-version": "2020-10-01"}).kind, from_headers({"server": "uvicorn"})
    ('openai', None)
    """
    lower = _lower(headers)
    server = lower.get("server", "")
    if server.startswith("mmjudge-serve/"):
        return ServerInfo("mmjudge", server.split("/", 1)[1].strip(), f"header Server: {server}")
    if "openai-version" in lower or "openai-organization" in lower:
        return ServerInfo("openai", lower.get("openai-version", ""), "header openai-version")
    return None


def _vllm(get: Getter) -> ServerInfo | None:
    data = get("/version")  # vllm/entrypoints/openai/api_server.py: show_version
    if isinstance(data, dict) and set(data) == {"version"} and isinstance(data["version"], str):
        return ServerInfo("vllm", data["version"], "GET /version")
    return None


def _sglang(get: Getter) -> ServerInfo | None:
    data = get("/get_server_info")  # sglang/srt/entrypoints/http_server.py: server args + version
    if isinstance(data, dict) and "version" in data and "model_path" in data:
        return ServerInfo("sglang", str(data["version"]), "GET /get_server_info")
    return None


def _llama_cpp(get: Getter) -> ServerInfo | None:
    data = get("/props")  # llama.cpp tools/server: the server's default generation settings
    if isinstance(data, dict) and "default_generation_settings" in data:
        return ServerInfo("llama.cpp", str(data.get("build_info", "")), "GET /props")
    return None


def _llama_cpp_python(get: Getter) -> ServerInfo | None:
    data = get("/openapi.json")  # llama_cpp/server/app.py: FastAPI(title="🦙 llama.cpp Python API")
    info = data.get("info") if isinstance(data, dict) else None
    if isinstance(info, dict) and "llama.cpp python" in str(info.get("title", "")).lower():
        return ServerInfo("llama-cpp-python", str(info.get("version", "")), "GET /openapi.json")
    return None


CHECKS: dict[str, Callable[[Getter], ServerInfo | None]] = {
    "vllm": _vllm,
    "sglang": _sglang,
    "llama.cpp": _llama_cpp,
    "llama-cpp-python": _llama_cpp_python,
}
# GET /v1/models' owned_by, per kind (a hint that orders the checks).
OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp", "me": "llama-cpp-python"}


def identify(get: Getter, headers: Mapping[str, str], listing: Any) -> ServerInfo:
    """The server's kind from the headers and body of its ``GET /v1/models`` answer and, when they do not
    say, the kind-specific endpoints (``get``), the ``owned_by`` hint's kind first; ``unknown`` if none."""
    found = from_headers(headers)
    if found is not None:
        return found
    owners = (
        [m.get("owned_by") for m in (listing or {}).get("data", []) if isinstance(m, dict)]
        if isinstance(listing, dict)
        else []
    )
    hinted = [OWNED_BY[o] for o in owners if o in OWNED_BY]
    for kind in dict.fromkeys([*hinted, *CHECKS]):
        found = CHECKS[kind](get)
        if found is not None:
            return found
    return ServerInfo("unknown", "", "no header or endpoint of a known server")
