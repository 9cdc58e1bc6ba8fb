"""pygls' protocol, adjusted: transport, framing and message decoding.

Everything here is about JSON-RPC and LSP as a wire protocol; what the
messages mean is the handlers' (server.py) and the service's business.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from typing import Any

import cattrs
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)


def make_converter() -> cattrs.Converter:
    """lsprotocol's converter, keeping custom methods' params as plain JSON data
    (pygls' default turns them into namedtuples)."""
    converter = converters.get_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


class Answered(Exception):
    """A message we could not decode but already answered with an error."""


class GroundspecProtocol(LanguageServerProtocol):
    """pygls' protocol, with these changes.

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
            raise Answered(f"invalid params for {method} (request {msg_id})") from exc

    def send_error_without_id(self, error: Exception) -> bool:
        """Answer a message that is not JSON-RPC at all (id null); False if it is."""
        if not isinstance(error, json.JSONDecodeError | UnicodeDecodeError | AttributeError):
            return False
        parse = isinstance(error, ValueError)
        code, message = (-32700, "Parse error") if parse else (-32600, "Invalid Request")
        log.warning("%s: %s", message, error)
        error_body = {"code": code, "message": f"{message}: {error}"}
        self._send_data({"jsonrpc": "2.0", "id": None, "error": error_body})
        return True
