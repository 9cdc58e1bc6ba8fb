"""The typing loop: one engine thread, debounce, newest-wins, typed-ahead cache, warm-up.

The engine is not thread safe, so every engine call (load, complete, refactor,
warm) runs on one worker thread, in order. Handlers run on the asyncio loop and
await the worker's futures. Cancellation is cooperative: a request that is
cancelled or superseded fires its CancelToken and the engine's decode loop
stops at its next round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from cachetools import LRUCache

from speculator.types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    CompletionResult,
    Engine,
    Stats,
)

from .worker import EngineHost, Worker

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class _CacheEntry:
    prefix: str
    suffix: str
    text: str


class CompletionCache:
    """Typed-ahead cache: if the user typed the start of the last suggestion, the
    rest of it is still the answer (greedy decoding is deterministic). The
    least recently used documents' entries go first (cachetools.LRUCache)."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._entries: LRUCache[str, _CacheEntry] = LRUCache(max(1, max_entries))

    @property
    def max_entries(self) -> int:
        return self._max

    @max_entries.setter
    def max_entries(self, value: int) -> None:
        """A new size (the cacheEntries option) starts empty: the cache is a shortcut only."""
        if value != self._max:
            self._max = value
            self._entries = LRUCache(max(1, value))

    def lookup(self, key: str, prefix: str, suffix: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None or entry.suffix != suffix or not prefix.startswith(entry.prefix):
            return None
        typed = prefix[len(entry.prefix) :]
        if len(typed) >= len(entry.text) or not entry.text.startswith(typed):
            return None
        return entry.text[len(typed) :]

    def store(self, key: str, prefix: str, suffix: str, text: str) -> None:
        if self._max == 0 or not text:
            return
        self._entries[key] = _CacheEntry(prefix, suffix, text)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


class WarmObserver(Protocol):
    """Told about warm-ups long enough to show (called on the event loop)."""

    def warm_began(self) -> None: ...

    def warm_ended(self, cancelled: bool) -> None: ...


@dataclass
class _WarmRun:
    """One warm-up job: whether it started, whether its progress is on screen."""

    signature: tuple[Any, ...]
    token: CancelToken = field(default_factory=CancelToken)
    running: bool = False
    shown: bool = False
    timer: asyncio.TimerHandle | None = None


# A warm-up is shown only once it has run this long: a keystroke's warm-up
# (a few tokens) finishes before it, a new file's prompt (seconds) does not.
WARM_SHOWN_AFTER_S = 0.4


class Scheduler:
    """Per-document debounce and newest-wins on top of the worker.

    Newest-wins is per (document, kind): an editor that sends both an inline
    completion and a completion request for one keystroke gets both answered,
    and the second one shares the first one's generation (in flight or cached)
    instead of running its own."""

    def __init__(self, worker: Worker, host: EngineHost, cache: CompletionCache) -> None:
        self.worker = worker
        self.host = host
        self.cache = cache
        self._latest: dict[tuple[str, str], CancelToken] = {}
        self._inflight: dict[str, tuple[tuple[Any, ...], Future[list[CompletionResult]]]] = {}
        self._warm_timers: dict[str, asyncio.TimerHandle] = {}
        self._warm_due: dict[str, tuple[float, Callable[[], CompletionRequest | None]]] = {}
        self._warm_runs: dict[str, _WarmRun] = {}  # key -> its warm-up submitted last
        self.warm_observer: WarmObserver | None = None
        self.cache_hits = 0
        self.shared = 0
        self.superseded = 0
        self.warms = 0

    async def complete(
        self,
        key: str | None,
        request: CompletionRequest,
        *,
        debounce_s: float,
        wait_s: float,
        kind: str = "inline",
    ) -> CompletionResult:
        """Complete at the cursor. Raises Cancelled if a newer request for `key` came."""
        results = await self.complete_all(
            key, request, debounce_s=debounce_s, wait_s=wait_s, kind=kind
        )
        return results[0]

    async def complete_all(
        self,
        key: str | None,
        request: CompletionRequest,
        *,
        debounce_s: float,
        wait_s: float,
        kind: str = "inline",
        count: int = 1,
    ) -> list[CompletionResult]:
        """`count` > 1 asks for alternatives (the greedy one first); they skip the
        typed-ahead cache, which holds only the greedy completion.

        Raises Cancelled if a newer request of this `kind` for `key` came."""
        slot = (key, kind) if key is not None else None
        if count == 1 and (hit := self._cached(key, request)) is not None:
            # Still newest-wins: an older completion running for this document
            # would otherwise keep the one worker busy for nothing.
            if slot is not None and (previous := self._latest.pop(slot, None)) is not None:
                previous.cancel()
                self.superseded += 1
            return [hit]
        token = self._supersede(slot)
        try:
            if debounce_s > 0:
                await asyncio.sleep(debounce_s)
            if token.cancelled:
                raise Cancelled()
            engine = await self.host.get(wait_s)
            if token.cancelled:  # superseded while the models loaded
                raise Cancelled()
            if count == 1 and (hit := self._cached(key, request)) is not None:
                return [hit]  # the other kind's request finished meanwhile
            results = await self._shared(key, request, token) if count == 1 else None
            if results is None:
                results = await self._generate(engine, key, request, count, token)
        finally:
            if slot is not None and self._latest.get(slot) is token:
                del self._latest[slot]
        if key is not None:
            self.cache.store(key, *_split(request), results[0].text)
        return results

    def _cached(self, key: str | None, request: CompletionRequest) -> CompletionResult | None:
        if key is None or (text := self.cache.lookup(key, *_split(request))) is None:
            return None
        self.cache_hits += 1
        return CompletionResult(text=text, stats=Stats(speculation="cache"))

    async def _generate(
        self,
        engine: Engine,
        key: str | None,
        request: CompletionRequest,
        count: int,
        token: CancelToken,
    ) -> list[CompletionResult]:
        if count > 1:
            return await self.run(lambda: engine.alternatives(request, count, token), token)
        future = self.worker.submit(lambda: [engine.complete(request, token)], token)
        entry = (_signature(request), future)
        if key is not None:
            self._inflight[key] = entry
        try:
            return await self._await(future, token)
        finally:
            if key is not None and self._inflight.get(key) is entry:
                del self._inflight[key]

    async def _shared(
        self, key: str | None, request: CompletionRequest, token: CancelToken
    ) -> list[CompletionResult] | None:
        """The result of an identical completion already running, or None."""
        entry = self._inflight.get(key) if key is not None else None
        if entry is None or entry[0] != _signature(request):
            return None
        self.shared += 1
        try:
            # Shielded: this waiter going away must not cancel the owner's job.
            results = await asyncio.shield(asyncio.wrap_future(entry[1]))
        except Cancelled:
            return None  # the owner was superseded or cancelled: run our own
        if token.cancelled:
            raise Cancelled()
        return results

    async def run(self, fn: Callable[[], T], token: CancelToken) -> T:
        """Run an engine call on the worker; cancelling the awaiting task fires `token`."""
        return await self._await(self.worker.submit(fn, token), token)

    @staticmethod
    async def _await(future: Future[T], token: CancelToken) -> T:
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            token.cancel()  # stops the decode loop at its next round
            raise

    def schedule_warm(
        self, key: str, build: Callable[[], CompletionRequest | None], delay_s: float
    ) -> None:
        """Warm the KV cache for `key` once it has been idle for `delay_s`.

        One timer per document, moved forward when it fires early: a timer
        per keystroke left thousands of cancelled handles in the loop's heap
        while a burst of edits was read."""
        loop = asyncio.get_running_loop()
        due = loop.time() + delay_s
        self._warm_due[key] = (due, build)
        timer = self._warm_timers.get(key)
        if timer is not None and timer.when() <= due:
            return  # it fires first and re-arms for the new due time
        if timer is not None:
            timer.cancel()
        self._warm_timers[key] = loop.call_at(due, self._warm_fire, key)

    def _warm_fire(self, key: str) -> None:
        self._warm_timers.pop(key, None)
        if (entry := self._warm_due.get(key)) is None:
            return
        due, build = entry
        loop = asyncio.get_running_loop()
        if due > loop.time():
            self._warm_timers[key] = loop.call_at(due, self._warm_fire, key)
            return
        del self._warm_due[key]
        self._warm_now(key, build)

    def forget(self, key: str) -> None:
        """The document closed: stop its work and drop its state."""
        self._warm_due.pop(key, None)
        if (timer := self._warm_timers.pop(key, None)) is not None:
            timer.cancel()
        for slot in [slot for slot in self._latest if slot[0] == key]:
            self._latest.pop(slot).cancel()
        self.cache.forget(key)

    def stats(self) -> dict[str, object]:
        return {
            "cacheHits": self.cache_hits,
            "shared": self.shared,
            "superseded": self.superseded,
            "warms": self.warms,
            "engineState": self.host.state,
        }

    def _supersede(self, slot: tuple[str, str] | None) -> CancelToken:
        token = CancelToken()
        if slot is None:
            return token
        previous = self._latest.get(slot)
        if previous is not None:
            previous.cancel()
            self.superseded += 1
        self._latest[slot] = token
        return token

    def _warm_now(self, key: str, build: Callable[[], CompletionRequest | None]) -> None:
        engine = self.host.engine
        if engine is None or any(slot[0] == key for slot in self._latest):
            return  # not loaded yet, or a completion is already warming it
        request = build()
        warming = self._warm_runs.get(key)
        if request is None or (warming is not None and warming.signature == _signature(request)):
            return  # nothing to warm, or this very prompt is warming (didOpen, then "ready")
        run = _WarmRun(_signature(request))
        # The user is in this document now: another document's warm-up (a 20 s
        # prompt opened earlier) would hold the worker, and this one would wait
        # behind it until the next keystroke there cancels it (issue 63).
        for other in [k for k in self._warm_runs if k != key]:
            self._warm_runs.pop(other).token.cancel()
        self._warm_runs[key] = run
        self.warms += 1
        token = run.token
        loop = asyncio.get_running_loop()

        def warm() -> int:
            _call_soon(loop, self._warm_started, run)
            return engine.warm(request, token)

        future = self.worker.submit(warm, token, background=True)
        future.add_done_callback(_log_warm_failure)
        future.add_done_callback(lambda f: _call_soon(loop, self._warm_finished, key, run, f))

    def _warm_started(self, run: _WarmRun) -> None:
        run.running = True
        if self.warm_observer is not None:
            run.timer = asyncio.get_running_loop().call_later(
                WARM_SHOWN_AFTER_S, self._warm_show, run
            )

    def _warm_show(self, run: _WarmRun) -> None:
        run.timer = None
        if run.running and self.warm_observer is not None:
            run.shown = True
            self.warm_observer.warm_began()

    def _warm_finished(self, key: str, run: _WarmRun, future: Future[Any]) -> None:
        if self._warm_runs.get(key) is run:
            del self._warm_runs[key]
        run.running = False
        if run.timer is not None:
            run.timer.cancel()
        if run.shown and self.warm_observer is not None:
            cancelled = future.cancelled() or future.exception() is not None
            self.warm_observer.warm_ended(cancelled)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Run fn on the loop from the worker thread; nothing once the loop has closed."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        pass  # shutting down


def _log_warm_failure(future: Future[Any]) -> None:
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None and not isinstance(exc, Cancelled):
        log.warning("warm-up failed: %s", exc)


def _split(request: CompletionRequest) -> tuple[str, str]:
    """(prefix, suffix) around the cursor: the typed-ahead cache's key."""
    return request.text[: request.cursor], request.text[request.cursor :]


def _signature(request: CompletionRequest) -> tuple[Any, ...]:
    """What makes two completion requests the same generation."""
    return (
        request.text,
        request.cursor,
        request.path,
        request.max_tokens,
        request.speculation,
        request.temperature,
        request.multiline,
    )
