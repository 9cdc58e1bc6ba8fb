"""A failed llama_decode or a full context never leaves the KV cache lying."""

from __future__ import annotations

import numpy as np
import pytest

from speculator import session as session_module
from speculator.engine import SpeculativeEngine
from speculator.types import EngineError, RefactorRequest

CODE = "".join(
    f"def area_{i}(width, height):\n    return width * height + {i * 7 % 13}\n\n" for i in range(40)
)


def test_a_failed_evaluation_keeps_only_the_cells_still_true(
    engine: SpeculativeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = engine.session
    tokens = engine.target.tokenize(CODE)
    session.sync([tokens[:300]])
    real_decode = session_module.llama_cpp.llama_decode
    calls = {"n": 0}

    def fail_first(ctx: object, batch: object) -> int:
        calls["n"] += 1
        return -1 if calls["n"] == 1 else int(real_decode(ctx, batch))

    monkeypatch.setattr(session_module.llama_cpp, "llama_decode", fail_first)
    with pytest.raises(EngineError):
        session.sync([tokens[:200] + tokens[:500]])  # cells 200.. were trimmed, then it failed
    monkeypatch.setattr(session_module.llama_cpp, "llama_decode", real_decode)
    assert session.cells == tokens[:200]  # the common prefix, nothing of the failed sync
    _, after_failure = session.sync([tokens[:600]])
    session.trim(0)
    _, fresh = session.sync([tokens[:600]])
    assert np.array_equal(after_failure, fresh)


def test_a_rewrite_that_cannot_fit_the_context_is_refused_with_a_clear_error() -> None:
    """Half a rewrite would replace the whole selection: the user gets an error
    (at once when even a copy of the selection cannot fit), and the engine
    serves the next request."""
    from speculator.config import EngineConfig

    small = SpeculativeEngine.load(EngineConfig(n_ctx=320, use_draft=False))
    try:
        long = CODE[:1200]
        rename = RefactorRequest(
            text=long,
            start=0,
            end=len(long),
            instruction="Rename width to w and height to h.",
            speculation="off",
        )
        with pytest.raises(EngineError, match="too long to rewrite.*context of 320"):
            small.refactor(rename)
        short = CODE[: CODE.index("def area_1")]
        examples = (
            "Add a docstring with twenty doctest examples, one for each integer from 1 to 20."
        )
        grows = RefactorRequest(text=short, start=0, end=len(short), instruction=examples)
        with pytest.raises(EngineError, match="the context is full.*the selection is unchanged"):
            small.refactor(grows)
        rename.text, rename.end = short, len(short)
        result = small.refactor(rename)
    finally:
        small.close()
    assert result.new_text.startswith("def area_0(w, h):")
