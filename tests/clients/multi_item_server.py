"""A stand-in LSP server that answers an explicit inline-completion request with
several items (one for an automatic request), to test that an editor client
shows them all: tests/e2e/test_vscode.py cycles through them in VS Code.

Started as `multi_item_server.py serve [...]` like `groundspec serve`; answers
groundspec/stats so the extension's status bar item says it is ready.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

ITEMS = ["first_item()", "second_item()", "third_item()"]

server = LanguageServer("multi-item-stub", "1")


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
def inline_completion(
    ls: LanguageServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    here = types.Range(start=params.position, end=params.position)
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    texts = ITEMS if invoked else ITEMS[:1]
    return types.InlineCompletionList(
        items=[types.InlineCompletionItem(insert_text=text, range=here) for text in texts]
    )


@server.feature("groundspec/stats")
def stats(ls: LanguageServer, params: Any) -> dict[str, Any]:
    return {"engineState": "ready", "tokensPerSecond": 0.0, "requests": 0}


if __name__ == "__main__":
    server.start_io()
