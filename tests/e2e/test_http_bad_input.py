"""`groundspec serve --http` given bad input (fake engine): a 400 with a clear
message for malformed, binary or oversized requests, a 413 for a huge body, 404
and 405, and a server that survives a barrage of them."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from .conftest import FAKE_TEXT
from .http_fixtures import LLAMA_VSCODE_FIM, http, post, server
from .http_helpers import Served

__all__ = ["http", "server"]  # the fixtures: the module's server, a client session


# One server for the module, on the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(
    "path, raw, needle",
    [
        ("/infill", b'{"input_prefix": "def f(', "not valid JSON"),
        ("/infill", b'{"input_prefix": 5}', "$.input_prefix"),
        ("/infill", b'{"n_predict": "many"}', "$.n_predict"),
        ("/infill", b'{"input_extra": [{"text": 1}]}', "$.input_extra[0].text"),
        ("/infill", b"[1, 2]", "JSON object"),
        ("/infill", b"\xff\xfe{}", "not valid UTF-8"),
        ("/infill", b'{"input_prefix": "caf\xe9"}', "not valid UTF-8"),
        ("/completion", b"{}", "prompt"),
        ("/completion", b'{"prompt": "x", "temperature": -1}', "$.temperature"),
        ("/v1/completions", b'{"prompt": 3}', '"prompt" must be a string'),
        ("/v1/completions", b'{"prompt": []}', "prompt is empty"),
        ("/v1/chat/completions", b'{"messages": []}', "$.messages"),
        ("/v1/chat/completions", b'{"messages": [{"content": "x"}]}', "role"),
    ],
)
async def test_bad_input_gets_a_400_with_a_clear_message(
    server: Served, http: aiohttp.ClientSession, path: str, raw: bytes, needle: str
) -> None:
    status, body = await post(http, server.url + path, None, raw=raw)
    assert status == 400
    error = json.loads(body)["error"]
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert needle in error["message"]


async def test_a_body_that_does_not_decompress_is_a_400(
    server: Served, http: aiohttp.ClientSession
) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    for path in ("/infill", "/completion", "/v1/completions"):
        async with http.post(server.url + path, data=b"hello", headers=headers) as response:
            assert response.status == 400, path
            assert "cannot read the request body" in (await response.json())["error"]["message"]


async def test_nothing_to_predict_streams_when_asked(
    server: Served, http: aiohttp.ClientSession
) -> None:
    for path in ("/infill", "/completion"):
        body = {"input_prefix": "x = ", "prompt": "", "n_predict": 0, "stream": True}
        async with http.post(server.url + path, json=body) as response:
            assert response.headers["Content-Type"].startswith("text/event-stream"), path
            text = await response.text()
        events = [json.loads(line[6:]) for line in text.split("\n\n") if line]
        assert [(e["content"], e["stop"]) for e in events] == [("", True)], path


async def test_huge_body_is_refused_with_413(server: Served, http: aiohttp.ClientSession) -> None:
    huge = json.dumps({"input_prefix": "x" * (9 * 1024 * 1024)}).encode()
    status, body = await post(http, server.url + "/infill", None, raw=huge)
    assert status == 413
    assert "too large" in json.loads(body)["error"]["message"]


TOO_LONG = "x" * 2_000_001  # over maxDocumentChars (2,000,000), under the 8 MiB body limit


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "path, body",
    [
        ("/infill", {"input_prefix": "a = 1\x00\n", "n_predict": 8}),
        ("/infill", {"input_prefix": TOO_LONG, "n_predict": 8}),
        ("/infill", {"input_prefix": "a = 1\x00\n", "n_predict": 0}),
        ("/completion", {"prompt": TOO_LONG, "n_predict": 0}),
        ("/completion", {"prompt": "a = 1\x00\n"}),
        ("/completion", {"prompt": TOO_LONG}),
        ("/v1/completions", {"prompt": ["ok", "a = 1\x00\n"]}),
        ("/v1/completions", {"prompt": "a = 1", "suffix": TOO_LONG}),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "Fix\n```\n\x00\n```"}]},
        ),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": f"Fix\n```\n{TOO_LONG}\n```"}]},
        ),
    ],
)
async def test_binary_or_huge_text_is_refused_with_a_400_as_json_rpc_does(
    server: Served, http: aiohttp.ClientSession, path: str, body: dict[str, Any], stream: bool
) -> None:
    """groundspec/complete refuses text with NUL bytes or over maxDocumentChars; HTTP
    took it (a streamed request got a 200 and, from a real engine, an error event)."""
    status, raw = await post(http, server.url + path, body | {"stream": stream})
    assert status == 400, raw[:200]
    error = json.loads(raw)["error"]
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert "binary" in error["message"] or "too large" in error["message"]


async def test_unknown_path_and_method(server: Served, http: aiohttp.ClientSession) -> None:
    async with http.get(server.url + "/nope") as response:
        assert response.status == 404
        assert (await response.json())["error"]["type"] == "not_found_error"
    async with http.get(server.url + "/infill") as response:
        assert response.status == 405
        assert (await response.json())["error"]["code"] == 405


async def test_server_survives_a_barrage_of_bad_requests(
    server: Served, http: aiohttp.ClientSession
) -> None:
    bad = [b"", b"{", b"\x00\x01", b'{"prompt": "\\ud800"}', b'{"input_extra": 7}', b"null"]
    for raw in bad * 5:
        status, _ = await post(http, server.url + "/infill", None, raw=raw)
        assert 400 <= status < 500
    status, raw = await post(http, server.url + "/infill", LLAMA_VSCODE_FIM)
    assert status == 200 and json.loads(raw)["content"] == FAKE_TEXT[:6]
    assert server.process.returncode is None
    assert b"Traceback" not in b"".join(server.log)
