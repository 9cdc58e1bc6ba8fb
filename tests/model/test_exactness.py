"""Speculative output equals plain greedy output; cached equals fresh.

"Equals" is exact text, or, where ggml's batch-dependent CPU kernels flip a
near-tie (docs/exactness.md), a first divergence whose two tokens are within
NEAR_TIE_LOGITS of each other when re-evaluated: anything wider is a bug.
"""

from __future__ import annotations

import threading

import llama_cpp
import numpy as np
import pytest

from bench.report import Run, first_divergence
from bench.run import run_task
from bench.tasks import completion_tasks, refactor_tasks
from speculator.engine import SpeculativeEngine
from speculator.session import CANCEL_CHECK_TOKENS
from speculator.types import Cancelled, CancelToken, CompletionRequest

REFACTOR_TASKS = ["colorsys.py:rgb_to_hls", "graphlib.py:static_order", "fnmatch.py:filter"]
COMPLETION_TASKS = 4
NEAR_TIE_LOGITS = 0.5  # the kernels move a logit by up to ~0.35 (docs/exactness.md)


def assert_same_as_plain(engine: SpeculativeEngine, plain: Run, run: Run) -> None:
    if run.text == plain.text:
        return
    divergence = first_divergence(engine.session, plain, run)
    assert divergence is not None, f"{run.mode}: same tokens, different text"
    at, off_logit, run_logit = divergence
    gap = abs(off_logit - run_logit)
    assert gap < NEAR_TIE_LOGITS, f"{run.mode} diverged at token {at} by {gap:.3f} logits"


@pytest.mark.parametrize("name", REFACTOR_TASKS)
def test_refactor_speculation_is_exact(engine: SpeculativeEngine, name: str) -> None:
    task = next(t for t in refactor_tasks() if t.name == name)
    plain = run_task(engine, task, "off")
    for mode in ("lookup", "both"):
        run = run_task(engine, task, mode)
        assert_same_as_plain(engine, plain, run)
    assert run.stats.drafted_tokens > 0


def test_auto_equals_off_on_a_held_out_refactor_and_completion(engine: SpeculativeEngine) -> None:
    """One refactor and one completion of the test split, under `auto`."""
    refactor = next(t for t in refactor_tasks() if t.name == "textwrap.py:shorten")
    completion = next(t for t in completion_tasks() if t.name == "textwrap.py:356+")
    for task in (refactor, completion):
        plain = run_task(engine, task, "off")
        run = run_task(engine, task, "auto")
        assert_same_as_plain(engine, plain, run)
    assert run.stats.speculation == "auto"


def test_completion_speculation_is_exact(engine: SpeculativeEngine) -> None:
    for task in completion_tasks()[:COMPLETION_TASKS]:
        plain = run_task(engine, task, "off")
        for mode in ("auto", "draft"):
            assert_same_as_plain(engine, plain, run_task(engine, task, mode))


def test_keystroke_reuses_the_cache_and_matches_fresh(engine: SpeculativeEngine) -> None:
    task = completion_tasks()[5]
    typed = task.expected[:3]
    text = task.text[: task.start] + typed + task.text[task.start :]
    req = CompletionRequest(text=text, cursor=task.start + len(typed), max_tokens=16, path="k.py")
    engine.complete(CompletionRequest(text=task.text, cursor=task.start, max_tokens=4, path="k.py"))
    engine.shift_reuse = True
    shifted = engine.complete(req)
    assert shifted.stats.prompt_tokens - shifted.stats.reused_prompt_tokens <= 16
    engine.shift_reuse = False  # exact: only the common prefix is reused
    try:
        engine.complete(
            CompletionRequest(text=task.text, cursor=task.start, max_tokens=4, path="k.py")
        )
        cached = engine.complete(req)
        engine.session.trim(0)  # cold cache
        fresh = engine.complete(req)
    finally:
        engine.shift_reuse = True
    assert fresh.stats.reused_prompt_tokens == 0
    assert cached.text == fresh.text


class _CancelAfter(CancelToken):
    """Fires after the token has been checked `n` times."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    @property  # type: ignore[override]
    def cancelled(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_a_cancelled_warm_up_keeps_what_it_evaluated(engine: SpeculativeEngine) -> None:
    task = completion_tasks()[6]
    req = CompletionRequest(text=task.text, cursor=task.start, max_tokens=12, path="w.py")
    engine.session.trim(0)
    with pytest.raises(Cancelled):
        engine.warm(req, _CancelAfter(2))  # two prompt batches, then cancelled
    assert len(engine.session.cells) == 2 * CANCEL_CHECK_TOKENS
    after_cancel = engine.complete(req)
    assert after_cancel.stats.reused_prompt_tokens == 2 * CANCEL_CHECK_TOKENS
    engine.session.trim(0)
    assert after_cancel.text == engine.complete(req).text


@pytest.mark.skipif(
    llama_cpp.llama_supports_gpu_offload(), reason="GPU backends do not poll the abort flag"
)
def test_a_cancel_stops_the_prompt_batch_in_progress(engine: SpeculativeEngine) -> None:
    """The abort flag stops llama_decode mid-batch: a cancel 50 ms into the first
    128-token batch (over a second on a CPU) leaves nothing evaluated, and the
    cache is exact for the next request."""
    task = completion_tasks()[6]
    req = CompletionRequest(text=task.text, cursor=task.start, max_tokens=12, path="w.py")
    engine.session.trim(0)
    token = CancelToken()
    threading.Timer(0.05, token.cancel).start()
    with pytest.raises(Cancelled):
        engine.warm(req, token)
    assert engine.session.cells == [] and not engine.session.abort.raised
    after_cancel = engine.complete(req)
    assert after_cancel.stats.reused_prompt_tokens == 0
    engine.session.trim(0)
    assert after_cancel.text == engine.complete(req).text


@pytest.mark.parametrize("cancellable", [False, True])
def test_a_prompt_starts_the_same_cold_and_warm(
    engine: SpeculativeEngine, cancellable: bool
) -> None:
    """The first token's logits do not depend on what the cache held: a cold sync
    evaluates the prompt's last token alone, as a warm one does (_prompt_batches).
    Before, `off` (cold) and `auto` (warm) on one refactor began with different
    tokens at a near-tie of 0.020 logits (textwrap.py:indent, an EPYC Zen 3 VM)."""
    task = next(t for t in refactor_tasks() if t.name == "textwrap.py:indent")
    prompt = engine.target.tokenize(task.text)[:300]
    cancel = CancelToken() if cancellable else None
    engine.session.trim(0)
    cold_sync, cold = engine.session.sync([prompt], cancel=cancel)
    cold = cold.copy()  # a view of llama.cpp's buffer, overwritten by the next decode
    warm_sync, warm = engine.session.sync([prompt], cancel=cancel)
    assert (cold_sync.reused, warm_sync.reused) == (0, len(prompt) - 1)
    assert np.array_equal(cold, warm)
