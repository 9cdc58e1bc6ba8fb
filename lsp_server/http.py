"""The HTTP front door: llama-server- and OpenAI-compatible endpoints on the same engine.

Editors set up for llama-server (llama.vim, llama.vscode) and OpenAI-style
clients talk to groundspec without changing editor. Each endpoint is thin: it
reads its body into engine requests (http_asks.py, pure), calls the application
service the LSP handlers call (lsp_server/service.py), and formats the answer
(http_wire.py, http_io.py). aiohttp serves on the
asyncio loop; every engine call still runs on the one engine thread, so HTTP
requests queue behind each other (and behind LSP requests when both run in one
process). A client that disconnects cancels its request: aiohttp cancels the
handler task and the service fires the request's CancelToken.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
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
    Stats,
)

from . import http_asks as asks
from . import http_guard
from . import http_wire as wire
from .http_chat import answer_chat
from .http_io import (
    MAX_BODY_BYTES,
    ApiError,
    choice_sender,
    errors_as_json,
    json_response,
    llama_sender,
    refactor_timings,
    send_done,
    send_event,
    slot_key,
    start_stream,
    sum_stats,
)
from .http_limits import ClientLimits, peer
from .http_llama import LlamaExtras, tokenizer_of
from .http_probs import openai_logprobs, result_probabilities, token_events
from .http_prompts import Prompt, needs_tokenizer, prompt_text, prompts_of
from .http_slots import SlotPool, SlotRouter
from .http_stream import Send, streamed
from .options import ServerOptions
from .startup import cannot_listen

log = logging.getLogger(__name__)

T = TypeVar("T")
B = TypeVar("B", wire.InfillBody, wire.CompletionBody, wire.OpenAICompletionBody, wire.ChatBody)


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

    async def run_completion(
        self, request: CompletionRequest, token: CancelToken
    ) -> CompletionResult: ...

    async def run_refactor(
        self, request: RefactorRequest, token: CancelToken
    ) -> RefactorResult: ...


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
        self.limits = ClientLimits()  # a bounded queue per client, turns in rotation
        self.pool = SlotPool(options().http_parallel)  # llama-server's --parallel slots
        self.extras = LlamaExtras(self._call, options, self.slots, self.running, self.pool)

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=MAX_BODY_BYTES,
            middlewares=[http_guard.guard(self.api_key, self.limits, self.pool), errors_as_json],
        )
        http_guard.install(app, lambda: self.options().http_cors_origins)
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
        body = self._body(await request.read(), wire.InfillBody)
        ask = asks.infill_ask(body, self.options())
        return await self._llama_generate(request, body, ask)

    async def completion(self, request: web.Request) -> web.StreamResponse:
        """A prompt completed at its end, or as the FIM layout it is written in
        (http_prompts.py); several prompts: a list of answers, as llama-server."""
        body = self._body(await request.read(), wire.CompletionBody)
        client = slot_key(request, body.id_slot)
        texts = await self._prompt_texts(prompts_of(body.prompt), client)
        llama_asks = asks.completion_asks(body, texts, self.options())
        if len(llama_asks) == 1:
            return await self._llama_generate(request, body, llama_asks[0])
        answers = [await self._llama_payload(request, body, ask, None) for ask in llama_asks]
        return json_response([answer | {"index": i} for i, answer in enumerate(answers)])

    async def _prompt_texts(self, prompts: list[Prompt], client: str) -> list[str]:
        """The prompts as text: token ids spelled out with the model's vocabulary."""
        if not needs_tokenizer(prompts):
            return [prompt_text(prompt, None) for prompt in prompts]
        return await self._call(
            lambda engine, _: [prompt_text(p, tokenizer_of(engine)) for p in prompts], client
        )

    async def _llama_generate(
        self,
        request: web.Request,
        body: wire.InfillBody | wire.CompletionBody,
        ask: asks.LlamaAsk,
    ) -> web.StreamResponse:
        stream = await start_stream(request) if body.stream else None
        payload = await self._llama_payload(request, body, ask, stream)
        if stream is None:
            return json_response(payload)
        # In stream mode the content went out in the partial events (as llama-server).
        await send_event(stream, payload | {"content": ""})
        return stream

    async def _llama_payload(
        self,
        request: web.Request,
        body: wire.InfillBody | wire.CompletionBody,
        ask: asks.LlamaAsk,
        stream: web.StreamResponse | None,
    ) -> dict[str, Any]:
        """One /infill or /completion answer (its text streamed when `stream`)."""
        post_sampling = body.post_sampling_probs
        if ask.completion is None:
            result = CompletionResult(text="", stats=Stats())
            done = wire.Finish(content="", stop_type="limit")
        else:
            client = slot_key(request, body.id_slot)
            completion = self._routed(ask.completion, client)
            # With n_probs each token is an event of its own, sent once decoding ends.
            per_token = stream is not None and completion.n_probs > 0
            send = None if stream is None or per_token else llama_sender(stream, body.id_slot)
            result = await self._sample(completion, client, ask.stops, ask.n_indent, send)
            for event in token_events(result, body.id_slot, post_sampling):
                if stream is not None:
                    await send_event(stream, event)
            done = wire.finish(
                result.text,
                ask.stops,
                ask.n_indent,
                ask.max_tokens,
                result.stats.generated_tokens,
                timed_out=result.timed_out,
            )
        return wire.llama_completion(
            result,
            done,
            model=self.model_name,
            prompt=ask.echo,
            id_slot=body.id_slot,
            settings=ask.settings,
            response_fields=body.response_fields,
            probabilities=None if stream else result_probabilities(result, post_sampling),
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
        body = self._body(await request.read(), wire.OpenAICompletionBody)
        client = slot_key(request, body.id_slot)
        texts = await self._prompt_texts(prompts_of(body.prompt), client)
        ask = asks.openai_ask(body, texts, self.options())
        envelope = wire.openai_envelope("text_completion", wire.new_id("cmpl"), self.model_name)
        ident = {"id": envelope.pop("id")}  # llama-server's order: usage, id, timings
        stream = await start_stream(request) if body.stream else None
        choices, stats = [], []
        for p, one in enumerate(ask.prompts):
            completion = self._routed(one.completion, client)
            previous: CompletionResult | None = None
            for j in range(body.n):
                index = p * body.n + j
                send = None
                if stream is not None:
                    send = choice_sender(stream, index, envelope | ident)
                    if body.echo:
                        await send(one.prompt, 0, 0)
                result = await self._openai_sample(ask, completion, j, previous, client, send)
                previous = result
                stats.append(result.stats)
                choice = openai_choice(ask, one.prompt, body.echo, index, result)
                if stream is None:  # a stream's chunks carry no probabilities
                    choice["logprobs"] = openai_logprobs(result, body.post_sampling_probs)
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

    async def _openai_sample(
        self,
        ask: asks.OpenAIAsk,
        completion: CompletionRequest,
        j: int,
        previous: CompletionResult | None,
        client: str,
        send: Send | None,
    ) -> CompletionResult:
        """The j-th sample of one prompt."""
        if ask.max_tokens == 0:  # nothing to predict, as /infill's n_predict 0
            return CompletionResult(text="", stats=Stats())
        if previous is not None and completion.temperature == 0.0:
            # greedy: every sample is the same text
            if send is not None and previous.text:
                await send(wire.finish(previous.text, ask.stops, 0, 0, 0).content, 0, 0)
            return previous
        return await self._sample(asks.nth_sample(completion, j), client, ask.stops, 0, send)

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        """Instruction edits on a selection (llama.vim, llama.vscode), via refactor; a
        plain chat with the model's chat template (http_chat.py)."""
        body = self._body(await request.read(), wire.ChatBody)
        if wire.find_edit(body.messages) is None:
            return await answer_chat(self, request, body)
        refactor = asks.chat_ask(body, self.options())
        slot = slot_key(request, body.id_slot)
        ident = wire.new_id("chatcmpl")
        stream = await start_stream(request) if body.stream else None
        async with self._turn(slot) as token:
            result = await self.gate.run_refactor(refactor, token)
        done = wire.finish(result.new_text, body.stops(), 0, refactor.max_tokens, 0)
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

    # -- service calls ------------------------------------------------------------------

    def _body(self, raw: bytes, kind: type[B]) -> B:
        """A request's body; the seed it does not name is the option `seed`."""
        body = wire.decode(raw, kind)
        if body.seed is not None:
            return body
        return msgspec.structs.replace(body, seed=self.options().seed)

    def _routed(self, completion: CompletionRequest, client: str) -> CompletionRequest:
        """The request in `client`'s KV slot for its document (SlotRouter)."""
        slot = self.slots.route(client, completion.text, completion.path)
        return msgspec.structs.replace(completion, slot=slot)

    @contextlib.asynccontextmanager
    async def _turn(self, client: str) -> AsyncIterator[CancelToken]:
        """`client`'s turn at the engine, and the token that cancels its call (a
        client that disconnects, a /slots erase)."""
        self.gate.ensure_loading()
        token = CancelToken()
        log.debug("engine call for %s", client)
        running = self.running.setdefault(client, set())
        running.add(token)
        try:
            async with self.limits.turn(peer.get()):
                yield token
        finally:
            running.discard(token)
            if not running:
                self.running.pop(client, None)

    async def _call(self, call: Callable[[Engine, CancelToken], T], client: str) -> T:
        """One engine call for `client` (the tokenizer's), on the service's engine thread."""
        async with self._turn(client) as token:
            return await self.gate.call_engine(lambda engine: call(engine, token), token)

    async def _complete(self, completion: CompletionRequest, client: str) -> CompletionResult:
        async with self._turn(client) as token:
            return await self.gate.run_completion(completion, token)

    async def _sample(
        self,
        completion: CompletionRequest,
        client: str,
        stops: list[str],
        n_indent: int,
        send: Send | None,
    ) -> CompletionResult:
        """One completion, streamed through `send` when given."""
        if send is None:
            return await self._complete(completion, client)
        return await streamed(
            lambda c: self._complete(c, client), completion, stops, n_indent, send
        )


def openai_choice(
    ask: asks.OpenAIAsk, prompt: str, echo: bool, index: int, result: CompletionResult
) -> dict[str, Any]:
    """One choice of a /v1/completions answer (its text empty when streamed)."""
    if ask.max_tokens == 0:
        done = wire.Finish(content="", stop_type="limit")  # stopped by the limit
    else:
        generated = result.stats.generated_tokens
        done = wire.finish(
            result.text, ask.stops, 0, ask.max_tokens, generated, timed_out=result.timed_out
        )
    return {
        "text": prompt + done.content if echo else done.content,
        "index": index,
        "logprobs": None,
        "finish_reason": wire.finish_reason(done),
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
