"""The HTTP front door: llama-server- and OpenAI-compatible endpoints on the same engine.

Editors set up for llama-server (llama.vim, llama.vscode) and OpenAI-style
clients talk to groundspec without changing editor. aiohttp serves on the
asyncio loop; every engine call still runs on the one engine thread, so HTTP
requests queue behind each other (and behind LSP requests when both run in one
process). A client that disconnects cancels its request: aiohttp cancels the
handler task and the gate fires the request's CancelToken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import msgspec
from aiohttp import web
from pygls.io_ import StdoutWriter

from speculator.types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    CompletionResult,
    ContextProvider,
    Engine,
    EngineError,
    Progress,
    RefactorRequest,
    RefactorResult,
    Snippet,
    Stats,
)
from speculator.validate import text_problem

from . import http_wire as wire
from .http_slots import SlotRouter
from .logs import request_id, setup_logging
from .options import ServerOptions, StartupConfig
from .scheduler import EngineUnavailable
from .service import CompletionService
from .startup import ListenError, cannot_listen, parse_http, parse_tcp, say_error

if TYPE_CHECKING:
    from .protocol import GroundspecProtocol
    from .server import GroundspecServer

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_BODY_BYTES = 8 * 1024 * 1024  # a document plus its extra context; more is refused (413)
STREAM_KEY = web.RequestKey("groundspec.stream", web.StreamResponse)


class EngineGate(Protocol):
    """What the HTTP side needs from the engine's owner (the LSP server or its own)."""

    @property
    def state(self) -> str:
        """One of "not started", "loading", "ready", "failed"."""
        ...

    def ensure_loading(self) -> None: ...

    async def run(
        self, call: Callable[[Engine], T], token: CancelToken, *, slot: str, extra: list[Snippet]
    ) -> T:
        """Run `call` on the engine thread. `slot` names the client (for per-client KV
        keeping); `extra` is the request's input_extra context."""
        ...


class ExtraContext:
    """A ContextProvider serving one request's input_extra chunks (the ones sharing
    most words with the text before the cursor), then the workspace index's."""

    def __init__(self, snippets: list[Snippet], fallback: ContextProvider | None) -> None:
        self.snippets = snippets
        self.fallback = fallback

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
        words = set(re.findall(r"\w{3,}", query))
        ranked = sorted(
            enumerate(self.snippets),
            key=lambda item: (len(words & set(re.findall(r"\w{3,}", item[1].text))), item[0]),
        )
        picked = [snippet for _, snippet in ranked[-limit:]]
        if len(picked) < limit and self.fallback is not None:
            picked += self.fallback.related(path, query, limit - len(picked))
        return picked


class ServiceGate:
    """The EngineGate over the CompletionService, shared with the LSP handlers when
    both run in one process: one worker thread, one engine, one KV cache."""

    def __init__(self, service: CompletionService) -> None:
        self.service = service

    @property
    def state(self) -> str:
        return self.service.host.state

    def ensure_loading(self) -> None:
        self.service.start()  # once; a no-op when the LSP side started it

    async def run(
        self, call: Callable[[Engine], T], token: CancelToken, *, slot: str, extra: list[Snippet]
    ) -> T:
        self.ensure_loading()
        service = self.service
        engine = await service.host.get(service.options.load_wait_ms / 1000)

        def job() -> T:
            if not extra:
                return call(engine)
            # Engine calls run one at a time on this thread: swapping is safe.
            engine.set_context_provider(ExtraContext(extra, service.workspace_index))
            try:
                return call(engine)
            finally:
                engine.set_context_provider(service.workspace_index)

        log.debug("engine call for %s", slot)
        # Cancelling the awaiting task (the client disconnected) fires `token`.
        return await service.scheduler.run(job, token)


class FrontDoor:
    """The aiohttp application: llama-server's and OpenAI's endpoints."""

    def __init__(self, gate: EngineGate, options: Callable[[], ServerOptions]) -> None:
        self.gate = gate
        self.options = options
        self.slots = SlotRouter()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[errors_as_json])
        routes = [
            web.get("/health", self.health),
            web.get("/v1/health", self.health),
            web.post("/infill", self.infill),
            web.post("/completion", self.completion),
            web.post("/completions", self.openai_completions),
            web.post("/v1/completions", self.openai_completions),
            web.post("/chat/completions", self.chat_completions),
            web.post("/v1/chat/completions", self.chat_completions),
            web.get("/models", self.models),
            web.get("/v1/models", self.models),
        ]
        app.add_routes(routes)
        return app

    @property
    def model_name(self) -> str:
        target = self.options().engine.target_model
        return Path(target).name if target else "groundspec"

    # -- llama-server ---------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        # Beside the LSP server the engine starts with the first LSP client or the
        # first HTTP request, /health included: a client polling it wants the engine.
        self.gate.ensure_loading()
        state = self.gate.state
        if state == "ready":
            return json_response({"status": "ok"})
        if state == "failed":
            raise ApiError(503, "Model loading failed; see the server log")
        raise ApiError(503, "Loading model")

    async def infill(self, request: web.Request) -> web.StreamResponse:
        body = wire.decode(await request.read(), wire.InfillBody)
        prefix = body.input_prefix + body.prompt
        text = prefix + body.input_suffix
        extra = [Snippet(path=c.filename, text=c.text) for c in body.input_extra if c.text]
        language = wire.guess_language(body, body.input_extra)
        return await self._llama_generate(request, body, text, len(prefix), language, extra)

    async def completion(self, request: web.Request) -> web.StreamResponse:
        body = wire.decode(await request.read(), wire.CompletionBody)
        language = wire.guess_language(body)
        return await self._llama_generate(
            request, body, body.prompt, len(body.prompt), language, []
        )

    async def _llama_generate(
        self,
        request: web.Request,
        body: wire.InfillBody | wire.CompletionBody,
        text: str,
        cursor: int,
        language: str,
        extra: list[Snippet],
    ) -> web.StreamResponse:
        max_tokens = self._max_tokens(body.n_predict)
        self._check_text(text)
        n_indent = body.n_indent if isinstance(body, wire.InfillBody) else 0
        stops = body.stop or []
        stream = await start_stream(request) if body.stream else None
        if max_tokens == 0:
            # llama.vim / llama.vscode send extra context ahead of time this way: it
            # travels with each completion anyway, so there is nothing to compute.
            result = CompletionResult(text="", stats=Stats())
            done = wire.Finish(content="", stop_type="limit")
        else:
            client = slot_key(request, body.id_slot)
            completion = msgspec.structs.replace(
                self._completion_request(body, text, cursor, language, max_tokens),
                slot=self.slots.route(client, text, body.filename),
                max_predict_ms=max(0.0, body.t_max_predict_ms or 0.0),
            )
            send = None if stream is None else _llama_sender(stream, body.id_slot)
            result = await self._sample(completion, client, extra, stops, n_indent, send)
            generated = result.stats.generated_tokens
            done = wire.finish(
                result.text, stops, n_indent, max_tokens, generated, timed_out=result.timed_out
            )
        settings = self._settings(body, max_tokens)
        payload = wire.llama_completion(
            result,
            done,
            model=self.model_name,
            prompt=body.prompt,
            id_slot=body.id_slot,
            settings=settings,
            response_fields=body.response_fields,
        )
        if stream is None:
            return json_response(payload)
        # In stream mode the content went out in the partial events (as llama-server).
        await send_event(stream, payload | {"content": ""})
        return stream

    # -- OpenAI -----------------------------------------------------------------------

    async def models(self, request: web.Request) -> web.Response:
        entry = {
            "id": self.model_name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "groundspec",
        }
        return json_response({"object": "list", "data": [entry]})

    async def openai_completions(self, request: web.Request) -> web.StreamResponse:
        body = wire.decode(await request.read(), wire.OpenAICompletionBody)
        prompts = body.prompts()
        max_tokens = self._max_tokens(body.max_tokens)
        client = slot_key(request, body.id_slot)
        language = body.language or (
            wire.language_id_for_path(body.filename) if body.filename else "plaintext"
        )
        for prompt in prompts:
            self._check_text(prompt + (body.suffix or ""))
        envelope = wire.openai_envelope("text_completion", wire.new_id("cmpl"), self.model_name)
        ident = {"id": envelope.pop("id")}  # llama-server's order: usage, id, timings
        stream = await start_stream(request) if body.stream else None
        choices, stats = [], []
        for p, prompt in enumerate(prompts):
            text = prompt + (body.suffix or "")
            completion = msgspec.structs.replace(
                self._completion_request(body, text, len(prompt), language, max_tokens),
                slot=self.slots.route(client, text, body.filename),
            )
            previous: CompletionResult | None = None
            for j in range(body.n):
                index = p * body.n + j
                send = None
                if stream is not None:
                    send = _choice_sender(stream, index, envelope | ident)
                    if body.echo:
                        await send(prompt, 0, 0)
                if max_tokens == 0:  # nothing to predict, as /infill's n_predict 0
                    result = CompletionResult(text="", stats=Stats())
                elif previous is not None and completion.temperature == 0.0:
                    result = previous  # greedy: every sample is the same text
                    if send is not None and result.text:
                        await send(wire.finish(result.text, body.stops(), 0, 0, 0).content, 0, 0)
                else:
                    seed = completion.seed + j if completion.seed >= 0 else -1  # -1: random
                    seeded = msgspec.structs.replace(completion, seed=seed)
                    result = await self._sample(seeded, client, [], body.stops(), 0, send)
                previous = result
                stats.append(result.stats)
                generated = result.stats.generated_tokens
                if max_tokens == 0:
                    done = wire.Finish(content="", stop_type="limit")  # stopped by the limit
                else:
                    done = wire.finish(
                        result.text,
                        body.stops(),
                        0,
                        max_tokens,
                        generated,
                        timed_out=result.timed_out,
                    )
                choice = {
                    "text": prompt + done.content if body.echo else done.content,
                    "index": index,
                    "logprobs": None,
                    "finish_reason": wire.finish_reason(done),
                }
                if stream is not None:
                    closing = {"choices": [choice | {"text": ""}]} | envelope
                    usage = {"usage": wire.usage([result.stats])}
                    timings = {"timings": wire.timings(result.stats)}
                    await send_event(stream, closing | usage | ident | timings)
                choices.append(choice)
        if stream is None:
            usage = {"usage": wire.usage(stats)} | ident | {"timings": wire.timings(_sum(stats))}
            return json_response({"choices": choices} | envelope | usage)
        if body.stream_options is not None and body.stream_options.include_usage:
            # OpenAI's usage chunk (llama-server has usage in each closing chunk only)
            await send_event(
                stream, {"choices": []} | envelope | ident | {"usage": wire.usage(stats)}
            )
        await send_done(stream)
        return stream

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        """Instruction edits on a selection (llama.vim, llama.vscode), via refactor."""
        body = wire.decode(await request.read(), wire.ChatBody)
        ask = wire.edit_ask(body.messages)
        self._check_text(ask.text)
        options = self.options()
        max_tokens = (
            options.refactor_max_tokens
            if body.max_tokens is None or body.max_tokens <= 0
            else min(body.max_tokens, wire.MAX_PREDICT)
        )
        refactor = RefactorRequest(
            text=ask.text,
            start=ask.start,
            end=ask.end,
            instruction=ask.instruction,
            language_id=body.language
            or (wire.language_id_for_path(body.filename) if body.filename else "plaintext"),
            path=body.filename,
            max_tokens=max_tokens,
            speculation=body.speculation or options.speculation,
            temperature=_pick(body.temperature, options.temperature),
            top_p=_pick(body.top_p, 1.0),
            seed=body.seed or 0,
        )
        slot = slot_key(request, body.id_slot)
        ident = wire.new_id("chatcmpl")
        stream = await start_stream(request) if body.stream else None
        token = CancelToken()
        result: RefactorResult = await self.gate.run(
            lambda engine: engine.refactor(refactor, token), token, slot=slot, extra=[]
        )
        done = wire.finish(result.new_text, body.stops(), 0, max_tokens, 0)
        envelope = wire.openai_envelope("chat.completion", ident, self.model_name)
        message = {"role": "assistant", "content": done.content}
        choices = [
            {"finish_reason": wire.finish_reason(done), "index": i, "message": message}
            for i in range(body.n)
        ]
        if stream is None:
            # llama-server's order: usage sits before id here.
            ident_last = {"usage": wire.usage([result.stats]), "id": envelope.pop("id")}
            return json_response({"choices": choices} | envelope | ident_last | _timings(result))
        chunk = envelope | {"object": "chat.completion.chunk"}
        for i in range(body.n):
            delta = {"role": "assistant", "content": done.content}
            opening = {"finish_reason": None, "index": i, "delta": delta}
            await send_event(stream, {"choices": [opening]} | chunk)
            closing = {"finish_reason": wire.finish_reason(done), "index": i, "delta": {}}
            await send_event(stream, {"choices": [closing]} | chunk)
        if body.stream_options is not None and body.stream_options.include_usage:
            await send_event(
                stream, {"choices": []} | chunk | {"usage": wire.usage([result.stats])}
            )
        await send_done(stream)
        return stream

    # -- engine calls -------------------------------------------------------------------

    async def _complete(
        self, completion: CompletionRequest, slot: str, extra: list[Snippet]
    ) -> CompletionResult:
        token = CancelToken()
        return await self.gate.run(
            lambda engine: engine.complete(completion, token), token, slot=slot, extra=extra
        )

    async def _streamed(
        self,
        completion: CompletionRequest,
        client: str,
        extra: list[Snippet],
        stops: list[str],
        n_indent: int,
        send: Callable[[str, int, int], Awaitable[None]],
    ) -> CompletionResult:
        """Run a completion, sending its text as the engine accepts tokens.

        The engine reports the text as it would be if decoding stopped now; only
        the part later tokens can no longer change is sent (complete lines, or the
        line but for a tail that could still turn out to repeat the text after the
        cursor or start a stop string), the rest once decoding is done; all after
        the HTTP side's own post-processing (stop strings, n_indent)."""

        def cut(text: str) -> str:
            return wire.finish(text, stops, n_indent, 0, 0).content

        loop = asyncio.get_running_loop()
        reports: asyncio.Queue[Progress | None] = asyncio.Queue()

        def report(progress: Progress) -> None:  # on the engine thread
            with contextlib.suppress(RuntimeError):  # the loop closed: shutting down
                loop.call_soon_threadsafe(reports.put_nowait, progress)

        hold = max(
            [len(wire.rest_of_line(completion.text, completion.cursor))] + [len(s) for s in stops]
        )
        task = asyncio.ensure_future(
            self._complete(msgspec.structs.replace(completion, on_progress=report), client, extra)
        )
        task.add_done_callback(lambda _: reports.put_nowait(None))
        sent = ""
        try:
            while (progress := await reports.get()) is not None:
                stable = wire.streamable(cut(progress.text), hold)
                if len(stable) > len(sent) and stable.startswith(sent):
                    await send(
                        stable[len(sent) :], progress.generated_tokens, progress.prompt_tokens
                    )
                    sent = stable
            result = await task
        finally:
            task.cancel()  # the client went away: cancel the engine call (no-op when done)
        final = cut(result.text)
        if not final.startswith(sent):
            log.warning("streamed text %r is not a prefix of the completion %r", sent, final)
        elif len(final) > len(sent):
            stats = result.stats
            await send(final[len(sent) :], stats.generated_tokens, stats.prompt_tokens)
        return result

    async def _sample(
        self,
        completion: CompletionRequest,
        client: str,
        extra: list[Snippet],
        stops: list[str],
        n_indent: int,
        send: Callable[[str, int, int], Awaitable[None]] | None,
    ) -> CompletionResult:
        """One completion, streamed through `send` when given."""
        if send is None:
            return await self._complete(completion, client, extra)
        return await self._streamed(completion, client, extra, stops, n_indent, send)

    def _check_text(self, text: str) -> None:
        """Refuse (400) what groundspec/complete refuses: text over maxDocumentChars or
        with NUL bytes; before any stream starts or the engine is waited for."""
        if (problem := text_problem(text, self.options().max_document_chars)) is not None:
            raise wire.BadRequest(problem)

    def _max_tokens(self, asked: int | None) -> int:
        if asked is None or asked < 0:
            return self.options().max_tokens
        return min(asked, wire.MAX_PREDICT)

    def _completion_request(
        self,
        body: wire.InfillBody | wire.CompletionBody | wire.OpenAICompletionBody,
        text: str,
        cursor: int,
        language: str,
        max_tokens: int,
    ) -> CompletionRequest:
        options = self.options()
        top_k = getattr(body, "top_k", None)
        return CompletionRequest(
            text=text,
            cursor=cursor,
            language_id=language,
            path=body.filename,
            max_tokens=max(1, max_tokens),
            speculation=body.speculation or options.speculation,
            temperature=_pick(body.temperature, options.temperature),
            top_p=_pick(body.top_p, 1.0),
            top_k=max(0, top_k or 0),
            seed=body.seed or 0,
        )

    def _settings(self, body: wire.InfillBody | wire.CompletionBody, n_predict: int) -> Any:
        options = self.options()
        return {
            "n_predict": n_predict,
            "temperature": _pick(body.temperature, options.temperature),
            "top_k": body.top_k or 0,
            "top_p": _pick(body.top_p, 1.0),
            "stop": body.stop or [],
            "speculation": body.speculation or options.speculation,
        }


# -- errors ---------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """llama-server's error shape: {"error": {"code", "message", "type"}}."""
    kind = ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"code": status, "message": message, "type": kind}}


def error_response(status: int, message: str) -> web.Response:
    return json_response(error_body(status, message), status=status)


@web.middleware
async def errors_as_json(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    request_id.set(f"http:{request.method} {request.path}")
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return await _fail(request, exc.status, _http_reason(exc))
    except web.RequestPayloadError as exc:
        # A body that does not decompress. aiohttp would read the rest of it after
        # the answer and fail again (a traceback and a reset): mark it read, and
        # close this connection, whose parser may be out of step.
        request.content.feed_eof()
        detail = " ".join(str(exc).split("message:")[-1].split())  # "400, message:\n  ..."
        response = error_response(400, f"cannot read the request body: {detail}")
        response.force_close()
        return response
    except Exception as exc:
        status, message = _status_of(exc)
        if status == 500:
            log.exception("HTTP %s %s failed", request.method, request.path)
        return await _fail(request, status, message)


def _status_of(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, wire.BadRequest | EngineError):
        return 400, str(exc)
    if isinstance(exc, ApiError):
        return exc.status, str(exc)
    if isinstance(exc, EngineUnavailable):
        return 503, str(exc)
    if isinstance(exc, Cancelled):
        return 503, "the request was cancelled (the server is stopping)"
    return 500, "internal error; see the server log"


async def _fail(request: web.Request, status: int, message: str) -> web.StreamResponse:
    """The error response, or an error event when the event stream already started."""
    stream: web.StreamResponse | None = request.get(STREAM_KEY)
    if stream is None:
        return error_response(status, message)
    await send_event(stream, error_body(status, message))
    return stream


def _http_reason(exc: web.HTTPException) -> str:
    if exc.status == 413:
        return f"the request body is too large (limit {MAX_BODY_BYTES} bytes)"
    if exc.status == 404:
        return "File Not Found"
    return exc.text or exc.reason


# -- responses ------------------------------------------------------------------------


def json_response(body: Any, status: int = 200) -> web.Response:
    # Compact JSON, raw UTF-8, no trailing newline: the bytes llama-server sends.
    encoded = msgspec.json.encode(body)
    return web.Response(
        body=encoded, status=status, content_type="application/json", charset="utf-8"
    )


async def start_stream(request: web.Request) -> web.StreamResponse:
    stream = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await stream.prepare(request)
    request[STREAM_KEY] = stream  # errors from now on go out as an event
    return stream


async def send_event(stream: web.StreamResponse, data: Any) -> None:
    await stream.write(b"data: " + msgspec.json.encode(data) + b"\n\n")


async def send_done(stream: web.StreamResponse) -> None:
    await stream.write(b"data: [DONE]\n\n")


def slot_key(request: web.Request, id_slot: int) -> str:
    """Which client this is: the slot it asked for, else its address (without the
    port: llama.vim starts a curl per request). Editors on one machine share an
    address; SlotRouter tells their documents apart by their text."""
    if id_slot >= 0:
        return f"slot:{id_slot}"
    return f"peer:{request.remote or '?'}"


def _llama_sender(
    stream: web.StreamResponse, id_slot: int
) -> Callable[[str, int, int], Awaitable[None]]:
    """llama-server's partial events for /infill and /completion."""

    async def send(delta: str, generated: int, prompt_tokens: int) -> None:
        partial = {"index": 0, "content": delta, "tokens": [], "stop": False}
        partial |= {"id_slot": id_slot, "tokens_predicted": generated}
        await send_event(stream, partial | {"tokens_evaluated": prompt_tokens})

    return send


def _choice_sender(
    stream: web.StreamResponse, index: int, envelope: dict[str, Any]
) -> Callable[[str, int, int], Awaitable[None]]:
    """Sends text deltas of one OpenAI completion choice as chunks."""

    async def send(delta: str, _generated: int, _prompt_tokens: int) -> None:
        choice = {"text": delta, "index": index, "logprobs": None, "finish_reason": None}
        await send_event(stream, {"choices": [choice]} | envelope)

    return send


def _pick(value: T | None, default: T) -> T:
    return default if value is None else value


def _sum(stats: list[Stats]) -> Stats:
    total = Stats()
    for s in stats:
        total.generated_tokens += s.generated_tokens
        total.drafted_tokens += s.drafted_tokens
        total.accepted_tokens += s.accepted_tokens
        total.prompt_tokens += s.prompt_tokens
        total.reused_prompt_tokens += s.reused_prompt_tokens
        total.prompt_ms += s.prompt_ms
        total.decode_ms += s.decode_ms
        total.total_ms += s.total_ms
    return total


def _timings(result: RefactorResult) -> dict[str, Any]:
    return {"timings": wire.timings(result.stats)}


# -- serving --------------------------------------------------------------------------


async def start_http(front: FrontDoor, host: str, port: int) -> web.AppRunner:
    """Listen on host:port on the running loop; the caller cleans the runner up."""
    runner = web.AppRunner(front.app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise cannot_listen(host, port, exc) from None
    for address in runner.addresses:
        # Tests and scripts read the bound port here (PORT 0 picks a free one).
        log.info("HTTP listening on http://%s:%d", *address[:2])
    return runner


async def until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def run_http(config: StartupConfig, address: str, log_file: str | None = None) -> int:
    """`groundspec serve --http [HOST:]PORT` alone: serve HTTP until SIGINT/SIGTERM.
    Returns the exit code: 1 if the port cannot be bound."""
    setup_logging(log_file)
    host, port = parse_http(address)
    service = CompletionService(config)
    for problem in service.problems:
        log.warning("%s", problem)

    async def main() -> None:
        front = FrontDoor(ServiceGate(service), lambda: service.options)
        runner = await start_http(front, host, port)
        service.start()  # /health says "Loading model" until it is done
        try:
            await until_signalled()
        finally:
            await runner.cleanup()
            service.shutdown()

    try:
        asyncio.run(main())
    except ListenError as exc:
        say_error(exc)
        service.shutdown()
        return 1
    return 0


def run_with_lsp(
    config: StartupConfig, address: str, *, tcp: str | None, log_file: str | None = None
) -> None:
    """HTTP beside the LSP server (stdio, or `--tcp`) in one process and one loop.

    GroundspecServer.start_io/start_tcp each run a loop of their own, so this runs
    the protocol's message loop (protocol.py's framing) itself, next to aiohttp. Ends the process like run_server: 0 after
    shutdown + exit, 1 if the LSP client went away without them."""
    from .server import create_server, end_process

    setup_logging(log_file)
    host, port = parse_http(address)
    lsp_address = parse_tcp(tcp) if tcp else None
    ls = create_server(config)
    front = FrontDoor(ServiceGate(ls.service), lambda: ls.service.options)

    async def main() -> None:
        runner = await start_http(front, host, port)
        try:
            await (_serve_lsp_tcp(ls, *lsp_address) if lsp_address else _serve_lsp_stdio(ls))
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):  # pygls ends `exit` with sys.exit()
        pass
    except ListenError as exc:
        say_error(exc)
    finally:
        end_process(ls)


def _protocol(ls: GroundspecServer) -> GroundspecProtocol:
    return cast("GroundspecProtocol", ls.protocol)


async def _serve_lsp_stdio(ls: GroundspecServer) -> None:
    ls._stop_event = stop = threading.Event()  # as GroundspecServer.start_io sets up
    ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    await _protocol(ls).serve_stdio(sys.stdin.buffer.fileno(), stop)


async def _serve_lsp_tcp(ls: GroundspecServer, host: str, port: int) -> None:
    ls._stop_event = stop = threading.Event()
    finished = asyncio.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ls.protocol.set_writer(writer)  # type: ignore[arg-type]
        await _protocol(ls).serve_stream(reader, stop)
        finished.set()

    try:
        server = await asyncio.start_server(connection, host, port)
    except OSError as exc:
        raise cannot_listen(host, port, exc) from None
    log.info("LSP listening on %s:%d", *server.sockets[0].getsockname()[:2])
    async with server:
        await finished.wait()
