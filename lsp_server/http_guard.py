"""The HTTP door's gate: CORS and the API key, as llama-server's pre-routing handler,
then the client's place in line.

Every response names the request's Origin in Access-Control-Allow-Origin (or,
with the option httpCorsOrigins, only a loopback one, or a fixed value); an
OPTIONS preflight is answered at once, without the key (browsers send none with
it); any other request to a non-public path needs the key when the server has
one (lsp_server/auth.py), else 401 with llama-server's error body. A request
that generates then needs a free place in its client's queue (http_limits.py),
else 503 with Retry-After, and then holds one of the server's request slots
(http_slots.SlotPool) until its answer is sent, whatever way it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from .auth import key_matches, needs_key, presented_key
from .http_io import error_response
from .http_limits import Busy, ClientLimits, peer
from .http_slots import SlotPool

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Credentials": "true",
    "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "*",
}


# The endpoints that generate, each request holding a place in its client's queue.
GENERATING = frozenset(
    {
        "/infill",
        "/completion",
        "/completions",
        "/v1/completions",
        "/chat/completions",
        "/v1/chat/completions",
    }
)


def guard(api_key: str | None, limits: ClientLimits, pool: SlotPool) -> Middleware:
    """The middleware: preflight, the key (when `api_key` is set), the queue, a slot."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS":
            return web.Response(headers=PREFLIGHT_HEADERS, content_type="text/html")
        if (
            api_key is not None
            and needs_key(request.path)
            and not key_matches(presented_key(request.headers), api_key)
        ):
            log.warning("unauthorized: %s %s from %s", request.method, request.path, request.remote)
            return error_response(401, "Invalid API Key")
        client = request.remote or "?"
        peer.set(client)  # the engine turn (FrontDoor._call) reads it
        if request.path not in GENERATING:
            return await handler(request)
        try:
            with limits.admitted(client):
                async with pool.slot(client):
                    return await handler(request)
        except Busy as busy:
            log.warning("busy: %s", busy)
            response = error_response(503, str(busy))
            response.headers.update(busy.headers)
            return response

    return middleware


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def allowed_origin(origin: str, setting: str) -> str | None:
    """Access-Control-Allow-Origin for a request from `origin`, as llama-server's
    --cors-origins decides it (the option httpCorsOrigins); None: left out."""
    if setting == "*":
        return origin
    if setting == "localhost":
        try:
            host = urlsplit(origin).hostname
        except ValueError:
            return None
        return origin if origin and host in LOOPBACK_HOSTS else None
    return setting


def install(app: web.Application, origins: Callable[[], str]) -> None:
    """on_response_prepare: every response (errors and event streams too) names the
    origins allowed, as llama-server does; `origins` reads the option now."""

    async def allow_origin(request: web.Request, response: web.StreamResponse) -> None:
        allowed = allowed_origin(request.headers.get("Origin", ""), origins())
        if allowed is not None:
            response.headers["Access-Control-Allow-Origin"] = allowed

    app.on_response_prepare.append(allow_origin)
