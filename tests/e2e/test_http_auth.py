"""A server a team can share: the API key on HTTP and on LSP over TCP, CORS, and the
refusal to listen beyond loopback without a key (fake engine)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lsp_server.auth import check_exposure, is_loopback, presented_key

from .conftest import FAKE_TEXT, server_env
from .http_helpers import GROUNDSPEC, serve_http

KEY = "sk-team-secret"
UNAUTHORIZED = {
    "error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
}


async def test_no_key_is_401_and_the_right_key_is_served() -> None:
    async with serve_http("--api-key", KEY) as served, aiohttp.ClientSession() as http:
        completion = served.url + "/completion"
        async with http.post(completion, json={"prompt": "x = "}) as response:
            assert response.status == 401
            assert await response.json() == UNAUTHORIZED
        wrong = {"Authorization": "Bearer sk-wrong"}
        async with http.post(completion, json={"prompt": "x = "}, headers=wrong) as response:
            assert response.status == 401
        for headers in ({"Authorization": f"Bearer {KEY}"}, {"X-Api-Key": KEY}):
            async with http.post(completion, json={"prompt": "x = "}, headers=headers) as response:
                assert response.status == 200
                assert (await response.json())["content"] == FAKE_TEXT
        # Every endpoint but the public ones wants it.
        for path in ("/infill", "/v1/completions", "/v1/chat/completions", "/props", "/models"):
            method = http.get if path in ("/props", "/models") else http.post
            async with method(served.url + path, json={}) as response:
                assert response.status == 401, path


async def test_public_endpoints_need_no_key() -> None:
    async with serve_http("--api-key", KEY) as served, aiohttp.ClientSession() as http:
        for path in ("/health", "/v1/health"):
            async with http.get(served.url + path) as response:
                assert response.status == 200, path
                assert "error" not in await response.json()


async def test_the_key_from_the_environment() -> None:
    async with serve_http(GROUNDSPEC_API_KEY=KEY) as served, aiohttp.ClientSession() as http:
        async with http.post(served.url + "/completion", json={"prompt": "x"}) as response:
            assert response.status == 401
        headers = {"Authorization": f"Bearer {KEY}"}
        async with http.post(
            served.url + "/completion", json={"prompt": "x"}, headers=headers
        ) as response:
            assert response.status == 200


@pytest.mark.parametrize(
    "header, value",
    [
        ("Access-Control-Allow-Origin", "web.mydomain.fr"),
        ("Access-Control-Allow-Credentials", "true"),
        ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
        ("Access-Control-Allow-Headers", "*"),
    ],
)
async def test_cors_preflight_as_llama_server(header: str, value: str) -> None:
    async with serve_http("--api-key", KEY) as served, aiohttp.ClientSession() as http:
        preflight = {
            "Origin": "web.mydomain.fr",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "Authorization",
        }
        # Browsers send no key with a preflight: it is answered without one.
        async with http.options(served.url + "/completions", headers=preflight) as response:
            assert response.status == 200
            assert response.headers[header] == value


async def test_every_answer_names_the_origin() -> None:
    async with serve_http("--api-key", KEY) as served, aiohttp.ClientSession() as http:
        origin = {"Origin": "http://localhost:5173"}
        async with http.post(served.url + "/completion", json={}, headers=origin) as response:
            assert response.status == 401
            assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
        async with http.get(served.url + "/health", headers=origin) as response:
            assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"


async def test_cors_origins_localhost_names_only_loopback_pages(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('httpCorsOrigins = "localhost"\n', encoding="utf-8")
    async with serve_http("--config", str(config)) as served, aiohttp.ClientSession() as http:
        for origin, named in [("http://localhost:5173", True), ("http://evil.com", False)]:
            headers = {"Origin": origin, "Access-Control-Request-Method": "POST"}
            async with http.options(served.url + "/completions", headers=headers) as response:
                assert response.status == 200
                assert response.headers.get("Access-Control-Allow-Origin") == (
                    origin if named else None
                )


@pytest.mark.parametrize(
    "flags",
    [["--http", "0.0.0.0:0"], ["--tcp", "0.0.0.0:7777"], ["--http", "8012", "--tcp", "[::]:7777"]],
)
async def test_beyond_loopback_without_a_key_is_refused(flags: list[str]) -> None:
    env = server_env()
    env.pop("GROUNDSPEC_API_KEY", None)
    process = await asyncio.create_subprocess_exec(
        *GROUNDSPEC, "serve", "--fake", *flags, stderr=asyncio.subprocess.PIPE, env=env
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "--api-key" in lines[0] and "--insecure-no-key" in lines[0]


def test_exposure_rules() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("my-host")  # a name may resolve to any interface
    check_exposure(tcp="7777", http="8012", key=None, insecure_no_key=False)  # loopback
    check_exposure(tcp="0.0.0.0:7777", http=None, key=KEY, insecure_no_key=False)
    check_exposure(tcp=None, http="0.0.0.0:8012", key=None, insecure_no_key=True)
    with pytest.raises(ValueError, match="--http 0.0.0.0"):
        check_exposure(tcp=None, http="0.0.0.0:8012", key=None, insecure_no_key=False)
    assert presented_key({"Authorization": f"Bearer {KEY}"}) == KEY
    assert presented_key({"Authorization": KEY}) == KEY  # llama-server takes it bare too
    assert presented_key({"X-Api-Key": KEY}) == KEY
    assert presented_key({}) is None


# -- LSP over TCP ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def initialize(port: int, options: dict[str, Any] | None) -> tuple[dict[str, Any], bytes]:
    """Connect, send initialize, return the answer and what followed it (b"" once closed)."""
    for _ in range(200):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            break
        except OSError:
            await asyncio.sleep(0.05)
    params: dict[str, Any] = {"capabilities": {}, "processId": None}
    if options is not None:
        params["initializationOptions"] = options
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body.encode())
    await writer.drain()
    header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=20)
    length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    answer = json.loads(await reader.readexactly(length))
    rest = await asyncio.wait_for(reader.read(100), timeout=2) if "error" in answer else b""
    writer.close()
    return answer, rest


async def test_lsp_over_tcp_takes_the_key_in_initialization_options() -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *GROUNDSPEC,
        "serve",
        "--fake",
        "--tcp",
        str(port),
        "--api-key",
        KEY,
        stderr=asyncio.subprocess.PIPE,
        env=server_env(),
    )
    try:
        answer, rest = await initialize(port, None)
        assert answer["id"] == 1 and "initializationOptions.apiKey" in answer["error"]["message"]
        assert rest == b""  # and the connection is closed
        answer, rest = await initialize(port, {"apiKey": "sk-wrong", "debounceMs": 0})
        assert "invalid API key" in answer["error"]["message"] and rest == b""
        # Refused clients do not stop the server: the right key is served.
        answer, _ = await initialize(port, {"apiKey": KEY})
        assert "inlineCompletionProvider" in answer["result"]["capabilities"]
    finally:
        if process.returncode is None:
            process.kill()
        _, err = await process.communicate()
    assert KEY.encode() not in err  # the key is never logged
