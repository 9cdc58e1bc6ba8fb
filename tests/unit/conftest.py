"""Shared fixtures: the completion service on the deterministic fake engine."""

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from lsp_server.options import ServerOptions, StartupConfig
from lsp_server.service import CompletionService
from speculator.config import EngineConfig

ServiceFactory = Callable[..., AbstractAsyncContextManager[CompletionService]]


@pytest.fixture
def fake_service() -> ServiceFactory:
    """`async with fake_service(**options) as svc`: a started service on the fake
    engine, no debounce and no idle warm-up unless `options` say otherwise."""

    @asynccontextmanager
    async def start(**options: Any) -> AsyncIterator[CompletionService]:
        settings = {"debounce_ms": 0, "idle_warm_ms": 0, **options}
        svc = CompletionService(
            StartupConfig(options=ServerOptions(engine=EngineConfig(fake=True), **settings))
        )
        svc.start()
        try:
            yield svc
        finally:
            svc.shutdown()

    return start


@pytest.fixture
async def service(fake_service: ServiceFactory) -> AsyncIterator[CompletionService]:
    async with fake_service() as svc:
        yield svc


@pytest.fixture
def epyc_one_thread() -> dict[int, float]:
    """One EPYC thread's verify curve, x one row (`bench.verify_cost --threads 1
    --context 400`): a batch of 16, 32, 48 or 64 rows costs less than the few sizes
    just below it."""
    return {1: 1.0, 2: 2.0, 3: 2.9, 4: 3.4, 8: 6.7, 15: 10.6, 16: 8.5, 24: 13.8,
            31: 17.5, 32: 15.7, 47: 25.1, 48: 22.8, 63: 31.3, 64: 26.9}  # fmt: skip
