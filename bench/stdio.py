"""LSP base-protocol framing over a subprocess's pipes, for the benchmarks that
drive `groundspec serve` on stdio (and the raw protocol tests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any


def frame(message: Any) -> bytes:
    """A JSON-RPC message (or raw bytes, sent as they are) with its header."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_messages(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """The decoded messages of `stream` until it ends."""
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line or length is None:
            return
        yield json.loads(stream.read(length))
