"""What every remote engine shares: groundspec's prompts, stop rules and stats.

The editor-facing half stays here (tree-sitter and workspace context, where a
completion stops, post-processing, the stats contract); the server only
evaluates the prompt and generates. A subclass says how a request is sent and
how the server's events read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..grounding import Grounding, similar_siblings
from ..postprocess import (
    CompletionStop,
    cut_at_deadline,
    dedented_selection,
    finish_completion,
    finish_refactor,
    is_multiline,
)
from ..prompt import SNIPPET_BUDGET_CHARS, FimPrompt, build_fim, build_refactor, fence_stop
from ..recent import remember
from ..totals import Totals
from ..types import (
    CancelToken,
    CompletionRequest,
    CompletionResult,
    ContextProvider,
    EngineError,
    RefactorRequest,
    RefactorResult,
    Snippet,
    Stats,
)
from ..validate import check_completion, check_refactor, refactor_cut_short, token_limit_reached
from .http import Transport

log = logging.getLogger(__name__)

MAX_SPANS = 2  # tree-sitter spans sent beside the workspace snippets
MAX_PINS = 256
MAX_ANCHORS = 32  # documents whose typing run is remembered (each holds its text)
MAX_TYPED_CHARS = 512  # a longer run starts a new anchor: the prompt window moves on

StopRule = Callable[[str], int | None]


class Counts(msgspec.Struct):
    """What the server says it did for one request."""

    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0


@dataclass
class CompletionContext:
    """The grounded prompt of one completion, in both shapes the servers take."""

    fim: FimPrompt  # the raw Qwen FIM prompt's segments, split at the typing run's anchor
    extras: list[Snippet]  # workspace snippets + tree-sitter spans (in fim's header)
    multiline: bool
    stop: CompletionStop | StopRule  # complete() adds the request's time limits (TimedStop)
    typed: str = ""  # typed since the anchor: the start of the FIM middle

    @property
    def raw_prompt(self) -> str:
        return "".join(special + text for special, text in self.fim.segments) + self.typed


@dataclass
class Anchor:
    """Where a document's typing run started, and the prompt built there."""

    text: str
    cursor: int
    fim: FimPrompt
    extras: list[Snippet]

    def typed(self, text: str, cursor: int) -> str | None:
        """What was typed at the anchor since, if that is all that changed and the
        cursor is at its end (backspacing within the run included); else None."""
        head, tail = self.text[: self.cursor], self.text[self.cursor :]
        run = len(text) - len(self.text)
        if not 0 <= run <= MAX_TYPED_CHARS or cursor != self.cursor + run:
            return None
        if not (text.startswith(head) and text.endswith(tail)):
            return None
        return text[self.cursor : cursor]


class TypingAnchors:
    """Each document's typing run, so the prompt grows only at its end.

    A server's prompt cache keeps the longest common prefix (llama-server's chunk
    reuse can skip tokens the cached prompt had, never tokens the new one
    inserts). With the cursor text in the FIM prefix, a keystroke inserts before
    `<|fim_suffix|>` and the whole suffix is evaluated again. So the prompt is
    split where typing started, and what was typed since begins the FIM middle
    (`<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>typed`, the layout the model
    learned): a keystroke appends to the prompt and costs the server a few tokens."""

    def __init__(self) -> None:
        self._anchors: OrderedDict[str, Anchor] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, key: str, text: str, cursor: int) -> tuple[Anchor, str] | None:
        with self._lock:
            anchor = self._anchors.get(key)
        if anchor is None:
            return None
        typed = anchor.typed(text, cursor)
        return None if typed is None else (anchor, typed)

    def set(self, key: str, anchor: Anchor) -> None:
        with self._lock:
            remember(self._anchors, key, anchor, MAX_ANCHORS)


class Generation:
    """Streamed text, cut by groundspec's stop rule; the latest server counts."""

    def __init__(self, read: Callable[[dict[str, Any]], tuple[str, Counts | None]], stop: StopRule):
        self.read = read
        self.stop = stop
        self.text = ""
        self.counts = Counts()
        self.slot: int | None = None  # llama-server names it in its last event
        self.settings: dict[str, Any] = {}  # llama-server's generation_settings, idem
        self.truncated = False  # the server stopped at its token limit, not where the model ended

    def __call__(self, event: dict[str, Any]) -> bool:
        piece, counts = self.read(event)
        if counts is not None:
            self.counts = counts
        if isinstance(event.get("id_slot"), int) and event["id_slot"] >= 0:
            self.slot = event["id_slot"]
        if isinstance(event.get("generation_settings"), dict):
            self.settings = event["generation_settings"]
        self.truncated = self.truncated or _hit_token_limit(event)
        self.text += piece
        cut = self.stop(self.text)
        if cut is not None:
            self.text = self.text[:cut]
            return False  # enough: stop reading, which ends the server's work too
        return True


class TimedStop:
    """A completion's stop rule with its time limits, applied as the local decoder
    applies them (speculator/decode.py), so a typing request over a remote server
    ends as soon as it would locally:
    - past `max_predict_ms` the stream ends at its next new line (the line kept),
      counted from the request's start or, like llama-server's t_max_predict_ms,
      from the first token;
    - where the next event, if it takes as long as the last one did, would come
      after `deadline_ms`, it ends wherever it is (complete() then cuts back to a
      whole line or word). A deadline the prompt already spent is dropped: a whole
      first line is worth more than a token.
    Ending the stream closes the connection, which ends the server's work too."""

    def __init__(
        self,
        stop: StopRule,
        request: CompletionRequest,
        started: float,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.stop = stop
        self.max_predict_ms = request.max_predict_ms
        self.from_start = request.max_predict_from_start
        self.deadline_ms = request.deadline_ms
        self.started = started
        self.clock = clock
        self.timed_out = False  # stopped by either limit
        self.cut_short = False  # stopped by the deadline, maybe mid-line
        self._first: float | None = None  # when the first text came
        self._last = started
        self._seen = 0  # characters of text seen so far

    def __call__(self, text: str) -> int | None:
        cut = self.stop(text)
        if cut is not None:
            return cut
        now = self.clock()
        new, self._seen = text[self._seen :], len(text)
        gap_ms, self._last = (now - self._last) * 1000, now
        if not new:
            return None  # an event without text (counts only): not a token
        elapsed_ms = (now - self.started) * 1000
        if self._first is None:
            self._first = now
            gap_ms = 0.0  # the prompt's wait says nothing of the next token's
            if self.deadline_ms > 0 and elapsed_ms >= self.deadline_ms:
                self.deadline_ms = 0.0
        if self.deadline_ms > 0 and elapsed_ms + gap_ms > self.deadline_ms:
            self.timed_out = self.cut_short = True
            return len(text)
        predicted_ms = elapsed_ms if self.from_start else (now - self._first) * 1000
        if self.max_predict_ms > 0 and "\n" in new and predicted_ms > self.max_predict_ms:
            self.timed_out = True
            return len(text)
        return None


def _hit_token_limit(event: dict[str, Any]) -> bool:
    """llama-server's last event says `stop_type: limit`; OpenAI's `finish_reason: length`."""
    choices = event.get("choices")
    lengths = [c.get("finish_reason") == "length" for c in choices or [] if isinstance(c, dict)]
    return event.get("stop_type") == "limit" or any(lengths)


class SlotPins:
    """Each document keeps the server slot it was first given, so its KV stays warm.

    The first request lets the server choose (it picks an idle slot, the one
    whose cache is most similar or least recently used), so several editors
    sharing a server spread over its slots instead of all claiming slot 0."""

    def __init__(self) -> None:
        self._slots: OrderedDict[str, int] = OrderedDict()

    def get(self, key: str) -> int:
        if key in self._slots:
            self._slots.move_to_end(key)
            return self._slots[key]
        return -1  # llama-server: any slot

    def learn(self, key: str, slot: int | None) -> None:
        if slot is None or slot < 0:
            return
        remember(self._slots, key, slot, MAX_PINS)


class RemoteEngine:
    """The Engine protocol over HTTP; see LlamaServerEngine and OpenAIEngine."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self.pins = SlotPins()
        self.anchors = TypingAnchors()
        self._totals = Totals()
        self._provider: ContextProvider | None = None

    # -- the Engine protocol -----------------------------------------------------------

    def set_context_provider(self, provider: ContextProvider | None) -> None:
        self._provider = provider

    def totals(self) -> dict[str, object]:
        return self._totals.snapshot()

    def close(self) -> None:
        self.transport.close()

    def complete(
        self, request: CompletionRequest, cancel: CancelToken | None = None
    ) -> CompletionResult:
        started = time.perf_counter()
        context = self.completion_context(request)
        timed = TimedStop(context.stop, request, started)
        context.stop = timed
        generation = self.generate_completion(request, context, cancel)
        self.learn(generation)
        text = finish_completion(generation.text, context.multiline)
        if timed.cut_short:
            text = cut_at_deadline(text)
        stats = self._stats(generation, started)
        return CompletionResult(text=text, stats=stats, timed_out=timed.timed_out)

    def persist(self) -> int:
        """Nothing to write: the server keeps its own slots."""
        return 0

    def alternatives(
        self, request: CompletionRequest, n: int, cancel: CancelToken | None = None
    ) -> list[CompletionResult]:
        """One completion: a remote server offers no cheap alternatives from one prompt."""
        return [self.complete(request, cancel)]

    def refactor(
        self, request: RefactorRequest, cancel: CancelToken | None = None
    ) -> RefactorResult:
        started = time.perf_counter()
        selection = check_refactor(request)
        code, lead = dedented_selection(request.text, request.start, request.end)
        prompt, fence = build_refactor(code, request.instruction, request.language_id)
        stop = fence_stop(fence)

        generation = self.generate_refactor(request, prompt, fence, stop, cancel)
        self.learn(generation)
        if generation.truncated:
            raise EngineError(refactor_cut_short(token_limit_reached(request.max_tokens)))
        new_text = finish_refactor(generation.text, selection, lead)
        stats = self._stats(generation, started)
        return RefactorResult(new_text=new_text, start=request.start, end=request.end, stats=stats)

    def warm(self, request: CompletionRequest, cancel: CancelToken | None = None) -> int:
        """Have the server evaluate (and cache) the completion prompt; tokens evaluated."""
        counts = self.warm_prompt(request, self.completion_context(request), cancel)
        return counts.prompt_tokens - counts.reused_prompt_tokens

    # -- for the subclasses ----------------------------------------------------------

    def speculation(self) -> str:
        """What the server does to speed up decoding, named in each request's stats."""
        return "server"

    def learn(self, generation: Generation) -> None:
        """What a response tells about the server beyond this request."""

    def generate_completion(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Generation:
        raise NotImplementedError

    def generate_refactor(
        self,
        request: RefactorRequest,
        prompt: str,
        fence: str,
        stop: StopRule,
        cancel: CancelToken | None,
    ) -> Generation:
        raise NotImplementedError

    def warm_prompt(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Counts:
        raise NotImplementedError

    def completion_context(self, request: CompletionRequest) -> CompletionContext:
        """The same grounding the local engine uses: window, snippets, spans, stop
        rule; the prompt split at the document's typing anchor (TypingAnchors)."""
        check_completion(request)
        grounding = Grounding(request.text, request.language_id)
        key = request.path or ""
        found = self.anchors.find(key, request.text, request.cursor)
        if found is None:
            anchor = self._anchor(request, grounding)
            self.anchors.set(key, anchor)
            found = (anchor, "")
        anchor, typed = found
        multiline = (
            request.multiline
            if request.multiline is not None
            else is_multiline(request.text, request.cursor, grounding)
        )
        stop = CompletionStop(request.text, request.cursor, multiline)
        return CompletionContext(anchor.fim, anchor.extras, multiline, stop, typed)

    def _anchor(self, request: CompletionRequest, grounding: Grounding) -> Anchor:
        snippets: list[Snippet] = []
        if self._provider is not None:
            query = request.text[max(0, request.cursor - 1500) : request.cursor]
            snippets = self._provider.related(request.path, query, 3)
        window = build_fim(request.text, request.cursor, grounding, [], request.path)
        spans = _spans_outside(grounding, request, window.prefix + window.suffix)
        extras = _fit(snippets + spans, SNIPPET_BUDGET_CHARS)
        fim = build_fim(request.text, request.cursor, grounding, extras, request.path)
        return Anchor(request.text, request.cursor, fim, extras)

    def _stats(self, generation: Generation, started: float) -> Stats:
        c = generation.counts
        stats = Stats(
            generated_tokens=c.generated_tokens,
            drafted_tokens=c.drafted_tokens,
            accepted_tokens=c.accepted_tokens,
            prompt_tokens=c.prompt_tokens,
            reused_prompt_tokens=c.reused_prompt_tokens,
            prompt_ms=round(c.prompt_ms, 1),
            decode_ms=round(c.decode_ms, 1),
            total_ms=round((time.perf_counter() - started) * 1000, 1),
            speculation=self.speculation(),
        )
        drafts = (
            {stats.speculation: (c.drafted_tokens, c.accepted_tokens)} if c.drafted_tokens else {}
        )
        self._totals.record(stats, drafts)
        log.info("request done: %s", msgspec.json.encode(stats).decode())
        return stats


def _spans_outside(grounding: Grounding, request: CompletionRequest, window: str) -> list[Snippet]:
    """Tree-sitter spans (similar definitions) the prompt window does not already
    hold, in file order so the prompt's head stays the same while the user types."""
    name = f"{request.path or 'current'}"
    bodies = [b for b in similar_siblings(grounding, request.cursor) if b not in window]
    ordered = sorted(bodies[:MAX_SPANS], key=request.text.find)
    return [Snippet(path=name, text=body) for body in ordered]


def _fit(snippets: list[Snippet], budget: int) -> list[Snippet]:
    """Snippets in order while the budget lasts (whole snippets only: a cut one
    would change with every edit and cost the server its cached prompt)."""
    out: list[Snippet] = []
    for snippet in snippets:
        if snippet.text.strip() and len(snippet.text) <= budget:
            out.append(snippet)
            budget -= len(snippet.text)
    return out
