"""A shared server under load (fake engine, loopback only): one client flooding
requests gets 503 + Retry-After once its queue is full, and cannot starve another
client (lsp_server/http_limits.py)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from .http_helpers import serve_http

DELAY_MS = 20  # per fake token (a sleep: the engine's time, not the machine's CPU)
FLOOD = {"prompt": "x = ", "n_predict": 2}  # ~40 ms of engine each, 50 a second: 2x its time
STEADY = {"prompt": "y = ", "n_predict": 17}  # ~340 ms each, 2 a second


@asynccontextmanager
async def client_from(address: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A client whose requests come from `address` (another loopback address: the
    server tells clients apart by address)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0), limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def steady(http: aiohttp.ClientSession, url: str, count: int) -> list[float]:
    """`count` requests, 2 a second; their latencies in ms."""
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        async with http.post(url, json=STEADY) as response:
            assert response.status == 200, await response.text()
            await response.read()
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(max(0.0, 0.5 - latencies[-1] / 1000))
    return latencies


async def flood(http: aiohttp.ClientSession, url: str, stop: asyncio.Event) -> list[int]:
    """50 requests a second until `stop`; the status of each."""
    statuses: list[int] = []
    retry_after: list[str] = []

    async def one() -> None:
        async with http.post(url, json=FLOOD) as response:
            await response.read()
            statuses.append(response.status)
            if response.status == 503:
                retry_after.append(response.headers.get("Retry-After", ""))

    tasks = []
    while not stop.is_set():
        tasks.append(asyncio.ensure_future(one()))
        await asyncio.sleep(0.02)
    await asyncio.gather(*tasks)
    assert set(retry_after) <= {"1"}
    return statuses


def p95(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=20, method="inclusive")[18]


async def test_a_flooding_client_cannot_starve_another() -> None:
    async with (
        serve_http(GROUNDSPEC_FAKE_DELAY_MS=str(DELAY_MS)) as served,
        client_from("127.0.0.2") as flooder,
        client_from("127.0.0.3") as other,
    ):
        url = served.url + "/completion"
        alone = await steady(other, url, 10)
        stop = asyncio.Event()
        flooding = asyncio.ensure_future(flood(flooder, url, stop))
        await asyncio.sleep(0.5)  # the flood's queue is full by now
        shared = await steady(other, url, 10)
        stop.set()
        statuses = await asyncio.wait_for(flooding, timeout=30)
    # The flooder asked for twice what the engine can do: its queue fills and the
    # rest is turned away at once, while its turns still come.
    assert statuses.count(503) > 0 and statuses.count(200) > 20
    assert set(statuses) <= {200, 503}
    print(
        f"slow client p95 alone {p95(alone):.0f} ms, beside the flood {p95(shared):.0f} ms; "
        f"flood: {statuses.count(200)} answered, {statuses.count(503)} turned away"
    )
    assert p95(shared) <= 2 * p95(alone), (alone, shared)
