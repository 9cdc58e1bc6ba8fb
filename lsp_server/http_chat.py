"""Plain chat on /v1/chat/completions, as llama-server answers it.

A chat that asks for no instruction edit (http_wire.find_edit: those run as
refactors) is rendered with the model's own chat template (the GGUF's
tokenizer.chat_template, as llama-cpp-python renders it: speculator/models.py)
and generated as a raw completion: until an end token (the template's turn
end), max_tokens, a stop string or the context's end. Engines without a
template (the fake engine, remote backends) get ChatML, llama-server's own
fallback and Qwen's format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from aiohttp import web

from speculator.types import CancelToken, CompletionRequest, CompletionResult, Engine

from . import http_asks as asks
from . import http_wire as wire
from .http_io import json_response, send_done, send_event, slot_key, start_stream
from .http_llama import tokenizer_of
from .http_stream import Send
from .options import ServerOptions

T = TypeVar("T")


class Door(Protocol):
    """What a chat needs of the front door (lsp_server/http.py's FrontDoor)."""

    options: Callable[[], ServerOptions]

    @property
    def model_name(self) -> str: ...

    async def _call(self, call: Callable[[Engine, CancelToken], T], client: str) -> T: ...

    def _routed(self, completion: CompletionRequest, client: str) -> CompletionRequest: ...

    async def _sample(
        self,
        completion: CompletionRequest,
        client: str,
        stops: list[str],
        n_indent: int,
        send: Send | None,
    ) -> CompletionResult: ...


def messages_of(body: wire.ChatBody) -> list[dict[str, str]]:
    """The messages as the template takes them; media parts are refused, as
    llama-server refuses them without a multimodal projector."""
    for message in body.messages:
        parts = message.content if isinstance(message.content, list) else []
        if any(part.type != "text" for part in parts):
            raise wire.BadRequest(
                "image and audio input is not supported: groundspec's models read text only"
            )
    return [{"role": m.role, "content": m.text()} for m in body.messages]


def chatml(messages: list[dict[str, str]]) -> str:
    """ChatML with the assistant's turn opened."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def chat_prompt(engine: Engine, messages: list[dict[str, str]]) -> str:
    """The chat as the model's template writes it (ChatML without one)."""
    render = getattr(tokenizer_of(engine), "format_chat", None)
    rendered = render(messages) if callable(render) else None
    return rendered if isinstance(rendered, str) else chatml(messages)


def chat_request(body: wire.ChatBody, prompt: str, options: ServerOptions) -> CompletionRequest:
    """The raw completion of a rendered chat (max_tokens absent: the refactor limit,
    as an edit's answer has)."""
    asked = body.max_tokens
    limit = (
        options.refactor_max_tokens if asked is None or asked <= 0 else min(asked, wire.MAX_PREDICT)
    )
    asks.check_text(prompt, options)
    completion = asks.completion_request(body, prompt, len(prompt), "plaintext", limit, options)
    return asks.as_raw(completion, body.stops())


async def answer_chat(door: Door, request: web.Request, body: wire.ChatBody) -> web.StreamResponse:
    """A plain chat's answer, OpenAI-shaped, streamed when asked."""
    client = slot_key(request, body.id_slot)
    messages = messages_of(body)
    prompt = await door._call(lambda engine, _: chat_prompt(engine, messages), client)
    completion = door._routed(chat_request(body, prompt, door.options()), client)
    envelope = wire.openai_envelope("chat.completion", wire.new_id("chatcmpl"), door.model_name)
    chunk = envelope | {"object": "chat.completion.chunk"}
    stream = await start_stream(request) if body.stream else None
    choices, results = [], []
    previous: CompletionResult | None = None
    for index in range(body.n):
        send = None
        if stream is not None:
            send = chunk_sender(stream, index, chunk)
            await send_event(stream, {"choices": [opening(index)]} | chunk)
        if previous is not None and completion.temperature == 0.0:
            result = previous  # greedy: every choice is the same text
            if send is not None:
                await send(finished(result, body, completion).content, 0, 0)
        else:
            sample = asks.nth_sample(completion, index)
            result = await door._sample(sample, client, body.stops(), 0, send)
        previous = result
        results.append(result)
        done = finished(result, body, completion)
        reason = wire.finish_reason(done)
        if stream is not None:
            closing = {"finish_reason": reason, "index": index, "delta": {}}
            timings = {"timings": wire.timings(result.stats)}
            await send_event(stream, {"choices": [closing]} | chunk | timings)
        message = {"role": "assistant", "content": done.content}
        choices.append({"finish_reason": reason, "index": index, "message": message})
    stats = [r.stats for r in results]
    if stream is None:
        ident_last = {"usage": wire.usage(stats), "id": envelope.pop("id")}
        timings = {"timings": wire.timings(stats[0])}
        return json_response({"choices": choices} | envelope | ident_last | timings)
    if body.stream_options is not None and body.stream_options.include_usage:
        await send_event(stream, {"choices": []} | chunk | {"usage": wire.usage(stats)})
    await send_done(stream)
    return stream


def finished(
    result: CompletionResult, body: wire.ChatBody, completion: CompletionRequest
) -> wire.Finish:
    generated = result.stats.generated_tokens
    return wire.finish(
        result.text, body.stops(), 0, completion.max_tokens, generated, timed_out=result.timed_out
    )


def opening(index: int) -> dict[str, Any]:
    """A choice's first chunk: the assistant's role, no content yet (llama-server's)."""
    return {"finish_reason": None, "index": index, "delta": {"role": "assistant", "content": None}}


def chunk_sender(stream: web.StreamResponse, index: int, chunk: dict[str, Any]) -> Send:
    """Sends one choice's text deltas as chat chunks."""

    async def send(delta: str, _generated: int, _prompt_tokens: int) -> None:
        choice = {"finish_reason": None, "index": index, "delta": {"content": delta}}
        await send_event(stream, {"choices": [choice]} | chunk)

    return send
