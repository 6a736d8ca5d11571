"""The ``openai`` judge's generation paths: explanations (plain greedy text, :class:`GenerationRequest`) and
scored generations (text with the listed alternatives at every position, :class:`ScoredGenerationRequest`,
what prompt-only judges such as G-VEval and GPT-FLEUR read their number from). Requests go through the same
transport, fleet, retries, usage and budget as ratings; batch mode sends explanations through the Batch API,
scored generations synchronously."""

from __future__ import annotations

from collections.abc import Sequence

from mmjudge.judges.openai.format import answer_text, chat_messages, generation_call
from mmjudge.judges.openai.reading import scored_text
from mmjudge.judges.openai.transport import APIError
from mmjudge.judges.requests import GenerationRequest, ScoredGenerationRequest, ScoredText


class GenerationMixin:
    """Generation for :class:`~mmjudge.judges.openai.OpenAIJudge` (which provides ``chat``, ``transport``,
    ``usage``, ``_map``, ``_logprobs``, the budget and the batch runner)."""

    def generate(self, requests: Sequence[GenerationRequest], progress: bool = True, on_batch=None) -> list[str]:
        if not requests:
            return []
        if self.max_cost is not None:
            self.check_budget(self.estimate(requests))
        if self.mode == "batch":
            return self._batches().generate(requests, progress=progress, on_batch=on_batch)
        return super().generate(requests, progress=progress, on_batch=on_batch)

    def _generate_one(self, request: GenerationRequest) -> str:
        # A failed generation raises (APIError): a string has no `error` to carry, and an empty explanation
        # must not be cached as if the model had written it.
        call = generation_call(request, self.model_name, self.prefill_mode)
        answer = self.transport.chat(call.fields, call.extra_body)
        self.usage.add(answer.get("usage") if isinstance(answer, dict) else None)
        return answer_text(answer)

    def _generate_batch(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return self._map(self._generate_one, requests)

    def _generate_scored_one(self, request: ScoredGenerationRequest) -> ScoredText:
        # A failed request is an answer with `error` (never cached, asked again next run), as for ratings.
        top = min(int(request.top_logprobs), self.top_logprobs)
        try:
            answer = self.chat(
                chat_messages(request, prefix=False), max_tokens=request.max_new_tokens, logprobs=True, top_logprobs=top
            )
        except APIError as err:
            if not self.transport.reached:
                raise  # no server ever answered: a wrong URL or a server not started, not a per-item failure
            self.usage.count_failure()
            return ScoredText("", [], error=str(err))
        content, problem = self._logprobs(answer)
        if content is None:
            return ScoredText("", [], error=problem)
        self._answered = True
        return scored_text(content)

    def _generate_scored_batch(self, requests: Sequence[ScoredGenerationRequest]) -> list[ScoredText]:
        return self._map(self._generate_scored_one, requests)
