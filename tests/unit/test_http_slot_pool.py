"""HTTP request slots (llama-server's --parallel): SlotPool, and /slots and /props
over a real loopback socket with a gate the test holds, so a request stays in its
slot until the test lets it finish (or fails it, or goes away)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from lsp_server.http import FrontDoor
from lsp_server.http_slots import SlotPool
from lsp_server.options import ServerOptions
from speculator.config import EngineConfig
from speculator.types import CancelToken, CompletionRequest, CompletionResult, Engine, Stats

T = TypeVar("T")


async def test_a_slot_is_busy_while_held_and_the_lowest_free_one_is_taken() -> None:
    pool = SlotPool(3)
    async with pool.slot("a") as first, pool.slot("b") as second:
        assert (first, second, pool.busy) == (0, 1, [True, True, False])
        assert pool.tasks[0] >= 0 and pool.tasks[2] == -1
    async with pool.slot("c") as again:
        assert again == 0 and pool.free() == 2
    assert pool.busy == [False] * 3 and pool.tasks == [-1] * 3


async def test_when_all_slots_are_busy_requests_wait_clients_in_rotation() -> None:
    pool = SlotPool(1)
    order: list[str] = []
    release = asyncio.Event()

    async def request(client: str, name: str) -> None:
        async with pool.slot(client):
            order.append(name)
            if name == "a0":
                await release.wait()

    first = asyncio.ensure_future(request("a", "a0"))
    await asyncio.sleep(0)
    queued = [asyncio.ensure_future(request("a", f"a{i}")) for i in (1, 2)]
    await asyncio.sleep(0)
    queued.append(asyncio.ensure_future(request("b", "b1")))
    await asyncio.sleep(0)
    assert pool.busy == [True] and order == ["a0"]
    release.set()
    await asyncio.gather(first, *queued)
    assert order == ["a0", "a1", "b1", "a2"] and pool.busy == [False]


async def test_a_slot_is_released_on_an_error_and_on_a_cancel() -> None:
    pool = SlotPool(1)
    with pytest.raises(RuntimeError):
        async with pool.slot("a"):
            raise RuntimeError("engine failed")
    assert pool.busy == [False]
    held = asyncio.ensure_future(_hold(pool, "a"))
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(_hold(pool, "b"))
    await asyncio.sleep(0)
    waiting.cancel()  # a waiter that leaves takes nothing
    held.cancel()  # a holder cancelled (its client went away) frees its slot
    await asyncio.gather(held, waiting, return_exceptions=True)
    assert pool.busy == [False] and pool.free() == 1
    async with pool.slot("c") as index:
        assert index == 0


async def _hold(pool: SlotPool, client: str) -> None:
    async with pool.slot(client):
        await asyncio.Event().wait()


# -- over HTTP -------------------------------------------------------------------------


class HeldGate:
    """An application service whose completions wait until the test releases them,
    or fail when the prompt says so."""

    state = "ready"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.requests: list[CompletionRequest] = []
        self.cancelled = 0

    def ensure_loading(self) -> None:
        pass

    async def call_engine(self, call: Callable[[Engine], T], token: CancelToken) -> T:
        raise AssertionError("not used here")

    async def run_completion(self, request: CompletionRequest, token: CancelToken) -> Any:
        self.requests.append(request)
        if "fail" in request.text:
            raise RuntimeError("engine failed")
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return CompletionResult(text="done", stats=Stats(generated_tokens=1))

    async def run_refactor(self, request: Any, token: CancelToken) -> Any:
        raise AssertionError("not used here")


async def _serve(gate: HeldGate, options: ServerOptions) -> AsyncIterator[str]:
    front = FrontDoor(gate, lambda: options)
    server = TestServer(front.app(), handler_cancellation=True)  # as start_http runs it
    await server.start_server()
    try:
        yield str(server.make_url(""))
    finally:
        await server.close()


async def _busy(http: aiohttp.ClientSession, url: str) -> list[bool]:
    async with http.get(url + "/slots") as response:
        return [slot["is_processing"] for slot in await response.json()]


async def _until(http: aiohttp.ClientSession, url: str, wanted: list[bool]) -> None:
    for _ in range(200):
        if await _busy(http, url) == wanted:
            return
        await asyncio.sleep(0.01)
    assert await _busy(http, url) == wanted


OPTIONS = ServerOptions(engine=EngineConfig(n_ctx=512), http_parallel=2, seed=42)


async def test_slots_props_and_requests_held_in_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROUNDSPEC_N_CTX", raising=False)
    gate = HeldGate()
    async for url in _serve(gate, OPTIONS):
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "/props") as response:
                props = await response.json()
            assert props["total_slots"] == 2
            assert props["default_generation_settings"]["n_ctx"] == 256
            assert props["default_generation_settings"]["params"]["seed"] == 42
            async with http.get(url + "/slots") as response:
                slots = await response.json()
            assert [(s["id"], s["n_ctx"], s["is_processing"]) for s in slots] == [
                (0, 256, False),
                (1, 256, False),
            ]
            assert "params" not in slots[0]
            posts = [
                asyncio.ensure_future(http.post(url + "/completion", json={"prompt": f"x{i} = "}))
                for i in range(3)
            ]
            await _until(http, url, [True, True])  # two held, the third waits for one
            async with http.get(url + "/slots?fail_on_no_slot=1") as response:
                assert response.status == 503
            gate.release.set()
            for response in await asyncio.gather(*posts):
                assert response.status == 200
                assert (await response.json())["content"] == "done"
            await _until(http, url, [False, False])
    # A request that names no seed gets the option's, as llama-server's --seed.
    assert [r.seed for r in gate.requests] == [42, 42, 42]


async def test_a_slot_is_released_on_an_error_a_disconnect_and_a_stream_cancel() -> None:
    gate = HeldGate()
    async for url in _serve(gate, OPTIONS):
        async with aiohttp.ClientSession() as http:
            async with http.post(url + "/completion", json={"prompt": "fail = "}) as response:
                assert response.status == 500
            assert await _busy(http, url) == [False, False]
            for stream in (False, True):
                body = {"prompt": "x = ", "stream": stream}
                with pytest.raises(asyncio.TimeoutError):
                    timeout = aiohttp.ClientTimeout(total=0.3)
                    async with http.post(url + "/completion", json=body, timeout=timeout) as r:
                        await r.read()  # the stream's events never end: the client gives up
                await _until(http, url, [False, False])
    assert gate.cancelled == 2


async def test_no_slots_answers_501_as_llama_server() -> None:
    options = ServerOptions(http_slots=False)
    async for url in _serve(HeldGate(), options):
        async with aiohttp.ClientSession() as http:
            for method, path in (("GET", "/slots"), ("POST", "/slots/0?action=erase")):
                async with http.request(method, url + path) as response:
                    body = await response.json()
                assert response.status == 501
                assert body["error"]["type"] == "not_supported_error"
                assert "--no-slots" in body["error"]["message"]


async def test_cors_proxy_is_a_clear_501_not_a_404() -> None:
    async for url in _serve(HeldGate(), ServerOptions()):
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "/cors-proxy?url=http://127.0.0.1:1/x") as response:
                body = await response.json()
    assert response.status == 501 and "no web UI" in body["error"]["message"]


def test_parallel_and_no_slots_flags_set_the_options() -> None:
    from lsp_server.cli import build_parser
    from lsp_server.cli_common import UsageError
    from lsp_server.cli_serve import http_flags

    args = build_parser().parse_args(["serve", "--http", "8012", "-np", "4", "--no-slots"])
    options = http_flags(ServerOptions(), args)
    assert (options.http_parallel, options.http_slots) == (4, False)
    args = build_parser().parse_args(["serve", "--http", "8012"])
    assert http_flags(OPTIONS, args) == OPTIONS  # the config file's stand
    with pytest.raises(UsageError, match="--parallel takes 1 to 64"):
        http_flags(ServerOptions(), build_parser().parse_args(["serve", "--parallel", "0"]))
