"""The groundspec API over a Connection: initialize, complete, refactor, nextEdit, stats."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Unpack

from .connection import (
    ApplyEditHandler,
    Connection,
    ConnectionOptions,
    MessageHandler,
    ProgressHandler,
)
from .protocol import GroundspecError
from .results import Completion, NextEdit, Refactor, ServerStats, decode
from .text import changed_span, language_id, position


class Client(Connection):
    """A JSON-RPC connection to one groundspec server, initialized and ready
    (from `spawn` or `connect`; the constructor alone does not initialize)."""

    def __init__(
        self, reader: IO[bytes], writer: IO[bytes], **options: Unpack[ConnectionOptions]
    ) -> None:
        self._open: dict[str, tuple[int, str]] = {}  # uri -> (version, text)
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        super().__init__(reader, writer, **options)

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
        on_progress: ProgressHandler | None = None,
        on_message: MessageHandler | None = None,
        on_log: MessageHandler | None = None,
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
            on_progress=on_progress,
            on_message=on_message,
            on_log=on_log,
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
        on_progress: ProgressHandler | None = None,
        on_message: MessageHandler | None = None,
        on_log: MessageHandler | None = None,
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
            on_progress=on_progress,
            on_message=on_message,
            on_log=on_log,
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
    ) -> Completion:
        """`groundspec/complete` at (line, character) of `text` or of the file at `path`:
        the text to insert at the position, and the request's stats."""
        params = self._source(text, path, language_id)
        params["position"] = {"line": line, "character": character}
        params.update(
            _options(maxTokens=max_tokens, speculation=speculation, temperature=temperature)
        )
        result = self.request("groundspec/complete", params, timeout=timeout)
        return decode(result, Completion, "groundspec/complete result")

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
    ) -> Refactor:
        """`groundspec/refactor` of the range start..end, each (line, character).
        Nothing is written: the caller replaces `range` with `new_text` (`apply_edit`)."""
        params = self._source(text, path, language_id)
        params["range"] = {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        }
        params["instruction"] = instruction
        params.update(
            _options(maxTokens=max_tokens, speculation=speculation, temperature=temperature)
        )
        result = self.request("groundspec/refactor", params, timeout=timeout)
        return decode(result, Refactor, "groundspec/refactor result")

    def next_edit(
        self,
        path: str | os.PathLike[str],
        *,
        line: int,
        character: int,
        speculation: str | None = None,
        timeout: float | None = None,
    ) -> NextEdit:
        """`groundspec/nextEdit` at (line, character) of the open document `path`: the
        edit that most likely follows its recent edits (`update_document` sends them)."""
        uri = self._open_uri(path)
        params: dict[str, Any] = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": character},
        }
        params.update(_options(speculation=speculation))
        result = self.request("groundspec/nextEdit", params, timeout=timeout)
        return decode(result, NextEdit, "groundspec/nextEdit result")

    def stats(self) -> ServerStats:
        """`groundspec/stats`: totals since the server started."""
        return decode(self.request("groundspec/stats", {}), ServerStats, "groundspec/stats result")

    # documents

    def open_document(
        self, path: str | os.PathLike[str], language: str | None = None, text: str | None = None
    ) -> str:
        """Open `path` on the server (didOpen) with `text` or the file's content, or, when
        it is open with other text, send the change as one ranged didChange. Returns its URI."""
        file = Path(path).resolve()
        uri = file.as_uri()
        content = file.read_text(encoding="utf-8") if text is None else text
        opened = self._open.get(uri)
        if opened is None:
            doc = {"uri": uri, "languageId": language or language_id(file), "version": 1}
            self.notify("textDocument/didOpen", {"textDocument": {**doc, "text": content}})
            self._open[uri] = (1, content)
        elif opened[1] != content:
            self._send_change(uri, opened, content)
        return uri

    def update_document(self, path: str | os.PathLike[str], text: str) -> str:
        """The user's edit of an open document: `path` now holds `text` (didChange).
        Opens it first when it is not open."""
        return self.open_document(path, text=text)

    def close_document(self, path: str | os.PathLike[str]) -> None:
        uri = Path(path).resolve().as_uri()
        if self._open.pop(uri, None) is not None:
            self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def _send_change(self, uri: str, opened: tuple[int, str], content: str) -> None:
        version, old = opened[0] + 1, opened[1]
        start, end, replacement = changed_span(old, content)
        change = {
            "range": {"start": position(old, start), "end": position(old, end)},
            "text": replacement,
        }
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        self._open[uri] = (version, content)

    def _open_uri(self, path: str | os.PathLike[str]) -> str:
        uri = Path(path).resolve().as_uri()
        return uri if uri in self._open else self.open_document(path)

    def _source(
        self, text: str | None, path: str | os.PathLike[str] | None, language: str | None
    ) -> dict[str, Any]:
        if (text is None) == (path is None):
            raise ValueError("give exactly one of text= and path=")
        if path is not None:
            return {"textDocument": {"uri": self.open_document(path, language)}}
        return {"text": text, "languageId": language or "python"}

    # shutdown

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


def _options(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
