"""Who gets the quick window (issue 12) and the time limit: an editor's typing
completions may be served from the short window on an unseen file, stop at a
new line after `maxPredictMs` and mid-line at `typingDeadlineMs`; one-shot calls (the CLI, `groundspec/complete`,
the benchmarks) always get the full prompt and no time limit."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types

from bench import run
from bench.tasks import completion_tasks
from lsp_server import cli
from lsp_server.options import ServerOptions
from lsp_server.service import CompletionService
from speculator.config import EngineConfig
from speculator.fake import FakeEngine
from speculator.limits import SPENT_LIMIT_MS, Limits
from speculator.types import CompletionRequest

URI = "file:///a.py"


def fake_of(service: CompletionService) -> FakeEngine:
    engine = service.host.engine
    assert isinstance(engine, FakeEngine)
    return engine


async def test_typing_completions_may_use_the_quick_window(service: CompletionService) -> None:
    item = types.TextDocumentItem(uri=URI, language_id="python", version=1, text="x = \ny = ")
    service.open_document(item)
    await service.complete_typing(URI, types.Position(line=0, character=4))
    await service.complete_typing(URI, types.Position(line=1, character=4), kind="completion")
    assert [r.quick_window for r in fake_of(service).requests] == [True, True]
    default = ServerOptions().max_predict_ms
    assert default > 0
    assert [r.max_predict_ms for r in fake_of(service).requests] == [default, default]
    assert all(r.max_predict_from_start for r in fake_of(service).requests)
    deadline = ServerOptions().typing_deadline_ms
    assert deadline > default
    assert [r.deadline_ms for r in fake_of(service).requests] == [deadline, deadline]


async def test_headless_completions_get_the_full_prompt(service: CompletionService) -> None:
    item = types.TextDocumentItem(uri=URI, language_id="python", version=1, text="x = ")
    service.open_document(item)
    position = {"line": 0, "character": 4}
    await service.complete({"textDocument": {"uri": URI}, "position": position})
    await service.complete({"text": "y = ", "position": position})
    assert [r.quick_window for r in fake_of(service).requests] == [False, False]
    assert [r.max_predict_ms for r in fake_of(service).requests] == [0, 0]
    assert [r.deadline_ms for r in fake_of(service).requests] == [0, 0]


def test_the_cli_gets_the_full_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "a.py"
    source.write_text("def add(a, b):\n    return a + b\n")
    engine = FakeEngine()
    monkeypatch.setattr(cli, "load", lambda *args, **kwargs: engine)
    args = argparse.Namespace(
        location=f"{source}:2:5", max_tokens=8, speculation="off", temperature=0.0, json=False
    )
    assert cli.run_complete(args) == 0
    assert [(r.quick_window, r.max_predict_ms) for r in engine.requests] == [(False, 0)]


def test_the_benchmark_gets_the_full_prompt() -> None:
    engine = FakeEngine()
    run.run_task(engine, completion_tasks()[0], "off")
    assert [(r.quick_window, r.max_predict_ms) for r in engine.requests] == [(False, 0)]


@pytest.mark.parametrize("option", ["max_predict_ms", "typing_deadline_ms"])
async def test_zero_lifts_a_typing_time_limit(fake_service, option: str) -> None:
    async with fake_service(**{option: 0}) as svc:
        item = types.TextDocumentItem(uri=URI, language_id="python", version=1, text="x = ")
        svc.open_document(item)
        await svc.complete_typing(URI, types.Position(line=0, character=4))
        expected = (0, 1500) if option == "max_predict_ms" else (1000, 0)
        assert [(r.max_predict_ms, r.deadline_ms) for r in fake_of(svc).requests] == [expected]


def test_the_quick_window_is_on_by_default_and_the_environment_turns_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert EngineConfig().quick_window_tokens > 0
    monkeypatch.setenv("GROUNDSPEC_QUICK_WINDOW_TOKENS", "0")
    assert EngineConfig().with_env().quick_window_tokens == 0


async def test_a_typing_completion_is_followed_by_a_warm_up_of_the_full_prompt(
    fake_service,
) -> None:
    """The completion cancels a running warm-up (didOpen's) and may have come from
    the quick window: the full prompt must go on warming without another edit."""
    async with fake_service(idle_warm_ms=50) as svc:
        item = types.TextDocumentItem(uri=URI, language_id="python", version=1, text="x = \ny = ")
        svc.open_document(item)
        await svc.complete_typing(URI, types.Position(line=0, character=4))
        await asyncio.sleep(0.3)
        warmed = len(fake_of(svc).warmed)
        await svc.complete_typing(URI, types.Position(line=1, character=4))
        await asyncio.sleep(0.3)
        assert len(fake_of(svc).warmed) == warmed + 1


def test_a_typing_limit_counts_the_prompt_and_a_spent_one_still_ends_the_first_line() -> None:
    typing = CompletionRequest(text="x", cursor=1, max_predict_ms=1000, max_predict_from_start=True)
    now = time.perf_counter()

    def decode_limit(request: CompletionRequest, started: float) -> float:
        return Limits.of(request, started).decode_max_ms(now)

    assert decode_limit(typing, now - 0.3) == pytest.approx(700)  # 0.3 s went on the prompt
    assert decode_limit(typing, now - 2.0) == SPENT_LIMIT_MS > 0  # 0 would be no limit
    http = CompletionRequest(text="x", cursor=1, max_predict_ms=1000)  # llama-server's count
    assert decode_limit(http, now - 2.0) == 1000
    unlimited = CompletionRequest(text="x", cursor=1, max_predict_from_start=True)
    assert decode_limit(unlimited, now - 2.0) == 0
