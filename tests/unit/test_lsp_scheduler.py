"""Typing loop: one engine thread, newest-wins, debounce, cache, cancellation, warm-up."""

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest

from lsp_server.scheduler import CompletionCache, Scheduler
from lsp_server.worker import EngineHost, EngineUnavailable, Worker
from speculator.fake import FakeEngine
from speculator.types import Cancelled, CancelToken, CompletionRequest, EngineError

TEXT = "def f():\n    return "


def request(text: str = TEXT, max_tokens: int = 64) -> CompletionRequest:
    return CompletionRequest(text=text, cursor=len(text), max_tokens=max_tokens)


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Scheduler, FakeEngine]]:
    engine = FakeEngine(text="x" * 200, delay_ms_per_token=0.0)
    worker = Worker()
    host = EngineHost(worker)
    host.load(lambda: engine)
    yield Scheduler(worker, host, CompletionCache(8)), engine
    worker.stop()


async def test_newest_request_cancels_the_older_one_mid_decode(setup) -> None:
    scheduler, engine = setup
    engine.delay_ms_per_token = 5.0  # 200 tokens: ~1 s if not cancelled
    first = asyncio.create_task(scheduler.complete("doc", request(), debounce_s=0, wait_s=5))
    await asyncio.sleep(0.1)  # let it start decoding
    started = time.perf_counter()
    engine.delay_ms_per_token = 0.0
    second = await scheduler.complete("doc", request(TEXT + "a"), debounce_s=0, wait_s=5)
    with pytest.raises(Cancelled):
        await first
    assert time.perf_counter() - started < 0.5
    assert second.text == "x" * 64
    assert engine.totals()["cancelled"] == 1
    assert scheduler.superseded == 1


async def test_debounce_drops_requests_superseded_before_they_reach_the_engine(setup) -> None:
    scheduler, engine = setup
    calls = [
        asyncio.create_task(scheduler.complete("doc", request(TEXT + c), debounce_s=0.05, wait_s=5))
        for c in "abc"
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[0], Cancelled) and isinstance(results[1], Cancelled)
    assert results[2].text == "x" * 64
    assert engine.totals()["requests"] == 1


async def test_typed_ahead_cache_serves_the_rest_without_the_engine(setup) -> None:
    scheduler, engine = setup
    engine.text = "value + 1"
    first = await scheduler.complete("doc", request(), debounce_s=0, wait_s=5)
    assert first.text == "value + 1"
    hit = await scheduler.complete("doc", request(TEXT + "val"), debounce_s=0, wait_s=5)
    assert hit.text == "ue + 1" and hit.stats.speculation == "cache"
    assert engine.totals()["requests"] == 1
    # Typing something else misses the cache.
    miss = await scheduler.complete("doc", request(TEXT + "vax"), debounce_s=0, wait_s=5)
    assert miss.text == "value + 1"
    assert engine.totals()["requests"] == 2


def test_cache_needs_same_suffix_and_is_bounded() -> None:
    cache = CompletionCache(2)
    cache.store("a", "p", "s", "hello")
    assert cache.lookup("a", "phe", "s") == "llo"
    assert cache.lookup("a", "phe", "other suffix") is None
    assert cache.lookup("a", "phello", "s") is None  # fully typed: nothing left
    cache.store("b", "p", "s", "x")
    cache.store("c", "p", "s", "y")
    assert cache.lookup("a", "p", "s") is None  # evicted


async def test_cancelling_the_awaiting_task_stops_decoding(setup) -> None:
    scheduler, engine = setup
    engine.delay_ms_per_token = 5.0
    task = asyncio.create_task(scheduler.complete("doc", request(), debounce_s=0, wait_s=5))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    engine.delay_ms_per_token = 0.0
    # The worker is free again right away and keeps serving.
    result = await asyncio.wait_for(
        scheduler.complete("other", request(), debounce_s=0, wait_s=5), timeout=1
    )
    assert result.text
    assert engine.totals()["cancelled"] == 1


async def test_every_engine_call_runs_on_the_one_worker_thread(setup) -> None:
    scheduler, _ = setup
    threads = set()

    def record() -> None:
        threads.add(threading.get_ident())

    await asyncio.gather(*(scheduler.run(record, CancelToken()) for _ in range(5)))
    assert len(threads) == 1 and threading.get_ident() not in threads


async def test_requests_before_load_wait_then_get_a_clear_error() -> None:
    worker = Worker()
    release = threading.Event()
    host = EngineHost(worker)

    def slow_loader() -> FakeEngine:
        release.wait(5)
        return FakeEngine()

    host.load(slow_loader)
    assert host.state == "loading"
    with pytest.raises(EngineUnavailable, match="still loading"):
        await host.get(0.05)
    release.set()
    assert isinstance(await host.get(2), FakeEngine)
    assert host.state == "ready"
    worker.stop()


async def test_load_failure_becomes_a_clear_error() -> None:
    worker = Worker()
    host = EngineHost(worker)

    def broken() -> FakeEngine:
        raise EngineError("model file missing")

    host.load(broken)
    with pytest.raises(EngineUnavailable, match="failed to load: model file missing"):
        await host.get(1)
    assert host.state == "failed" and host.engine is None
    worker.stop()


async def test_idle_warm_runs_after_the_delay(setup) -> None:
    scheduler, engine = setup
    await scheduler.host.get(1)
    scheduler.schedule_warm("doc", lambda: request(), 0.01)
    scheduler.schedule_warm("doc", lambda: request("ab"), 0.01)  # resets the timer
    await asyncio.sleep(0.1)
    assert engine.warmed == [2]
    assert scheduler.warms == 1


async def test_a_prompt_already_warming_is_not_warmed_twice(setup) -> None:
    """didOpen and "models ready" both warm the same prompt: one warm-up runs."""
    scheduler, engine = setup
    await scheduler.host.get(1)
    engine.warm_ms = 200.0
    scheduler.schedule_warm("doc", lambda: request(), 0.0)
    await asyncio.sleep(0.05)  # the first is running
    scheduler.schedule_warm("doc", lambda: request(), 0.0)
    await asyncio.sleep(0.02)  # fired: a duplicate, not run
    scheduler.schedule_warm("doc", lambda: request("ab"), 0.0)  # another prompt still warms
    await asyncio.sleep(0.6)
    assert engine.warmed == [len(TEXT), 2]
    assert scheduler.warms == 2


async def test_a_completion_cancels_a_running_warm_up(setup) -> None:
    scheduler, engine = setup
    await scheduler.host.get(1)
    engine.warm_ms = 5000.0  # a cold warm-up of a big file
    scheduler.schedule_warm("doc", lambda: request(), 0.0)
    await asyncio.sleep(0.1)  # the warm-up is running on the worker
    started = time.perf_counter()
    result = await scheduler.complete("doc", request(), debounce_s=0, wait_s=5)
    waited = time.perf_counter() - started
    assert result.text.startswith("x")
    assert engine.cancelled_warms == 1 and engine.warmed == []
    assert waited < 2.0  # not behind the 5 s warm-up


async def test_a_cache_hit_supersedes_the_older_completion_still_running(setup) -> None:
    """Issue 11, item 7: a typed-ahead hit must still cancel the older request."""
    scheduler, engine = setup
    engine.text = "value + 1"
    await scheduler.complete("doc", request(), debounce_s=0, wait_s=5)  # fills the cache
    engine.text, engine.delay_ms_per_token = "x" * 200, 5.0  # ~1 s unless cancelled
    slow = asyncio.create_task(
        scheduler.complete("doc", request(TEXT + "q"), debounce_s=0, wait_s=5)
    )
    await asyncio.sleep(0.1)
    hit = await scheduler.complete("doc", request(TEXT + "val"), debounce_s=0, wait_s=5)
    assert hit.stats.speculation == "cache"
    with pytest.raises(Cancelled):
        await asyncio.wait_for(slow, timeout=0.5)
    assert scheduler.superseded == 1


async def test_the_worker_forgets_a_finished_job(setup) -> None:
    """Issue 11, item 7: Worker._running was never cleared."""
    scheduler, _ = setup
    await scheduler.complete(None, request(), debounce_s=0, wait_s=5)
    await asyncio.sleep(0.01)  # the worker clears it right after setting the result
    assert not scheduler.worker.busy


async def test_two_kinds_for_one_keystroke_share_one_generation(setup) -> None:
    scheduler, engine = setup
    engine.delay_ms_per_token = 2.0
    inline = asyncio.create_task(
        scheduler.complete("doc", request(), debounce_s=0, wait_s=5, kind="inline")
    )
    await asyncio.sleep(0.02)  # the inline one is decoding
    completion = await scheduler.complete(
        "doc", request(), debounce_s=0, wait_s=5, kind="completion"
    )
    assert (await inline).text == completion.text == "x" * 64
    assert engine.totals()["requests"] == 1
    assert scheduler.superseded == 0 and scheduler.shared == 1


async def test_a_newer_keystroke_still_supersedes_its_own_kind(setup) -> None:
    scheduler, engine = setup
    engine.delay_ms_per_token = 5.0  # 200 tokens: ~1 s if not cancelled
    old = asyncio.create_task(
        scheduler.complete(
            "doc", request(max_tokens=200), debounce_s=0, wait_s=5, kind="completion"
        )
    )
    await asyncio.sleep(0.05)
    other_kind = asyncio.create_task(
        scheduler.complete("doc", request(TEXT + "a", max_tokens=3), debounce_s=0, wait_s=5)
    )
    await asyncio.sleep(0.05)
    assert not old.done()  # the inline request did not cancel it
    newer = await scheduler.complete(
        "doc", request(TEXT + "ab", max_tokens=3), debounce_s=0, wait_s=5, kind="completion"
    )
    assert newer.text == (await other_kind).text == "xxx"
    with pytest.raises(Cancelled):
        await old
    assert scheduler.superseded == 1


async def test_a_waiter_whose_owner_is_superseded_runs_its_own(setup) -> None:
    scheduler, engine = setup
    engine.delay_ms_per_token = 5.0
    owner = asyncio.create_task(
        scheduler.complete("doc", request(), debounce_s=0, wait_s=5, kind="inline")
    )
    await asyncio.sleep(0.05)
    waiter = asyncio.create_task(
        scheduler.complete("doc", request(), debounce_s=0, wait_s=5, kind="completion")
    )
    await asyncio.sleep(0.05)
    assert scheduler.shared == 1
    engine.delay_ms_per_token = 0.0
    await scheduler.complete("doc", request(TEXT + "z"), debounce_s=0, wait_s=5, kind="inline")
    with pytest.raises(Cancelled):
        await owner
    assert (await waiter).text == "x" * 64


async def test_alternatives_skip_the_cache_and_put_the_greedy_one_first(setup) -> None:
    scheduler, engine = setup
    engine.text = "value"
    first = await scheduler.complete("doc", request(), debounce_s=0, wait_s=5)
    results = await scheduler.complete_all("doc", request(), debounce_s=0, wait_s=5, count=3)
    assert [r.text for r in results] == ["value", "alt1_value", "alt2_value"]
    assert results[0].text == first.text
    assert engine.totals()["requests"] == 2  # the alternatives did not come from the cache


async def test_a_warm_up_for_another_document_cancels_the_running_one(setup) -> None:
    """Issue 63: the user opened a file and moved to another; the first file's
    long warm-up must not hold the worker while the one being edited waits."""
    scheduler, engine = setup
    await scheduler.host.get(1)
    engine.warm_ms = 5000.0  # a cold warm-up of a big file
    scheduler.schedule_warm("opened", lambda: request(), 0.0)
    await asyncio.sleep(0.1)  # running on the worker
    started = time.perf_counter()
    engine.warm_ms = 0.0  # the running one keeps its 5 s
    scheduler.schedule_warm("edited", lambda: request("ab"), 0.0)
    while not engine.warmed and time.perf_counter() - started < 3:
        await asyncio.sleep(0.02)
    assert engine.warmed == [2] and engine.cancelled_warms == 1
    assert time.perf_counter() - started < 2.0  # not behind the 5 s warm-up
