"""The key check for LSP over TCP: the first message must be `initialize` with
`initializationOptions.apiKey` equal to the server's key (`serve --api-key`).

A client without it gets one JSON-RPC error naming what is missing, and the
connection is closed before the protocol sees anything: no document, no
workspace root, no engine work. The key is taken out of the message before it
goes on, so it never reaches the options, a log line or a problem report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .auth import key_matches

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803  # LSP's RequestFailed: well-formed, but not served
FIRST_MESSAGE_TIMEOUT_S = 30.0
MAX_HEADER_BYTES = 8192
MAX_FIRST_BODY_BYTES = 4 * 1024 * 1024  # initialize carries capabilities, not documents
KEY_OPTION = "apiKey"


class Refused(Exception):
    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


Connection = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def gated(connection: Connection, api_key: str | None) -> Connection:
    """`connection` for the clients that know `api_key` (every client when it is None)."""
    if not api_key:
        return connection
    gate = LspGate(api_key)

    async def admitted_connection(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        admitted = await gate.admit(reader, writer)
        if admitted is not None:  # else told why and disconnected; the server listens on
            await connection(admitted, writer)

    return admitted_connection


class LspGate:
    """Admits TCP clients that know the key; holds the tasks relaying their streams."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._pumps: set[asyncio.Task[None]] = set()

    async def admit(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> asyncio.StreamReader | None:
        """A reader that yields the client's stream (its `initialize` less the key)
        when the key is right; None, once the client has been told why and
        disconnected."""
        try:
            body = await asyncio.wait_for(_first_body(reader), FIRST_MESSAGE_TIMEOUT_S)
            message = _checked(body, self.key)
        except Refused as exc:
            log.warning("LSP client %s refused: %s", _peer(writer), exc)
            await _refuse(writer, exc)
            return None
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            log.warning("LSP client %s refused: no initialize in time", _peer(writer))
            await _refuse(writer, Refused("the first message must be initialize"))
            return None
        out = asyncio.StreamReader()
        first = json.dumps(message).encode("utf-8")
        out.feed_data(b"Content-Length: %d\r\n\r\n" % len(first) + first)
        task = asyncio.ensure_future(_relay(reader, out))
        self._pumps.add(task)  # the loop holds tasks weakly
        task.add_done_callback(self._pumps.discard)
        return out


async def _first_body(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readuntil(b"\r\n\r\n")
    if len(header) > MAX_HEADER_BYTES:
        raise ValueError("header too long")
    length = None
    for line in header.decode("ascii", "replace").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is None or length > MAX_FIRST_BODY_BYTES:
        raise ValueError("no usable Content-Length")
    return await reader.readexactly(length)


def _checked(body: bytes, key: str) -> dict[str, Any]:
    """The first message without its key; Refused unless it is initialize with the key."""
    try:
        message = json.loads(body)
    except ValueError:
        raise Refused("the first message is not JSON") from None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        msg_id = message.get("id") if isinstance(message, dict) else None
        raise Refused("the first message must be initialize", msg_id)
    msg_id = message.get("id")
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    presented = options.pop(KEY_OPTION, None) if isinstance(options, dict) else None
    if not isinstance(presented, str) or not key_matches(presented, key):
        raise Refused(
            "this server requires an API key: send it as initializationOptions.apiKey"
            if presented is None
            else "invalid API key (initializationOptions.apiKey)",
            msg_id,
        )
    return message


async def _refuse(writer: asyncio.StreamWriter, refusal: Refused) -> None:
    error = {"code": REQUEST_FAILED, "message": f"groundspec: {refusal}"}
    body = json.dumps({"jsonrpc": "2.0", "id": refusal.msg_id, "error": error}).encode()
    with contextlib.suppress(OSError):
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def _relay(reader: asyncio.StreamReader, out: asyncio.StreamReader) -> None:
    try:
        while data := await reader.read(1 << 16):
            out.feed_data(data)
    except OSError:
        pass
    finally:
        out.feed_eof()


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "?"
