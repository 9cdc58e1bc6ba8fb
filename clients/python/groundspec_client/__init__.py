"""A small client for scripts that talk to `groundspec serve` (standard library only).

    from groundspec_client import Client

    with Client.spawn() as gs:                      # or Client.connect("127.0.0.1", 7777)
        result = gs.complete(text="def add(a, b):\n    ", line=1, character=4)
        print(result["text"], result["stats"]["totalMs"])
        print(gs.stats()["tokensPerSecond"])

Positions are LSP positions: 0-based lines, characters counted in UTF-16 code
units (`utf16_len` converts). Requests are answered on a reader thread, so a
slow completion can time out (the request is then cancelled on the server).
"""

from __future__ import annotations

import difflib
import itertools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

Json = Any
ApplyEditHandler = Callable[[dict[str, Any]], bool]

LANGUAGE_IDS = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
}


class GroundspecError(Exception):
    """An error response from the server, or a broken connection."""

    def __init__(self, message: str, code: int | None = None, data: Json = None) -> None:
        super().__init__(message if code is None else f"{message} (code {code})")
        self.code = code
        self.data = data


# --- framing ---------------------------------------------------------------


def encode_message(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message with its Content-Length header."""
    try:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (editors send them): \ud83d escapes
        body = json.dumps(message, separators=(",", ":")).encode("ascii")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(reader: IO[bytes]) -> dict[str, Any] | None:
    """The next message from `reader`, or None at end of stream."""
    length: int | None = None
    while True:
        line = reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        raise GroundspecError("message without Content-Length header")
    body = reader.read(length)
    if len(body) < length:
        return None
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise GroundspecError(f"expected a JSON object, got {type(message).__name__}")
    return message


# --- positions -------------------------------------------------------------


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (LSP's `character` unit)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def offset(text: str, line: int, character: int) -> int:
    """String index of the LSP position (line, UTF-16 character) in `text`.
    Lines end at "\r\n", "\r" or "\n", as LSP says (and the server counts)."""
    start = 0
    for _ in range(line):
        found = _LINE_BREAK.search(text, start)
        if found is None:
            return len(text)
        start = found.end()
    found = _LINE_BREAK.search(text, start)
    row = text[start : len(text) if found is None else found.start()]
    units = 0
    for index, char in enumerate(row):
        if units >= character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(row)


def apply_edit(text: str, range_: dict[str, Any], new_text: str) -> str:
    """`text` with the LSP `range` replaced by `new_text` (a refactor result)."""
    start = offset(text, range_["start"]["line"], range_["start"]["character"])
    end = offset(text, range_["end"]["line"], range_["end"]["character"])
    return text[:start] + new_text + text[end:]


def write_or_show_diff(path: str | os.PathLike[str], old: str, new: str, write: bool) -> None:
    """Write the rewritten text to `path`, or print a unified diff of the change
    to stdout (for scripts whose default is to show what they would change)."""
    if write:
        Path(path).write_text(new, encoding="utf-8")
        return
    name = str(path)
    diff = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), name, name
    )
    sys.stdout.writelines(diff)


def language_id(path: str | os.PathLike[str]) -> str:
    return LANGUAGE_IDS.get(Path(path).suffix.lower(), "plaintext")


def start(
    tcp: str | None = None,
    command: Sequence[str] = ("groundspec", "serve"),
    **options: Any,
) -> Client:
    """Connect to `tcp` ("HOST:PORT") when given, else spawn `command`."""
    if tcp:
        host, _, port = tcp.rpartition(":")
        return Client.connect(host or "127.0.0.1", int(port), **options)
    return Client.spawn(command, **options)


# --- client ----------------------------------------------------------------


class Client:
    """A JSON-RPC connection to one groundspec server, initialized and ready."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        *,
        process: subprocess.Popen[bytes] | None = None,
        sock: socket.socket | None = None,
        on_apply_edit: ApplyEditHandler | None = None,
        timeout: float | None = 300.0,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._process = process
        self._sock = sock
        self._on_apply_edit = on_apply_edit
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._waiting: dict[int, Future[Json]] = {}
        self._waiting_lock = threading.Lock()
        self._open: dict[str, tuple[int, str]] = {}  # uri -> (version, text)
        self.received_edits: list[dict[str, Any]] = []  # workspace/applyEdit params
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._read_loop, name="groundspec-rpc", daemon=True)
        self._thread.start()

    # construction

    @classmethod
    def spawn(
        cls,
        command: Sequence[str] = ("groundspec", "serve"),
        *,
        env: dict[str, str] | None = None,
        root: str | os.PathLike[str] | None = None,
        initialization_options: dict[str, Any] | None = None,
        timeout: float | None = 300.0,
        on_apply_edit: ApplyEditHandler | None = None,
    ) -> Client:
        """Start `groundspec serve` as a subprocess (stdio) and initialize it."""
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        assert process.stdin is not None and process.stdout is not None
        client = cls(
            process.stdout,
            process.stdin,
            process=process,
            timeout=timeout,
            on_apply_edit=on_apply_edit,
        )
        client._initialize_or_close(root, initialization_options)
        return client

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        *,
        root: str | os.PathLike[str] | None = None,
        initialization_options: dict[str, Any] | None = None,
        timeout: float | None = 300.0,
        on_apply_edit: ApplyEditHandler | None = None,
    ) -> Client:
        """Connect to `groundspec serve --tcp HOST:PORT` and initialize it."""
        sock = socket.create_connection((host, port), timeout=30)
        sock.settimeout(None)
        client = cls(
            sock.makefile("rb"),
            sock.makefile("wb"),
            sock=sock,
            timeout=timeout,
            on_apply_edit=on_apply_edit,
        )
        client._initialize_or_close(root, initialization_options)
        return client

    def _initialize_or_close(
        self, root: str | os.PathLike[str] | None, initialization_options: dict[str, Any] | None
    ) -> None:
        """initialize; if that fails, the caller never gets a client to close, so
        the process or socket is closed here (the process killed if it hangs)."""
        try:
            self.initialize(root, initialization_options)
        except BaseException:
            self._close_transport(timeout=1.0)
            raise

    def initialize(
        self,
        root: str | os.PathLike[str] | None = None,
        initialization_options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        root_path = Path(root or os.getcwd()).resolve()
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "groundspec-python"},
                "rootUri": root_path.as_uri(),
                "workspaceFolders": [{"uri": root_path.as_uri(), "name": root_path.name}],
                "capabilities": {
                    "textDocument": {
                        "synchronization": {"didSave": True},
                        "inlineCompletion": {},
                    },
                    "workspace": {"applyEdit": True},
                    "window": {"workDoneProgress": True},
                },
                "initializationOptions": initialization_options or {},
            },
        )
        self.capabilities = result.get("capabilities", {})
        self.server_info = result.get("serverInfo", {})
        self.notify("initialized", {})
        return dict(result)

    # the groundspec API

    def complete(
        self,
        *,
        line: int,
        character: int,
        text: str | None = None,
        path: str | os.PathLike[str] | None = None,
        language_id: str | None = None,
        max_tokens: int | None = None,
        speculation: str | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """`groundspec/complete` at (line, character) of `text` or of the file at `path`.

        Returns `{text, stats}`: the text to insert at the position.
        """
        params = self._source(text, path, language_id)
        params["position"] = {"line": line, "character": character}
        params.update(
            _options(maxTokens=max_tokens, speculation=speculation, temperature=temperature)
        )
        return dict(self.request("groundspec/complete", params, timeout=timeout))

    def refactor(
        self,
        *,
        start: tuple[int, int],
        end: tuple[int, int],
        instruction: str,
        text: str | None = None,
        path: str | os.PathLike[str] | None = None,
        language_id: str | None = None,
        max_tokens: int | None = None,
        speculation: str | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """`groundspec/refactor` of the range start..end, each (line, character).

        Returns `{newText, range, stats}`; nothing is written, the caller
        replaces `range` with `newText`.
        """
        params = self._source(text, path, language_id)
        params["range"] = {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        }
        params["instruction"] = instruction
        params.update(
            _options(maxTokens=max_tokens, speculation=speculation, temperature=temperature)
        )
        return dict(self.request("groundspec/refactor", params, timeout=timeout))

    def stats(self) -> dict[str, Any]:
        """`groundspec/stats`: totals since the server started."""
        return dict(self.request("groundspec/stats", {}))

    def open_document(
        self, path: str | os.PathLike[str], language: str | None = None, text: str | None = None
    ) -> str:
        """Open (or refresh) `path` on the server with didOpen; returns its URI."""
        file = Path(path).resolve()
        uri = file.as_uri()
        content = file.read_text(encoding="utf-8") if text is None else text
        opened = self._open.get(uri)
        if opened and opened[1] == content:
            return uri
        if opened:
            self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        version = opened[0] + 1 if opened else 1
        doc = {
            "uri": uri,
            "languageId": language or language_id(file),
            "version": version,
            "text": content,
        }
        self.notify("textDocument/didOpen", {"textDocument": doc})
        self._open[uri] = (version, content)
        return uri

    def close(self, timeout: float = 5.0) -> None:
        """shutdown + exit, then wait for the process (killed if it hangs)."""
        try:
            if self._thread.is_alive():
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
        except (GroundspecError, OSError):
            pass
        finally:
            self._close_transport(timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # JSON-RPC

    def request(self, method: str, params: Json, timeout: float | None = None) -> Json:
        """Send a request and wait for its result; raises GroundspecError on error."""
        request_id = next(self._ids)
        future: Future[Json] = Future()
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

    def notify(self, method: str, params: Json) -> None:
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
        if "method" not in message:  # a response
            with self._waiting_lock:
                future = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is None:
                return
            error = message.get("error")
            if error:
                future.set_exception(
                    GroundspecError(
                        error.get("message", "error"), error.get("code"), error.get("data")
                    )
                )
            else:
                future.set_result(message.get("result"))
        elif "id" in message:  # a request from the server
            self._answer(message)
        else:
            log.debug("notification %s", message["method"])

    def _answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "workspace/applyEdit":
            self.received_edits.append(params)
            applied = bool(self._on_apply_edit and self._on_apply_edit(params.get("edit", {})))
            reply["result"] = {"applied": applied}
            if not applied:
                reply["result"]["failureReason"] = "this client does not apply edits"
        elif method == "workspace/configuration":
            reply["result"] = [None for _ in params.get("items", [])]
        elif method in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
            "window/showMessageRequest",
        ):
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": f"unhandled method {method}"}
        try:
            self._send(reply)
        except GroundspecError as exc:
            log.debug("cannot answer %s: %s", method, exc)

    def _fail_waiting(self, reason: str) -> None:
        with self._waiting_lock:
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(GroundspecError(reason))

    def _source(
        self,
        text: str | None,
        path: str | os.PathLike[str] | None,
        language: str | None,
    ) -> dict[str, Any]:
        if (text is None) == (path is None):
            raise ValueError("give exactly one of text= and path=")
        if path is not None:
            return {"textDocument": {"uri": self.open_document(path, language)}}
        return {"text": text, "languageId": language or "python"}

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


def _options(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
