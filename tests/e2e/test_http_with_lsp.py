"""HTTP beside the LSP server in one process (`serve --stdio --http PORT`): one engine
thread serves both, bad HTTP input leaves the LSP side working, and a disconnected
HTTP client's request shows up as cancelled in the LSP side's stats."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from typing import Any

import aiohttp

from .conftest import FAKE_TEXT
from .http_helpers import Served, serve_http

_ids = itertools.count(1)


class MiniLsp:
    """Just enough of an LSP client over the server's stdin/stdout."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stdout = reader
        self.stdin = writer

    @classmethod
    def over_stdio(cls, served: Served) -> MiniLsp:
        assert served.process.stdin is not None and served.process.stdout is not None
        return cls(served.process.stdout, served.process.stdin)

    async def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.stdin.drain()

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(_ids)
        await self.send({"id": msg_id, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self._read(), timeout=15)
            if message.get("id") == msg_id and "method" not in message:
                assert "error" not in message, message["error"]
                return message["result"]

    async def _read(self) -> dict[str, Any]:
        length = 0
        while (line := await self.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(await self.stdout.readexactly(length))

    async def start(self) -> None:
        await self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        await self.send({"method": "initialized", "params": {}})

    async def stop(self) -> None:
        await self.request("shutdown", None)
        await self.send({"method": "exit"})


async def complete(lsp: MiniLsp) -> str:
    params = {"text": "x = ", "position": {"line": 0, "character": 4}}
    return (await lsp.request("groundspec/complete", params))["text"]


async def test_lsp_and_http_share_one_engine() -> None:
    async with serve_http("--stdio", stdin=True) as served, aiohttp.ClientSession() as http:
        lsp = MiniLsp.over_stdio(served)
        await lsp.start()
        assert await complete(lsp) == FAKE_TEXT
        async with http.post(served.url + "/infill", json={"input_prefix": "y = "}) as response:
            assert (await response.json())["content"] == FAKE_TEXT
        # Bad HTTP input is refused; the LSP side goes on answering.
        for raw in (b"{", b"\xff", b'{"n_predict": []}'):
            async with http.post(served.url + "/infill", data=raw) as response:
                assert response.status == 400
        assert await complete(lsp) == FAKE_TEXT
        stats = await lsp.request("groundspec/stats", {})
        assert stats["requests"] == 3  # two LSP completions and the HTTP one: one engine
        await lsp.stop()
        assert await asyncio.wait_for(served.process.wait(), timeout=10) == 0


async def test_a_disconnected_http_client_is_cancelled_on_the_shared_engine() -> None:
    slow = {"GROUNDSPEC_FAKE_TEXT": "x" * 400, "GROUNDSPEC_FAKE_DELAY_MS": "20"}
    async with serve_http("--stdio", stdin=True, **slow) as served:
        lsp = MiniLsp.over_stdio(served)
        await lsp.start()
        async with aiohttp.ClientSession() as http:
            body = {"input_prefix": "a = ", "n_predict": 400}
            request = asyncio.create_task(http.post(served.url + "/infill", json=body))
            await asyncio.sleep(0.5)
            request.cancel()
        for _ in range(100):
            stats = await lsp.request("groundspec/stats", {})
            if stats["cancelled"]:
                break
            await asyncio.sleep(0.05)
        assert stats["cancelled"] == 1
        await lsp.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_http_beside_lsp_over_tcp() -> None:
    port = free_port()
    async with serve_http("--tcp", f"{port}") as served, aiohttp.ClientSession() as http:
        for _ in range(100):
            if b"LSP listening on 127.0.0.1:%d" % port in b"".join(served.log):
                break
            await asyncio.sleep(0.05)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lsp = MiniLsp(reader, writer)
        await lsp.start()
        assert await complete(lsp) == FAKE_TEXT
        async with http.post(served.url + "/completion", json={"prompt": "z = "}) as response:
            assert (await response.json())["content"] == FAKE_TEXT
        await lsp.stop()
        writer.close()
        assert await asyncio.wait_for(served.process.wait(), timeout=10) == 0
