"""What the test_http*.py modules split from test_http.py share: one
`groundspec serve --http` (fake engine) per module and a client session per
test (fixtures: a module imports them and names them in `__all__`), `post`,
and the request shapes more than one of them sends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio

from .http_helpers import Served, serve_http

# llama.vscode's getFIMCompletion (src/llama-server.ts createRequestPayload).
LLAMA_VSCODE_FIM: dict[str, Any] = {
    "input_prefix": "function add(a, b) {\n",
    "input_suffix": "\n}\n",
    "input_extra": [{"text": "const x = 1;\n", "filename": "x.js"}],
    "prompt": "  return",
    "n_predict": 6,
    "top_k": 40,
    "top_p": 0.99,
    "stream": False,
    "samplers": ["top_k", "top_p", "infill"],
    "cache_prompt": True,
    "n_indent": 2,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 2500,
}


ORIGINAL = "def f(x):\n    return x * 2\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Served]:
    async with serve_http() as served:
        yield served


@pytest_asyncio.fixture(loop_scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession, url: str, body: Any, *, raw: bytes | None = None
) -> tuple[int, bytes]:
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    async with http.post(url, data=data, headers=headers) as response:
        return response.status, await response.read()
