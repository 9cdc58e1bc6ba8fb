"""A bounded queue per client and turns in rotation (lsp_server/http_limits.py)."""

from __future__ import annotations

import asyncio

import pytest

from lsp_server.http_limits import Busy, ClientLimits


def test_a_full_queue_is_busy_until_a_place_frees() -> None:
    limits = ClientLimits(per_client=2)
    with limits.admitted("a"), limits.admitted("a"):
        with pytest.raises(Busy) as busy:
            with limits.admitted("a"):
                pass
        assert busy.value.status == 503 and busy.value.headers == {"Retry-After": "1"}
        with limits.admitted("b"):  # another client has its own places
            pass
    with limits.admitted("a"):
        pass


async def test_turns_go_round_the_clients_not_first_come() -> None:
    limits = ClientLimits()
    order: list[str] = []
    release = asyncio.Event()

    async def call(client: str, name: str) -> None:
        async with limits.turn(client):
            order.append(name)
            if name == "a0":
                await release.wait()  # holds the engine while the others queue

    first = asyncio.ensure_future(call("a", "a0"))
    await asyncio.sleep(0)
    queued = [asyncio.ensure_future(call("a", f"a{i}")) for i in range(1, 4)]
    await asyncio.sleep(0)
    queued.append(asyncio.ensure_future(call("b", "b1")))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, *queued)
    # b1 came after a1..a3 but waits for one of a's turns only.
    assert order == ["a0", "a1", "b1", "a2", "a3"]


async def test_a_cancelled_waiter_leaves_and_the_turn_moves_on() -> None:
    limits = ClientLimits()
    order: list[str] = []
    release = asyncio.Event()

    async def call(client: str, name: str) -> None:
        async with limits.turn(client):
            order.append(name)
            if name == "a0":
                await release.wait()

    first = asyncio.ensure_future(call("a", "a0"))
    await asyncio.sleep(0)
    gone = asyncio.ensure_future(call("b", "b1"))
    kept = asyncio.ensure_future(call("c", "c1"))
    await asyncio.sleep(0)
    gone.cancel()
    release.set()
    await asyncio.gather(first, kept)
    assert order == ["a0", "c1"]
    async with limits.turn("d"):  # and the engine is free again
        order.append("d1")
    assert order[-1] == "d1"
