"""The HTTP front door: llama-server- and OpenAI-compatible endpoints on the same engine.

Editors set up for llama-server (llama.vim, llama.vscode) and OpenAI-style
clients talk to groundspec without changing editor. aiohttp serves on the
asyncio loop; every engine call still runs on the one engine thread, so HTTP
requests queue behind each other (and behind LSP requests when both run in one
process). A client that disconnects cancels its request: aiohttp cancels the
handler task and the service fires the request's CancelToken.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec
from aiohttp import web

from speculator.types import (
    CancelToken,
    CompletionRequest,
    CompletionResult,
    Engine,
    RefactorRequest,
    RefactorResult,
    Snippet,
    Stats,
)
from speculator.validate import text_problem

from . import http_guard
from . import http_wire as wire
from .http_io import (
    MAX_BODY_BYTES,
    ApiError,
    choice_sender,
    errors_as_json,
    json_response,
    llama_sender,
    pick,
    refactor_timings,
    send_done,
    send_event,
    slot_key,
    start_stream,
    sum_stats,
)
from .http_limits import ClientLimits, peer
from .http_llama import LlamaExtras, tokenizer_of
from .http_prompts import Prompt, needs_tokenizer, prompt_text, prompts_of, raw_fim
from .http_slots import SlotRouter
from .http_stream import streamed
from .options import ServerOptions
from .startup import cannot_listen

log = logging.getLogger(__name__)

T = TypeVar("T")
# What a llama-server request completes: text, cursor, languageId, context, the prompt echoed.
Source = tuple[str, int, str, list[Snippet], str]


class EngineGate(Protocol):
    """What the HTTP door needs of the application service (lsp_server/service.py's
    CompletionService, shared with the LSP handlers when both run in one process)."""

    @property
    def state(self) -> str:
        """One of "not started", "loading", "ready", "failed"."""
        ...

    def ensure_loading(self) -> None: ...

    async def call_engine(self, call: Callable[[Engine], T], token: CancelToken) -> T:
        """Run `call` on the engine thread (cancelling the awaiting task fires `token`)."""
        ...


class FrontDoor:
    """The aiohttp application: llama-server's and OpenAI's endpoints."""

    def __init__(
        self,
        gate: EngineGate,
        options: Callable[[], ServerOptions],
        *,
        api_key: str | None = None,
    ) -> None:
        self.gate = gate
        self.options = options
        self.api_key = api_key  # required of every client but on /health
        self.slots = SlotRouter()
        self.running: dict[str, set[CancelToken]] = {}  # by client: what /slots erase cancels
        self.extras = LlamaExtras(self._call, options, self.slots, self.running)
        self.limits = ClientLimits()  # a bounded queue per client, turns in rotation

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=MAX_BODY_BYTES,
            middlewares=[http_guard.guard(self.api_key, self.limits), errors_as_json],
        )
        http_guard.install(app)
        routes = [
            web.get("/health", self.health),
            web.get("/v1/health", self.health),
            web.post("/infill", self.infill),
            web.post("/completion", self.completion),
            web.post("/completions", self.completion),  # llama-server's, not OpenAI's
            web.post("/v1/completions", self.openai_completions),
            web.post("/chat/completions", self.chat_completions),
            web.post("/v1/chat/completions", self.chat_completions),
            web.get("/models", self.models),
            web.get("/v1/models", self.models),
            *self.extras.routes(),
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
        source = (text, len(prefix), language, extra, body.prompt)
        return await self._llama_generate(request, body, source)

    async def completion(self, request: web.Request) -> web.StreamResponse:
        """A prompt completed at its end, or as the FIM layout it is written in
        (http_prompts.py); several prompts: a list of answers, as llama-server."""
        body = wire.decode(await request.read(), wire.CompletionBody)
        client = slot_key(request, body.id_slot)
        texts = await self._prompt_texts(prompts_of(body.prompt), client)
        sources = [self._read_prompt(body, text) for text in texts]
        if len(sources) == 1:
            return await self._llama_generate(request, body, sources[0])
        if body.stream:
            raise wire.BadRequest("stream: true takes one prompt at a time")
        for source in sources:
            self._check_text(source[0])
        wire.refuse_unsupported(body.n_probs, body.logit_bias)
        answers = [await self._llama_payload(request, body, source, None) for source in sources]
        return json_response([answer | {"index": i} for i, answer in enumerate(answers)])

    def _read_prompt(self, body: wire.CompletionBody, prompt: str) -> Source:
        fim = raw_fim(prompt)
        if fim is None:
            return prompt, len(prompt), wire.guess_language(body), [], prompt
        path = body.filename or fim.path
        language = body.language or (wire.language_id_for_path(path) if path else "plaintext")
        return fim.prefix + fim.suffix, len(fim.prefix), language, fim.extra, prompt

    async def _prompt_texts(self, prompts: list[Prompt], client: str) -> list[str]:
        """The prompts as text: token ids spelled out with the model's vocabulary."""
        if not needs_tokenizer(prompts):
            return [prompt_text(prompt, None) for prompt in prompts]
        return await self._call(
            lambda engine, _: [prompt_text(p, tokenizer_of(engine)) for p in prompts], client
        )

    async def _llama_generate(
        self, request: web.Request, body: wire.InfillBody | wire.CompletionBody, source: Source
    ) -> web.StreamResponse:
        self._check_text(source[0])
        wire.refuse_unsupported(body.n_probs, body.logit_bias)  # before any stream starts
        stream = await start_stream(request) if body.stream else None
        payload = await self._llama_payload(request, body, source, stream)
        if stream is None:
            return json_response(payload)
        # In stream mode the content went out in the partial events (as llama-server).
        await send_event(stream, payload | {"content": ""})
        return stream

    async def _llama_payload(
        self,
        request: web.Request,
        body: wire.InfillBody | wire.CompletionBody,
        source: Source,
        stream: web.StreamResponse | None,
    ) -> dict[str, Any]:
        """One /infill or /completion answer (its text streamed when `stream`)."""
        text, cursor, language, extra, echo = source
        max_tokens = self._max_tokens(body.n_predict)
        n_indent = body.n_indent if isinstance(body, wire.InfillBody) else 0
        stops = body.stop or []
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
            send = None if stream is None else llama_sender(stream, body.id_slot)
            result = await self._sample(completion, client, extra, stops, n_indent, send)
            generated = result.stats.generated_tokens
            done = wire.finish(
                result.text, stops, n_indent, max_tokens, generated, timed_out=result.timed_out
            )
        settings = self._settings(body, max_tokens)
        return wire.llama_completion(
            result,
            done,
            model=self.model_name,
            prompt=echo,
            id_slot=body.id_slot,
            settings=settings,
            response_fields=body.response_fields,
        )

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
        wire.refuse_unsupported(body.logprobs, body.logit_bias)
        max_tokens = self._max_tokens(body.max_tokens)
        client = slot_key(request, body.id_slot)
        prompts = await self._prompt_texts(prompts_of(body.prompt), client)
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
            fim = raw_fim(prompt)  # a prompt in the FIM layout: its parts
            before = prompt if fim is None else fim.prefix
            text = before + ((body.suffix or "") if fim is None else fim.suffix)
            extra = [] if fim is None else fim.extra
            completion = msgspec.structs.replace(
                self._completion_request(body, text, len(before), language, max_tokens),
                slot=self.slots.route(client, text, body.filename),
            )
            previous: CompletionResult | None = None
            for j in range(body.n):
                index = p * body.n + j
                send = None
                if stream is not None:
                    send = choice_sender(stream, index, envelope | ident)
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
                    result = await self._sample(seeded, client, extra, body.stops(), 0, send)
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
            usage = (
                {"usage": wire.usage(stats)} | ident | {"timings": wire.timings(sum_stats(stats))}
            )
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
            temperature=pick(body.temperature, options.temperature),
            top_p=pick(body.top_p, 1.0),
            seed=body.seed or 0,
        )
        slot = slot_key(request, body.id_slot)
        ident = wire.new_id("chatcmpl")
        stream = await start_stream(request) if body.stream else None
        result: RefactorResult = await self._call(
            lambda engine, token: engine.refactor(refactor, token), slot
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
            return json_response(
                {"choices": choices} | envelope | ident_last | refactor_timings(result)
            )
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
        """The request's input_extra travels in it (ranked ahead of the workspace's)."""
        if extra:
            completion = msgspec.structs.replace(completion, extra_context=extra)
        return await self._call(lambda engine, token: engine.complete(completion, token), slot)

    async def _call(self, call: Callable[[Engine, CancelToken], T], slot: str) -> T:
        """One engine call for client `slot`, on the service's engine thread."""
        self.gate.ensure_loading()
        token = CancelToken()
        log.debug("engine call for %s", slot)
        running = self.running.setdefault(slot, set())
        running.add(token)
        try:
            async with self.limits.turn(peer.get()):
                return await self.gate.call_engine(lambda engine: call(engine, token), token)
        finally:
            running.discard(token)
            if not running:
                self.running.pop(slot, None)

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
        return await streamed(
            lambda c: self._complete(c, client, extra), completion, stops, n_indent, send
        )

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
            temperature=pick(body.temperature, options.temperature),
            top_p=pick(body.top_p, 1.0),
            top_k=max(0, top_k or 0),
            seed=body.seed or 0,
            workspace_context=options.http_workspace_context,
        )

    def _settings(self, body: wire.InfillBody | wire.CompletionBody, n_predict: int) -> Any:
        options = self.options()
        return {
            "n_predict": n_predict,
            "temperature": pick(body.temperature, options.temperature),
            "top_k": body.top_k or 0,
            "top_p": pick(body.top_p, 1.0),
            "stop": body.stop or [],
            "speculation": body.speculation or options.speculation,
        }


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
