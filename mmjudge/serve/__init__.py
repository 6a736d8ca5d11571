"""An OpenAI-compatible chat-completions server over the engine's local ``transformers`` judge.

For models no serving engine supports, and as a test peer of the ``openai`` judge backend: greedy
answers with the model's raw full-vocabulary probabilities, so a rating read through it equals the local
backend's. An ASGI app (Starlette) under uvicorn, as llama-cpp-python's and vLLM's servers are;
concurrent requests are batched through the model (:mod:`.batching`).

Endpoints (every answer carries the header ``Server: mmjudge-serve/<version>``, which is how the
``openai`` judge recognises this server; with an API key, all but ``/health`` need
``Authorization: Bearer <key>``, else 401):

* ``GET /v1/models`` — the one served model (``owned_by: "mmjudge"``); ``GET /health`` — ``{"status": "ok"}``.
* ``GET /server_info`` — what this server is, supports and has done (``stats``).
* ``POST /v1/chat/completions`` — ``messages`` (text, and one image as a ``data:`` URL in the first user
  turn; remote URLs are refused), ``max_tokens`` / ``max_completion_tokens`` (default 16, at most
  ``--max-tokens``: 400 above it), ``logprobs``, ``top_logprobs`` (up to ``--max-logprobs``),
  ``stream`` (Server-Sent Events as OpenAI sends them, ``stream_options.include_usage``), vLLM's
  ``continue_final_message`` + ``add_generation_prompt=false``, ``logprob_token_ids`` (each generated
  position's ``top_logprobs`` holds the sampled token plus exactly those ids) and
  ``return_tokens_as_token_ids``. Decoding is greedy (sampling settings in OpenAI's ranges are accepted
  and ignored; out of range, NaN or mistyped they are refused with 400, as are booleans given as 1 or "yes");
  log-probabilities are the model's raw ones. ``n`` > 1, ``stop``, ``tools``, ``response_format`` and
  ``logit_bias`` are refused (400), never silently ignored.
* ``POST /tokenize`` (also ``/v1/tokenize``) — vLLM's: ``prompt``, ``add_special_tokens`` (default true),
  ``return_token_strs`` -> ``tokens``, ``count``, ``max_model_len`` (the context this server enforces, -1
  when the model states none) and ``token_strs``.

Limits: a body above 64 MiB is refused with 413; messages holding more than ``--max-prompt-chars`` characters
of text with 400 before any tokenising; an image of more than ``--max-image-pixels`` pixels (or not PNG, JPEG,
WebP, GIF or BMP) with 400 from its header, before its pixels are decoded; a prompt that with its
``max_tokens`` exceeds the model's context with 400 before it is queued; a connection that has not sent a
request's headers within ``--header-timeout`` is closed, a body that has not arrived within ``--body-timeout``
gets 408, and one address holds at most ``--max-connections-per-client`` connections (429 beyond); an answer
is cut (``finish_reason: "length"``) when its request has run ``--request-timeout`` seconds, and a request
that waited that long for the model gets 503; a client that hangs up stops its generation at the next token.
The ``model`` field is not checked (one model is served).

The package, one job a module: :mod:`.settings` (limits and key), :mod:`.protocol` (the wire format: bodies
in, answers and events out; no model, no HTTP), :mod:`.image_input` (a request's image: its size checked from
its header, then decoded), :mod:`.batching` (the model thread), :mod:`.engine` (bodies
checked and answered through the model thread), :mod:`.inputs` (prompts rendered and tokenised in the
request's thread, stacked in the model's), :mod:`.app` (the HTTP side), :mod:`.connections` (what a
connection may hold before its request: header deadline, per-address cap), :mod:`.server` (uvicorn,
:func:`~.server.make_server`, :func:`~.server.serve_in_thread`).
"""
