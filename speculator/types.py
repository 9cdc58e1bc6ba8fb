"""Plain data types shared by the engine, the LSP server and the CLI.

Positions inside the engine are Python string offsets (code points). The LSP
layer converts UTF-16 line/character positions to offsets before calling in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal, Protocol

import msgspec

Speculation = Literal["auto", "off", "lookup", "draft", "both"]
SPECULATION_MODES: tuple[str, ...] = ("auto", "off", "lookup", "draft", "both")
PromptFormat = Literal["document", "raw"]
EndsAt = Literal["suggestion", "limit"]


class EngineError(Exception):
    """A request the engine cannot serve; the message is shown to the user."""


class Cancelled(Exception):
    """Raised by the decode loop when its cancel token fires."""


class CancelToken:
    """Cooperative cancellation: the decode loop checks it every round."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    def cancel(self) -> None:
        # Hooks run under the lock, so none runs once on_cancel's remover returned.
        with self._lock:
            self._event.set()
            for hook in self._hooks:
                hook()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call `hook` (on the cancelling thread) when cancelled, at once if it
        already is; returns the function that removes it. Hooks must be quick
        and must not call back into the token."""
        with self._lock:
            if not self._event.is_set():
                self._hooks.append(hook)
                return lambda: self._remove(hook)
        hook()
        return lambda: None

    def _remove(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


class Stats(msgspec.Struct, rename="camel"):
    """Per-request statistics; the JSON keys are part of the public contract."""

    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0
    speculation: str = "off"


class Snippet(msgspec.Struct):
    """A piece of another file used as prompt context and lookup corpus."""

    path: str
    text: str


class CompletionRequest(msgspec.Struct, kw_only=True):
    text: str
    cursor: int  # offset into text
    language_id: str = "python"
    path: str | None = None
    max_tokens: int = 64
    speculation: Speculation = "auto"
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0  # drop tokens below min_p x the likeliest one's probability
    seed: int = 0
    multiline: bool | None = None  # None: decide from the syntax at the cursor
    # May be answered from the quick window (EngineConfig.quick_window_tokens)
    # while the full prompt is far from warm: an editor's typing completions.
    # One-shot calls (CLI, groundspec/complete, benchmarks) leave it off, so
    # they always see the full prompt.
    quick_window: bool = False
    # Returns the parsed tree of exactly `text`, or None (the engine then parses
    # it): the server's documents keep theirs incrementally parsed. Called on
    # the engine's thread.
    tree: Callable[[], Any] | None = None
    # The KV slot this request's cache is kept in; None: its `path`'s. The HTTP
    # front door names one per client and document (lsp_server/http_slots.py).
    slot: str | None = None
    # Stop once decoding has run this long and a new line has been generated
    # (llama-server's t_max_predict_ms); 0: no time limit.
    max_predict_ms: float = 0.0
    # Count max_predict_ms from the engine's start on the request, the prompt's
    # evaluation included, not from the first token: an editor's typing
    # completion, where a slow (cold) prompt has already spent the user's wait.
    max_predict_from_start: bool = False
    # > 0: the suggestion is due this long after the engine starts on it, its
    # prompt included: decoding stops before a round that would end later, even
    # mid-line, and drops a word it cut short. An editor's typing completion;
    # 0: no deadline.
    deadline_ms: float = 0.0
    # Called on the engine's thread as tokens are accepted (streaming).
    on_progress: Callable[[Progress], None] | None = None
    # Context the caller sends with the request (HTTP's input_extra): the snippets
    # sharing most words with the text before the cursor come first, then the
    # workspace index's (speculator/pipeline.py).
    extra_context: list[Snippet] | None = None
    # Add the workspace index's snippets after extra_context. Off for HTTP clients
    # unless httpWorkspaceContext: they get only the context they send.
    workspace_context: bool = True
    # llama-server's n_probs: the result reports, at each generated token, this many
    # most likely tokens (CompletionResult.token_probs); post_sampling_probs: from the
    # distribution the token was chosen from (bias, temperature, top-k, top-p
    # applied), else from the model's own logits, as llama-server's default.
    n_probs: int = 0
    post_sampling_probs: bool = False
    # llama-server's logit_bias: (token id, or a text: each of its tokens, bias), the
    # bias added to the target's logits before every choice, a drafted token's
    # verification included, so the output is plain decoding's with the bias (-inf
    # bans the token).
    logit_bias: list[tuple[int | str, float]] | None = None
    # How the prompt is read. "document": groundspec's FIM prompt around the cursor
    # (a window of the text, context snippets). "raw": the text is the prompt, as
    # llama-server reads one: tokenized as given, special tokens parsed, nothing
    # added (the cursor is its end); a script's or a raw-FIM client's prompt.
    prompt_format: PromptFormat = "document"
    # Where the answer ends. "suggestion": where an editor's suggestion ends (the
    # line or block, post-processed). "limit": as llama-server's: at max_tokens,
    # an end token, a stop string or the context's end, the text as generated.
    ends_at: EndsAt = "suggestion"
    # Decoding stops once the text holds one of these (llama-server's `stop`); the
    # text keeps it, for the caller to cut and name. Read when ends_at is "limit".
    stop: list[str] = msgspec.field(default_factory=list)
    # False (llama-server's cache_prompt): a raw prompt is evaluated from an empty KV
    # cache, in the same batches every time (speculator/generators/reproducible.py).
    cache_prompt: bool = True


class Progress(msgspec.Struct):
    """A completion so far: the text it would be if decoding stopped now."""

    text: str
    generated_tokens: int
    prompt_tokens: int


# Model loading reports progress(message, percentage 0..100) to the editor.
ProgressCallback = Callable[[str, int], None]


class TokenProb(msgspec.Struct):
    """A token and its probability (`piece`: its bytes, maybe part of a character)."""

    token: int
    piece: bytes
    prob: float


class TokenChoice(msgspec.Struct):
    """One generated token, its probability and the `n_probs` most likely at its place."""

    token: int
    piece: bytes
    prob: float
    top: list[TokenProb]


class CompletionResult(msgspec.Struct, omit_defaults=True):
    text: str
    stats: Stats
    # Stopped by `max_predict_ms`. Only HTTP requests set one; left out of the JSON
    # when false, so the CLI's and LSP's result keys stay the contract's.
    timed_out: bool = False
    # Where the request asked for n_probs: the tokens of `text`, each with its
    # probabilities (HTTP's completion_probabilities); left out of the JSON otherwise.
    token_probs: list[TokenChoice] | None = None


class RefactorRequest(msgspec.Struct, kw_only=True):
    text: str
    start: int  # offset of the first selected character
    end: int  # offset one past the last selected character
    instruction: str
    language_id: str = "python"
    path: str | None = None
    max_tokens: int = 512
    speculation: Speculation = "auto"
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0  # drop tokens below min_p x the likeliest one's probability
    seed: int = 0


class RefactorResult(msgspec.Struct):
    new_text: str  # replaces text[start:end]
    start: int
    end: int
    stats: Stats


class ContextProvider(Protocol):
    """Where snippets from other workspace files come from (workspace index)."""

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]: ...


class Engine(Protocol):
    """What the LSP server and the CLI need from an engine (real or fake).

    Calls are blocking and not thread-safe: callers run them on one worker
    thread. `cancel` is checked every decode round.
    """

    def complete(
        self, request: CompletionRequest, cancel: CancelToken | None = None
    ) -> CompletionResult: ...

    def alternatives(
        self, request: CompletionRequest, n: int, cancel: CancelToken | None = None
    ) -> list[CompletionResult]:
        """Up to n distinct completions; the first is exactly what `complete` returns."""
        ...

    def refactor(
        self, request: RefactorRequest, cancel: CancelToken | None = None
    ) -> RefactorResult: ...

    def warm(self, request: CompletionRequest, cancel: CancelToken | None = None) -> int:
        """Evaluate the prompt of `request` into the KV cache; returns tokens evaluated.

        Raises Cancelled when `cancel` fires (checked between prompt batches)."""
        ...

    def totals(self) -> dict[str, object]:
        """Aggregate statistics since start (the `groundspec/stats` result)."""
        ...

    def persist(self) -> int:
        """Write the KV cache's per-document slots to disk (shutdown); files written."""
        ...

    def set_context_provider(self, provider: ContextProvider | None) -> None: ...
