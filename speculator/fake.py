"""A deterministic engine for protocol tests: no model, same interface.

The completion is `FakeEngine.text` cut to `max_tokens` "tokens" (characters).
Asked for alternatives, it returns the completion, then `alt1_` + text,
`alt2_` + text, ... (each cut the same way): distinct items, deterministic,
the first one the same as `complete`'s. A delay per token simulates decoding so cancellation can be tested; the
cancel token is checked every token, like the real decode loop checks it
every verify round.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from .next_edit.core import NextEditRequest, NextEditResult, Rewrite, RewriteJob, next_edit
from .next_edit.prompts import instructions
from .next_edit.proposal import TokenTrace
from .totals import Totals
from .types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    CompletionResult,
    ContextProvider,
    EngineError,
    Progress,
    RefactorRequest,
    RefactorResult,
    Stats,
    TokenChoice,
    TokenProb,
)

log = logging.getLogger(__name__)

DEFAULT_FAKE_TEXT = "fake_completion()"


class FakeEngine:
    def __init__(self, text: str = DEFAULT_FAKE_TEXT, delay_ms_per_token: float = 0.0) -> None:
        self.text = text
        self.delay_ms_per_token = delay_ms_per_token
        self.provider: ContextProvider | None = None
        self.warmed: list[int] = []  # cursor offsets of finished warm() calls, for tests
        self.next_edit_warms: list[str] = []  # the formats warm_next_edit was asked for
        self.warm_ms = 0.0  # how long a warm-up takes (tests of its cancellation)
        self.cancelled_warms = 0
        self.persisted = 0  # persist() calls, for tests of the shutdown path
        self.rewrite_confidence = 1.0  # each next-edit token's probability (_rewrite())
        # The last complete() calls, for tests (bounded: flood tests send many).
        self.requests: deque[CompletionRequest] = deque(maxlen=8)
        self._totals = Totals()

    def set_context_provider(self, provider: ContextProvider | None) -> None:
        self.provider = provider

    def complete(
        self, request: CompletionRequest, cancel: CancelToken | None = None
    ) -> CompletionResult:
        _check_cursor(request.text, request.cursor)
        # Protocol tests read which KV slot a request reached from the log.
        log.info(
            "fake completion in KV slot %r (a %s prompt, ending at the %s)",
            request.slot or request.path or "",
            request.prompt_format,
            request.ends_at,
        )
        self.requests.append(request)
        started = time.perf_counter()
        prompt = request.text[: request.cursor]

        def report(text: str) -> None:
            if request.on_progress is not None:
                request.on_progress(Progress(text, len(text), len(prompt)))

        text = _biased(self.text, request.logit_bias)
        out, timed_out = self._generate(
            text[: max(0, request.max_tokens)], cancel, request.max_predict_ms, report
        )
        stats = self._stats(prompt, out, started, request.speculation)
        self._totals.record(stats)
        probs = _choices(out, request.n_probs) if request.n_probs > 0 else None
        return CompletionResult(text=out, stats=stats, timed_out=timed_out, token_probs=probs)

    def alternatives(
        self, request: CompletionRequest, n: int, cancel: CancelToken | None = None
    ) -> list[CompletionResult]:
        first = self.complete(request, cancel)
        results, seen = [first], {first.text}
        for i in range(1, n):
            started = time.perf_counter()
            out = self._decode(f"alt{i}_{self.text}"[: max(0, request.max_tokens)], cancel)
            if out.strip() and out not in seen:
                seen.add(out)
                stats = self._stats(
                    request.text[: request.cursor], out, started, request.speculation
                )
                results.append(CompletionResult(text=out, stats=stats))
        return results

    def refactor(
        self, request: RefactorRequest, cancel: CancelToken | None = None
    ) -> RefactorResult:
        if not 0 <= request.start <= request.end <= len(request.text):
            raise EngineError(f"invalid range {request.start}-{request.end}")
        started = time.perf_counter()
        selection = request.text[request.start : request.end]
        new_text = self._decode(f"# {request.instruction}\n{selection}", cancel)
        stats = self._stats(selection, new_text, started, request.speculation)
        self._totals.record(stats)
        return RefactorResult(new_text=new_text, start=request.start, end=request.end, stats=stats)

    def next_edit(
        self, request: NextEditRequest, cancel: CancelToken | None = None
    ) -> NextEditResult:
        return next_edit(self._rewrite, request, cancel)

    def _rewrite(self, job: RewriteJob, cancel: CancelToken | None = None) -> Rewrite:
        """A next edit's rewrite: the job's draft (the window with the last edit
        carried on), each character a "token" of probability `rewrite_confidence`,
        ended by the job's stop rule as the real decoder ends it."""
        started = time.perf_counter()
        text, _ = self._generate(job.draft, cancel, stop=job.stop)
        trace = TokenTrace(list(range(1, len(text) + 1)), [self.rewrite_confidence] * len(text))
        stats = self._stats(job.prompt, text, started, job.speculation)
        self._totals.record(stats)
        return Rewrite(text=text, trace=trace, finished=True, stats=stats)

    def warm_next_edit(self, prompt_format: str, cancel: CancelToken | None = None) -> int:
        """The instructions of `prompt_format`, as many "tokens" as characters."""
        self.next_edit_warms.append(prompt_format)
        return len(instructions(prompt_format))

    def warm(self, request: CompletionRequest, cancel: CancelToken | None = None) -> int:
        deadline = time.perf_counter() + self.warm_ms / 1000
        while time.perf_counter() < deadline:
            if cancel is not None and cancel.cancelled:
                self.cancelled_warms += 1
                raise Cancelled()
            time.sleep(0.005)
        self.warmed.append(request.cursor)
        return 0

    def totals(self) -> dict[str, object]:
        return self._totals.snapshot()

    def persist(self) -> int:
        self.persisted += 1
        return 0

    def _decode(self, text: str, cancel: CancelToken | None) -> str:
        return self._generate(text, cancel)[0]

    def _generate(
        self,
        text: str,
        cancel: CancelToken | None,
        max_ms: float = 0.0,
        report: Callable[[str], None] | None = None,
        stop: Callable[[str], int | None] | None = None,
    ) -> tuple[str, bool]:
        """`text` one character ("token") at a time; (text, stopped by `max_ms`):
        like the real decode loop, a time limit stops at a generated new line, and a
        stop rule (asked after each token) cuts where it says."""
        started = time.perf_counter()
        for i, char in enumerate(text):
            if cancel is not None and cancel.cancelled:
                self._totals.record_cancelled()
                raise Cancelled()
            if self.delay_ms_per_token:
                time.sleep(self.delay_ms_per_token / 1000)
            if report is not None:
                report(text[: i + 1])
            if stop is not None and (cut := stop(text[: i + 1])) is not None:
                return text[:cut], False
            if max_ms > 0 and char == "\n" and (time.perf_counter() - started) * 1000 > max_ms:
                return text[: i + 1], True
        return text, False

    @staticmethod
    def _stats(prompt: str, out: str, started: float, speculation: str) -> Stats:
        total_ms = (time.perf_counter() - started) * 1000
        return Stats(
            generated_tokens=len(out),
            prompt_tokens=len(prompt),
            reused_prompt_tokens=0,
            decode_ms=total_ms,
            total_ms=total_ms,
            speculation=speculation,
        )


def _biased(text: str, entries: list[tuple[int | str, float]] | None) -> str:
    """The fake's "tokens" are characters, their ids code points (a text: each of its
    characters): a negative bias on one drops it from the text, enough for the HTTP
    tests to see the bias arrive."""
    banned = {
        code
        for key, value in entries or []
        if value < 0
        for code in ([key] if isinstance(key, int) else map(ord, key))
    }
    return "".join(c for c in text if ord(c) not in banned)


def _choices(text: str, n_probs: int) -> list[TokenChoice]:
    """Each character certain, followed by the next ones at no probability."""
    return [
        TokenChoice(
            token=ord(c),
            piece=c.encode(),
            prob=1.0,
            top=[TokenProb(ord(c), c.encode(), 1.0)]
            + [TokenProb(ord(o), o.encode(), 0.0) for o in text[i + 1 : i + n_probs]],
        )
        for i, c in enumerate(text)
    ]


def _check_cursor(text: str, cursor: int) -> None:
    if not 0 <= cursor <= len(text):
        raise EngineError(f"cursor {cursor} is outside the document (length {len(text)})")
