"""A CPU build times its own verify batches on the real model and prices drafts by them."""

from __future__ import annotations

import pytest

from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.verify_curve import SLACK, CurveStore, curve_key, measure_shapes


def test_batches_are_timed_against_the_step_beside_them(engine: SpeculativeEngine) -> None:
    tokens = engine.target.tokenize(open(provision.__file__).read())
    shapes = measure_shapes(engine.session, engine.thread_policy, tokens, [1], rows=(2, 8))
    assert set(shapes[1]) == {1, 2, 8}
    assert all(1.0 <= shapes[1][k] <= SLACK * k for k in (2, 8))
    assert engine.session.cells == []  # left as it found the session


def test_a_loaded_engine_prices_one_thread_by_the_stored_curve() -> None:
    engine = SpeculativeEngine.load(EngineConfig(use_draft=False, kv_disk_mb=0))
    try:
        if engine.target.n_gpu_layers:
            pytest.skip("a GPU build keeps its tabled curve")
        store = CurveStore(provision.beside_models("verify-curves"))
        stored = store.load(curve_key(engine.target_fingerprint(), 1))
        assert stored is not None  # measured at this load or an earlier one, then kept
        controller = engine.controllers["refactor"]
        controller.use_threads(1)
        assert controller.cost(8) / controller.cost(1) == pytest.approx(stored[8])
    finally:
        engine.close()
