"""The LSP daemon: thin handlers over the service (service.py).

Each handler finds the document, converts positions, calls the service and
converts the result. Wire-level concerns (framing, decoding, lifecycle) live
in protocol.py; engine calls run on the service's one worker thread;
everything else (and every message we send) happens on the asyncio loop."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from importlib import metadata
from typing import Any, TypeVar

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from speculator.types import CancelToken

from . import lsp_gate, next_edit
from . import requests as rq
from .documents import DocumentError
from .logs import traced
from .lsp_progress import LoadProgress, WarmProgress
from .options import StartupConfig
from .protocol import GroundspecProtocol, MalformedResponse, make_converter
from .service import CompletionService, load_fix, range_dict
from .startup import ListenError, cannot_listen, say_error

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

REFACTOR_COMMAND = "groundspec.refactor"
ACCEPTED_COMMAND = "groundspec.accepted"
STATS_COMMAND = "groundspec.stats"
INVOKED_ITEMS = 3  # items for an explicitly invoked inline completion
DEBUG_DOCUMENT_METHOD = "groundspec/debug/document"  # fake engine only: tests compare text
CONFIG_SECTION = "groundspec"  # workspace/configuration section of our settings
BUILTIN_INSTRUCTIONS = (
    "Add a docstring",
    "Add type annotations",
    "Simplify this code",
    "Add error handling",
)


def _version() -> str:
    try:
        return metadata.version("groundspec")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class GroundspecServer(LanguageServer):
    def __init__(self, startup: StartupConfig) -> None:
        super().__init__(
            "groundspec",
            _version(),
            protocol_cls=GroundspecProtocol,
            converter_factory=make_converter,
        )
        self.service = CompletionService(startup)
        self.load_progress = LoadProgress(self)
        self.service.scheduler.warm_observer = WarmProgress(self)
        self.shutdown_requested = False

    def start_service(self) -> None:
        """Load the models (once) with progress shown; never blocks."""
        self.load_progress.begin()
        self.service.workspace_root = self.workspace_root()
        self.service.start(self.load_progress.update, self._on_loaded)

    def _on_loaded(self, error: str | None) -> None:
        if error is None:
            self.load_progress.end("Models ready")
            return
        self.load_progress.end("Model loading failed")
        fix = load_fix(self.service.options.engine.with_env())
        shown = error if fix in error else f"{error.rstrip('.')}. {fix}"
        self.show(f"groundspec: could not load the models: {shown}", types.MessageType.Error)

    def workspace_root(self) -> str | None:
        folders = self.workspace.folders  # pygls' Workspace: the client's folders and root
        uris = [f.uri for f in folders.values()] or [self.workspace.root_uri or ""]
        paths = [to_fs_path(uri) for uri in uris if uri.startswith("file:")]
        return self.service.admit_root(next((p for p in paths if p and os.path.isdir(p)), None))

    def shutdown(self) -> None:
        # Don't wait for the stdin reader thread: it is blocked in readline().
        self.service.shutdown()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
            self._thread_pool = None
        super().shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Never a pop-up: errors of requests are in their answers, the rest is logged.
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve on stdio with our framing (protocol.py) until the stream ends or `exit`."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        fd = (stdin or sys.stdin.buffer).fileno()
        self._run(self.protocol.serve_stdio(fd, self._stop_event))  # type: ignore[attr-defined]

    def start_tcp(self, host: str, port: int, api_key: str | None = None) -> None:
        """Serve one client at a time on TCP (with `api_key`: that knows it), as stdio."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await self.protocol.serve_stream(reader, stop)  # type: ignore[attr-defined]
            self.shutdown()

        async def serve() -> None:
            try:
                handler = lsp_gate.gated(connection, api_key)  # only clients with the key
                self._server = await asyncio.start_server(handler, host, port)
            except OSError as exc:
                raise cannot_listen(host, port, exc) from None
            async with self._server:
                await self._server.serve_forever()

        self._run(serve())

    def _run(self, main: Any) -> None:
        try:
            asyncio.run(main)
        except BrokenPipeError:
            log.error("the client closed the connection")
        except ListenError as exc:
            say_error(exc)
        except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            pass
        finally:
            self.shutdown()

    # -- helpers used by the handlers --------------------------------------------

    def client_supports_configuration(self) -> bool:
        workspace = self.client_capabilities.workspace
        return bool(workspace and workspace.configuration)

    def client_supports_progress(self) -> bool:
        window = self.client_capabilities.window
        return bool(window and window.work_done_progress)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    async def refactor(self, params: rq.RefactorParams, *, apply: bool) -> dict[str, Any]:
        token = CancelToken()
        self._cancel_with_request(token)
        progress = self._begin_refactor_progress(params.instruction, token)
        try:
            src, out = await self.service.refactor(params, token)
        finally:
            if progress is not None:
                self.work_done_progress.end(progress, types.WorkDoneProgressEnd())
                self.work_done_progress.tokens.pop(progress, None)  # pygls never forgets them
        if apply:
            self.service.check_unchanged(src)
            out["applied"] = await self._apply_edit(src.uri, out["range"], out["newText"])
        return out

    def _cancel_with_request(self, token: CancelToken) -> None:
        # workspace/executeCommand runs our handler as a sub-task that pygls does
        # not cancel on $/cancelRequest; watch the request's own future instead.
        msg_id = self.protocol.msg_id
        outer = self.protocol._request_futures.get(msg_id) if msg_id is not None else None
        if outer is not None:
            outer.add_done_callback(lambda f: token.cancel() if f.cancelled() else None)

    def _begin_refactor_progress(self, instruction: str, token: CancelToken) -> str | None:
        if not self.client_supports_progress():
            return None
        name = f"groundspec/refactor/{uuid.uuid4().hex[:8]}"
        self.work_done_progress.create(name)
        begin = types.WorkDoneProgressBegin(
            title="groundspec refactor", message=instruction, cancellable=True
        )
        self.work_done_progress.begin(name, begin)
        # The user pressed cancel on the progress notification.
        cancelled: Future[Any] = self.work_done_progress.tokens[name]
        cancelled.add_done_callback(lambda f: token.cancel() if f.cancelled() else None)
        return name

    async def _apply_edit(self, uri: str | None, range_: dict[str, Any], new: str) -> bool:
        assert uri is not None
        rng = msgspec.convert(range_, rq.Range).lsp()
        edit = types.WorkspaceEdit(changes={uri: [types.TextEdit(range=rng, new_text=new)]})
        params = types.ApplyWorkspaceEditParams(edit=edit, label="groundspec refactor")
        try:
            result = await self.workspace_apply_edit_async(params)
        except MalformedResponse as exc:
            # null, or no `applied`: an editor that did not say it applied the edit.
            # The caller gets the rewrite with applied: false, as for `applied: false`.
            log.warning("workspace/applyEdit: %s; taken as not applied", exc.message)
            return False
        return bool(result and result.applied)


def handler(fn: F) -> F:
    """A traced handler whose service errors become JSON-RPC errors with their code."""

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any) -> Any:
            try:
                return await fn(*args)
            except rq.ServiceError as exc:
                raise JsonRpcException(exc.message, exc.CODE) from None

        return traced(async_wrapper)  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        try:
            return fn(*args)
        except rq.ServiceError as exc:
            raise JsonRpcException(exc.message, exc.CODE) from None

    return traced(wrapper)  # type: ignore[return-value]


def accepted_command(uri: str | None, text: str) -> types.Command:
    return types.Command(
        title="groundspec: accepted",
        command=ACCEPTED_COMMAND,
        arguments=[{"uri": uri, "length": len(text)}],
    )


def completion_item(src: rq.Resolved, cursor: int, text: str) -> types.CompletionItem:
    """A completion item that replaces the word before the cursor, so clients that
    filter by that word keep showing it."""
    word_start = cursor
    while word_start > 0 and (
        src.text[word_start - 1].isalnum() or src.text[word_start - 1] == "_"
    ):
        word_start -= 1
    word = src.text[word_start:cursor]
    first_line = text.splitlines()[0] if text.strip() else text
    return types.CompletionItem(
        label=(word + first_line)[:80] or text,
        kind=types.CompletionItemKind.Text,
        detail="groundspec",
        filter_text=word + text,
        insert_text_format=types.InsertTextFormat.PlainText,
        text_edit=types.TextEdit(range=src.index.range(word_start, cursor), new_text=word + text),
        command=accepted_command(src.uri, text),
    )


# -- handlers ------------------------------------------------------------------


@handler
def on_initialize(ls: GroundspecServer, params: types.InitializeParams) -> None:
    ls.service.apply_initialization_options(params.initialization_options)
    offer_completion_items(ls, params.capabilities)


def offer_completion_items(ls: GroundspecServer, client: types.ClientCapabilities) -> None:
    """Keep textDocument/completion (pygls advertises the features registered
    when this handler returns) only where `completion.lspItems` wants it."""
    shows_inline = bool(client.text_document and client.text_document.inline_completion)
    features = ls.protocol.fm.features
    if not ls.service.options.completion.offered_to(shows_inline):
        features.pop(types.TEXT_DOCUMENT_COMPLETION, None)
    elif types.TEXT_DOCUMENT_COMPLETION not in features:  # a later session on the same server
        ls.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())(completion)


@handler
def on_initialized(ls: GroundspecServer, params: types.InitializedParams) -> None:
    ls.start_service()  # may add a problem: a workspace root it refuses to index
    for problem in ls.service.problems:
        ls.show(f"groundspec: {problem}")


@handler
async def did_change_configuration(
    ls: GroundspecServer, params: types.DidChangeConfigurationParams
) -> None:
    """Push (settings, or {"groundspec": settings}) or, given nothing, pull."""
    settings = params.settings
    if isinstance(settings, dict) and CONFIG_SECTION in settings:
        settings = settings[CONFIG_SECTION]
    if not settings and ls.client_supports_configuration():
        item = types.ConfigurationItem(section=CONFIG_SECTION)
        pulled = await ls.workspace_configuration_async(types.ConfigurationParams(items=[item]))
        settings = pulled[0] if pulled else None
    for problem in ls.service.apply_settings(settings or {}):
        ls.show(f"groundspec: {problem}")


@handler
def on_shutdown(ls: GroundspecServer, params: Any) -> None:
    ls.shutdown_requested = True
    ls.service.worker.stop()  # cancels the decode in progress too


@handler
def did_open(ls: GroundspecServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.service.open_document(params.text_document)


@handler
def did_change(ls: GroundspecServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    try:
        ls.service.change_document(uri, params.text_document.version, params.content_changes)
    except DocumentError as exc:
        log.warning("didChange ignored: %s", exc)
        ls.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=f"groundspec: {exc}")
        )


@handler
def did_close(ls: GroundspecServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.service.close_document(params.text_document.uri)


@handler
def did_save(ls: GroundspecServer, params: types.DidSaveTextDocumentParams) -> None:
    log.debug("saved %s", params.text_document.uri)


@handler
async def inline_completion(
    ls: GroundspecServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    # Asked for explicitly (Neovim's <M-n>, VS Code's "next suggestion"): several
    # items to cycle through; typing stays one item, as fast as before.
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    src, cursor, results = await ls.service.complete_typing(
        params.text_document.uri, params.position, count=INVOKED_ITEMS if invoked else 1
    )
    here = src.index.range(cursor, cursor)
    items = [
        types.InlineCompletionItem(
            insert_text=r.text, range=here, command=accepted_command(src.uri, r.text)
        )
        for r in results
    ]
    return types.InlineCompletionList(items=items)


@handler
async def completion(ls: GroundspecServer, params: types.CompletionParams) -> types.CompletionList:
    src, cursor, results = await ls.service.complete_typing(
        params.text_document.uri, params.position, kind="completion"
    )
    items = [completion_item(src, cursor, r.text) for r in results]
    # Incomplete: the client asks again as the user types (the cache makes that cheap).
    return types.CompletionList(is_incomplete=True, items=items)


@handler
async def code_action(
    ls: GroundspecServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    only = params.context.only
    if only and not any(str(kind).startswith("refactor") for kind in only):
        return []
    try:
        doc = ls.service.documents.get(params.text_document.uri)
        start, end = doc.index.offsets(params.range)
    except (DocumentError, ValueError):
        return []
    if start == end:
        # No selection: offer to refactor the function or class around the cursor.
        # It may reparse the document: off the loop (0.7 s for 2M characters).
        span = await asyncio.to_thread(doc.enclosing_definition, start)
        if span is None:
            return []
        start, end = span
    target = range_dict(doc.index.range(start, end))
    return [_refactor_action(doc.uri, target, text) for text in BUILTIN_INSTRUCTIONS]


def _refactor_action(uri: str, target: dict[str, Any], instruction: str) -> types.CodeAction:
    args = [{"uri": uri, "range": target, "instruction": instruction}]
    title = f"groundspec: {instruction}"
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.RefactorRewrite,
        command=types.Command(title=title, command=REFACTOR_COMMAND, arguments=args),
    )


@handler
async def cmd_refactor(ls: GroundspecServer, *args: Any) -> dict[str, Any]:
    """Arguments: one object {uri, range, instruction, ...} or (uri, range, instruction)."""
    if len(args) == 3:
        raw: Any = {"uri": args[0], "range": args[1], "instruction": args[2]}
    elif len(args) == 1 and isinstance(args[0], dict):
        raw = dict(args[0])
    else:
        raise JsonRpcInvalidParams("groundspec.refactor takes {uri, range, instruction}")
    if "uri" in raw:
        raw["textDocument"] = {"uri": raw.pop("uri")}
    params = rq.parse(raw, rq.RefactorParams)
    if params.text_document is None:
        raise JsonRpcInvalidParams("groundspec.refactor needs the uri of an open document")
    return await ls.refactor(params, apply=True)


@handler
def cmd_accepted(ls: GroundspecServer, *args: Any) -> None:
    ls.service.accepted(args[0] if args else None)


@handler
def cmd_stats(ls: GroundspecServer, *args: Any) -> dict[str, Any]:
    return ls.service.stats()


@handler
async def headless_complete(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return await ls.service.complete(params)


@handler
async def headless_refactor(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return await ls.refactor(rq.parse(params, rq.RefactorParams), apply=False)


@handler
async def headless_next_edit(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return await next_edit.next_edit(ls.service, params)


@handler
async def copilot_inline_edit(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return await next_edit.copilot_inline_edit(ls.service, params)


@handler
def headless_stats(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return ls.service.stats()


@handler
def debug_document(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    uri = params.get("uri") if isinstance(params, dict) else None
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("groundspec/debug/document takes {uri}")
    return ls.service.debug_document(uri)


def create_server(startup: StartupConfig) -> GroundspecServer:
    ls = GroundspecServer(startup)
    features: list[tuple[str, Callable[..., Any], Any]] = [
        (types.INITIALIZE, on_initialize, None),
        (types.INITIALIZED, on_initialized, None),
        (types.SHUTDOWN, on_shutdown, None),
        (types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration, None),
        (types.TEXT_DOCUMENT_DID_OPEN, did_open, None),
        (types.TEXT_DOCUMENT_DID_CHANGE, did_change, None),
        (types.TEXT_DOCUMENT_DID_CLOSE, did_close, None),
        (types.TEXT_DOCUMENT_DID_SAVE, did_save, None),
        (types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_completion, types.InlineCompletionOptions()),
        (types.TEXT_DOCUMENT_COMPLETION, completion, types.CompletionOptions()),
        (
            types.TEXT_DOCUMENT_CODE_ACTION,
            code_action,
            types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.RefactorRewrite]),
        ),
        ("groundspec/complete", headless_complete, None),
        ("groundspec/refactor", headless_refactor, None),
        ("groundspec/stats", headless_stats, None),
        (next_edit.NEXT_EDIT_METHOD, headless_next_edit, None),
        (next_edit.COPILOT_INLINE_EDIT_METHOD, copilot_inline_edit, None),
    ]
    if startup.options.engine.with_env().fake:
        features.append((DEBUG_DOCUMENT_METHOD, debug_document, None))
    for name, fn, options in features:
        ls.feature(name, options)(fn)
    ls.command(REFACTOR_COMMAND)(cmd_refactor)
    ls.command(ACCEPTED_COMMAND)(cmd_accepted)
    ls.command(STATS_COMMAND)(cmd_stats)
    return ls
