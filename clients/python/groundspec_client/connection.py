"""A JSON-RPC connection to a groundspec server: requests answered on a reader
thread, the server's own requests answered, its notifications handed to callbacks.

Callbacks run on the reader thread: a slow one delays every answer, and one that
raises is logged, never allowed to stop the connection.
"""

from __future__ import annotations

import itertools
import logging
import socket
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import IO, Any, TypedDict, TypeVar

import msgspec

from .protocol import GroundspecError, encode_message, read_message
from .results import Message, Progress

log = logging.getLogger(__name__)

T = TypeVar("T")

ApplyEditHandler = Callable[[dict[str, Any]], bool]
ProgressHandler = Callable[[Progress], None]
MessageHandler = Callable[[Message], None]


class ConnectionOptions(TypedDict, total=False):
    """Connection's keyword arguments (for subclasses that pass them on)."""

    process: subprocess.Popen[bytes] | None
    sock: socket.socket | None
    on_apply_edit: ApplyEditHandler | None
    on_progress: ProgressHandler | None
    on_message: MessageHandler | None
    on_log: MessageHandler | None
    timeout: float | None


# Server requests that need no more than an empty answer from a script.
_ACKNOWLEDGED = (
    "window/workDoneProgress/create",
    "client/registerCapability",
    "client/unregisterCapability",
)


class Connection:
    """Requests, notifications and the server's requests over one pair of streams.

    `on_progress` gets each `$/progress`, `on_message` each window/showMessage
    (and showMessageRequest), `on_log` each window/logMessage; all may be set
    later as attributes of the same name."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        *,
        process: subprocess.Popen[bytes] | None = None,
        sock: socket.socket | None = None,
        on_apply_edit: ApplyEditHandler | None = None,
        on_progress: ProgressHandler | None = None,
        on_message: MessageHandler | None = None,
        on_log: MessageHandler | None = None,
        timeout: float | None = 300.0,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._process = process
        self._sock = sock
        self.on_apply_edit = on_apply_edit
        self.on_progress = on_progress
        self.on_message = on_message
        self.on_log = on_log
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._waiting: dict[int, Future[Any]] = {}
        self._waiting_lock = threading.Lock()
        self.received_edits: list[dict[str, Any]] = []  # workspace/applyEdit params
        self._thread = threading.Thread(target=self._read_loop, name="groundspec-rpc", daemon=True)
        self._thread.start()

    def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; raises GroundspecError on error.
        A request that times out is cancelled on the server."""
        request_id = next(self._ids)
        future: Future[Any] = Future()
        with self._waiting_lock:
            self._waiting[request_id] = future
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        except GroundspecError:
            with self._waiting_lock:
                self._waiting.pop(request_id, None)
            raise
        if not self._thread.is_alive():
            self._fail_waiting("the server closed the connection")
        wait = self.timeout if timeout is None else timeout
        try:
            return future.result(wait)
        except FutureTimeout:
            with self._waiting_lock:
                self._waiting.pop(request_id, None)
            self.notify("$/cancelRequest", {"id": request_id})
            raise GroundspecError(f"{method}: no answer after {wait} s") from None

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        data = encode_message(message)
        with self._write_lock:
            try:
                self._writer.write(data)
                self._writer.flush()
            except (OSError, ValueError) as exc:
                raise GroundspecError(f"cannot write to the server: {exc}") from exc

    def _read_loop(self) -> None:
        try:
            while (message := read_message(self._reader)) is not None:
                self._dispatch(message)
        except (OSError, ValueError, GroundspecError) as exc:
            log.debug("reader stopped: %s", exc)
        self._fail_waiting("the server closed the connection")

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._resolve(message)
        elif "id" in message:
            self._answer(message)
        else:
            self._notified(message["method"], message.get("params") or {})

    def _resolve(self, response: dict[str, Any]) -> None:
        with self._waiting_lock:
            future = self._waiting.pop(response.get("id"), None)  # type: ignore[arg-type]
        if future is None:
            return
        error = response.get("error")
        if error:
            code, data = error.get("code"), error.get("data")
            future.set_exception(GroundspecError(error.get("message", "error"), code, data))
        else:
            future.set_result(response.get("result"))

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/progress":
            value = params.get("value")
            fields = value if isinstance(value, dict) else {}
            self._deliver(self.on_progress, Progress, {**fields, "token": params.get("token")})
        elif method == "window/showMessage":
            self._deliver(self.on_message, Message, params)
        elif method == "window/logMessage":
            self._deliver(self.on_log, Message, params)
        else:
            log.debug("notification %s", method)

    def _deliver(self, callback: Callable[[T], None] | None, kind: type[T], params: Any) -> None:
        if callback is None:
            return
        try:
            value = msgspec.convert(params, kind)
        except msgspec.ValidationError as exc:
            log.warning("ignored a malformed %s: %s", kind.__name__, exc)
            return
        try:
            callback(value)
        except Exception:
            log.exception("the %s callback failed", kind.__name__)

    def _answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "workspace/applyEdit":
            reply["result"] = self._apply_edit(params)
        elif method == "workspace/configuration":
            reply["result"] = [None for _ in params.get("items", [])]
        elif method == "window/showMessageRequest":
            self._deliver(self.on_message, Message, params)
            reply["result"] = None  # no action chosen
        elif method in _ACKNOWLEDGED:
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": f"unhandled method {method}"}
        try:
            self._send(reply)
        except GroundspecError as exc:
            log.debug("cannot answer %s: %s", method, exc)

    def _apply_edit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.received_edits.append(params)
        handler = self.on_apply_edit
        applied = bool(handler and handler(params.get("edit", {})))
        if applied:
            return {"applied": True}
        return {"applied": False, "failureReason": "this client does not apply edits"}

    def _fail_waiting(self, reason: str) -> None:
        with self._waiting_lock:
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(GroundspecError(reason))

    def _close_transport(self, timeout: float) -> None:
        try:
            self._writer.close()  # the server exits at the end of its input
        except (OSError, ValueError):
            pass
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._process is not None:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._reader.close()
        if self._sock is not None:
            self._sock.close()
