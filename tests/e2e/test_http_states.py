"""The front door over real HTTP in states the fake engine never shows: still
loading, failed to load, and an engine that fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from lsp_server.http import FrontDoor
from lsp_server.options import ServerOptions
from lsp_server.worker import EngineUnavailable
from speculator.fake import FakeEngine
from speculator.types import CancelToken, Engine, EngineError, Snippet

from .conftest import server_env
from .http_helpers import GROUNDSPEC, serve_http

T = TypeVar("T")


class StubGate:
    """An application service whose state and engine the test sets."""

    def __init__(self, state: str, engine: Engine | None = None) -> None:
        self.state = state
        self.engine = engine

    def ensure_loading(self) -> None:
        pass

    async def call_engine(self, call: Callable[[Engine], T], token: CancelToken) -> T:
        if self.engine is None:
            raise EngineUnavailable("groundspec: the models are still loading; try again")
        engine = self.engine
        return await asyncio.to_thread(lambda: call(engine))

    async def run_completion(self, request: Any, token: CancelToken) -> Any:
        return await self.call_engine(lambda e: e.complete(request, token), token)

    async def run_refactor(self, request: Any, token: CancelToken) -> Any:
        return await self.call_engine(lambda e: e.refactor(request, token), token)


async def _serve(gate: StubGate) -> AsyncIterator[str]:
    server = TestServer(FrontDoor(gate, ServerOptions).app())  # a real socket on loopback
    await server.start_server()
    try:
        yield str(server.make_url(""))
    finally:
        await server.close()


async def test_health_is_503_while_loading_and_requests_say_so() -> None:
    async for url in _serve(StubGate("loading")):
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "/health") as response:
                assert response.status == 503
                assert await response.read() == (
                    b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'
                )
            async with http.post(url + "/infill", json={"input_prefix": "x"}) as response:
                assert response.status == 503
                assert "loading" in (await response.json())["error"]["message"]


class FailingEngine(FakeEngine):
    def complete(self, request: Any, cancel: Any = None) -> Any:
        if "\x00" in request.text:
            raise EngineError("the document looks binary (it contains NUL characters)")
        raise RuntimeError("boom")


async def test_engine_errors_are_400_and_crashes_are_500_without_stopping() -> None:
    gate = StubGate("ready", FailingEngine())
    async for url in _serve(gate):
        async with aiohttp.ClientSession() as http:
            body = {"input_prefix": "a\x00b"}
            async with http.post(url + "/infill", json=body) as response:
                assert response.status == 400
                assert "binary" in (await response.json())["error"]["message"]
            async with http.post(url + "/completion", json={"prompt": "x"}) as response:
                assert response.status == 500
                error = (await response.json())["error"]
                assert error["type"] == "server_error" and "boom" not in error["message"]
            async with http.get(url + "/health") as response:
                assert response.status == 200


async def test_an_error_after_the_stream_started_is_an_error_event() -> None:
    async for url in _serve(StubGate("ready", FailingEngine())):
        async with aiohttp.ClientSession() as http:
            body = {"prompt": "x", "stream": True}
            async with http.post(url + "/v1/completions", json=body) as response:
                assert response.status == 200  # the status line went out before the engine ran
                events = (await response.text()).strip().split("\n\n")
    assert events == [
        'data: {"error":{"code":500,"message":"internal error; see the server log",'
        '"type":"server_error"}}'
    ]


async def test_input_extra_and_the_slot_travel_in_the_engine_request() -> None:
    engine = FakeEngine()
    async for url in _serve(StubGate("ready", engine)):
        async with aiohttp.ClientSession() as http:
            body = {
                "input_prefix": "x = ",
                "input_extra": [{"filename": "a.py", "text": "A = 1\n"}, {"text": ""}],
                "id_slot": 2,
            }
            async with http.post(url + "/infill", json=body) as response:
                assert response.status == 200
            async with http.post(url + "/infill", json={"input_prefix": "y"}) as response:
                assert response.status == 200
    first, second = engine.requests
    assert first.extra_context == [Snippet(path="a.py", text="A = 1\n")]  # empty chunks dropped
    assert second.extra_context is None
    assert first.slot == "http slot:2 #1" and (second.slot or "").startswith("http peer:127.0.0.1")


async def test_a_failed_load_makes_health_503(tmp_path: Any) -> None:
    missing = str(tmp_path / "missing.gguf")
    env = {"GROUNDSPEC_FAKE_ENGINE": "0", "GROUNDSPEC_TARGET_MODEL": missing}
    async with serve_http(fake=False, ready=False, **env) as served:
        async with aiohttp.ClientSession() as http:
            for _ in range(100):  # loading fails quickly: the file is not there
                async with http.get(served.url + "/health") as response:
                    error = (await response.json())["error"]
                if "failed" in error["message"]:
                    break
                await asyncio.sleep(0.1)
            assert response.status == 503 and error["type"] == "unavailable_error"
            async with http.post(served.url + "/infill", json={"input_prefix": "x"}) as response:
                assert response.status == 503
                assert "failed to load" in (await response.json())["error"]["message"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--http", "nonsense"], b"invalid --http address"),
        (["--http", "host:port"], b"invalid --http address"),
        (["--http", "70000"], b"invalid --http address"),
        (["--http", "8080", "--tcp", "x:y"], b"invalid --tcp address"),
    ],
)
async def test_a_bad_address_is_a_usage_error(flags: list[str], message: bytes) -> None:
    process = await asyncio.create_subprocess_exec(
        *GROUNDSPEC, "serve", "--fake", *flags, stderr=asyncio.subprocess.PIPE, env=server_env()
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 2
    assert message in err and b"Traceback" not in err
