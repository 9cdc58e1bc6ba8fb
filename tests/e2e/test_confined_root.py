"""A client names the workspace root; the server decides whether to index it. A root
of `/` is refused with one window/showMessage, and the server goes on answering
(fake engine)."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from .conftest import FAKE_TEXT
from .helpers import inline, open_doc, pos


async def test_a_root_of_slash_is_refused_and_reported_and_completions_go_on(
    fresh: LanguageClient,
) -> None:
    await fresh.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            root_uri="file:///",
            workspace_folders=[types.WorkspaceFolder(uri="file:///", name="everything")],
            initialization_options={"debounceMs": 0, "idleWarmMs": 0},
        )
    )
    for _ in range(100):
        if fresh.messages:
            break
        await asyncio.sleep(0.05)
    refusals = [m.message for m in fresh.messages if "whole file system" in m.message]
    assert len(refusals) == 1 and "completions still work" in refusals[0]
    uri = "file:///tmp/app.py"
    open_doc(fresh, uri)
    result = await inline(fresh, uri, pos(2, len("    return ")))
    assert [item.insert_text for item in result.items] == [FAKE_TEXT]
    await fresh.shutdown_session()
