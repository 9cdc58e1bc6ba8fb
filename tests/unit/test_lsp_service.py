"""The service alone: no pygls, an async API any front door can call."""

import subprocess
import sys
from typing import Any

import pytest
from lsprotocol import types

from lsp_server.options import ServerOptions, StartupConfig
from lsp_server.requests import ContentModified, InvalidParams, RequestFailed
from lsp_server.service import CompletionService, peak_rss_mb
from speculator.config import EngineConfig


def test_the_service_does_not_import_pygls() -> None:
    code = "import sys, lsp_server.service; print(any(m.startswith('pygls') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_complete_refactor_and_stats(service: CompletionService) -> None:
    item = types.TextDocumentItem(uri="file:///a.py", language_id="python", version=1, text="x = ")
    service.open_document(item)
    position = {"line": 0, "character": 4}
    out = await service.complete({"textDocument": {"uri": "file:///a.py"}, "position": position})
    assert out["text"] == "fake_completion()"
    inline = await service.complete({"text": "y", "position": {"line": 0, "character": 1}})
    assert inline["stats"]["generatedTokens"] == len("fake_completion()")
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
    _, refactored = await service.refactor(
        {"textDocument": {"uri": "file:///a.py"}, "range": rng, "instruction": "Tidy"}
    )
    assert refactored["newText"] == "# Tidy\nx = "
    assert service.stats()["requests"] == 3


async def test_a_document_changed_or_closed_since_it_was_read_is_not_current(
    service: CompletionService,
) -> None:
    item = types.TextDocumentItem(uri="file:///b.py", language_id="python", version=1, text="x")
    service.open_document(item)
    src = service.source("file:///b.py")
    assert service.is_current(src)
    service.check_unchanged(src)
    edited = types.TextDocumentItem(uri=item.uri, language_id="python", version=2, text="xy")
    service.open_document(edited)
    assert not service.is_current(src)
    with pytest.raises(ContentModified):
        service.check_unchanged(src)
    now = service.source("file:///b.py")
    service.close_document("file:///b.py")
    assert not service.is_current(now)


async def test_errors_carry_their_json_rpc_codes(service: CompletionService) -> None:
    with pytest.raises(InvalidParams) as bad:
        await service.complete({"position": {"line": 0, "character": 0}})
    assert bad.value.CODE == -32602
    with pytest.raises(RequestFailed):
        position = {"line": 0, "character": 0}
        await service.complete({"textDocument": {"uri": "file:///none.py"}, "position": position})


@pytest.mark.parametrize("instruction", [" ", "\n\t  "])
async def test_a_blank_instruction_is_invalid_params(
    service: CompletionService, instruction: str
) -> None:
    """groundspec/refactor took an instruction of only whitespace (the CLI refuses it);
    the fake engine rewrote by it, a real one failed with -32803 once loaded."""
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    with pytest.raises(InvalidParams, match="instruction is empty") as bad:
        await service.refactor({"text": "x", "range": rng, "instruction": instruction})
    assert bad.value.CODE == -32602


async def test_failed_model_load_gives_each_request_one_clear_error() -> None:
    """Issue 11: the editors saw a traceback per request when loading failed."""
    engine = EngineConfig(target_model="/nonexistent/model.gguf", use_draft=False)
    svc = CompletionService(StartupConfig(options=ServerOptions(engine=engine, debounce_ms=0)))
    svc.start()
    try:
        for _ in range(2):
            with pytest.raises(RequestFailed, match="failed to load"):
                await svc.complete({"text": "x", "position": {"line": 0, "character": 1}})
    finally:
        svc.shutdown()


def test_peak_rss_is_the_servers_own_not_the_launchers() -> None:
    """Issue 11, item 7: ru_maxrss survives execve, so a big launcher leaked into it."""
    child = "from lsp_server.service import peak_rss_mb; print(peak_rss_mb())"
    parent = (
        "import os, sys\n"
        "ballast = bytearray(400 * 1024 * 1024)\n"  # the launcher's 400 MB
        f"os.execv(sys.executable, [sys.executable, '-c', {child!r}])\n"
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, check=True)
    assert float(out.stdout) < 200
    assert peak_rss_mb() > 0


def test_load_fix_names_where_a_missing_custom_path_was_set(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_server.service import FETCH_FIX, load_fix

    monkeypatch.delenv("GROUNDSPEC_TARGET_MODEL", raising=False)
    monkeypatch.delenv("GROUNDSPEC_DRAFT_MODEL", raising=False)
    assert load_fix(EngineConfig()) == FETCH_FIX  # default models: assemble them
    missing = str(tmp_path / "missing.gguf")
    from_setting = load_fix(EngineConfig(draft_model=missing))
    assert "engine.draftModel" in from_setting and "draft model" in from_setting
    monkeypatch.setenv("GROUNDSPEC_TARGET_MODEL", missing)
    from_env = load_fix(EngineConfig().with_env())
    assert "GROUNDSPEC_TARGET_MODEL" in from_env and "target model" in from_env
    present = tmp_path / "present.gguf"
    present.write_bytes(b"GGUF")
    # A path that exists but fails to load (corrupt): the default models are the way out.
    assert load_fix(EngineConfig(target_model=str(present), use_draft=False)) == FETCH_FIX


async def test_shutdown_saves_the_engines_kv_slots() -> None:
    """Issue 12: slots are written at shutdown, after the worker has stopped."""
    options = ServerOptions(engine=EngineConfig(fake=True), debounce_ms=0, idle_warm_ms=0)
    svc = CompletionService(StartupConfig(options=options))
    svc.start()
    await svc.complete({"text": "x", "position": {"line": 0, "character": 1}})
    engine = svc.host.engine
    svc.shutdown()
    assert engine is not None and engine.persisted == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("on", [True, False])
async def test_loading_warms_the_next_edit_instructions_when_next_edits_are_on(
    fake_service: Any, on: bool
) -> None:
    async with fake_service(next_edit=on, next_edit_format="zeta2") as svc:
        await svc.complete({"text": "x", "position": {"line": 0, "character": 1}})
        engine = svc.host.engine
        assert engine is not None
        assert engine.next_edit_warms == (["zeta2"] if on else [])  # type: ignore[attr-defined]
