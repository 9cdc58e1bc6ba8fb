"""JSON-RPC framing (`Content-Length` headers) and the client's error type."""

from __future__ import annotations

import json
from typing import IO, Any


class GroundspecError(Exception):
    """An error response from the server, an unexpected result, or a broken connection."""

    def __init__(self, message: str, code: int | None = None, data: Any = None) -> None:
        super().__init__(message if code is None else f"{message} (code {code})")
        self.code = code
        self.data = data


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
