"""What every remote engine shares: groundspec's prompts, stop rules and stats.

The editor-facing half stays here (tree-sitter and workspace context, where a
completion stops, post-processing, the stats contract); the server only
evaluates the prompt and generates. A subclass says how a request is sent and
how the server's events read.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from ..grounding import Grounding, similar_siblings
from ..jobs import CompletionJob, Counts, Generated, RewriteJob, StopRule
from ..limits import Limits
from ..outcome import StopReason
from ..pipeline import Pipeline
from ..postprocess import CompletionStop
from ..prompt import SNIPPET_BUDGET_CHARS, FimPrompt, build_fim
from ..types import (
    CancelToken,
    CompletionRequest,
    RefactorRequest,
    Snippet,
)
from ..validate import refactor_cut_short, token_limit_reached
from .http import Transport

log = logging.getLogger(__name__)

MAX_SPANS = 2  # tree-sitter spans sent beside the workspace snippets
MAX_PINS = 256
MAX_ANCHORS = 32  # documents whose typing run is remembered (each holds its text)
MAX_TYPED_CHARS = 512  # a longer run starts a new anchor: the prompt window moves on


@dataclass
class CompletionContext:
    """The grounded prompt of one completion, in both shapes the servers take."""

    fim: FimPrompt  # the raw Qwen FIM prompt's segments, split at the typing run's anchor
    extras: list[Snippet]  # workspace snippets + tree-sitter spans (in fim's header)
    multiline: bool
    stop: CompletionStop | StopRule  # run_completion adds the request's time limits (TimedStop)
    typed: str = ""  # typed since the anchor: the start of the FIM middle

    @property
    def raw_prompt(self) -> str:
        return "".join(special + text for special, text in self.fim.segments) + self.typed

    @property
    def text(self) -> str:
        return self.raw_prompt


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
        self._anchors: LRUCache[str, Anchor] = LRUCache(MAX_ANCHORS)
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
            self._anchors[key] = anchor


class Generation:
    """Streamed text, cut by groundspec's stop rule; the latest server counts."""

    def __init__(
        self,
        read: Callable[[dict[str, Any]], tuple[str, Counts | None]],
        stop: StopRule,
        probabilities: Callable[[dict[str, Any]], object] | None = None,
    ):
        self.read = read
        self.stop = stop
        # An event's per-token entries ({token or bytes, logprob}); llama-server's own.
        self.probabilities = probabilities or _completion_probabilities
        self.text = ""
        self.counts = Counts()
        self.slot: int | None = None  # llama-server names it in its last event
        self.settings: dict[str, Any] = {}  # llama-server's generation_settings, idem
        self.truncated = False  # the server stopped at its token limit, not where the model ended
        # Each token's probability and where it ends in `text`, where the server
        # sent them (llama-server's completion_probabilities, asked with n_probs).
        self.token_ends: list[int] = []
        self.token_probs: list[float] = []
        self._bytes = b""

    def __call__(self, event: dict[str, Any]) -> bool:
        piece, counts = self.read(event)
        if counts is not None:
            self.counts = counts
        if isinstance(event.get("id_slot"), int) and event["id_slot"] >= 0:
            self.slot = event["id_slot"]
        if isinstance(event.get("generation_settings"), dict):
            self.settings = event["generation_settings"]
        self.truncated = self.truncated or _hit_token_limit(event)
        self._trace(self.probabilities(event))
        self.text += piece
        cut = self.stop(self.text)
        if cut is not None:
            self.text = self.text[:cut]
            return False  # enough: stop reading, which ends the server's work too
        return True

    def _trace(self, entries: object) -> None:
        """Record llama-server's per-token log-probabilities (pre-sampling: the
        model's own); entries without one are skipped."""
        if not isinstance(entries, list):
            return
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("logprob"), int | float):
                continue
            raw = entry.get("bytes")
            try:
                piece = bytes(raw) if isinstance(raw, list) else str(entry.get("token")).encode()
            except (TypeError, ValueError):
                continue
            self._bytes += piece
            self.token_ends.append(len(self._bytes.decode("utf-8", errors="ignore")))
            self.token_probs.append(math.exp(min(0.0, float(entry["logprob"]))))


def _completion_probabilities(event: dict[str, Any]) -> object:
    """llama-server's `/completion` entries (asked with n_probs)."""
    return event.get("completion_probabilities")


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
        self, stop: StopRule, limits: Limits, clock: Callable[[], float] = time.perf_counter
    ):
        self.stop = stop
        self.max_predict_ms = limits.max_predict_ms
        self.from_start = limits.from_start
        self.deadline_ms = limits.deadline_ms
        self.started = limits.started
        self.clock = clock
        self.timed_out = False  # stopped by either limit
        self.cut_short = False  # stopped by the deadline, maybe mid-line
        self._first: float | None = None  # when the first text came
        self._last = limits.started
        self._seen = 0  # characters of text seen so far

    @property
    def reason(self) -> StopReason | None:
        """Why it stopped the stream, if a limit did."""
        if self.cut_short:
            return StopReason.DEADLINE
        return StopReason.TIME_LIMIT if self.timed_out else None

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
        self._slots: LRUCache[str, int] = LRUCache(MAX_PINS)

    def get(self, key: str) -> int:
        return self._slots.get(key, -1)  # -1, llama-server's: any slot

    def learn(self, key: str, slot: int | None) -> None:
        if slot is None or slot < 0:
            return
        self._slots[key] = slot


class RemoteEngine(Pipeline[CompletionContext]):
    """The Engine protocol over HTTP: the request pipeline (speculator/pipeline.py)
    with this object as its generator; see LlamaServerEngine and OpenAIEngine for
    how a request is sent and how the server's events read."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self.pins = SlotPins()
        self.anchors = TypingAnchors()
        super().__init__(self)

    # -- the generator (speculator/pipeline.py) -----------------------------------------

    def prompt_for(self, job: CompletionJob) -> CompletionContext:
        """The same grounding the local engine uses: window, snippets, spans, stop
        rule; the prompt split at the document's typing anchor (TypingAnchors)."""
        request = job.request
        if request.prompt_format == "raw":  # the text is the prompt, as the server reads it
            raw = FimPrompt([("", request.text)], request.text, "")
            return CompletionContext(raw, [], job.multiline, job.stop)
        key = request.path or ""
        found = self.anchors.find(key, request.text, request.cursor)
        if found is None:
            anchor = self._anchor(job)
            self.anchors.set(key, anchor)
            found = (anchor, "")
        anchor, typed = found
        return CompletionContext(anchor.fim, anchor.extras, job.multiline, job.stop, typed)

    def run_completion(
        self, job: CompletionJob, prompt: CompletionContext, cancel: CancelToken | None
    ) -> Generated:
        timed = TimedStop(prompt.stop, job.limits)
        prompt.stop = timed
        generation = self.generate_completion(job.request, prompt, cancel)
        self.learn(generation)
        return self._generated(generation, job.limits.started, timed.reason)

    def run_alternatives(
        self, job: CompletionJob, prompt: CompletionContext, n: int, cancel: CancelToken | None
    ) -> Iterator[Generated]:
        """One completion: a remote server offers no cheap alternatives from one prompt."""
        yield self.run_completion(job, prompt, cancel)

    def run_rewrite(self, job: RewriteJob, cancel: CancelToken | None) -> Generated:
        request = job.request
        generation = self.generate_refactor(
            request, job.prompt, job.fence, job.stop, cancel, trace=job.trace
        )
        self.learn(generation)
        generated = self._generated(generation, job.limits.started)
        if job.trace and generation.token_probs:
            generated.token_ends = generation.token_ends
            generated.token_probs = generation.token_probs
        if generation.truncated:
            generated.why_unfinished = refactor_cut_short(token_limit_reached(request.max_tokens))
        return generated

    def run_warm(
        self, job: CompletionJob, prompt: CompletionContext, cancel: CancelToken | None
    ) -> int:
        """Have the server evaluate (and cache) the completion prompt; tokens evaluated."""
        counts = self.warm_prompt(job.request, prompt, cancel)
        return counts.prompt_tokens - counts.reused_prompt_tokens

    def persist(self) -> int:
        """Nothing to write: the server keeps its own slots."""
        return 0

    def close(self) -> None:
        self.transport.close()

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
        trace: bool = False,
    ) -> Generation:
        """`trace`: ask for each token's probability, where the server gives them."""
        raise NotImplementedError

    def warm_prompt(
        self, request: CompletionRequest, context: CompletionContext, cancel: CancelToken | None
    ) -> Counts:
        raise NotImplementedError

    # -- helpers ---------------------------------------------------------------------

    def _anchor(self, job: CompletionJob) -> Anchor:
        request, grounding = job.request, job.grounding
        snippets = job.context()
        window = build_fim(request.text, request.cursor, grounding, [], request.path)
        spans = _spans_outside(grounding, request, window.prefix + window.suffix)
        extras = _fit(snippets + spans, SNIPPET_BUDGET_CHARS)
        fim = build_fim(request.text, request.cursor, grounding, extras, request.path)
        return Anchor(request.text, request.cursor, fim, extras)

    def _generated(
        self, generation: Generation, started: float, limited: StopReason | None = None
    ) -> Generated:
        """The pipeline's view of a stream: what it said, why it ended, its counts."""
        if limited is not None:
            stop = limited
        else:
            stop = StopReason.TOKEN_LIMIT if generation.truncated else StopReason.END
        c = generation.counts
        speculation = self.speculation()
        drafts = {speculation: (c.drafted_tokens, c.accepted_tokens)} if c.drafted_tokens else {}
        return Generated(generation.text, stop, c, speculation, started, drafts)


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
