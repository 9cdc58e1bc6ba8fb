"""Initialize, options, model loading failures, shutdown/exit, and TCP."""

from __future__ import annotations

import asyncio
import json
import socket
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import FAKE_TEXT, SERVER, server_env
from .helpers import call, inline, open_doc, pos


async def initialize(client: LanguageClient, options: object = None) -> types.InitializeResult:
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options=options,
        )
    )


async def test_capabilities(fresh: LanguageClient) -> None:
    result = await initialize(fresh)
    caps = result.capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    assert caps.code_action_provider is not None
    assert caps.execute_command_provider is not None
    assert set(caps.execute_command_provider.commands) == {
        "groundspec.refactor",
        "groundspec.accepted",
        "groundspec.stats",
    }
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    await fresh.shutdown_session()


async def test_positions_stay_utf16_when_the_client_prefers_utf8(fresh: LanguageClient) -> None:
    capabilities = client_capabilities("neovim")
    capabilities.general = types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16]
    )
    result = await fresh.initialize_session(types.InitializeParams(capabilities=capabilities))
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf16
    await fresh.shutdown_session()


async def test_model_loading_reports_progress(fresh: LanguageClient) -> None:
    await initialize(fresh)
    await call(fresh, "groundspec/stats", {})
    for _ in range(100):  # loading ends on the worker thread: wait for its report
        kinds = [value.kind for value in fresh.progress_reports["groundspec/load"]]
        if kinds and kinds[-1] == "end":
            break
        await asyncio.sleep(0.05)
    assert kinds[0] == "begin" and kinds[-1] == "end"
    await fresh.shutdown_session()


async def test_invalid_options_fall_back_and_are_shown(fresh: LanguageClient) -> None:
    await initialize(fresh, {"debounceMs": "soon", "maxTokens": 3, "bogus": 1})
    await call(fresh, "groundspec/stats", {})  # the messages were sent before this answer
    shown = [m.message for m in fresh.messages if m.type == types.MessageType.Warning]
    assert any("debounceMs" in m for m in shown)
    assert any("bogus" in m for m in shown)
    open_doc(fresh, "file:///o.py")
    result = await inline(fresh, "file:///o.py", pos(2, 11))
    assert result.items[0].insert_text == "fak"  # maxTokens 3 still applied
    await fresh.shutdown_session()


async def test_settings_change_applies_without_a_restart(fresh: LanguageClient) -> None:
    fresh.set_configuration({"maxTokens": 6}, section="groundspec")  # for pulls
    await initialize(fresh, {"debounceMs": 0, "idleWarmMs": 0})
    open_doc(fresh, "file:///s.py")
    assert (await inline(fresh, "file:///s.py", pos(2, 11))).items[0].insert_text == FAKE_TEXT

    # Push, as VS Code does with a configuration section.
    settings = {"groundspec": {"maxTokens": 4, "engine": {"nCtx": 1024}, "debounceMs": "x"}}
    fresh.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))
    assert (await inline(fresh, "file:///s.py", pos(2, 11))).items[0].insert_text == "fake"
    shown = [m.message for m in fresh.messages if m.type == types.MessageType.Warning]
    assert any("engine: takes effect when the server restarts" in m for m in shown)
    assert any("debounceMs" in m for m in shown)

    # Pull: settings null means "ask me" (workspace/configuration).
    fresh.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await call(fresh, "groundspec/stats", {})
    assert (await inline(fresh, "file:///s.py", pos(2, 11))).items[0].insert_text == "fake_c"
    await fresh.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_server"],  # no --fake
        server_env={
            **server_env(GROUNDSPEC_TARGET_MODEL="/nonexistent/model.gguf"),
            "GROUNDSPEC_FAKE_ENGINE": "0",
        },
    )
)
async def broken(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_load_failure_is_shown_and_requests_get_a_clear_error(
    broken: LanguageClient,
) -> None:
    with pytest.raises(JsonRpcException, match="failed to load"):
        await call(broken, "groundspec/complete", {"text": "a", "position": pos(0, 1)})
    errors = [m.message for m in broken.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1, errors
    assert errors[0].startswith("groundspec: could not load the models")
    # The fix names where the bad path came from, and the default models' command.
    assert "GROUNDSPEC_TARGET_MODEL" in errors[0] and "groundspec models fetch" in errors[0]
    assert (await call(broken, "groundspec/stats", {}))["server"]["engineState"] == "failed"


async def test_shutdown_then_exit_ends_with_code_zero(fresh: LanguageClient) -> None:
    await initialize(fresh)
    await fresh.shutdown_session()
    assert fresh._server is not None and fresh._server.returncode == 0


async def test_exit_without_shutdown_ends_with_code_one(fresh: LanguageClient) -> None:
    await initialize(fresh)
    fresh.exit(None)
    assert fresh._server is not None
    assert await asyncio.wait_for(fresh._server.wait(), timeout=5) == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_tcp_binds_loopback_and_serves() -> None:
    port = free_port()
    env = server_env(GROUNDSPEC_LOG_LEVEL="INFO")  # "listening on" is INFO (default: WARNING)
    proc = await asyncio.create_subprocess_exec(
        *SERVER, "--tcp", str(port), env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        reader, writer = await connect(port)
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
        ).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        response = json.loads(await reader.readexactly(length))
        assert (
            response["id"] == 1 and "inlineCompletionProvider" in response["result"]["capabilities"]
        )
        writer.close()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    assert proc.stderr is not None
    assert f"listening on 127.0.0.1:{port}" in (await proc.stderr.read()).decode()


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    for _ in range(100):
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"server never listened on 127.0.0.1:{port}")


def test_tcp_address_defaults_to_loopback() -> None:
    from lsp_server.startup import parse_tcp

    assert parse_tcp("9000") == ("127.0.0.1", 9000)
    assert parse_tcp(":9000") == ("127.0.0.1", 9000)
    assert parse_tcp("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_tcp("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError):
        parse_tcp("localhost:http")
