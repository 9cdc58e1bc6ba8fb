"""What each document's full FIM prompt is built with, kept so its KV is reused.

Two choices make a prompt's tokens stay put between requests: where the prefix
window starts (kept while typing, with hysteresis) and the header of other
files' snippets (frozen, speculator/headers.py). Both are saved with the
document's KV slot, so after a restart the first request rebuilds the prompt
the saved KV holds and evaluates a few tokens.
"""

from __future__ import annotations

from collections.abc import Callable

from .headers import Header, Headers, cursor_line
from .jobs import CompletionJob
from .prompt import PREFIX_BUDGET_CHARS, FimPrompt, build_fim
from .slots import SavedPrompt
from .types import CompletionRequest


class DocumentPrompts:
    def __init__(self) -> None:
        self.window_starts: dict[str, int] = {}
        self.headers = Headers()
        # The prompt a document's saved slot holds (KvSlots.saved_prompt), read
        # once per document, on its first request after a start.
        self.saved: Callable[[str], SavedPrompt | None] = lambda _name: None

    def full(self, job: CompletionJob, key: str, header: Header | None = None) -> FimPrompt:
        """The document's full FIM prompt, with its frozen header (or `header`)."""
        request = job.request
        self.recall(key)
        if header is None:
            header = self.header(job, key)
        fim = build_fim(
            request.text,
            request.cursor,
            job.grounding,
            list(header.snippets) if header is not None else job.context(),
            request.path,
            self._reusable_window_start(key, request),
        )
        self.window_starts[key] = request.cursor - len(fim.prefix)
        return fim

    def header(self, job: CompletionJob, key: str) -> Header | None:
        """The frozen header; None when the caller sends its own context (HTTP's
        input_extra): the caller keeps that stable, and it is used as sent."""
        request = job.request
        if request.extra_context is not None:
            return None
        line = cursor_line(request.text, request.cursor)
        return self.headers.current(key, line, job.context, job.context_ready())

    def header_candidate(self, job: CompletionJob, key: str) -> Header | None:
        """For an idle warm-up: a new header to warm and adopt, or None."""
        request = job.request
        if request.extra_context is not None:
            return None
        self.recall(key)
        line = cursor_line(request.text, request.cursor)
        return self.headers.candidate(key, line, job.context, job.context_ready())

    def first_request(self, key: str) -> bool:
        """Whether this process has built no prompt for the document yet."""
        return key not in self.window_starts and self.headers.get(key) is None

    def recall(self, key: str) -> None:
        """After a restart: the saved slot's window start and header, so the
        prompt is the one its KV holds."""
        if not self.first_request(key):
            return
        saved = self.saved(key)
        if saved is None:
            return
        if saved.window_start is not None:
            self.window_starts[key] = saved.window_start
        if saved.header is not None:
            self.headers.restore(key, saved.header, saved.header_line)

    def _reusable_window_start(self, key: str, request: CompletionRequest) -> int | None:
        """Keep last request's window start while it still fits (hysteresis)."""
        start = self.window_starts.get(key)
        if start is None or not 0 <= start <= request.cursor:
            return None
        if request.cursor - start > PREFIX_BUDGET_CHARS * 5 // 4 or (
            start > 0 and request.text[start - 1] != "\n"
        ):
            return None
        return start
