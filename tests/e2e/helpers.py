"""Small helpers shared by the end-to-end tests."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

SOURCE = 'def greet(name):\n    """Say hi 😀."""\n    return \n'


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def rng(a: tuple[int, int], b: tuple[int, int]) -> types.Range:
    return types.Range(start=pos(*a), end=pos(*b))


def open_doc(
    client: LanguageClient, uri: str, text: str = SOURCE, language_id: str = "python"
) -> None:
    item = types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))


def change(client: LanguageClient, uri: str, version: int, at: types.Range, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=at, text=text)],
        )
    )


def inline_params(
    uri: str,
    position: types.Position,
    trigger: types.InlineCompletionTriggerKind = types.InlineCompletionTriggerKind.Automatic,
) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position,
        context=types.InlineCompletionContext(trigger_kind=trigger),
    )


async def inline(
    client: LanguageClient,
    uri: str,
    position: types.Position,
    trigger: types.InlineCompletionTriggerKind = types.InlineCompletionTriggerKind.Automatic,
) -> types.InlineCompletionList:
    params = inline_params(uri, position, trigger)
    result = await client.text_document_inline_completion_async(params)
    assert isinstance(result, types.InlineCompletionList)
    return result


def plain(value: Any) -> Any:
    """pygls' client hands custom results over as namedtuples: back to JSON data."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


async def call(client: LanguageClient, method: str, params: Any) -> Any:
    """A custom request; returns the result as plain JSON data."""
    return plain(await client.protocol.send_request_async(method, params))


async def stats(client: LanguageClient) -> dict[str, Any]:
    return await call(client, "groundspec/stats", {})


async def eventually(predicate: Any, timeout: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
