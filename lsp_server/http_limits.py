"""Limits for a shared HTTP server: a bounded queue per client, and turns taken
in rotation so one client flooding requests cannot starve another.

A client is its address (`request.remote`; team members share one key, so the
key tells nobody apart). Each client may have `per_client` requests in the
server at once (waiting or running); one more is answered 503 with Retry-After
at once, before any work or stream starts. Engine calls from the HTTP door run
one at a time (the engine has one thread anyway), and the next turn goes to the
next client in rotation, not to whoever queued first: a client sending 50
requests a second waits behind its own requests, and another client waits for
at most the one call in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterator

from .http_io import ApiError

PER_CLIENT = 8  # requests one client may have waiting or running
RETRY_AFTER_S = 1

peer: contextvars.ContextVar[str] = contextvars.ContextVar("groundspec_http_peer", default="?")


class Busy(ApiError):
    """A client's queue is full: 503 with Retry-After."""

    def __init__(self, client: str, limit: int) -> None:
        super().__init__(
            503,
            f"too many requests from {client} at once (at most {limit} waiting or running); "
            f"retry after {RETRY_AFTER_S} s",
        )
        self.headers = {"Retry-After": str(RETRY_AFTER_S)}


class Rotation:
    """Up to `capacity` holders at once; the next free place goes to the next
    client in rotation, not to whoever queued first (all on the event loop)."""

    def __init__(self, capacity: int = 1) -> None:
        self.capacity = capacity
        self.held = 0
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def queued(self) -> int:
        return sum(len(queue) for queue in self._waiting.values())

    @contextlib.asynccontextmanager
    async def hold(self, client: str) -> AsyncIterator[None]:
        """Wait for a place for `client`, then hold it."""
        if self.held >= self.capacity or self._waiting:
            granted = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(client, deque()).append(granted)
            try:
                await granted  # _pass_on counted it as held
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._pass_on()  # granted as it was cancelled: the place moves on
                else:
                    self._withdraw(client, granted)
                raise
        else:
            self.held += 1
        try:
            yield
        finally:
            self._pass_on()

    def _pass_on(self) -> None:
        """Give a freed place to the next client in rotation, or free it."""
        while self._waiting:
            client, queue = next(iter(self._waiting.items()))
            granted = queue.popleft()
            if queue:
                self._waiting.move_to_end(client)  # its next request waits a round
            else:
                del self._waiting[client]
            if not granted.done():
                granted.set_result(None)
                return
        self.held -= 1

    def _withdraw(self, client: str, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(client)
        if queue is not None and granted in queue:
            queue.remove(granted)
            if not queue:
                del self._waiting[client]


class ClientLimits:
    """Admission per client and turns at the engine in rotation (on the event loop)."""

    def __init__(self, per_client: int = PER_CLIENT) -> None:
        self.per_client = per_client
        self._admitted: dict[str, int] = {}
        self._turns = Rotation(1)

    @contextlib.contextmanager
    def admitted(self, client: str) -> Iterator[None]:
        """Hold one of `client`'s places for a request; Busy when none is free."""
        if self._admitted.get(client, 0) >= self.per_client:
            raise Busy(client, self.per_client)
        self._admitted[client] = self._admitted.get(client, 0) + 1
        try:
            yield
        finally:
            self._admitted[client] -= 1
            if not self._admitted[client]:
                del self._admitted[client]

    def turn(self, client: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Wait for `client`'s turn at the engine, then hold it."""
        return self._turns.hold(client)
