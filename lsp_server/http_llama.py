"""llama-server's other endpoints: /props, /slots, /tokenize and /detokenize.

/slots lists the request slots (httpParallel, llama-server's --parallel: the
SlotPool), each busy from a request's arrival to its answer, with its share of
the context (nCtx / slots, as llama-server splits it); the one engine serves the
busy ones in turns (its KV of the document in use; the others are saved per
document, docs/kv-reuse.md). With httpSlots off (--no-slots) /slots answers 501,
as llama-server's. Erasing a slot forgets the documents the HTTP router knows for
that `id_slot` (their next request starts afresh) and cancels what that client
has running. Slot files (`?action=save|restore`) are groundspec's own business:
it saves every document's KV at shutdown, so those actions answer 501.

/cors-proxy (llama-server's --ui-mcp-proxy, for its web UI's MCP servers)
answers 501 too: groundspec has no web UI, and a door that fetches any URL for
whoever holds the key is not one a completion server should open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from speculator import provision
from speculator.types import CancelToken, Engine

from . import http_wire as wire
from .http_io import ApiError, json_response
from .http_prompts import (
    DetokenizeBody,
    TokenizeBody,
    Tokenizer,
    detokenize,
    tokenize_answer,
)
from .http_slots import SlotPool, SlotRouter
from .options import ServerOptions

EngineCall = Callable[[Callable[[Engine, CancelToken], Any], str], Any]


def tokenizer_of(engine: Engine) -> Tokenizer | None:
    """The local engine's target vocabulary; None for engines without one (the fake
    engine, remote backends: their server tokenizes)."""
    target = getattr(engine, "target", None)
    return target if hasattr(target, "tokenize") and hasattr(target, "token_bytes") else None


def no_tokenizer() -> ApiError:
    return ApiError(501, "this engine has no vocabulary to tokenize with (a remote backend)")


class LlamaExtras:
    """The endpoints; `call` runs a function on the engine thread for a client."""

    def __init__(
        self,
        call: EngineCall,
        options: Callable[[], ServerOptions],
        slots: SlotRouter,
        running: dict[str, set[CancelToken]],
        pool: SlotPool,
    ) -> None:
        self.call = call
        self.options = options
        self.slots = slots
        self.running = running
        self.pool = pool

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/props", self.props),
            web.get("/slots", self.list_slots),
            web.post("/slots/{id_slot}", self.slot_action),
            web.post("/tokenize", self.tokenize),
            web.post("/detokenize", self.detokenize),
            web.route("*", "/cors-proxy", self.cors_proxy),
        ]

    async def cors_proxy(self, request: web.Request) -> web.Response:
        raise ApiError(
            501,
            "groundspec has no web UI, so no /cors-proxy for its MCP servers "
            "(llama-server's --ui-mcp-proxy): it fetches no URL for its clients",
        )

    def slot_n_ctx(self) -> int:
        """Each slot's share of the context, as llama-server splits it (the engine's
        n_ctx as it runs: the config file's, or --n-ctx / GROUNDSPEC_N_CTX)."""
        return self.options().engine.with_env().n_ctx // self.pool.n

    async def props(self, request: web.Request) -> web.Response:
        options = self.options()
        engine = options.engine
        params = {
            "n_predict": options.max_tokens,
            "temperature": options.temperature,
            "seed": options.seed,
            "speculation": options.speculation,
        }
        settings = {"n_ctx": self.slot_n_ctx(), "params": params}
        return json_response(
            {
                "default_generation_settings": settings,
                "total_slots": self.pool.n,
                "model_path": engine.target_model or str(provision.model_path(provision.TARGET)),
                "build_info": "groundspec",
            }
        )

    def check_slots_served(self) -> None:
        if not self.options().http_slots:
            raise ApiError(
                501,
                "This server does not support slots endpoint: it was started with "
                "--no-slots (the option httpSlots); start it without to list slots",
            )

    async def list_slots(self, request: web.Request) -> web.Response:
        self.check_slots_served()
        if "fail_on_no_slot" in request.query and not self.pool.free():
            raise ApiError(503, "no slot available")
        n_ctx = self.slot_n_ctx()
        return json_response(
            [
                {
                    "id": i,
                    "id_task": self.pool.tasks[i],
                    "n_ctx": n_ctx,
                    "speculative": True,
                    "is_processing": busy,
                }
                for i, busy in enumerate(self.pool.busy)
            ]
        )

    async def slot_action(self, request: web.Request) -> web.Response:
        self.check_slots_served()
        raw = request.match_info["id_slot"]
        if not raw.isdigit():
            raise wire.BadRequest("Invalid slot ID")
        id_slot, action = int(raw), request.query.get("action")
        if action in ("save", "restore"):
            raise ApiError(
                501,
                "groundspec keeps its slots itself (every document's KV is saved at "
                "shutdown and found again by its text): save and restore are not supported",
            )
        if action != "erase":
            raise wire.BadRequest("Invalid action")
        client = f"slot:{id_slot}"
        for token in list(self.running.get(client, ())):
            token.cancel()
        return json_response({"id_slot": id_slot, "n_erased": self.slots.forget(client)})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = wire.decode(await request.read(), TokenizeBody)

        def run(engine: Engine, _: CancelToken) -> dict[str, Any]:
            tokenizer = tokenizer_of(engine)
            if tokenizer is None:
                raise no_tokenizer()
            return tokenize_answer(body, tokenizer)

        return json_response(await self.call(run, "tokenize"))

    async def detokenize(self, request: web.Request) -> web.Response:
        body = wire.decode(await request.read(), DetokenizeBody)

        def run(engine: Engine, _: CancelToken) -> str:
            tokenizer = tokenizer_of(engine)
            if tokenizer is None:
                raise no_tokenizer()
            return detokenize(body.tokens, tokenizer)

        return json_response({"content": await self.call(run, "detokenize")})
