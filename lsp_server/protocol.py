"""The wire: transport, framing, message decoding and the LSP lifecycle.

pygls 2.1 gets these wrong for a hostile or buggy client, so we replace its
read loop and decoding here (never by patching pygls):

- Framing (`FrameReader`): a malformed header block is skipped and reading
  resynchronises on the next `Content-Length` header; a length that is too
  large is detected when the stream stalls with a complete JSON body or the
  next header already buffered. pygls waited forever.
- Decoding: only the top-level object is JSON-RPC (pygls ran its decoder on
  every nested object, so `{"jsonrpc": ...}` inside params broke a request).
- Lifecycle (LSP 3.17): requests before `initialize` get -32002, requests after
  `shutdown` get InvalidRequest, a notification method sent with an id is
  answered with InvalidRequest; bad notifications are logged, never shown.
- pygls keeps the Future of every generator handler in `_request_futures`
  and removes it only for requests: each notification leaked ~2 KB.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future
from functools import cache
from typing import Any

import attrs
import cattrs
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcRequestCancelled
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
MAX_BODY_BYTES = 64 * 1024 * 1024  # a 2M-character document escapes to ~12 MB at most
HIGH_WATER_BYTES = 1024 * 1024  # read-ahead before the stdin reader waits
STALL_S = 0.3  # an incomplete body this long idle may have a wrong length


def make_converter() -> cattrs.Converter:
    """lsprotocol's converter, keeping custom methods' params as plain JSON data
    (pygls' default turns them into namedtuples), and strict about strings."""
    converter = converters.get_converter()
    converter.register_structure_hook(str, _strict_str)
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        names = [field.name for field in attrs.fields(cls)]
        converter.register_structure_hook(
            cls, lambda obj, cls, names=names: cls(**{name: obj.get(name) for name in names})
        )
    return converter


def _strict_str(value: Any, _: type) -> str:
    # cattrs calls str() on anything: a null `text` in didChange became "None" in the document.
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


@cache
def notification_methods() -> frozenset[str]:
    """LSP methods that are notifications (their message type has no id)."""
    return frozenset(
        method
        for method, (message_type, *_) in types.METHOD_TO_TYPES.items()
        if message_type is not None and "id" not in attrs.fields_dict(message_type)
    )


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


class MalformedResponse(JsonRpcException):
    """The client's answer to one of our requests lacks the shape LSP gives it."""


class FrameReader:
    """Bytes in, message bodies out (`Content-Length` framing, LSP base protocol).

    Lenient where editors differ (LF-only lines, header case, stray blank
    lines); anything else malformed is skipped, with one log line, up to the
    next header that makes sense. Never waits forever on a wrong length.
    """

    _HEADER = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)
    _HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
    _OTHER_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")

    def __init__(self, stall_s: float = STALL_S, max_body: int = MAX_BODY_BYTES) -> None:
        self.stall_s = stall_s
        self.max_body = max_body
        self._buf = bytearray()
        self._eof = False
        self._more = asyncio.Event()
        # Back-pressure for a reader thread: bytes handed over and not yet
        # consumed, and whether the parser waits for more (a body larger
        # than the high-water mark must still be read whole).
        self._room = threading.Condition()
        self._queued = 0
        self._hungry = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        self._more.set()

    def feed_eof(self) -> None:
        self._eof = True
        self._more.set()

    async def next_body(self) -> bytes | None:
        """The next message body, or None at the end of the stream."""
        length = await self._header()
        return None if length is None else await self._body(length)

    def wait_for_room(self) -> None:
        """Block the calling (reader) thread while a megabyte waits to be parsed:
        a client that floods the pipe is slowed down, not buffered in memory."""
        with self._room:
            self._room.wait_for(lambda: self._queued < HIGH_WATER_BYTES or self._hungry)

    def add_queued(self, size: int) -> None:
        with self._room:
            self._queued += size

    def _take(self, size: int) -> bytes:
        data = bytes(self._buf[:size])
        del self._buf[:size]
        with self._room:
            self._queued -= len(data)
            self._room.notify()
        return data

    def _give_back(self, data: bytes) -> None:
        self._buf[:0] = data
        with self._room:
            self._queued += len(data)

    async def _wait(self, timeout: float | None = None) -> bool:
        self._more.clear()
        with self._room:
            self._hungry = True
            self._room.notify()
        try:
            await asyncio.wait_for(self._more.wait(), timeout)
        except TimeoutError:
            return False
        finally:
            with self._room:
                self._hungry = False
        return True

    async def _line(self) -> bytes | None:
        while (end := self._buf.find(b"\n")) < 0:
            if self._eof:
                return None
            await self._wait()
        return self._take(end + 1)

    async def _header(self) -> int | None:
        length: int | None = None
        problems: list[str] = []
        in_block = False
        while (line := await self._line()) is not None:
            if not line.strip():
                if not in_block:
                    continue  # stray blank line between messages
                if length is not None and not problems:
                    return length
                log.warning("skipped a malformed header: %s", "; ".join(problems) or "no length")
                length, problems, in_block = None, [], False
                continue
            match = self._HEADER.search(line)
            if match is not None:
                if match.start() > 0 or (in_block and problems):
                    # Junk before a header: the previous frame was broken; start over.
                    log.warning("skipped %d bytes before a header", match.start())
                    length, problems = None, []
                in_block = True
                value = match.group(1).strip()
                size = int(value) if value.isdigit() else -1
                if not 0 <= size <= self.max_body:
                    problems.append(f"invalid Content-Length {value[:40]!r}")
                elif length is not None and length != size:
                    problems.append("two different Content-Length headers")
                length = size
            elif in_block and self._OTHER_HEADER.match(line):
                continue  # Content-Type and the like
            elif in_block:
                problems.append("a line that is not a header")
            else:
                log.warning("skipped %d bytes that are not a header", len(line))
        return None

    async def _body(self, length: int) -> bytes:
        while len(self._buf) < length and not self._eof:
            if not await self._wait(self.stall_s) and (cut := self._overlong()) is not None:
                log.warning("Content-Length %d was too large; read %d bytes", length, cut)
                length = cut
                break
        body = self._take(length)
        if (cut := self._resync_point(body)) is not None:
            self._give_back(body[cut:])
            body = body[:cut]
        return body

    def _resync_point(self, body: bytes) -> int | None:
        """Where the next frame may start inside a broken body (its length was wrong).

        JSON cannot hold a raw newline inside a string, so a raw-newline-ended
        header line in a body is the next frame, and the lines after the first
        newline of a body that is not JSON go back to the header reader."""
        if b"\n" not in body:
            return None
        match = self._HEADER_LINE.search(body)
        if match is not None:
            return match.start()
        try:
            json.loads(body)
        except ValueError:
            return body.index(b"\n") + 1
        return None

    def _overlong(self) -> int | None:
        """Where the body ends if the stalled buffer shows the length was wrong."""
        match = self._HEADER_LINE.search(self._buf)
        if match is not None:
            return match.start()  # JSON cannot hold a raw newline inside a string
        try:
            json.loads(self._buf)
        except ValueError:
            return None  # probably a slow writer: keep waiting
        return len(self._buf)


class Answered(Exception):
    """A message we could not decode but already answered with an error."""


class GroundspecProtocol(LanguageServerProtocol):
    """pygls' protocol with our read loop, decoding, lifecycle and bookkeeping.

    Also: our DocumentStore is the one copy of each document (pygls would keep
    a second one), and a request whose params fail to decode gets an error
    response (pygls lost its id).
    """

    initialize_received = False

    # -- pygls overrides -----------------------------------------------------------

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        self.initialize_received = True
        # Our documents convert positions as UTF-16 only: never let pygls
        # negotiate utf-8/utf-32 (Neovim 0.11 offers utf-8 first).
        if params.capabilities.general is not None:
            params.capabilities.general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        # pygls forgets a handler's future only when it answers a request; the
        # futures of notifications and of generator sub-steps stayed forever.
        def done(future: Future[Any]) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        # pygls logs a traceback for every error answer (one per keystroke when
        # the models failed to load); an expected error is one line.
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            error: JsonRpcException = JsonRpcRequestCancelled(f"request {msg_id} was cancelled")
        elif (exc := future.exception()) is None:
            self._send_response(msg_id, result=future.result())
            return
        elif isinstance(exc, JsonRpcException):
            log.info("request %s failed: %s", msg_id, exc.message)
            error = exc
        else:
            log.error("request %s failed", msg_id, exc_info=exc)
            error = JsonRpcInternalError(f"internal error: {type(exc).__name__}: {exc}")
        self._send_response(msg_id, error=error.to_response_error())

    def _check_handler_result(self, future: Future[Any]) -> None:
        # A failing notification is logged, not shown to the user as a pop-up.
        if future.cancelled() or (exc := future.exception()) is None:
            return
        if isinstance(exc, JsonRpcException):
            log.warning("notification failed: %s", exc.message)
        else:
            log.error("notification failed", exc_info=exc)

    # -- decoding --------------------------------------------------------------------

    def receive(self, body: bytes) -> None:
        """Decode one message body and handle it; every request gets one answer."""
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            self._reply_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            msg_id = data.get("id") if isinstance(data, dict) else None
            self._reply_error(msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 object")
            return
        if "method" in data and not self._admit(data):
            return
        if "method" not in data and not _valid_id(data.get("id")):
            log.warning("dropped a response without a valid id")
            return
        try:
            message = self._structure(data)
        except Answered:
            return
        self.handle_message(message)

    def _admit(self, data: dict[str, Any]) -> bool:
        """Check a request or notification against the LSP lifecycle; answer if not."""
        method, is_request = data["method"], "id" in data
        if not isinstance(method, str):
            if is_request:
                self._reply_error(data["id"], INVALID_REQUEST, "Invalid Request: bad method")
            return False
        if not is_request:
            if not self.initialize_received and method != types.EXIT:
                log.warning("dropped %s: the server is not initialized", method)
                return False
            return True
        msg_id = data["id"]
        if not _valid_id(msg_id):
            self._reply_error(msg_id, INVALID_REQUEST, "Invalid Request: id must be int or string")
        elif method in notification_methods():
            self._reply_error(msg_id, INVALID_REQUEST, f"{method} is a notification: no id")
        elif method == types.INITIALIZE and self.initialize_received:
            self._reply_error(msg_id, INVALID_REQUEST, "the server is already initialized")
        elif not self.initialize_received and method != types.INITIALIZE:
            self._reply_error(msg_id, SERVER_NOT_INITIALIZED, "the server is not initialized")
        elif self._shutdown:
            self._reply_error(msg_id, INVALID_REQUEST, "the server is shutting down")
        else:
            return True
        return False

    def _structure(self, data: dict[str, Any]) -> Any:
        method, msg_id = data.get("method"), data.get("id", "")
        if method is not None:
            default = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            cls = self.get_message_type(method) or default
        elif "error" in data:
            cls = types.ResponseErrorMessage
        else:
            cls = self._result_types.pop(msg_id, None) or JsonRPCResponseMessage
        try:
            return self._converter.structure(data, cls)
        except Exception as exc:
            detail = _first_error(exc)
            if method is not None and "id" in data:
                self._reply_error(msg_id, INVALID_PARAMS, f"invalid params for {method}: {detail}")
            elif method is None and (waiting := self._request_futures.pop(msg_id, None)):
                # A broken answer to our own request: fail it rather than wait forever.
                waiting.set_exception(MalformedResponse(f"malformed response: {detail}"))
            else:
                log.warning("dropped a malformed %s: %s", method or "response", detail)
            raise Answered() from None

    def structure_message(self, data: dict[str, Any]) -> Any:
        return self._structure(data)  # top level only: see receive()

    def _reply_error(self, msg_id: Any, code: int, message: str) -> None:
        msg_id = msg_id if _valid_id(msg_id) or isinstance(msg_id, float) else None
        log.warning("answered %s with %d: %s", msg_id, code, message)
        error = {"code": code, "message": message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    # -- transport -------------------------------------------------------------------

    async def serve(self, frames: FrameReader, stop: threading.Event) -> None:
        """Handle messages until the stream ends or `exit` (SystemExit) arrives."""
        while not stop.is_set() and (body := await frames.next_body()) is not None:
            try:
                self.receive(body)
            except Exception:  # a bug of ours must not end the connection
                log.exception("could not handle a message")
            # Let started requests, timers and reads run between buffered messages.
            await asyncio.sleep(0)

    async def serve_stdio(self, stdin_fd: int, stop: threading.Event) -> None:
        frames = FrameReader()
        loop = asyncio.get_running_loop()

        def pump() -> None:  # a thread: a blocking read of stdin never stalls the loop
            while True:
                frames.wait_for_room()
                if not (data := _read(stdin_fd)):
                    break
                frames.add_queued(len(data))
                loop.call_soon_threadsafe(frames.feed, data)
            loop.call_soon_threadsafe(frames.feed_eof)

        threading.Thread(target=pump, name="groundspec-stdin", daemon=True).start()
        await self.serve(frames, stop)

    async def serve_stream(self, reader: asyncio.StreamReader, stop: threading.Event) -> None:
        frames = FrameReader()

        async def pump() -> None:
            while data := await reader.read(1 << 16):
                frames.feed(data)
            frames.feed_eof()

        task = asyncio.ensure_future(pump())
        try:
            await self.serve(frames, stop)
        finally:
            task.cancel()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""


def _first_error(exc: BaseException) -> str:
    """A one-line reason from a cattrs error group (no traceback in the log)."""
    if isinstance(exc, cattrs.BaseValidationError) and exc.exceptions:
        return _first_error(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}"
