"""Any OpenAI-compatible `/v1/completions` as the engine: vLLM, SGLang,
llama-server's own, or Ollama's compatibility endpoint.

vLLM's `/v1/completions` has no `suffix`, so the raw Qwen FIM prompt (with the
workspace snippets and tree-sitter spans in its repository header) goes in
`prompt`; the server's prefix cache keeps it warm across keystrokes, and its
n-gram or suffix speculation can draft from the grounded text.
"""

from __future__ import annotations

import logging
from typing import Any

from ..jobs import Counts, StopRule
from ..types import CancelToken, CompletionRequest, RefactorRequest
from .http import ServerUnavailable, Transport
from .remote import CompletionContext, Generation, RemoteEngine

log = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:8000/v1"  # vLLM's default port


class OpenAIEngine(RemoteEngine):
    def __init__(self, transport: Transport):
        super().__init__(transport)
        # /v1 is where OpenAI clients put the API root; accept a URL with or without it.
        self.root = "" if transport.base_url.endswith("/v1") else "/v1"
        self._model: str | None = None

    def generate_completion(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Generation:
        body = self._body(context.raw_prompt, request.max_tokens, request)
        if not context.multiline:
            body["stop"] = ["\n"]
        return self._run(body, context.stop, cancel)

    def warm_prompt(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Counts:
        # One token: some servers refuse max_tokens 0; the prefix cache keeps the prompt.
        body = self._body(context.raw_prompt, 1, request)
        return self._run(body, lambda _: None, cancel).counts

    def generate_refactor(
        self,
        request: RefactorRequest,
        prompt: str,
        fence: str,
        stop: StopRule,
        cancel: CancelToken | None,
        trace: bool = False,
    ) -> Generation:
        body = {**self._body(prompt, request.max_tokens, request), "stop": ["\n" + fence]}
        if trace:
            body["logprobs"] = 1  # each token's log-probability: a next edit's confidence
        return self._run(body, stop, cancel)

    def _body(
        self, prompt: str, max_tokens: int, request: CompletionRequest | RefactorRequest
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            # usage in the last event; vLLM also puts it in every event when asked
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if request.top_k > 0:
            body["top_k"] = request.top_k  # not OpenAI's, but vLLM and llama-server take it
        if request.min_p > 0:
            body["min_p"] = request.min_p  # the same
        model = self._model_name()
        if model:
            body["model"] = model
        return body

    def _model_name(self) -> str | None:
        """The first model the server lists (vLLM and Ollama want one named)."""
        if self._model is None:
            try:
                listing = self.transport.get_json(self.root + "/models")
            except ServerUnavailable:
                return None  # the completion request itself reports the outage
            data = listing.get("data") or [{}]
            self._model = str(data[0].get("id") or "") if isinstance(data[0], dict) else ""
        return self._model or None

    def _run(self, body: dict[str, Any], stop: StopRule, cancel: CancelToken | None) -> Generation:
        generation = Generation(_read_event, stop, _logprobs)
        self.transport.stream(self.root + "/completions", body, generation, cancel)
        return generation


def _read_event(event: dict[str, Any]) -> tuple[str, Counts | None]:
    """(new text, counts) of one streamed completion chunk.

    Counts come from `usage` (`prompt_tokens_details.cached_tokens` where the
    server reports its prefix-cache hits) and, from llama-server, `timings`."""
    choices = event.get("choices") or []
    text = "".join(str(c.get("text") or "") for c in choices if isinstance(c, dict))
    usage = event.get("usage")
    timings = event.get("timings")
    if not isinstance(usage, dict) and not isinstance(timings, dict):
        return text, None
    usage = usage if isinstance(usage, dict) else {}
    timings = timings if isinstance(timings, dict) else {}
    details = usage.get("prompt_tokens_details") or {}
    cached = int(timings.get("cache_n", details.get("cached_tokens", 0) or 0))
    counts = Counts(
        prompt_tokens=int(usage.get("prompt_tokens", cached + int(timings.get("prompt_n", 0)))),
        reused_prompt_tokens=cached,
        prompt_ms=float(timings.get("prompt_ms", 0.0)),
        decode_ms=float(timings.get("predicted_ms", 0.0)),
        generated_tokens=int(usage.get("completion_tokens") or timings.get("predicted_n") or 0),
        drafted_tokens=int(timings.get("draft_n", 0)),
        accepted_tokens=int(timings.get("draft_n_accepted", 0)),
    )
    return text, counts


def _logprobs(event: dict[str, Any]) -> list[dict[str, Any]]:
    """A chunk's per-token log-probabilities as {token, logprob} entries: OpenAI's
    completions format (tokens, token_logprobs: vLLM) or llama-server's (content)."""
    choices = event.get("choices") or [{}]
    found = choices[0].get("logprobs") if isinstance(choices[0], dict) else None
    if not isinstance(found, dict):
        return []
    if isinstance(found.get("content"), list):
        return list(found["content"])
    tokens, logprobs = found.get("tokens"), found.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(logprobs, list):
        return []
    return [{"token": t, "logprob": p} for t, p in zip(tokens, logprobs, strict=False)]
