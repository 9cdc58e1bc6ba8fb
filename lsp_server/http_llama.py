"""llama-server's other endpoints: /props, /slots, /tokenize and /detokenize.

groundspec has one engine sequence (the KV of the document in use; the others are
saved per document, docs/kv-reuse.md), so /slots lists one slot, busy while any
request runs. Erasing a slot forgets the documents the HTTP router knows for that
`id_slot` (their next request starts afresh) and cancels what that client has
running. Slot files (`?action=save|restore`) are groundspec's own business: it
saves every document's KV at shutdown, so those actions answer 501.
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
from .http_slots import SlotRouter
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
    ) -> None:
        self.call = call
        self.options = options
        self.slots = slots
        self.running = running

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/props", self.props),
            web.get("/slots", self.list_slots),
            web.post("/slots/{id_slot}", self.slot_action),
            web.post("/tokenize", self.tokenize),
            web.post("/detokenize", self.detokenize),
        ]

    async def props(self, request: web.Request) -> web.Response:
        options = self.options()
        engine = options.engine
        params = {
            "n_predict": options.max_tokens,
            "temperature": options.temperature,
            "seed": -1,
            "speculation": options.speculation,
        }
        return json_response(
            {
                "default_generation_settings": {"n_ctx": engine.n_ctx, "params": params},
                "total_slots": 1,
                "model_path": engine.target_model or str(provision.model_path(provision.TARGET)),
                "build_info": "groundspec",
            }
        )

    async def list_slots(self, request: web.Request) -> web.Response:
        busy = any(self.running.values())
        if "fail_on_no_slot" in request.query and busy:
            raise ApiError(503, "no slot available")
        slot = {"id": 0, "id_task": -1, "n_ctx": self.options().engine.n_ctx}
        return json_response([slot | {"is_processing": busy, "speculative": True}])

    async def slot_action(self, request: web.Request) -> web.Response:
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
