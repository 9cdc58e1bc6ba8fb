"""HTTP transport for the remote engines: streamed JSON events, cancellation, retries.

httpx's AsyncClient runs on an asyncio loop in a background thread, so the
blocking Engine calls can be cancelled at any moment: the caller waits on the
request's future and, when the CancelToken fires, cancels the request's task,
which closes its connection. llama-server notices the closed connection and
stops generating. Connection failures and "model loading" answers are retried
with exponential backoff by tenacity, but only before any event has arrived
(a retry must never repeat text the caller has already seen).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import httpx
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from ..types import Cancelled, CancelToken, EngineError

log = logging.getLogger(__name__)

# A cold prompt on a busy CPU server can take a minute before the first byte.
TIMEOUT = httpx.Timeout(connect=3.0, read=120.0, write=10.0, pool=10.0)
ATTEMPTS = 4  # first try + 3 retries, 0.2 s, 0.4 s, 0.8 s apart (about 1.5 s in all)
RETRY_BUDGET_S = 5.0
CANCEL_POLL_S = 0.02

OnEvent = Callable[[dict[str, Any]], bool]  # an event in; False: stop reading


class ServerUnavailable(EngineError):
    """The server could not be reached, or said it is not ready yet."""


class ServerError(EngineError):
    """The server answered with an error (its own text is in the message)."""


def check_url(url: str) -> str:
    """The base URL without a trailing slash; a clear error for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EngineError(f"the backend URL must look like http://HOST:PORT, got {url!r}")
    return url.rstrip("/")


class Transport:
    """One server: a pooled async client, used from blocking callers.

    `name` ("llama-server", "OpenAI-compatible server") starts every error message."""

    def __init__(self, base_url: str, name: str, api_key: str | None = None):
        self.base_url = check_url(base_url)
        self.name = name
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=TIMEOUT)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"{name} client", daemon=True
        )
        self._thread.start()
        # While the server is known to be down, requests fail fast (one try, no
        # backoff), so a typing editor gets an answer at once; success clears it.
        self.down: str | None = None

    def close(self) -> None:
        self._wait(self._client.aclose(), None)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def get_json(self, path: str, cancel: CancelToken | None = None) -> dict[str, Any]:
        """GET path and decode its JSON object (with the same retries and errors)."""
        found: list[dict[str, Any]] = []

        def keep(event: dict[str, Any]) -> bool:
            found.append(event)
            return False

        self._wait(self._with_retries("GET", path, None, keep), cancel)
        return found[0] if found else {}

    def stream(
        self, path: str, body: dict[str, Any], on_event: OnEvent, cancel: CancelToken | None
    ) -> None:
        """POST body with stream=true and feed each server-sent event to on_event.

        Reading stops (and the connection closes) when on_event returns False,
        the stream ends, or `cancel` fires (then Cancelled is raised)."""
        body = {**body, "stream": True}
        self._wait(self._with_retries("POST", path, body, on_event), cancel)

    def _wait(self, work: Coroutine[Any, Any, None], cancel: CancelToken | None) -> None:
        """Run `work` on the loop; cancelling its task closes its connection."""
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        while True:
            try:
                return future.result(timeout=CANCEL_POLL_S)
            except concurrent.futures.TimeoutError:
                if cancel is not None and cancel.cancelled:
                    future.cancel()
                    raise Cancelled() from None

    # -- on the event loop --------------------------------------------------------

    async def _with_retries(self, method: str, path: str, body: Any, on_event: OnEvent) -> None:
        delivered = [False]  # set once on_event has seen an event: no retry after that

        def transient(exc: BaseException) -> bool:
            return isinstance(exc, ServerUnavailable) and not delivered[0]

        retrying = AsyncRetrying(
            retry=retry_if_exception(transient),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            stop=stop_after_attempt(1 if self.down else ATTEMPTS)
            | stop_after_delay(RETRY_BUDGET_S),
            reraise=True,
            before_sleep=lambda state: log.info(
                "%s: %s; retrying", self.name, state.outcome.exception() if state.outcome else "?"
            ),
        )

        def counted(event: dict[str, Any]) -> bool:
            delivered[0] = True
            return on_event(event)

        try:
            async for attempt in retrying:
                with attempt:
                    await self._request(method, path, body, counted)
        except ServerUnavailable as exc:
            if self.down is None:
                log.warning("%s", exc)
            self.down = str(exc)
            raise
        self.down = None

    async def _request(self, method: str, path: str, body: Any, on_event: OnEvent) -> None:
        url = self.base_url + path
        try:
            content = None if body is None else json_body(body)
            headers = {"Content-Type": "application/json"} if content is not None else None
            async with self._client.stream(
                method, path, content=content, headers=headers
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(self.name, url, response)
                if method == "GET":
                    await response.aread()
                    on_event(_decode(self.name, response.text))
                    return
                async for line in response.aiter_lines():
                    event = _sse_event(self.name, line)
                    if event is not None and not on_event(event):
                        return
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise ServerUnavailable(
                f"{self.name} at {url} did not accept the connection in time ({type(exc).__name__})"
            ) from None
        except httpx.TimeoutException as exc:  # a slow answer is not worth retrying
            raise EngineError(
                f"{self.name} at {url} did not answer in time ({type(exc).__name__})"
            ) from None
        except httpx.ConnectError as exc:
            raise ServerUnavailable(
                f"cannot reach {self.name} at {url}: {_reason(exc)}; is it running?"
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ServerUnavailable(
                f"{self.name} at {url} closed the connection mid-request "
                f"({_reason(exc)}); it may be restarting"
            ) from None
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.name} at {url}: {_reason(exc)}") from None


def json_body(body: Any) -> bytes:
    """`body` as UTF-8 JSON. A lone surrogate (a file name that is not UTF-8, an
    editor's half emoji) becomes "?", as the local engine's tokenizer reads it:
    httpx raised UnicodeEncodeError, and a JSON escape of one is refused by
    llama-server's parser."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _sse_event(name: str, line: str) -> dict[str, Any] | None:
    """One `data: {...}` line of a server-sent event stream; None for the rest."""
    if not line.startswith("data:"):
        return None  # blank separators and ":" pings
    data = line[5:].strip()
    if not data or data == "[DONE]":
        return None
    event = _decode(name, data)
    if "error" in event:  # llama-server reports a failure inside the stream
        raise ServerError(f"{name} error: {_error_text(event)}")
    return event


def _decode(name: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise ServerError(f"{name} sent something that is not JSON: {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise ServerError(f"{name} sent JSON that is not an object: {text[:200]!r}")
    return value


def _status_error(name: str, url: str, response: httpx.Response) -> EngineError:
    """The server's own error text, from llama-server's, vLLM's or OpenAI's shapes."""
    try:
        message = _error_text(json.loads(response.text))
    except (json.JSONDecodeError, AttributeError):
        message = response.text.strip()[:500] or response.reason_phrase
    text = f"{name} at {url} answered HTTP {response.status_code}: {message}"
    # 503: llama-server is loading its model; 502/504: a proxy in front lost it.
    if response.status_code in (502, 503, 504):
        return ServerUnavailable(text)
    return ServerError(text)


def _error_text(body: Any) -> str:
    """{"error": {"message": ...}}, {"error": "..."}, {"message": ...} or {"detail": ...}."""
    if isinstance(body, dict):
        for key in ("error", "message", "detail"):
            if key in body:
                inner = body[key]
                return _error_text(inner) if isinstance(inner, dict | list) else str(inner)
    if isinstance(body, list) and body:
        return _error_text(body[0])
    return json.dumps(body)[:500]
