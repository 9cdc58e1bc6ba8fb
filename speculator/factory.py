"""Build the engine named by a config: the real one, or the fake for tests."""

from __future__ import annotations

import gc
import os

from .config import BACKENDS, EngineConfig
from .fake import DEFAULT_FAKE_TEXT, FakeEngine
from .types import Engine, EngineError, ProgressCallback


def load_engine(
    config: EngineConfig, progress: ProgressCallback | None = None, *, env: bool = True
) -> Engine:
    """Load the models (slow: seconds) and return a ready engine.

    `env`: overlay the GROUNDSPEC_* environment first (False when the caller
    already did, so its command-line flags keep precedence over the environment).
    Raises speculator.types.EngineError with a user-facing message when a model
    file is missing, corrupt or incompatible.
    """
    if env:
        config = config.with_env()
    if config.backend not in BACKENDS:
        raise EngineError(
            f"unknown engine backend {config.backend!r}; choose one of {', '.join(BACKENDS)}"
        )
    if config.fake:
        fake = FakeEngine(
            text=os.environ.get("GROUNDSPEC_FAKE_TEXT", DEFAULT_FAKE_TEXT),
            delay_ms_per_token=float(os.environ.get("GROUNDSPEC_FAKE_DELAY_MS", "0") or 0),
        )
        fake.warm_ms = float(os.environ.get("GROUNDSPEC_FAKE_WARM_MS", "0") or 0)
        return fake
    if config.backend != "local":
        from .backends import load_remote  # no llama_cpp import: a thin client needs no models

        return load_remote(config, progress)
    from .engine import SpeculativeEngine  # imports llama_cpp: keep it lazy

    engine = SpeculativeEngine.load(config, progress)
    # Everything alive now (modules, the engine, the host's protocol tables)
    # lives as long as the process: keep it out of the collector's full scans.
    # Each request's lookup index allocates enough to trigger one every few
    # requests, and a scan of this heap paused decoding for 4-12 ms on the
    # 2-core machine, a few GPU decode steps (bench/archive/benchmarks.md, "Collector
    # pauses").
    gc.freeze()
    return engine
