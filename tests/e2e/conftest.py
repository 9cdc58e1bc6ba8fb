"""Start the real server as a subprocess (fake engine) and talk to it as an editor."""

from __future__ import annotations

import os
import sys
from typing import Any, Union

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "lsp_server", "--fake"]
FAKE_TEXT = "fake_completion()"
SLOW_TEXT = "x" * 400  # 400 chars at 20 ms each: 8 s unless cancelled
CLIENTS = ["neovim", "visual-studio-code"]


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GROUNDSPEC_FAKE_ENGINE="1",
        GROUNDSPEC_FAKE_TEXT=FAKE_TEXT,
        GROUNDSPEC_FAKE_DELAY_MS="0",
        XDG_CONFIG_HOME="/nonexistent-groundspec-test",  # ignore the user's config file
        PYTHONPATH=os.getcwd(),
    )
    env.update(extra)
    return env


def record_edits(client: LanguageClient) -> list[types.ApplyWorkspaceEditParams]:
    """Make the client accept workspace/applyEdit and remember each edit."""
    edits: list[types.ApplyWorkspaceEditParams] = []
    fix_code_action_parsing(client)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    client.edits = edits  # type: ignore[attr-defined]
    return edits


def fix_code_action_parsing(client: LanguageClient) -> None:
    """lsprotocol reads any object with a "command" key as a Command, but a
    CodeAction may carry a command object too; editors look at its type."""
    converter = client.protocol._converter

    def hook(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, hook)
    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007


async def start_session(
    client: LanguageClient, editor: str, options: dict[str, Any] | None = None
) -> None:
    record_edits(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(editor),
            initialization_options={"debounceMs": 0, "idleWarmMs": 0, **(options or {})},
        )
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=server_env()))
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    editor = getattr(request, "param", "visual-studio-code")
    await start_session(lsp_client, editor)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, server_env=server_env()),
    params=CLIENTS,
)
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """One client per editor: Neovim's and VS Code's capabilities."""
    await start_session(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER,
        server_env=server_env(GROUNDSPEC_FAKE_TEXT=SLOW_TEXT, GROUNDSPEC_FAKE_DELAY_MS="20"),
    ),
    params=CLIENTS,
)
async def slow(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """The fake engine in delay mode: 20 ms per token, checking its cancel token each one."""
    await start_session(lsp_client, request.param, {"maxTokens": 400})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=server_env()))
async def fresh(lsp_client: LanguageClient):
    """A started server that the test initializes (and shuts down) itself."""
    record_edits(lsp_client)
    yield
