"""Next-edit requests: `groundspec/nextEdit` and `textDocument/copilotInlineEdit`.

Both read the document's recent edits (DocumentStore.history, fed by didChange),
ask the engine for the edit that most likely follows, and answer in their shape:
- groundspec/nextEdit {textDocument: {uri}, position, speculation?}
  -> {edits: [{range, newText}], stats}
- textDocument/copilotInlineEdit {textDocument: {uri, version}, position, ...}
  -> {edits: [{text, range, textDocument: {uri, version}, command}]}
`edits` is empty when nothing is worth proposing, or next edits are off
(options.nextEdit). The CLI (`groundspec next-edit`) builds the same result
from a file and its git history (lsp_server/cli_next_edit.py).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from speculator.edits import Edit, EditHistory, snapshots
from speculator.next_edit.core import NextEditRequest, NextEditResult
from speculator.next_edit.imports import ImportSources
from speculator.types import (
    CancelToken,
    ContextProvider,
    Engine,
    EngineError,
    Snippet,
    Speculation,
    Stats,
)

from . import requests as rq
from .convert import LineIndex
from .documents import DocumentError, DocumentStore
from .options import ServerOptions

if TYPE_CHECKING:
    from .service import CompletionService

log = logging.getLogger(__name__)

NEXT_EDIT_METHOD = "groundspec/nextEdit"
COPILOT_INLINE_EDIT_METHOD = "textDocument/copilotInlineEdit"
ACCEPTED_COMMAND = "groundspec.accepted"  # as lsp_server/server.py names it
# Edits in other open documents shown to the model (newest first).
ELSEWHERE = 2
# Workspace chunks read for an import of a name just used.
IMPORT_SNIPPETS = 12


class DocumentAt(msgspec.Struct):
    uri: str
    version: int | None = None


class NextEditParams(msgspec.Struct, kw_only=True, rename="camel"):
    text_document: DocumentAt
    position: rq.Position
    speculation: Speculation | None = None


async def next_edit(service: CompletionService, params: Any) -> dict[str, Any]:
    """`groundspec/nextEdit`: {edits: [{range, newText}], stats}."""
    src, result = await _run(service, params)
    return result_dict(src.index, result)


async def copilot_inline_edit(service: CompletionService, params: Any) -> dict[str, Any]:
    """`textDocument/copilotInlineEdit`: Copilot's shape, from the same code.

    Clients send it on their own as the user types, so it waits for a pause
    (options.nextEditDebounceMs) and answers nothing if the document changed
    meanwhile; `groundspec/nextEdit` is an explicit ask and runs at once."""
    src, result = await _run(service, params, debounce=True)
    edits = []
    for edit in result.edits:
        edits.append(
            {
                "text": edit.new_text,
                "range": _range(src.index, edit.start, edit.end),
                "textDocument": {"uri": src.uri, "version": src.version},
                "command": {
                    "title": "groundspec: accepted",
                    "command": ACCEPTED_COMMAND,
                    "arguments": [{"uri": src.uri, "length": len(edit.new_text), "kind": "edit"}],
                },
            }
        )
    return {"edits": edits}


def result_dict(index: LineIndex, result: NextEditResult) -> dict[str, Any]:
    """The `groundspec/nextEdit` result (also what `next-edit --json` prints)."""
    edits = [{"range": _range(index, e.start, e.end), "newText": e.new_text} for e in result.edits]
    return {"edits": edits, "stats": msgspec.to_builtins(result.stats)}


def run_on_engine(engine: Engine, request: NextEditRequest, token: CancelToken) -> NextEditResult:
    """The engine's next edit; an engine without them (a remote backend) says so."""
    answer = getattr(engine, "next_edit", None)
    if answer is None:
        raise EngineError("next edits need the local engine; this backend has none")
    result: NextEditResult = answer(request, token)
    return result


async def _run(
    service: CompletionService, params: Any, debounce: bool = False
) -> tuple[rq.Resolved, NextEditResult]:
    req: NextEditParams = rq.parse(params, NextEditParams)
    src = service.source(req.text_document.uri)
    # Logged before the on/off check: the VS Code test counts the asks a client made.
    log.info("next edit asked for %s (version %s)", src.uri, src.version)
    cursor = rq.offset(src.index, req.position.lsp())
    options = service.options
    speculation = req.speculation or options.speculation
    if not options.next_edit:
        return src, NextEditResult([], Stats(speculation=speculation), reason="next edits are off")
    if debounce and options.next_edit_debounce_ms:
        await asyncio.sleep(options.next_edit_debounce_ms / 1000)
        # Typed on or closed during the pause: stale, answered with no edit (not an error).
        if not service.is_current(src):
            return src, NextEditResult([], Stats(speculation=speculation), reason="typing on")
    root = service.workspace_root
    index = service.workspace_index
    request = request_for(service.documents, src, cursor, speculation, options, root, index)
    token = CancelToken()
    result = await service.run_engine(lambda e: run_on_engine(e, request, token), token)
    return src, result


def shown_path(path: str, root: str | None) -> str:
    """`path` relative to the workspace root when it lies under it (`src/app.py`, as
    the model saw files named in diffs: fewer prompt tokens than /home/...), else
    as it is."""
    if root:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            pass
    return path


def request_for(
    documents: DocumentStore,
    src: rq.Resolved,
    cursor: int,
    speculation: Speculation,
    options: ServerOptions,
    root: str | None = None,
    index: ContextProvider | None = None,
) -> NextEditRequest:
    """The engine request: the document now, its recent edits and a few elsewhere,
    each file named as a diff names it, from the workspace `root`; imports are
    looked for in the other open documents and the workspace `index`."""
    assert src.uri is not None
    history = documents.history
    return NextEditRequest(
        text=src.text,
        cursor=cursor,
        edits=history.edits(src.uri),
        path=shown_path(src.path or src.uri, root),
        language_id=src.language_id,
        elsewhere=[
            (shown_path(p, root), b, e) for p, b, e in _elsewhere(documents, history, src.uri)
        ],
        speculation=speculation,
        prompt_format=options.next_edit_format,
        min_confidence=options.next_edit_min_confidence,
        draft_only=False if options.next_edit_rewrite else None,
        import_sources=import_sources(documents, src, root, index),
    )


def _elsewhere(
    documents: DocumentStore, history: EditHistory, uri: str
) -> list[tuple[str, str, Edit]]:
    """(path, text before the edit, edit) of the newest edits in other open documents."""
    found = []
    for other, edit in history.elsewhere(uri, ELSEWHERE):
        try:
            text = documents.get(other).text
        except DocumentError:
            continue
        edits = history.edits(other)
        if edit in edits:
            before = snapshots(text, edits)[edits.index(edit)]
            found.append((rq._path_of(other) or other, before, edit))
    return found


def import_sources(
    documents: DocumentStore,
    src: rq.Resolved,
    root: str | None,
    index: ContextProvider | None,
) -> ImportSources:
    """Where the engine looks for an import of a name the user just used: the
    other open documents of the same language, then the workspace index's chunks
    most alike to `import NAME` (read on the engine's thread: the open documents'
    texts are taken now)."""
    texts = [
        Snippet(shown_path(rq._path_of(doc.uri) or doc.uri, root), doc.text)
        for doc in documents.all()
        if doc.uri != src.uri and doc.language_id == src.language_id
    ]

    def sources(name: str) -> list[Snippet]:
        found = [snippet for snippet in texts if name in snippet.text]
        if index is not None:
            found += index.related(src.path, f"import {name}", IMPORT_SNIPPETS)
        return found

    return sources


def _range(index: LineIndex, start: int, end: int) -> dict[str, Any]:
    rng = index.range(start, end)
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }
