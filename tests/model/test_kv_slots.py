"""Per-document KV slots on a real model (issue 12).

The small draft model stands in as the target: the save/restore mechanics are
the same and the prompts evaluate four times faster."""

from __future__ import annotations

import graphlib
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest, RefactorRequest

TEXT = Path(graphlib.__file__).read_text()[:1200]
PATH = "/src/graphlib_head.py"
CURSOR = TEXT.index("class CycleError")


def _engine(kv_dir: Path) -> SpeculativeEngine:
    small = str(provision.model_path(provision.DRAFT))
    return SpeculativeEngine.load(
        EngineConfig(target_model=small, use_draft=False, n_ctx=1024, kv_dir=str(kv_dir))
    )


def _complete(engine: SpeculativeEngine, text: str, cursor: int) -> tuple[str, int]:
    request = CompletionRequest(
        text=text, cursor=cursor, path=PATH, max_tokens=8, speculation="off", multiline=False
    )
    result = engine.complete(request)
    return result.text, result.stats.prompt_tokens - result.stats.reused_prompt_tokens


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """A completion evaluated from nothing, then saved: (slot folder, text, prompt tokens)."""
    kv_dir = tmp_path_factory.mktemp("kv")
    engine = _engine(kv_dir)
    try:
        text, evaluated = _complete(engine, TEXT, CURSOR)
        assert engine.persist() == 1
    finally:
        engine.close()
    return kv_dir, text, evaluated


def test_a_restored_completion_equals_the_fresh_one(fresh: tuple[Path, str, int]) -> None:
    kv_dir, text, evaluated = fresh
    engine = _engine(kv_dir)  # a restart
    try:
        assert _complete(engine, TEXT, CURSOR) == (text, 1)  # only the last token
    finally:
        engine.close()
    assert evaluated > 200


def test_a_corrupt_slot_falls_back_to_a_fresh_evaluation(
    fresh: tuple[Path, str, int], tmp_path: Path
) -> None:
    kv_dir, text, evaluated = fresh
    for src in kv_dir.glob("*.kv"):
        data = bytearray(src.read_bytes())
        data[-100] ^= 0xFF
        (tmp_path / src.name).write_bytes(bytes(data))
    engine = _engine(tmp_path)
    try:
        assert _complete(engine, TEXT, CURSOR) == (text, evaluated)
    finally:
        engine.close()


def test_a_refactor_between_keystrokes_keeps_the_completion_kv(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        _complete(engine, TEXT, CURSOR)
        start = TEXT.index("class CycleError")
        engine.refactor(
            RefactorRequest(
                text=TEXT,
                start=start,
                end=start + 40,
                instruction="Rename it",
                path=PATH,
                max_tokens=4,
                speculation="off",
            )
        )
        typed = TEXT[:CURSOR] + "#" + TEXT[CURSOR:]
        _, evaluated = _complete(engine, typed, CURSOR + 1)
        assert evaluated <= 16
    finally:
        engine.close()


def test_the_quick_window_answers_first_then_the_full_prompt_takes_over(tmp_path: Path) -> None:
    small = str(provision.model_path(provision.DRAFT))
    config = EngineConfig(
        target_model=small, use_draft=False, kv_dir=str(tmp_path), quick_window_tokens=100
    )
    engine = SpeculativeEngine.load(config)
    text = Path(graphlib.__file__).read_text()[:3500]
    try:
        request = CompletionRequest(
            text=text,
            cursor=3000,
            path=PATH,
            max_tokens=4,
            speculation="off",
            quick_window=True,  # an editor's typing completion
        )
        quick = engine.complete(request).stats
        assert quick.prompt_tokens <= 110  # the short window (its budget, give or take a line)
        typed = msgspec.structs.replace(request, text=text[:3000] + "s" + text[3000:], cursor=3001)
        again = engine.complete(typed).stats  # still cold: the quick window, its KV reused
        assert again.prompt_tokens <= 110 and again.prompt_tokens - again.reused_prompt_tokens <= 8
        engine.warm(typed)  # what the idle warm-up does
        full = engine.complete(typed).stats
        assert full.prompt_tokens > 600
        assert full.prompt_tokens - full.reused_prompt_tokens <= 16
        # A one-shot call (CLI, bench) on a cold document gets the full prompt.
        one_shot = msgspec.structs.replace(request, path="/src/other.py", quick_window=False)
        assert engine.complete(one_shot).stats.prompt_tokens > 600
    finally:
        engine.close()


def test_cli_calls_keep_the_prompt_for_the_next_one(tmp_path: Path) -> None:
    """`groundspec complete` and `refactor` save their KV slots at exit: the next
    call on the same file (another process) restores the prompt."""
    source = tmp_path / "graphlib_head.py"
    source.write_text(TEXT)
    line = TEXT[:CURSOR].count("\n") + 1
    small = str(provision.model_path(provision.DRAFT))
    env = {
        **os.environ,
        "GROUNDSPEC_KV_DIR": str(tmp_path / "kv"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    engine = ["--target-model", small, "--no-draft", "--speculation", "off", "--json"]
    commands = {
        "complete": ["complete", f"{source}:{line}:1", "--max-tokens", "8"],
        "refactor": ["refactor", str(source), "--lines", "1-6", "--instruction", "add types"],
    }
    for name, args in commands.items():
        runs = [
            subprocess.run(
                [sys.executable, "-m", "lsp_server.cli", *args, *engine],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            for _ in range(2)
        ]
        assert all(run.returncode == 0 for run in runs), [run.stderr[-800:] for run in runs]
        first, second = (msgspec.json.decode(run.stdout)["stats"] for run in runs)
        assert first["reusedPromptTokens"] == 0, name  # an empty KV folder
        assert second["reusedPromptTokens"] >= second["promptTokens"] - 16, name
