"""A connection flooding one-shot requests gets ServerCancelled once MAX_QUEUED
wait, instead of an endless queue (fake engine in delay mode, raw stdio)."""

from __future__ import annotations

import time
from typing import Any

from lsp_server.service import MAX_QUEUED

from .raw import RawServer

SERVER_CANCELLED = -32802


def collect(server: RawServer, ids: set[int], timeout: float) -> list[dict[str, Any]]:
    """The answers to `ids`, in the order they came."""
    deadline = time.monotonic() + timeout
    answers = []
    while ids:
        message = server.messages.get(timeout=max(0.01, deadline - time.monotonic()))
        if "method" in message and "id" in message:  # a request from the server
            server.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif message.get("id") in ids:
            ids.discard(message["id"])
            answers.append(message)
    return answers


def test_a_flood_of_requests_is_bounded() -> None:
    server = RawServer({"GROUNDSPEC_FAKE_TEXT": "x" * 50, "GROUNDSPEC_FAKE_DELAY_MS": "20"})
    try:
        server.initialize()
        params = {
            "text": "x = ",
            "languageId": "python",
            "position": {"line": 0, "character": 4},
            "maxTokens": 5,  # 100 ms each
        }
        ids = [server.request("groundspec/complete", params) for _ in range(MAX_QUEUED + 4)]
        answers = collect(server, set(ids), timeout=30)
        refused = [a["error"] for a in answers if "error" in a]
        assert len(refused) == 4
        assert all(e["code"] == SERVER_CANCELLED and "retry" in e["message"] for e in refused)
        assert [a["result"]["text"] for a in answers if "result" in a] == ["x" * 5] * MAX_QUEUED
        # Once answered, places are free again.
        assert server.call("groundspec/complete", params, timeout=10)["result"]["text"] == "xxxxx"
    finally:
        server.close()
