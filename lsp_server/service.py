"""The application layer: documents, options, the engine and its scheduling.

No pygls here: the LSP handlers (server.py) and any other front door (an HTTP
server, a test) call the same async API, `await service.complete(...)`,
`await service.refactor(...)`, `service.stats()`. Errors are
`requests.ServiceError`s carrying their JSON-RPC code; the front door maps them.
Everything runs on the asyncio loop except engine calls, which go to the
scheduler's one worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import msgspec
from lsprotocol import types

from speculator.config import EngineConfig
from speculator.factory import load_engine
from speculator.totals import Totals
from speculator.types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    CompletionResult,
    Engine,
    EngineError,
    ProgressCallback,
    RefactorRequest,
    RefactorResult,
)
from speculator.workspace import WorkspaceIndex

from . import requests as rq
from .documents import Change, Document, DocumentError, DocumentStore
from .options import ServerOptions, StartupConfig, apply_overrides
from .roots import RootPolicy
from .scheduler import CompletionCache, Scheduler
from .worker import EngineHost, EngineUnavailable, Worker

log = logging.getLogger(__name__)

T = TypeVar("T")

# A cancelled job stops within one prompt batch or decode round (about a second).
SHUTDOWN_PERSIST_WAIT_S = 5.0
# One-shot engine calls (groundspec/complete, refactor, ...) one connection may have
# waiting or running; more get ServerCancelled at once instead of an endless queue.
MAX_QUEUED = 16

ReadyCallback = Callable[[str | None], None]  # None when loaded, else the error


class CompletionService:
    """Complete, refactor, warm-up, options, workspace index and stats."""

    def __init__(self, startup: StartupConfig) -> None:
        self.options: ServerOptions = startup.options
        self.problems = list(startup.problems)  # shown to the user once initialized
        self.documents = DocumentStore(self.options.max_document_chars)
        self.worker = Worker()
        self.host = EngineHost(self.worker)
        self.scheduler = Scheduler(
            self.worker, self.host, CompletionCache(self.options.cache_entries)
        )
        self.accepted_items = 0
        self.last_uri: str | None = None  # warmed once the models are ready
        self.workspace_root: str | None = None
        self.workspace_index: WorkspaceIndex | None = None
        self.queued = 0  # one-shot engine calls waiting or running (MAX_QUEUED)
        # The config file's roots (never a client's); run.py confines a TCP client to them.
        self.roots = RootPolicy([os.getcwd(), *startup.options.workspace_roots])

    # -- options ---------------------------------------------------------------

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

    # -- lifecycle -------------------------------------------------------------

    def start(
        self,
        progress: ProgressCallback | None = None,
        on_ready: ReadyCallback | None = None,
    ) -> None:
        """Start loading the models on the worker (once, on the loop); never blocks.

        `progress` is called on the worker thread, `on_ready` on the loop."""
        if self.host.state != "not started":
            return
        config = self.options.engine
        self._start_workspace_index()

        def load() -> Engine:
            engine = load_engine(config, progress)
            engine.set_context_provider(self.workspace_index)
            self._warm_next_edit(engine)
            return engine

        ready = self.host.load(load)
        ready.add_done_callback(lambda f: self._on_loaded(f, on_ready))

    def _warm_next_edit(self, engine: Engine) -> None:
        """Evaluate the next-edit instructions with the models (on the worker), so
        the first ask pays only its own prompt: 112 tokens, 1.7 s on 2 idle cores
        the first time; after that about 1 ms, the slot file's header read (the first
        ask restores the slot)."""
        warm = getattr(engine, "warm_next_edit", None)
        if warm is None or not self.options.next_edit:
            return
        try:
            warm(self.options.next_edit_format)
        except Exception as exc:  # next edits then pay it on the first ask
            log.warning("could not warm the next-edit instructions: %s", exc)

    def _on_loaded(self, ready: asyncio.Future[Engine], on_ready: ReadyCallback | None) -> None:
        error = None if ready.cancelled() else ready.exception()
        if error is None:
            log.info("models ready")
            if self.last_uri is not None:
                self.schedule_warm(self.last_uri, 0.0)
        else:
            log.error("model loading failed: %s", error)
        if on_ready is not None:
            on_ready(None if error is None else str(error))

    def admit_root(self, root: str | None) -> str | None:
        """`root` if the index may scan it; else None, with the reason among the
        problems shown to the user (completions work on without an index)."""
        if root is None or not self.options.workspace_index:
            return root
        if (problem := self.roots.problem(root)) is None:
            return root
        log.warning("workspace index refused: %s", problem)
        self.problems.append(f"{problem}: not indexed (completions still work, without it)")
        return None

    def _start_workspace_index(self) -> None:
        """Index the workspace root in the background (never on the request path)."""
        root = self.workspace_root
        if not self.options.workspace_index or root is None or not os.path.isdir(root):
            return
        try:
            self.workspace_index = WorkspaceIndex(root).start()
        except OSError as exc:
            log.warning("workspace index disabled: %s", exc)

    def _restart_workspace_index(self) -> None:
        """Start or stop the index to follow the `workspaceIndex` option."""
        if self.workspace_index is not None:
            self.workspace_index.stop()
            self.workspace_index = None
        if self.host.state == "not started":
            return  # start() starts it with the engine
        self._start_workspace_index()
        engine, provider = self.host.engine, self.workspace_index
        if engine is not None:  # engine calls belong on the worker thread
            self.worker.submit(lambda: engine.set_context_provider(provider))

    def shutdown(self) -> None:
        """Stop the engine work (the decode in progress too) and the index, then
        save the engine's KV slots for the next start."""
        self.worker.stop()
        engine = self.host.engine
        if engine is not None and self.worker.join(SHUTDOWN_PERSIST_WAIT_S):
            try:  # the worker has ended: this thread may call the engine now
                engine.persist()
            except Exception as exc:  # a cache that is not saved must not stop the exit
                log.warning("could not save the KV slots: %s", exc)
        if self.workspace_index is not None:
            self.workspace_index.stop()
            self.workspace_index = None

    # -- documents ---------------------------------------------------------------

    def open_document(self, item: types.TextDocumentItem) -> Document:
        doc = self.documents.open(item)
        self.last_uri = doc.uri
        self.schedule_warm(doc.uri, 0.0)
        return doc

    def change_document(self, uri: str, version: int, changes: Sequence[Change]) -> None:
        """Apply a didChange batch (all or nothing); raises DocumentError."""
        self.documents.change(uri, version, changes)
        self.last_uri = uri
        if self.options.idle_warm_ms:
            self.schedule_warm(uri, self.options.idle_warm_ms / 1000)

    def close_document(self, uri: str) -> None:
        self.documents.close(uri)
        self.scheduler.forget(uri)

    def schedule_warm(self, uri: str, delay_s: float) -> None:
        def build() -> Any:
            try:
                doc = self.documents.get(uri)
            except DocumentError:
                return None
            if doc.problem is not None:
                return None
            return rq.completion_request(rq.resolved(doc), doc.last_edit, self.options)

        self.scheduler.schedule_warm(uri, build, delay_s)

    def source(self, uri: str) -> rq.Resolved:
        return rq.resolve(rq._Source(text_document=rq.DocumentRef(uri)), self.documents)

    # -- completion ----------------------------------------------------------------

    async def complete(self, params: Any) -> dict[str, Any]:
        """`groundspec/complete`: {textDocument|text, position, ...} -> {text, stats}."""
        req = rq.parse(params, rq.CompleteParams)
        src = rq.resolve(req, self.documents)
        cursor = rq.offset(src.index, req.position.lsp())
        result = await self._complete(src, cursor, req)
        return {"text": result.text, "stats": msgspec.to_builtins(result.stats)}

    async def complete_typing(
        self, uri: str, position: types.Position, *, kind: str = "inline", count: int = 1
    ) -> tuple[rq.Resolved, int, list[CompletionResult]]:
        """An editor's completion at `position`: debounced, newest-wins per `kind`
        (an inline completion and a completion request do not cancel each
        other), cached. `count` > 1 asks for up to that many distinct items,
        the greedy one first.

        The list is empty when a newer keystroke superseded the request."""
        src = self.source(uri)
        cursor = rq.offset(src.index, position)
        request = rq.completion_request(src, cursor, self.options, typing=True)
        try:
            results = await self.scheduler.complete_all(
                src.uri,
                request,
                debounce_s=self.options.debounce_ms / 1000,
                wait_s=self.options.load_wait_ms / 1000,
                kind=kind,
                count=count,
            )
        except Cancelled:
            return src, cursor, []
        except (EngineUnavailable, EngineError) as exc:
            raise rq.RequestFailed(str(exc)) from None
        if self.options.idle_warm_ms:
            # The completion cancelled a warm-up (the one of didOpen, say) and
            # may have come from the quick window: warm the full prompt again.
            self.schedule_warm(uri, self.options.idle_warm_ms / 1000)
        return src, cursor, [r for r in results if r.text]

    async def _complete(
        self, src: rq.Resolved, cursor: int, params: rq._Source | None = None
    ) -> CompletionResult:
        """A headless completion: never debounced, cached or superseded."""
        request = rq.completion_request(src, cursor, self.options, params)
        try:
            with self._place():
                return await self.scheduler.complete(
                    None, request, debounce_s=0.0, wait_s=self.options.load_wait_ms / 1000
                )
        except Cancelled:
            raise rq.RequestCancelled("groundspec: the request was cancelled") from None
        except (EngineUnavailable, EngineError) as exc:
            raise rq.RequestFailed(str(exc)) from None

    # -- refactor ------------------------------------------------------------------

    async def refactor(
        self, params: Any, token: CancelToken | None = None
    ) -> tuple[rq.Resolved, dict[str, Any]]:
        """`groundspec/refactor`: the source it ran on and {newText, range, stats}."""
        req = (
            params if isinstance(params, rq.RefactorParams) else rq.parse(params, rq.RefactorParams)
        )
        src = rq.resolve(req, self.documents)
        start, end = rq.offsets(src.index, req.range.lsp())
        request = rq.refactor_request(src, start, end, req, self.options)
        token = token or CancelToken()
        with self._lsp_errors():
            result = await self.run_refactor(request, token)
        return src, refactor_result(src, result)

    def is_current(self, src: rq.Resolved) -> bool:
        """Is the document still open at the version `src` was taken at (neither
        changed nor closed since)?"""
        assert src.uri is not None
        try:
            return self.documents.get(src.uri).version == src.version
        except DocumentError:
            return False

    def check_unchanged(self, src: rq.Resolved) -> None:
        """Raise ContentModified if the document moved on since `src` was taken."""
        if not self.is_current(src):
            raise rq.ContentModified("the document changed during the refactor; not applied")

    @property
    def state(self) -> str:
        """The engine's: "not started", "loading", "ready" or "failed"."""
        return self.host.state

    def ensure_loading(self) -> None:
        """Start loading the models unless that began already (the HTTP door)."""
        self.start()

    async def call_engine(self, fn: Callable[[Engine], T], token: CancelToken) -> T:
        """One engine call on the worker once the engine is loaded (waiting up to
        loadWaitMs): the call every front door makes. Cancelling the awaiting
        task fires `token`; errors are the engine's own."""
        engine = await self.host.get(self.options.load_wait_ms / 1000)
        return await self.scheduler.run(lambda: fn(engine), token)

    async def run_completion(
        self, request: CompletionRequest, token: CancelToken
    ) -> CompletionResult:
        """A completion exactly as a front door built it (HTTP: its sampling, KV slot
        and extra context are in the request): never debounced or cached."""
        return await self.call_engine(lambda e: e.complete(request, token), token)

    async def run_refactor(self, request: RefactorRequest, token: CancelToken) -> RefactorResult:
        """A refactor as built by a front door (LSP: requests.refactor_request; HTTP:
        http_asks.chat_ask)."""
        return await self.call_engine(lambda e: e.refactor(request, token), token)

    async def run_engine(self, fn: Callable[[Engine], T], token: CancelToken) -> T:
        """call_engine with errors as the LSP handlers answer them."""
        with self._lsp_errors():
            return await self.call_engine(fn, token)

    @contextlib.contextmanager
    def _lsp_errors(self) -> Iterator[None]:
        """A place among the one-shot calls, and engine errors as LSP errors."""
        try:
            with self._place():
                yield
        except Cancelled:
            raise rq.RequestCancelled("groundspec: the request was cancelled") from None
        except (EngineUnavailable, EngineError) as exc:
            raise rq.RequestFailed(str(exc)) from None

    @contextlib.contextmanager
    def _place(self) -> Iterator[None]:
        """A place among the MAX_QUEUED one-shot calls; ServerBusy when none is free."""
        if self.queued >= MAX_QUEUED:
            raise rq.ServerBusy(
                f"groundspec: {MAX_QUEUED} requests are already waiting; retry once one is answered"
            )
        self.queued += 1
        try:
            yield
        finally:
            self.queued -= 1

    # -- stats ---------------------------------------------------------------------

    def accepted(self, details: Any) -> None:
        self.accepted_items += 1
        log.info("suggestion accepted (%s)", details if details is not None else "no details")

    def stats(self) -> dict[str, Any]:
        engine = self.host.engine
        totals = engine.totals() if engine is not None else Totals().snapshot()
        server = self.scheduler.stats() | {
            "openDocuments": len(self.documents),
            "peakRssMb": peak_rss_mb(),
        }
        return {**totals, "acceptedItems": self.accepted_items, "server": server}

    def debug_document(self, uri: str) -> dict[str, Any]:
        """The server's copy of a document (tests compare it with the client's)."""
        try:
            doc = self.documents.get(uri)
        except DocumentError as exc:
            raise rq.InvalidParams(str(exc)) from None
        return {"uri": doc.uri, "version": doc.version, "text": doc.text}


FETCH_FIX = "Fix: run `groundspec models fetch`"


def load_fix(config: EngineConfig) -> str:
    """What fixes a failed load: a custom model path that names no file is fixed
    where it was set; anything else by assembling the default models."""
    paths = [("target", config.target_model, "GROUNDSPEC_TARGET_MODEL", "targetModel")]
    if config.use_draft:
        paths.append(("draft", config.draft_model, "GROUNDSPEC_DRAFT_MODEL", "draftModel"))
    for role, path, env, key in paths:
        if path and not os.path.isfile(os.path.expanduser(path)):
            where = (
                f"the environment variable {env}"
                if os.environ.get(env)
                else f"the setting engine.{key} (VS Code: groundspec.{key})"
            )
            return (
                f"Fix: point {where} at an existing GGUF file for the {role} model, "
                "or unset it to use the default models (`groundspec models fetch`)"
            )
    return FETCH_FIX


def peak_rss_mb() -> float:
    """Peak resident set size of this process.

    Linux keeps `ru_maxrss` across execve, so it would report the launching
    process's peak (a forked 500 MB editor) instead of ours; VmHWM belongs to
    the address space created by exec."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except (OSError, ValueError):
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def refactor_result(src: rq.Resolved, result: RefactorResult) -> dict[str, Any]:
    rng = src.index.range(result.start, result.end)
    return {
        "newText": result.new_text,
        "range": range_dict(rng),
        "stats": msgspec.to_builtins(result.stats),
    }


def range_dict(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }
