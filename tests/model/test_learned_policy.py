"""What one process's controllers learned, the next one starts from (speculator/learned.py).

The small draft model stands in as the target, as in test_kv_slots.py: the
policy file's mechanics do not depend on the model's size."""

from __future__ import annotations

import colorsys
import inspect
from pathlib import Path

from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import RefactorRequest

TEXT = inspect.getsource(colorsys.rgb_to_yiq)


def _engine(kv_dir: Path, keep_learned: bool = True) -> SpeculativeEngine:
    small = str(provision.model_path(provision.DRAFT))
    config = EngineConfig(
        target_model=small,
        use_draft=False,
        n_ctx=1024,
        kv_dir=str(kv_dir),
        keep_learned=keep_learned,
    )
    return SpeculativeEngine.load(config)


def _rename(engine: SpeculativeEngine) -> str:
    request = RefactorRequest(
        text=TEXT,
        start=0,
        end=len(TEXT),
        instruction="Rename the parameters r, g, b to red, green, blue.",
        path="/src/yiq.py",
        speculation="auto",
    )
    return engine.refactor(request).new_text


def test_a_restarted_engine_starts_from_what_the_last_one_learned(tmp_path: Path) -> None:
    first = _engine(tmp_path)
    try:
        text = _rename(first)
        learned = first.controllers["refactor"].learned()
    finally:
        first.close()
    assert learned  # the refactor drafted, so there was something to learn
    restarted = _engine(tmp_path)
    try:
        assert restarted.controllers["refactor"].learned() == learned
        assert _rename(restarted) == text
    finally:
        restarted.close()
    unkept = _engine(tmp_path, keep_learned=False)  # as the benchmarks run
    try:
        assert unkept.controllers["refactor"].learned() == {}
    finally:
        unkept.close()
