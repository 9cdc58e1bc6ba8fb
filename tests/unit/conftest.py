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
