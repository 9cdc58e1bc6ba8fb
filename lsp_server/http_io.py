"""The HTTP door's plumbing: errors as llama-server's JSON, responses, event streams.

lsp_server/http.py's endpoints use these; nothing here knows the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web

from speculator.types import Cancelled, EngineError, RefactorResult, Stats

from . import http_wire as wire
from .logs import request_id
from .worker import EngineUnavailable

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024  # a document plus its extra context; more is refused (413)
STREAM_KEY = web.RequestKey("groundspec.stream", web.StreamResponse)


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
        return 503, "the request was cancelled (its slot was erased, or the server is stopping)"
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


def llama_sender(
    stream: web.StreamResponse, id_slot: int
) -> Callable[[str, int, int], Awaitable[None]]:
    """llama-server's partial events for /infill and /completion."""

    async def send(delta: str, generated: int, prompt_tokens: int) -> None:
        partial = {"index": 0, "content": delta, "tokens": [], "stop": False}
        partial |= {"id_slot": id_slot, "tokens_predicted": generated}
        await send_event(stream, partial | {"tokens_evaluated": prompt_tokens})

    return send


def choice_sender(
    stream: web.StreamResponse, index: int, envelope: dict[str, Any]
) -> Callable[[str, int, int], Awaitable[None]]:
    """Sends text deltas of one OpenAI completion choice as chunks."""

    async def send(delta: str, _generated: int, _prompt_tokens: int) -> None:
        choice = {"text": delta, "index": index, "logprobs": None, "finish_reason": None}
        await send_event(stream, {"choices": [choice]} | envelope)

    return send


def sum_stats(stats: list[Stats]) -> Stats:
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


def refactor_timings(result: RefactorResult) -> dict[str, Any]:
    return {"timings": wire.timings(result.stats)}
