"""A remote completion's stream ended as the local decoder ends one: by the typing
deadline (mid-line, cut back to a whole word), by max_predict at a new line, or not
at all without limits; against the fake server of remote_fake.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from speculator.backends import load_remote
from speculator.config import EngineConfig
from speculator.types import CompletionRequest

from .remote_fake import Fake, fake, llama

__all__ = ["fake"]  # the fixture: a fake server per test


BLOCK = "def build(rows):\n    \n"
IN_BLOCK = BLOCK.index("    \n") + 4  # on the body's blank line
LINES = ["a = 1", "\n    b = 2", "\n    c = 3", "\n    d = 4", "\n    e = 5", "\n    f = 6"]


def typing(**kw: Any) -> CompletionRequest:
    return CompletionRequest(text=BLOCK, cursor=IN_BLOCK, path="/w/rows.py", multiline=True, **kw)


def test_a_remote_completion_without_limits_runs_to_its_end(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.05
    result = llama(url).complete(typing())
    assert result.text == "".join(LINES) and not result.timed_out


@pytest.mark.parametrize("backend", ["llama-server", "openai"])
def test_a_typing_deadline_ends_a_remote_stream_mid_line(
    fake: tuple[Fake, str], backend: str
) -> None:
    """As the local decoder: the stream ends where the next token would come past
    the deadline, cut back to a whole word, and the server sees the client go."""
    state, url = fake
    words = ["x = alpha"] + [f" + word{n}" for n in range(40)]
    state.pieces, state.delay_s = words, 0.05
    engine = load_remote(EngineConfig(backend=backend, backend_url=url))
    started = time.perf_counter()
    result = engine.complete(typing(deadline_ms=400, max_tokens=64))
    took = time.perf_counter() - started
    assert result.timed_out
    assert 0.3 < took < 1.5, took  # 41 pieces at 50 ms would take 2 s
    full = "".join(words)
    assert full.startswith(result.text) and 5 < len(result.text) < len(full)
    # cut back to whole words: the last word read may have been half of one
    assert result.text.rstrip(" +").split()[-1] in {"alpha", *(w[3:] for w in words[1:])}
    assert state.disconnected.wait(2.0), "the server never saw the client go away"


def test_max_predict_ends_a_remote_stream_at_a_new_line(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.1
    request = typing(max_predict_ms=250, max_predict_from_start=True)
    result = llama(url).complete(request)
    assert result.timed_out
    # Past 250 ms (the third piece, or the second on a slow start) the stream ends
    # at the next new line, with that line kept.
    assert result.text in {"".join(LINES[:n]) for n in (2, 3)}, result.text


def test_a_deadline_the_prompt_spent_keeps_a_whole_first_line(fake: tuple[Fake, str]) -> None:
    """The first text came after the deadline: it is dropped, as the local decoder
    drops it, and max_predict ends the completion at the first new line."""
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.25
    request = typing(deadline_ms=100, max_predict_ms=150, max_predict_from_start=True)
    result = llama(url).complete(request)
    assert result.timed_out
    assert result.text == "a = 1\n    b = 2", result.text
