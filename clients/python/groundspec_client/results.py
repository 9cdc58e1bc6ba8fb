"""Typed results and notifications: msgspec Structs with the JSON keys of the
public contract (docs: /work/shared/DESIGN.md, "Contract for scripts and
editors"). Python names are snake_case; `rename="camel"` maps them to the wire.

Every field but the essential ones has a default, so a server that adds keys
or leaves a statistic out still decodes; a result without its text does not.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, TypeVar

import msgspec

from .protocol import GroundspecError

T = TypeVar("T")


class Position(msgspec.Struct, frozen=True):
    """An LSP position: 0-based line, character in UTF-16 code units."""

    line: int
    character: int


class Range(msgspec.Struct, frozen=True):
    start: Position
    end: Position


class RequestStats(msgspec.Struct, rename="camel", frozen=True):
    """`stats` of one request."""

    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0
    speculation: str = "off"


class Completion(msgspec.Struct, frozen=True):
    """`groundspec/complete`: the text to insert at the position."""

    text: str
    stats: RequestStats = RequestStats()


class Refactor(msgspec.Struct, rename="camel", frozen=True):
    """`groundspec/refactor`: replace `range` with `new_text` (nothing is written)."""

    new_text: str
    range: Range
    stats: RequestStats = RequestStats()


class TextEdit(msgspec.Struct, rename="camel", frozen=True):
    range: Range
    new_text: str


class NextEdit(msgspec.Struct, frozen=True):
    """`groundspec/nextEdit`: the edit most likely to follow; `edits` is empty when none is."""

    edits: list[TextEdit] = []
    stats: RequestStats = RequestStats()


class DrafterAcceptance(msgspec.Struct, frozen=True):
    drafted: int = 0
    accepted: int = 0
    rate: float = 0.0


class Latency(msgspec.Struct, frozen=True):
    p50: float = 0.0
    p95: float = 0.0


class ServerState(msgspec.Struct, rename="camel", frozen=True):
    """`server` of `groundspec/stats`; engine_state is "not started", "loading", "ready" or "failed"."""

    engine_state: str = ""
    open_documents: int = 0
    peak_rss_mb: float = 0.0


class ServerStats(msgspec.Struct, rename="camel", frozen=True):
    """`groundspec/stats`: totals since the server started."""

    requests: int = 0
    cancelled: int = 0
    accepted_items: int = 0
    generated_tokens: int = 0
    tokens_per_second: float = 0.0
    acceptance: dict[str, DrafterAcceptance] = {}
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    latency_ms: Latency = Latency()
    server: ServerState = ServerState()


class Progress(msgspec.Struct, frozen=True):
    """One `$/progress` notification: `token` names the work (e.g. "groundspec/load"),
    `kind` is where it stands; `percentage` goes from 0 to 100 when known."""

    token: str | int
    kind: Literal["begin", "report", "end"]
    title: str | None = None
    message: str | None = None
    percentage: int | None = None
    cancellable: bool | None = None

    def describe(self) -> str:
        """One line for a terminal, e.g. "groundspec: Loading models 40%"."""
        parts = [self.title, self.message]
        if self.percentage is not None and self.kind != "end":
            parts.append(f"{self.percentage}%")
        return " ".join(part for part in parts if part) or str(self.token)


class MessageType(enum.IntEnum):
    ERROR = 1
    WARNING = 2
    INFO = 3
    LOG = 4
    DEBUG = 5


class Message(msgspec.Struct, frozen=True):
    """window/showMessage (meant for the user) or window/logMessage (for a log)."""

    type: MessageType
    message: str


def decode(value: Any, kind: type[T], what: str) -> T:
    """`value` (decoded JSON) as `kind`, or a GroundspecError that says what was wrong."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise GroundspecError(f"unexpected {what} from the server: {exc}") from None
