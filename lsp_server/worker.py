"""The engine's thread and its owner: every engine call runs here, in order.

The engine is not thread safe, so one worker thread runs every call (load,
complete, refactor, warm); EngineHost holds the engine once loaded and says
whether it is still loading or failed. lsp_server/scheduler.py decides what
runs when (debounce, newest-wins, warm-ups).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from speculator.types import Cancelled, CancelToken, Engine

log = logging.getLogger(__name__)

T = TypeVar("T")


class EngineUnavailable(Exception):
    """The models are still loading, or failed to load; the message says which."""


@dataclass
class _Job:
    fn: Callable[[], Any]
    token: CancelToken
    future: Future[Any] = field(default_factory=Future)
    # The submitter's context, so engine log lines carry the request id.
    context: contextvars.Context = field(default_factory=contextvars.copy_context)


class Worker:
    """The one thread that runs every engine call, in submission order.

    Background jobs (warm-ups) run only when no foreground job waits, a
    newer background job replaces one that has not started, and a foreground
    job cancels the background job that is running (it stops within one
    prompt batch and keeps what it evaluated).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._background: _Job | None = None
        self._running: _Job | None = None
        self._running_background = False
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="groundspec-engine", daemon=True)
        self._thread.start()

    def submit(
        self, fn: Callable[[], T], token: CancelToken | None = None, *, background: bool = False
    ) -> Future[T]:
        job = _Job(fn, token or CancelToken())
        with self._cond:
            if self._stopped:
                job.future.set_exception(Cancelled())
                return job.future
            if background:
                if self._background is not None:
                    self._background.future.cancel()
                self._background = job
            else:
                self._queue.append(job)
                if self._running is not None and self._running_background:
                    self._running.token.cancel()
            self._cond.notify()
        return job.future

    def stop(self) -> None:
        """Cancel the running job, drop the queue, end the thread."""
        with self._cond:
            self._stopped = True
            if self._running is not None:
                self._running.token.cancel()
            for job in self._queue:
                job.token.cancel()
                job.future.cancel()
            self._queue.clear()
            self._cond.notify()

    def join(self, timeout_s: float) -> bool:
        """After stop(): wait for the thread to end; False if it is still busy."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _next(self) -> _Job | None:
        with self._cond:
            while not self._stopped and not self._queue and self._background is None:
                self._cond.wait()
            if self._stopped:
                return None
            self._running_background = not self._queue
            if self._queue:
                self._running = self._queue.popleft()
            else:
                self._running, self._background = self._background, None
            return self._running

    def _loop(self) -> None:
        while (job := self._next()) is not None:
            if job.token.cancelled:
                # Superseded while queued: never start it.
                if job.future.set_running_or_notify_cancel():
                    job.future.set_exception(Cancelled())
                continue
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                job.future.set_result(job.context.run(job.fn))
            except BaseException as exc:  # delivered to the awaiting handler
                job.future.set_exception(exc)
            finally:
                self._finished(job)

    def _finished(self, job: _Job) -> None:
        # Forget the job: a finished job must not be cancelled by the next
        # foreground submit, nor keep its request (a 2 MB text) alive.
        with self._cond:
            if self._running is job:
                self._running = None
                self._running_background = False

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._running is not None


class EngineHost:
    """Loads the engine on the worker and hands it out once it is ready."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._future: Future[Engine] | None = None
        self._ready: asyncio.Future[Engine] | None = None

    def load(self, loader: Callable[[], Engine]) -> asyncio.Future[Engine]:
        """Start loading (call on the event loop); engine calls queue behind it."""
        self._future = self._worker.submit(loader)
        self._ready = asyncio.wrap_future(self._future)
        self._ready.add_done_callback(_consume_exception)
        return self._ready

    @property
    def engine(self) -> Engine | None:
        future = self._future
        if future is None or not future.done() or future.cancelled():
            return None  # cancelled: stopped before it loaded
        if future.exception() is not None:
            return None
        return future.result()

    @property
    def state(self) -> str:
        if self._future is None:
            return "not started"
        if not self._future.done():
            return "loading"
        return "ready" if self._future.exception() is None else "failed"

    async def get(self, wait_s: float) -> Engine:
        """The engine, waiting up to `wait_s` for it to load."""
        if self._ready is None:
            raise EngineUnavailable("groundspec: the engine has not been started")
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), max(wait_s, 0.001))
        except TimeoutError:
            raise EngineUnavailable(
                "groundspec: the models are still loading; try again in a few seconds"
            ) from None
        except Exception as exc:
            raise EngineUnavailable(f"groundspec: the models failed to load: {exc}") from exc


def _consume_exception(future: asyncio.Future[Any]) -> None:
    # A load failure is reported to the user elsewhere; don't log "never retrieved".
    if not future.cancelled():
        future.exception()
