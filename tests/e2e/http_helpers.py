"""Start `groundspec serve --http` (fake engine) as a subprocess and find its port."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp

from .conftest import server_env

GROUNDSPEC = [sys.executable, "-c", "from lsp_server.cli import main; main()"]
LISTENING = re.compile(rb"HTTP listening on (http://[\d.]+:\d+)")


@dataclass
class Served:
    url: str
    process: asyncio.subprocess.Process
    log: list[bytes] = field(default_factory=list)


async def _read_url(process: asyncio.subprocess.Process, log: list[bytes]) -> str:
    assert process.stderr is not None
    while line := await process.stderr.readline():
        log.append(line)
        if match := LISTENING.search(line):
            return match.group(1).decode()
    raise AssertionError("the server exited before listening:\n" + b"".join(log).decode())


async def _drain(process: asyncio.subprocess.Process, log: list[bytes]) -> None:
    assert process.stderr is not None
    while line := await process.stderr.readline():
        log.append(line)


async def wait_ready(url: str, timeout: float = 180) -> None:
    """Poll /health until the models are loaded (it says 503 while they load)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            async with http.get(url + "/health") as response:
                if response.status == 200:
                    return
            assert loop.time() < deadline, "the models did not load in time"
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def serve_http(
    *flags: str, stdin: bool = False, fake: bool = True, ready: bool = True, **env: str
) -> AsyncIterator[Served]:
    """The server on a free loopback port, loaded unless `ready` is False; stopped
    (SIGTERM, or stdin closed) after."""
    process = await asyncio.create_subprocess_exec(
        *GROUNDSPEC,
        "serve",
        *(["--fake"] if fake else []),
        "--http",
        "127.0.0.1:0",
        *flags,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        # The address is an INFO line (stderr shows WARNING and above by default).
        env=server_env(**{"GROUNDSPEC_LOG_LEVEL": "INFO", **env}),
    )
    log: list[bytes] = []
    url = await asyncio.wait_for(_read_url(process, log), timeout=30)
    drain = asyncio.create_task(_drain(process, log))
    try:
        if ready:
            await wait_ready(url)
        yield Served(url, process, log)
    finally:
        if process.returncode is None:
            process.terminate()
        await asyncio.wait_for(process.wait(), timeout=10)
        await drain
