"""Model loading and warm-ups shown to the editor as LSP work-done progress."""

from __future__ import annotations

import asyncio
from typing import Protocol

from lsprotocol import types
from pygls.progress import Progress


class ProgressClient(Protocol):
    """What progress needs of the server (lsp_server/server.py's GroundspecServer)."""

    @property
    def work_done_progress(self) -> Progress: ...

    def client_supports_progress(self) -> bool: ...


class LoadProgress:
    """Model loading shown as window/workDoneProgress (when the client supports it)."""

    TOKEN = "groundspec/load"

    def __init__(self, ls: ProgressClient) -> None:
        self.ls = ls
        self.active = False
        self.loop: asyncio.AbstractEventLoop | None = None

    def begin(self) -> None:
        self.loop = asyncio.get_running_loop()
        if not self.ls.client_supports_progress():
            return
        progress = self.ls.work_done_progress
        progress.create(self.TOKEN)
        progress.begin(
            self.TOKEN,
            types.WorkDoneProgressBegin(title="groundspec", message="Loading models", percentage=0),
        )
        self.active = True

    def update(self, message: str, percentage: int) -> None:
        """Called by the loader on the worker thread: hop to the loop to send."""
        if self.active and self.loop is not None:
            self.loop.call_soon_threadsafe(self._report, message, percentage)

    def _report(self, message: str, percentage: int) -> None:
        if self.active:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage)
            self.ls.work_done_progress.report(self.TOKEN, value)

    def end(self, message: str) -> None:
        if self.active:
            self.active = False
            self.ls.work_done_progress.end(self.TOKEN, types.WorkDoneProgressEnd(message=message))


class WarmProgress:
    """A warm-up long enough to notice, shown as $/progress (scheduler.WarmObserver).

    Each warm-up gets its own token (groundspec/warm/N): a token is created
    for one begin..end, and the next may start before the client answered."""

    PREFIX = "groundspec/warm"

    def __init__(self, ls: ProgressClient) -> None:
        self.ls = ls
        self.count = 0
        self.token: str | None = None

    def warm_began(self) -> None:
        if self.token is not None or not self.ls.client_supports_progress():
            return
        self.count += 1
        self.token = f"{self.PREFIX}/{self.count}"
        progress = self.ls.work_done_progress
        progress.create(self.token)
        begin = types.WorkDoneProgressBegin(title="groundspec", message="Warming the cache")
        progress.begin(self.token, begin)

    def warm_ended(self, cancelled: bool) -> None:
        if self.token is None:
            return
        message = "Warm-up interrupted" if cancelled else "Cache warm"
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)  # pygls never forgets them
        self.token = None
