"""The GROUNDSPEC_* environment over the engine config (speculator/config.py)."""

from __future__ import annotations

import logging

import pytest

from speculator.config import EngineConfig
from speculator.totals import percentile


def test_environment_integers_apply_and_a_bad_one_is_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GROUNDSPEC_THREADS", "3")
    monkeypatch.setenv("GROUNDSPEC_N_GPU_LAYERS", "-1")
    monkeypatch.setenv("GROUNDSPEC_N_CTX", "8k")
    with caplog.at_level(logging.WARNING, logger="speculator.config"):
        config = EngineConfig().with_env()
    assert (config.threads, config.n_gpu_layers) == (3, -1)
    assert config.n_ctx == EngineConfig().n_ctx  # the bad value falls back to the default
    assert "GROUNDSPEC_N_CTX='8k' is not a whole number" in caplog.text


def test_percentiles_are_values_that_occurred_nearest_the_rank() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert (percentile(values, 0), percentile(values, 50), percentile(values, 100)) == (1, 3, 5)
    assert percentile([10.0, 20.0], 95) == 20.0
    assert percentile([], 50) == 0.0
