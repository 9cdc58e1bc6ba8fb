"""A scripted JSON-RPC peer for the Python client's unit tests: answers over two pipes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from groundspec_client import encode_message, read_message

Send = Callable[[dict[str, Any]], None]
Handler = Callable[[dict[str, Any], Send], None]

COMPLETE_RESULT = {
    "text": "return a + b",
    "stats": {
        "generatedTokens": 4,
        "draftedTokens": 3,
        "acceptedTokens": 2,
        "promptTokens": 20,
        "reusedPromptTokens": 10,
        "promptMs": 1.5,
        "decodeMs": 2.5,
        "totalMs": 4.0,
        "speculation": "lookup",
    },
}

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 8}}


class StopServing(Exception):
    """Raised by a handler to end the fake server without answering."""


class FakeServer:
    """Answers the client over two pipes; `handler(message, send)` decides what to do."""

    def __init__(self, handler: Handler) -> None:
        self.received: list[dict[str, Any]] = []
        client_read, server_write = os.pipe()
        server_read, client_write = os.pipe()
        self.client_reader = os.fdopen(client_read, "rb")
        self.client_writer = os.fdopen(client_write, "wb")
        self._reader = os.fdopen(server_read, "rb")
        self._writer = os.fdopen(server_write, "wb")
        self._handler = handler
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(encode_message(message))
        self._writer.flush()

    def _serve(self) -> None:
        try:
            while (message := read_message(self._reader)) is not None:
                self.received.append(message)
                if message.get("method") == "exit":
                    break
                self._handler(message, self.send)
        except StopServing:
            pass
        finally:
            self._writer.close()


def standard(message: dict[str, Any], send: Send) -> None:
    """The contract's results for the groundspec methods; -32601 for anything else."""
    method = message.get("method")
    if "id" not in message or method is None:
        return
    results: dict[str, Any] = {
        "initialize": {"capabilities": {"inlineCompletionProvider": True}},
        "shutdown": None,
        "groundspec/stats": {
            "requests": 3,
            "tokensPerSecond": 12.5,
            "acceptance": {"lookup": {"drafted": 10, "accepted": 7, "rate": 0.7}},
            "latencyMs": {"p50": 30.0, "p95": 80.0},
            "server": {"engineState": "ready", "cacheHits": 2},
            "someNewKey": 1,
        },
        "groundspec/complete": COMPLETE_RESULT,
        "groundspec/refactor": {"newText": "def g():\n    pass", "range": RANGE, "stats": {}},
        "groundspec/nextEdit": {"edits": [{"range": RANGE, "newText": "x"}], "stats": {}},
    }
    if method in results:
        send({"jsonrpc": "2.0", "id": message["id"], "result": results[method]})
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
