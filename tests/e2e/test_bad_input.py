"""Bad input: errors are returned where they are due, and the server keeps answering."""

from __future__ import annotations

import asyncio
import json
import os
import time
from concurrent.futures import Future

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound
from pytest_lsp import LanguageClient

from .helpers import change, inline, inline_params, open_doc, pos, rng, stats

URI = "file:///work/project/bad.py"


async def send_raw(client: LanguageClient, body: bytes) -> None:
    """Write a framed message straight to the server's stdin."""
    server = client._server
    assert server is not None and server.stdin is not None
    server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await server.stdin.drain()


def expect_response(client: LanguageClient, msg_id: str | None) -> asyncio.Future:
    """A future for the response to a message we write by hand (id None: parse errors)."""
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future  # type: ignore[index]
    return asyncio.wrap_future(future)


@pytest.mark.parametrize(
    "body, code",
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),  # cut off
        (b"\xff\xfe not utf-8", -32700),
        (b"[1, 2, 3]", -32600),
    ],
)
async def test_malformed_json_rpc_gets_an_error_with_a_null_id(
    client: LanguageClient, body: bytes, code: int
) -> None:
    response = expect_response(client, None)
    await send_raw(client, body)
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(response, timeout=5)
    assert error.value.code == code
    assert (await stats(client))["requests"] == 0


async def test_request_with_undecodable_params_gets_an_error(client: LanguageClient) -> None:
    open_doc(client, URI)
    response = expect_response(client, "raw-1")
    message = {
        "jsonrpc": "2.0",
        "id": "raw-1",
        "method": types.TEXT_DOCUMENT_INLINE_COMPLETION,
        "params": {"textDocument": {"uri": URI}},  # no position
    }
    await send_raw(client, json.dumps(message).encode())
    with pytest.raises(JsonRpcInvalidParams, match="textDocument/inlineCompletion"):
        await asyncio.wait_for(response, timeout=5)
    assert (await stats(client))["server"]["openDocuments"] == 1


async def test_unknown_methods(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcMethodNotFound):
        await client.protocol.send_request_async("groundspec/nope", {})
    client.protocol.notify("groundspec/unknownNotification", {})
    assert (await stats(client))["requests"] == 0


async def test_positions_out_of_range(client: LanguageClient) -> None:
    open_doc(client, URI)
    with pytest.raises(JsonRpcInvalidParams, match="out of range"):
        await inline(client, URI, pos(99, 0))
    # A column past the end of a line means the end of the line (LSP says so).
    result = await inline(client, URI, pos(2, 500))
    assert result.items[0].range == rng((2, 11), (2, 11))


async def test_edits_and_requests_for_unknown_documents(client: LanguageClient) -> None:
    change(client, "file:///never/opened.py", 2, rng((0, 0), (0, 0)), "x")
    with pytest.raises(JsonRpcException, match="unknown document"):
        await inline(client, "file:///never/opened.py", pos(0, 0))
    # An edit past the end of an open document is clamped, as editors do.
    open_doc(client, URI, "a = 1\n")
    change(client, URI, 2, rng((40, 0), (41, 0)), "b = 2\n")
    result = await inline(client, URI, pos(1, 6))
    assert result.items


async def test_ten_megabyte_document(client: LanguageClient) -> None:
    big = "x = 1  # padding padding padding\n" * (10 * 1024 * 1024 // 33)
    started = time.perf_counter()
    open_doc(client, "file:///big.py", big)
    with pytest.raises(JsonRpcException, match="too large"):
        await inline(client, "file:///big.py", pos(5, 0))
    change(client, "file:///big.py", 2, rng((0, 0), (0, 0)), "# edited\n")
    with pytest.raises(JsonRpcException, match="too large"):
        await inline(client, "file:///big.py", pos(0, 2))
    assert time.perf_counter() - started < 15
    # Other documents are still served.
    open_doc(client, URI)
    assert (await inline(client, URI, pos(2, 11))).items


async def test_binary_document(client: LanguageClient) -> None:
    open_doc(client, "file:///blob.py", "abc\x00\x01\x02def")
    with pytest.raises(JsonRpcException, match="binary"):
        await inline(client, "file:///blob.py", pos(0, 3))
    out = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri="file:///blob.py"),
            range=rng((0, 0), (0, 3)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert out  # the actions are offered; the refactor itself reports the problem


async def test_keystroke_flood(client: LanguageClient) -> None:
    """50 keystrokes/s for 4 s, each followed by an inline completion request."""
    open_doc(client, URI, "")
    pending = []
    version, line, col = 1, 0, 0
    for i in range(200):
        char = "\n" if i % 40 == 39 else "abcdefgh😀"[i % 9]
        version += 1
        change(client, URI, version, rng((line, col), (line, col)), char)
        line, col = (
            (line + 1, 0) if char == "\n" else (line, col + len(char.encode("utf-16-le")) // 2)
        )
        pending.append(
            client.protocol.send_request(
                types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(URI, pos(line, col))
            )
        )
        await asyncio.sleep(0.02)
    results = await asyncio.wait_for(
        asyncio.gather(*(asyncio.wrap_future(p) for p in pending)), timeout=10
    )
    assert all(isinstance(r, types.InlineCompletionList) for r in results)
    started = time.perf_counter()
    totals = await stats(client)
    assert time.perf_counter() - started < 1.0
    assert totals["server"]["peakRssMb"] < 400
    json.dumps(totals)


@pytest.mark.skipif(
    not os.environ.get("GROUNDSPEC_LONG_FLOOD"), reason="a minute long; set GROUNDSPEC_LONG_FLOOD=1"
)
async def test_one_minute_flood_at_50_keystrokes_per_second() -> None:
    from bench.flood import run_flood

    report = await run_flood(seconds=60, rate=50)
    assert report["failed"] == 0 and report["answered"] > 2500
    assert report["peakRssMb"] < 400
