"""The wire layer in-process: framing resync, and no per-message leaks."""

import asyncio
import json

from lsp_server.options import ServerOptions, StartupConfig
from lsp_server.protocol import FrameReader
from lsp_server.server import create_server
from speculator.config import EngineConfig


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def bodies(data: bytes, stall_s: float = 0.05) -> list[bytes]:
    frames = FrameReader(stall_s=stall_s)
    frames.feed(data)
    frames.feed_eof()
    out = []
    while (body := await frames.next_body()) is not None:
        out.append(body)
    return out


GOOD = b'{"jsonrpc":"2.0","id":1,"method":"m"}'


async def test_malformed_headers_are_skipped_up_to_the_next_good_frame() -> None:
    """Issue 11, item 2: each of these wedged the connection."""
    broken = [
        b"Content-Length: abc\r\n\r\n{}",
        b"Content-Length: -5\r\n\r\n{}",
        b"Content-Type: x\r\n\r\n{}",  # no length
        b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"\x00\xffrandom bytes",
        b"Content-Length: 99999999999\r\n\r\n{}",
    ]
    for junk in broken:
        assert (await bodies(junk + framed(GOOD)))[-1] == GOOD, junk


async def test_a_header_without_its_body_does_not_eat_the_next_frame() -> None:
    data = b"Content-Length: 30\r\n\r\n" + framed(GOOD)
    assert await bodies(data) == [b"", GOOD]


async def test_a_bodiless_header_before_junk_does_not_eat_the_next_frame() -> None:
    data = b"Content-Length: 33\r\n\r\n" + b"{not json at all}\r\n\r\n" + framed(GOOD)
    assert (await bodies(data))[-1] == GOOD


async def test_lf_only_headers_and_stray_blank_lines_are_accepted() -> None:
    data = b"\r\n" + b"content-length: %d\n\n" % len(GOOD) + GOOD + framed(GOOD)
    assert await bodies(data) == [GOOD, GOOD]


async def test_a_too_small_length_cuts_the_body_and_resyncs() -> None:
    data = b"Content-Length: 5\r\n\r\n" + GOOD + framed(GOOD)
    assert await bodies(data) == [GOOD[:5], GOOD]


async def test_a_too_large_length_is_found_when_the_stream_stalls() -> None:
    frames = FrameReader(stall_s=0.05)
    frames.feed(b"Content-Length: 500\r\n\r\n" + GOOD)  # then the client waits
    body = await asyncio.wait_for(frames.next_body(), 2)
    assert body == GOOD
    frames.feed(b"Content-Length: 500\r\n\r\n" + GOOD + framed(GOOD))
    assert await asyncio.wait_for(frames.next_body(), 2) == GOOD
    assert await asyncio.wait_for(frames.next_body(), 2) == GOOD


async def test_a_slow_writer_is_not_mistaken_for_a_wrong_length() -> None:
    frames = FrameReader(stall_s=0.05)
    frames.feed(b"Content-Length: %d\r\n\r\n" % len(GOOD) + GOOD[:10])
    reading = asyncio.ensure_future(frames.next_body())
    await asyncio.sleep(0.2)
    assert not reading.done()
    frames.feed(GOOD[10:])
    assert await asyncio.wait_for(reading, 2) == GOOD


class Sink:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


async def test_notifications_leave_no_futures_behind() -> None:
    """Issue 11, item 1: pygls kept the future of every generator handler (~2 KB each)."""
    options = ServerOptions(engine=EngineConfig(fake=True), idle_warm_ms=0)
    ls = create_server(StartupConfig(options=options))
    protocol = ls.protocol
    sink = Sink()
    protocol.set_writer(sink)

    def send(message: dict) -> None:
        protocol.receive(json.dumps({"jsonrpc": "2.0", **message}).encode())  # type: ignore[attr-defined]

    send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
    send({"method": "initialized", "params": {}})
    doc = {"uri": "file:///a.py", "languageId": "python", "version": 1, "text": "x"}
    send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
    here = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    for version in range(2, 202):
        change = {"range": here, "text": "a"}
        params = {
            "textDocument": {"uri": doc["uri"], "version": version},
            "contentChanges": [change],
        }
        send({"method": "textDocument/didChange", "params": params})
    send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": doc["uri"]}}})
    await asyncio.sleep(0.05)
    assert protocol._request_futures == {}
    assert sink.sent[0]["id"] == 1 and "result" in sink.sent[0]
    ls.service.shutdown()
