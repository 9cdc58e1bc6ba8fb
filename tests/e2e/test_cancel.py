"""Cancellation mid-decode, with the fake engine's delay mode (20 ms per token)."""

from __future__ import annotations

import asyncio
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from .helpers import call, inline_params, open_doc, pos, stats

URI = "file:///work/project/slow.py"
ROUND_S = 0.02  # the fake engine checks its cancel token every 20 ms


async def test_cancel_request_stops_decoding_within_a_round(slow: LanguageClient) -> None:
    open_doc(slow, URI)
    request = slow.protocol.send_request(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(URI, pos(2, 11)), msg_id=4242
    )
    await asyncio.sleep(0.3)  # decoding is under way (8 s if left alone)
    slow.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=4242))
    started = time.perf_counter()
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wrap_future(request)
    await wait_for_cancelled(slow)
    # The worker is free again: a short request is answered right away.
    out = await call(slow, "groundspec/complete", {"text": "x", "position": pos0(), "maxTokens": 2})
    assert out["text"] == "xx"
    assert time.perf_counter() - started < 10 * ROUND_S + 0.5


async def test_newer_keystroke_supersedes_the_running_completion(slow: LanguageClient) -> None:
    open_doc(slow, URI)
    params = inline_params(URI, pos(2, 11))
    first = slow.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=1)
    await asyncio.sleep(0.3)
    started = time.perf_counter()
    slow.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=2)
    superseded = await asyncio.wait_for(asyncio.wrap_future(first), timeout=2)
    assert isinstance(superseded, types.InlineCompletionList) and not superseded.items
    assert time.perf_counter() - started < 1.0
    slow.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=2))  # don't wait 8 s
    totals = await stats(slow)
    assert totals["server"]["superseded"] == 1


async def test_refactor_command_is_cancellable(slow: LanguageClient) -> None:
    open_doc(slow, URI)
    target = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 10}}
    params = types.ExecuteCommandParams(
        command="groundspec.refactor", arguments=[{"uri": URI, "range": target, "instruction": "x"}]
    )
    request = slow.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=77)
    await asyncio.sleep(0.3)
    slow.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=77))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wrap_future(request)
    await wait_for_cancelled(slow)
    assert slow.edits == []  # type: ignore[attr-defined]


async def wait_for_cancelled(client: LanguageClient, timeout: float = 1.0) -> None:
    """Poll groundspec/stats until the engine has counted a cancelled decode."""
    deadline = time.perf_counter() + timeout
    while (await stats(client))["cancelled"] < 1:
        assert time.perf_counter() < deadline, "the engine kept decoding after cancel"
        await asyncio.sleep(ROUND_S)


def pos0() -> dict[str, int]:
    return {"line": 0, "character": 1}
