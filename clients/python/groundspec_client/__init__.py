"""A client for scripts that talk to `groundspec serve` over JSON-RPC.

    from groundspec_client import Client

    with Client.spawn(on_progress=print) as gs:     # or Client.connect("127.0.0.1", 7777)
        result = gs.complete(text="def add(a, b):\n    ", line=1, character=4)
        print(result.text, result.stats.total_ms)
        print(gs.stats().tokens_per_second)

Installed with groundspec (`pip install -e .`). Results are msgspec Structs with
the contract's fields in snake_case (`msgspec.to_builtins` gives the wire
JSON back). Positions are LSP positions: 0-based lines, characters counted in
UTF-16 code units (`utf16_len` converts). `$/progress`, window/showMessage and
window/logMessage reach the `on_progress`, `on_message` and `on_log` callbacks,
on the reader thread. A request that times out is cancelled on the server.
"""

from .client import Client, start
from .connection import ApplyEditHandler, MessageHandler, ProgressHandler
from .protocol import GroundspecError, encode_message, read_message
from .results import (
    Completion,
    DrafterAcceptance,
    Message,
    MessageType,
    NextEdit,
    Position,
    Progress,
    Range,
    Refactor,
    RequestStats,
    ServerStats,
    TextEdit,
)
from .text import (
    LANGUAGE_IDS,
    apply_edit,
    changed_span,
    language_id,
    offset,
    position,
    utf16_len,
    write_or_show_diff,
)

__all__ = [
    "LANGUAGE_IDS",
    "ApplyEditHandler",
    "Client",
    "Completion",
    "DrafterAcceptance",
    "GroundspecError",
    "Message",
    "MessageHandler",
    "MessageType",
    "NextEdit",
    "Position",
    "Progress",
    "ProgressHandler",
    "Range",
    "Refactor",
    "RequestStats",
    "ServerStats",
    "TextEdit",
    "apply_edit",
    "changed_span",
    "encode_message",
    "language_id",
    "offset",
    "position",
    "read_message",
    "start",
    "utf16_len",
    "write_or_show_diff",
]
