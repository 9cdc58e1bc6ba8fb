"""A clean restart in a workspace on a real model (issue 63): the first
completion in a file seen before evaluates a few prompt tokens, even while the
workspace index is still loading, and says what the fresh engine said.

The small draft model stands in as the target (the mechanics are the same)."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import Cancelled, CancelToken, CompletionRequest
from speculator.workspace import WorkspaceIndex

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ("graphlib.py", "bisect.py", "heapq.py", "colorsys.py", "fnmatch.py")
TYPED = "    x = "


def _engine(kv_dir: Path) -> SpeculativeEngine:
    small = str(provision.model_path(provision.DRAFT))
    config = EngineConfig(target_model=small, use_draft=False, n_ctx=4096, kv_dir=str(kv_dir))
    return SpeculativeEngine.load(config)


def _request(path: Path, text: str, cursor: int, typing: bool) -> CompletionRequest:
    return CompletionRequest(
        text=text,
        cursor=cursor,
        path=str(path),
        max_tokens=8,
        speculation="off",
        multiline=False,
        quick_window=typing,
    )


def test_clean_restart_first_completion_in_a_seen_file_evaluates_a_few_tokens(
    tmp_path: Path,
) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for name in MODULES:
        shutil.copy(STDLIB / name, root / name)
    path = root / "graphlib.py"
    source = path.read_text()
    at = source.index("\n", source.index("    def done(")) + 1
    text, cursor = source[:at] + TYPED + "\n" + source[at:], at + len(TYPED)
    kv_dir = tmp_path / "kv"

    engine = _engine(kv_dir)
    with WorkspaceIndex(str(root), watch=False).start() as index:
        assert index.wait_ready(60)
        engine.set_context_provider(index)
        engine.warm(_request(path, text, cursor, typing=False))  # the idle warm-up
        before = engine.complete(_request(path, text, cursor, typing=True))
        assert before.stats.prompt_tokens > 600  # the full prompt, other files' snippets in it
        engine.persist()  # shutdown
        engine.close()

    engine = _engine(kv_dir)  # the restart; the index has not read the folder yet
    try:
        loading = WorkspaceIndex(str(root), watch=False)
        assert not loading.is_ready()
        engine.set_context_provider(loading)
        engine.warm(_request(path, text, 0, typing=False))  # didOpen: no cursor yet
        after = engine.complete(_request(path, text, cursor, typing=True))
    finally:
        engine.close()
    assert after.stats.prompt_tokens == before.stats.prompt_tokens  # not the quick window
    assert after.stats.prompt_tokens - after.stats.reused_prompt_tokens <= 64
    assert after.text == before.text


def test_after_a_crash_a_cancelled_didopen_warm_up_leaves_the_saved_kv_reusable(
    tmp_path: Path,
) -> None:
    """After `kill -9` the editor reopens the file, edited since the slot was saved,
    and asks at once: its completion cancels didOpen's warm-up of the restored KV
    (here: before its first batch, the last token). The FIM suffix in that KV must
    still be moved, so only the edit is evaluated, not the quick window."""
    path = tmp_path / "graphlib.py"
    shutil.copy(STDLIB / "graphlib.py", path)
    source = path.read_text()
    at = source.index("\n", source.index("    def done(")) + 1
    text, cursor = source[:at] + TYPED + "\n" + source[at:], at + len(TYPED)
    kv_dir = tmp_path / "kv"

    engine = _engine(kv_dir)
    try:
        engine.warm(_request(path, text, cursor, typing=False))
        full = engine.complete(_request(path, text, cursor, typing=True)).stats.prompt_tokens
        assert engine.persist() >= 1  # the last idle save before the crash
    finally:
        engine.close()
    typed = "\n" + TYPED + "1\n" + TYPED  # two more lines typed after the save
    text, cursor = text[:cursor] + typed + text[cursor:], cursor + len(typed)

    engine = _engine(kv_dir)
    try:
        cancelled = CancelToken()
        cancelled.cancel()  # the completion came: the warm-up stops at its first batch
        with pytest.raises(Cancelled):
            engine.warm(_request(path, text, 0, typing=False), cancelled)
        after = engine.complete(_request(path, text, cursor, typing=True))
    finally:
        engine.close()
    assert after.stats.prompt_tokens > full  # the full prompt, not the quick window
    assert after.stats.prompt_tokens - after.stats.reused_prompt_tokens <= 32
