"""llama.cpp's llama-server as the engine: `/completion` for completions and
refactors, each document pinned to a slot whose prompt cache stays warm.

Completions send groundspec's raw Qwen FIM prompt, split at the typing run's
anchor (what was typed since starts the FIM middle, see TypingAnchors), rather
than `/infill`: `/infill` puts the text at the cursor before the FIM suffix, so
each keystroke inserts tokens there and the server evaluates the whole suffix
again (its chunk reuse only skips tokens of the cached prompt). The grounding
still travels in the request: the workspace snippets and tree-sitter spans sit
in the prompt's repository header, where the server's own n-gram speculation
(`--spec-type ngram-mod`) can draft from them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .. import provision
from ..jobs import Counts, StopRule
from ..types import CancelToken, CompletionRequest, RefactorRequest
from .http import Transport
from .remote import CompletionContext, Generation, RemoteEngine

log = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:8080"  # llama-server's own default
VERSION = "0.3.36"  # the llama-cpp-python sdist whose vendored llama.cpp .ci/llama-server.sh builds
# Reuse KV chunks of at least this many tokens by shifting them when tokens of the
# cached prompt are gone (a snippet or span left the repository header, the window
# moved on); a keystroke itself only appends (TypingAnchors).
N_CACHE_REUSE = 64


def find_llama_server() -> Path | None:
    """The llama-server binary: $GROUNDSPEC_LLAMA_SERVER, else the one
    .ci/llama-server.sh built into the cache, else one on PATH; None if none."""
    override = os.environ.get("GROUNDSPEC_LLAMA_SERVER")
    if override:
        path = Path(override)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    built = provision.beside_models("llama-server") / VERSION / "llama-server"
    if built.is_file() and os.access(built, os.X_OK):
        return built
    from shutil import which

    found = which("llama-server")
    return Path(found) if found else None


class LlamaServerEngine(RemoteEngine):
    def __init__(self, transport: Transport):
        super().__init__(transport)
        self._speculation = "server"  # until a response names the server's own setting

    def speculation(self) -> str:
        return self._speculation

    def learn(self, generation: Generation) -> None:
        """The server's speculative type (`ngram-mod`, `draft-simple`, ...) or "off",
        from the generation settings its last event carries."""
        kinds = generation.settings.get("speculative.types")
        if isinstance(kinds, str):  # e.g. "none,ngram-mod"
            used = [kind for kind in kinds.split(",") if kind and kind != "none"]
            self._speculation = ",".join(used) or "off"

    def generate_completion(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Generation:
        key = f"complete:{request.path or ''}"
        body = self._fim_body(request, context, request.max_tokens)
        if not context.multiline:
            body["stop"] = ["\n"]  # the server ends the line itself and sends its counts
        return self._run("/completion", body, key, context.stop, cancel)

    def warm_prompt(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Counts:
        key = f"complete:{request.path or ''}"
        body = self._fim_body(request, context, 0)  # n_predict 0: evaluate and cache only
        return self._run("/completion", body, key, lambda _: None, cancel).counts

    def generate_refactor(
        self,
        request: RefactorRequest,
        prompt: str,
        fence: str,
        stop: StopRule,
        cancel: CancelToken | None,
        trace: bool = False,
    ) -> Generation:
        body = {
            "prompt": prompt,
            "n_predict": request.max_tokens,
            "stop": ["\n" + fence],
            **_sampling(request),
            **_cache_fields(),
            # The chosen token's pre-sampling probability with each one: a next
            # edit's confidence (Generation._trace).
            **({"n_probs": 1} if trace else {}),
        }
        return self._run("/completion", body, f"refactor:{request.path or ''}", stop, cancel)

    def _fim_body(
        self, request: CompletionRequest, context: CompletionContext, n_predict: int
    ) -> dict[str, Any]:
        return {
            "prompt": context.raw_prompt,
            "n_predict": n_predict,
            **_sampling(request),
            **_cache_fields(request.cache_prompt),
        }

    def _run(
        self, path: str, body: dict[str, Any], key: str, stop: StopRule, cancel: CancelToken | None
    ) -> Generation:
        generation = Generation(_read_event, stop)
        body = {**body, "id_slot": self.pins.get(key)}
        self.transport.stream(path, body, generation, cancel)
        self.pins.learn(key, generation.slot)
        return generation


def _cache_fields(cache_prompt: bool = True) -> dict[str, Any]:
    """The server's prompt cache on (its KV reused and shifted), unless the request
    asked for a cold prompt (llama-server's own cache_prompt: false)."""
    reuse = {"n_cache_reuse": N_CACHE_REUSE} if cache_prompt else {}
    return {"cache_prompt": cache_prompt, **reuse, "timings_per_token": True}


def _sampling(request: CompletionRequest | RefactorRequest) -> dict[str, Any]:
    # temperature 0 is greedy on llama-server, as in the local engine; min_p is sent
    # too, since the server's own default (0.05) is not the request's
    return {
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": request.top_k,
        "min_p": request.min_p,
        "seed": request.seed,
    }


def _read_event(event: dict[str, Any]) -> tuple[str, Counts | None]:
    """(new text, counts) of one streamed `/completion` or `/infill` event.

    With `timings_per_token` every event carries the timings, so a stream we
    stop reading early still has its counts."""
    timings = event.get("timings")
    if not isinstance(timings, dict):
        return str(event.get("content", "")), None
    cached = int(timings.get("cache_n", 0))
    processed = int(timings.get("prompt_n", 0))
    counts = Counts(
        prompt_tokens=int(event.get("tokens_evaluated", cached + processed)),
        reused_prompt_tokens=cached,
        prompt_ms=float(timings.get("prompt_ms", 0.0)),
        decode_ms=float(timings.get("predicted_ms", 0.0)),
        generated_tokens=int(timings.get("predicted_n", 0)),
        drafted_tokens=int(timings.get("draft_n", 0)),
        accepted_tokens=int(timings.get("draft_n_accepted", 0)),
    )
    return str(event.get("content", "")), counts
