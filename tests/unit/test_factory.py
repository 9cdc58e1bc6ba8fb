"""load_engine: what loading the local engine leaves behind in the process."""

from __future__ import annotations

import gc

import pytest

from speculator import factory
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine


def test_loading_the_local_engine_freezes_what_is_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """What exists once the models are loaded is kept out of full collections."""
    loaded = object()
    monkeypatch.setattr(SpeculativeEngine, "load", classmethod(lambda cls, *args: loaded))
    gc.unfreeze()
    try:
        assert factory.load_engine(EngineConfig(), env=False) is loaded
        frozen = gc.get_freeze_count()
        assert frozen > 1000  # the modules imported so far, at least
        garbage: list[list[int]] = [[] for _ in range(100)]
        assert gc.get_freeze_count() == frozen  # later objects are collected as before
        del garbage
    finally:
        gc.unfreeze()


def test_the_fake_engine_freezes_nothing() -> None:
    gc.unfreeze()
    factory.load_engine(EngineConfig(fake=True), env=False)
    assert gc.get_freeze_count() == 0
