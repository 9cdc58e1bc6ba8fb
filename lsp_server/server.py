"""The LSP daemon: thin handlers over the documents, the scheduler and the engine.

Each handler finds the document, converts positions, calls the core and
converts the result. Engine calls run on the scheduler's one worker thread;
everything else (and every message we send) happens on the asyncio loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import uuid
from collections.abc import Callable, Generator
from concurrent.futures import Future
from importlib import metadata
from typing import Any, TypeVar

import cattrs
import msgspec
from lsprotocol import converters, types
from pygls.exceptions import (
    JsonRpcContentModified,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcRequestCancelled,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from speculator.factory import load_engine
from speculator.totals import Totals
from speculator.types import (
    Cancelled,
    CancelToken,
    CompletionResult,
    Engine,
    EngineError,
    RefactorResult,
)
from speculator.workspace import WorkspaceIndex

from . import requests as rq
from .documents import DocumentError, DocumentStore
from .logs import setup_logging, traced
from .options import ServerOptions, StartupConfig, apply_overrides
from .scheduler import CompletionCache, EngineHost, EngineUnavailable, Scheduler, Worker

log = logging.getLogger(__name__)

T = TypeVar("T")

REFACTOR_COMMAND = "groundspec.refactor"
ACCEPTED_COMMAND = "groundspec.accepted"
STATS_COMMAND = "groundspec.stats"
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


def _converter() -> cattrs.Converter:
    """lsprotocol's converter, keeping custom methods' params as plain JSON data
    (pygls' default turns them into namedtuples)."""
    converter = converters.get_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


class _Answered(Exception):
    """A message we could not decode but already answered with an error."""


class GroundspecProtocol(LanguageServerProtocol):
    """pygls' protocol, with two changes.

    Our DocumentStore is the one copy of each document (pygls would keep a
    second one), and a request whose params fail to decode gets an error
    response instead of silence (pygls loses its id).
    """

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        # Our documents convert positions as UTF-16 only: never let pygls
        # negotiate utf-8/utf-32 (Neovim 0.11 offers utf-8 first).
        if params.capabilities.general is not None:
            params.capabilities.general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            msg_id, method = data.get("id"), data.get("method")
            if method is None or not isinstance(msg_id, int | str):
                raise
            cause = exc.__cause__
            detail = f": {cause}" if cause is not None else ""
            error = JsonRpcInvalidParams(f"invalid params for {method}{detail}")
            self._send_response(msg_id, error=error.to_response_error())
            raise _Answered(f"invalid params for {method} (request {msg_id})") from exc


class LoadProgress:
    """Model loading shown as window/workDoneProgress (when the client supports it)."""

    TOKEN = "groundspec/load"

    def __init__(self, ls: GroundspecServer) -> None:
        self.ls = ls
        self.active = False

    def begin(self) -> None:
        if not self.ls.client_supports_progress():
            return
        progress = self.ls.work_done_progress
        progress.create(self.TOKEN)
        progress.begin(
            self.TOKEN,
            types.WorkDoneProgressBegin(title="groundspec", message="Loading models", percentage=0),
        )
        self.active = True

    def update(self, message: str, percentage: int) -> None:
        """Called by the loader on the worker thread: hop to the loop to send."""
        loop = self.ls.loop
        if self.active and loop is not None:
            loop.call_soon_threadsafe(self._report, message, percentage)

    def _report(self, message: str, percentage: int) -> None:
        if self.active:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage)
            self.ls.work_done_progress.report(self.TOKEN, value)

    def end(self, message: str) -> None:
        if self.active:
            self.active = False
            self.ls.work_done_progress.end(self.TOKEN, types.WorkDoneProgressEnd(message=message))


class GroundspecServer(LanguageServer):
    def __init__(self, startup: StartupConfig) -> None:
        super().__init__(
            "groundspec",
            _version(),
            protocol_cls=GroundspecProtocol,
            converter_factory=_converter,
        )
        self.options = startup.options
        self.problems = list(startup.problems)  # shown to the user once initialized
        self.documents = DocumentStore(self.options.max_document_chars)
        self.worker = Worker()
        self.host = EngineHost(self.worker)
        self.scheduler = Scheduler(
            self.worker, self.host, CompletionCache(self.options.cache_entries)
        )
        self.load_progress = LoadProgress(self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.accepted_items = 0
        self.shutdown_requested = False
        self.last_uri: str | None = None  # warmed once the models are ready
        self.workspace_index: WorkspaceIndex | None = None

    # -- lifecycle -------------------------------------------------------------

    def apply_initialization_options(self, data: Any) -> None:
        self.options, problems = apply_overrides(self.options, data, "initializationOptions.")
        self.problems += problems
        self._apply_limits()

    def apply_settings(self, data: Any) -> list[str]:
        """Options changed while running (workspace/didChangeConfiguration).

        Everything but the engine section applies at once; the models are not
        reloaded under a running editor, so engine changes wait for a restart."""
        options, problems = apply_overrides(self.options, data, "settings.")
        if options.engine != self.options.engine and self.host.state != "not started":
            problems.append("settings.engine: takes effect when the server restarts")
            options = msgspec.structs.replace(options, engine=self.options.engine)
        index_changed = options.workspace_index != self.options.workspace_index
        self.options = options
        self._apply_limits()
        self.scheduler.cache.clear()  # suggestions made under the old options
        if index_changed:
            self._restart_workspace_index()
        return problems

    def _apply_limits(self) -> None:
        self.documents.max_chars = self.options.max_document_chars
        self.scheduler.cache.max_entries = self.options.cache_entries

    def _restart_workspace_index(self) -> None:
        """Start or stop the index to follow the `workspaceIndex` option."""
        if self.workspace_index is not None:
            self.workspace_index.stop()
            self.workspace_index = None
        if self.host.state == "not started":
            return  # ensure_loading() starts it with the engine
        self.start_workspace_index()
        engine, provider = self.host.engine, self.workspace_index
        if engine is not None:  # engine calls belong on the worker thread
            self.worker.submit(lambda: engine.set_context_provider(provider))

    def ensure_loading(self) -> None:
        """Start loading the models on the worker (once); never blocks."""
        if self.host.state != "not started":
            return
        self.loop = asyncio.get_running_loop()
        config = self.options.engine
        self.start_workspace_index()

        def load() -> Engine:
            engine = load_engine(config, self.load_progress.update)
            engine.set_context_provider(self.workspace_index)
            return engine

        ready = self.host.load(load)
        ready.add_done_callback(self._on_loaded)

    def start_workspace_index(self) -> None:
        """Index the workspace root in the background (never on the request path)."""
        root = self.workspace_root()
        if not self.options.workspace_index or root is None:
            return
        try:
            self.workspace_index = WorkspaceIndex(root).start()
        except OSError as exc:
            log.warning("workspace index disabled: %s", exc)

    def workspace_root(self) -> str | None:
        folders = self.workspace.folders  # pygls' Workspace: the client's folders and root
        uris = [f.uri for f in folders.values()] or [self.workspace.root_uri or ""]
        paths = [to_fs_path(uri) for uri in uris if uri.startswith("file:")]
        return next((p for p in paths if p and os.path.isdir(p)), None)

    def _on_loaded(self, ready: asyncio.Future[Engine]) -> None:
        error = None if ready.cancelled() else ready.exception()
        if error is None:
            log.info("models ready")
            self.load_progress.end("Models ready")
            if self.last_uri is not None:
                self.schedule_warm(self.last_uri, 0.0)
            return
        log.error("model loading failed: %s", error)
        self.load_progress.end("Model loading failed")
        self.show(f"groundspec: could not load the models: {error}", types.MessageType.Error)

    def shutdown(self) -> None:
        # Don't wait for the stdin reader thread: it is blocked in readline().
        self.worker.stop()
        if self.workspace_index is not None:
            self.workspace_index.stop()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
            self._thread_pool = None
        super().shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, _Answered):
            return
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError | AttributeError):
            # Not JSON-RPC at all: answer as JSON-RPC says, with a null id.
            parse = isinstance(error, ValueError)
            code, message = (-32700, "Parse error") if parse else (-32600, "Invalid Request")
            log.warning("%s: %s", message, error)
            error_body = {"code": code, "message": f"{message}: {error}"}
            self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": error_body})
            return
        super().report_server_error(error, source)

    # -- helpers used by the handlers --------------------------------------------

    def client_supports_configuration(self) -> bool:
        workspace = self.client_capabilities.workspace
        return bool(workspace and workspace.configuration)

    def client_supports_progress(self) -> bool:
        window = self.client_capabilities.window
        return bool(window and window.work_done_progress)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def schedule_warm(self, uri: str, delay_s: float) -> None:
        def build() -> Any:
            try:
                doc = self.documents.get(uri)
            except DocumentError:
                return None
            if doc.problem is not None:
                return None
            src = rq.Resolved(doc.text, doc.index, doc.language_id, None, uri, doc.version)
            return rq.completion_request(src, doc.last_edit, self.options)

        self.scheduler.schedule_warm(uri, build, delay_s)

    def source(self, uri: str) -> rq.Resolved:
        return rq.resolve(rq._Source(text_document=rq.DocumentRef(uri)), self.documents)

    async def complete(
        self, src: rq.Resolved, cursor: int, params: rq._Source | None = None, *, typing: bool
    ) -> CompletionResult | None:
        """Complete at `cursor`; None when a newer keystroke superseded this request.

        `typing` requests (from the editor) are debounced, newest-wins and cached;
        headless ones run as asked.
        """
        request = rq.completion_request(src, cursor, self.options, params)
        key = src.uri if typing else None
        debounce = self.options.debounce_ms / 1000 if typing else 0.0
        try:
            return await self.scheduler.complete(
                key, request, debounce_s=debounce, wait_s=self.options.load_wait_ms / 1000
            )
        except Cancelled:
            return None
        except (EngineUnavailable, EngineError) as exc:
            raise rq.RequestFailed(str(exc)) from None

    async def run_engine(self, fn: Callable[[Engine], T], token: CancelToken) -> T:
        """One engine call on the worker, with load waiting and errors mapped."""
        try:
            engine = await self.host.get(self.options.load_wait_ms / 1000)
            return await self.scheduler.run(lambda: fn(engine), token)
        except Cancelled:
            raise JsonRpcRequestCancelled("groundspec: the request was cancelled") from None
        except (EngineUnavailable, EngineError) as exc:
            raise rq.RequestFailed(str(exc)) from None

    async def refactor(self, params: rq.RefactorParams, *, apply: bool) -> dict[str, Any]:
        src = rq.resolve(params, self.documents)
        start, end = rq.offsets(src.index, params.range.lsp())
        request = rq.refactor_request(src, start, end, params, self.options)
        token = CancelToken()
        self._cancel_with_request(token)
        progress = self._begin_refactor_progress(params.instruction, token)
        try:
            result = await self.run_engine(lambda e: e.refactor(request, token), token)
        finally:
            if progress is not None:
                self.work_done_progress.end(progress, types.WorkDoneProgressEnd())
                self.work_done_progress.tokens.pop(progress, None)  # pygls never forgets them
        out = refactor_result(src, result)
        if apply:
            out["applied"] = await self._apply_refactor(src, out["range"], result.new_text)
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

    async def _apply_refactor(self, src: rq.Resolved, range_: dict[str, Any], new: str) -> bool:
        assert src.uri is not None
        if self.documents.get(src.uri).version != src.version:
            raise JsonRpcContentModified("the document changed during the refactor; not applied")
        rng = msgspec.convert(range_, rq.Range).lsp()
        edit = types.WorkspaceEdit(changes={src.uri: [types.TextEdit(range=rng, new_text=new)]})
        params = types.ApplyWorkspaceEditParams(edit=edit, label="groundspec refactor")
        result = await self.workspace_apply_edit_async(params)
        return bool(result and result.applied)

    def stats(self) -> dict[str, Any]:
        engine = self.host.engine
        totals = engine.totals() if engine is not None else Totals().snapshot()
        server = self.scheduler.stats() | {
            "openDocuments": len(self.documents),
            "peakRssMb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        return {**totals, "acceptedItems": self.accepted_items, "server": server}


def refactor_result(src: rq.Resolved, result: RefactorResult) -> dict[str, Any]:
    rng = src.index.range(result.start, result.end)
    return {
        "newText": result.new_text,
        "range": _range_dict(rng),
        "stats": msgspec.to_builtins(result.stats),
    }


def _range_dict(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


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


@traced
def on_initialize(ls: GroundspecServer, params: types.InitializeParams) -> None:
    ls.apply_initialization_options(params.initialization_options)


@traced
def on_initialized(ls: GroundspecServer, params: types.InitializedParams) -> None:
    for problem in ls.problems:
        ls.show(f"groundspec: {problem}")
    ls.load_progress.begin()
    ls.ensure_loading()


@traced
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
    for problem in ls.apply_settings(settings or {}):
        ls.show(f"groundspec: {problem}")


@traced
def on_shutdown(ls: GroundspecServer, params: Any) -> None:
    ls.shutdown_requested = True
    ls.worker.stop()  # cancels the decode in progress too


@traced
def did_open(ls: GroundspecServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = ls.documents.open(params.text_document)
    ls.last_uri = doc.uri
    ls.schedule_warm(doc.uri, 0.0)


@traced
def did_change(ls: GroundspecServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    try:
        ls.documents.change(uri, params.text_document.version, params.content_changes)
    except DocumentError as exc:
        log.warning("didChange ignored: %s", exc)
        ls.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=f"groundspec: {exc}")
        )
        return
    ls.last_uri = uri
    if ls.options.idle_warm_ms:
        ls.schedule_warm(uri, ls.options.idle_warm_ms / 1000)


@traced
def did_close(ls: GroundspecServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.documents.close(params.text_document.uri)
    ls.scheduler.forget(params.text_document.uri)


@traced
def did_save(ls: GroundspecServer, params: types.DidSaveTextDocumentParams) -> None:
    log.debug("saved %s", params.text_document.uri)


@traced
async def inline_completion(
    ls: GroundspecServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    src = ls.source(params.text_document.uri)
    cursor = rq.offset(src.index, params.position)
    result = await ls.complete(src, cursor, typing=True)
    if result is None or not result.text:
        return types.InlineCompletionList(items=[])
    here = src.index.range(cursor, cursor)
    item = types.InlineCompletionItem(
        insert_text=result.text, range=here, command=accepted_command(src.uri, result.text)
    )
    return types.InlineCompletionList(items=[item])


@traced
async def completion(ls: GroundspecServer, params: types.CompletionParams) -> types.CompletionList:
    src = ls.source(params.text_document.uri)
    cursor = rq.offset(src.index, params.position)
    result = await ls.complete(src, cursor, typing=True)
    items = [completion_item(src, cursor, result.text)] if result and result.text else []
    # Incomplete: the client asks again as the user types (the cache makes that cheap).
    return types.CompletionList(is_incomplete=True, items=items)


@traced
def code_action(ls: GroundspecServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    if only and not any(str(kind).startswith("refactor") for kind in only):
        return []
    try:
        doc = ls.documents.get(params.text_document.uri)
        start, end = doc.index.offsets(params.range)
    except (DocumentError, ValueError):
        return []
    if start == end:
        # No selection: offer to refactor the function or class around the cursor.
        span = doc.enclosing_definition(start)
        if span is None:
            return []
        start, end = span
    target = _range_dict(doc.index.range(start, end))
    return [_refactor_action(doc.uri, target, text) for text in BUILTIN_INSTRUCTIONS]


def _refactor_action(uri: str, target: dict[str, Any], instruction: str) -> types.CodeAction:
    args = [{"uri": uri, "range": target, "instruction": instruction}]
    title = f"groundspec: {instruction}"
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.RefactorRewrite,
        command=types.Command(title=title, command=REFACTOR_COMMAND, arguments=args),
    )


@traced
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


@traced
def cmd_accepted(ls: GroundspecServer, *args: Any) -> None:
    ls.accepted_items += 1
    log.info("suggestion accepted (%s)", args[0] if args else "no details")


@traced
def cmd_stats(ls: GroundspecServer, *args: Any) -> dict[str, Any]:
    return ls.stats()


@traced
async def headless_complete(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    req = rq.parse(params, rq.CompleteParams)
    src = rq.resolve(req, ls.documents)
    cursor = rq.offset(src.index, req.position.lsp())
    result = await ls.complete(src, cursor, req, typing=False)
    assert result is not None  # headless requests are never superseded
    return {"text": result.text, "stats": msgspec.to_builtins(result.stats)}


@traced
async def headless_refactor(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return await ls.refactor(rq.parse(params, rq.RefactorParams), apply=False)


@traced
def headless_stats(ls: GroundspecServer, params: Any) -> dict[str, Any]:
    return ls.stats()


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
    ]
    for name, handler, options in features:
        ls.feature(name, options)(handler)
    ls.command(REFACTOR_COMMAND)(cmd_refactor)
    ls.command(ACCEPTED_COMMAND)(cmd_accepted)
    ls.command(STATS_COMMAND)(cmd_stats)
    return ls


def parse_tcp(address: str) -> tuple[str, int]:
    """ "PORT", ":PORT" or "HOST:PORT"; loopback unless a host is given."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"invalid --tcp address {address!r} (want HOST:PORT or PORT)")
    return host, int(port)


def run_server(
    config: StartupConfig | None = None,
    *,
    tcp: str | None = None,
    log_file: str | None = None,
) -> None:
    """Serve LSP on stdio (or TCP) until `exit`, then end the process.

    Exits with 0 after shutdown + exit, 1 if the client went away without them
    (the LSP rule). Does not return: the stdin reader thread cannot be joined.
    """
    setup_logging(log_file)
    address = parse_tcp(tcp) if tcp else None
    ls = create_server(config or StartupConfig(options=ServerOptions()))
    try:
        if address is not None:
            log.info("listening on %s:%d", *address)
            ls.start_tcp(*address)
        else:
            ls.start_io()
    finally:
        ls.worker.stop()
        code = 0 if ls.shutdown_requested else 1
        log.info("exiting with %d", code)
        logging.shutdown()
        os._exit(code)
