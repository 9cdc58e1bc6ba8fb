"""Parameters of groundspec's own methods and commands, and building engine requests.

A request names an open document (`textDocument.uri`) or carries the text
inline (`text`, `languageId`), so scripts can use the daemon without didOpen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from lsprotocol import types

from speculator.languages import document_language_id
from speculator.types import CompletionRequest, RefactorRequest, Speculation
from speculator.validate import instruction_problem, text_problem

from .convert import LineIndex, PositionError, uri_to_path
from .documents import Document, DocumentError, DocumentStore
from .options import MAX_TOKENS, ServerOptions

Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]


class ServiceError(Exception):
    """A request the service cannot serve; `CODE` is its JSON-RPC error code.

    Defined here, not from pygls, so the service can be used without the LSP layer."""

    CODE = -32603  # InternalError

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidParams(ServiceError):
    CODE = -32602


class RequestFailed(ServiceError):
    """LSP's RequestFailed: valid request the server could not serve."""

    CODE = -32803


class ContentModified(ServiceError):
    CODE = -32801


class RequestCancelled(ServiceError):
    CODE = -32800


class ServerBusy(ServiceError):
    """LSP's ServerCancelled: too many requests waiting; the client may retry."""

    CODE = -32802


class DocumentRef(msgspec.Struct):
    uri: str


class Position(msgspec.Struct):
    line: Count
    character: Count

    def lsp(self) -> types.Position:
        return types.Position(line=self.line, character=self.character)


class Range(msgspec.Struct):
    start: Position
    end: Position

    def lsp(self) -> types.Range:
        return types.Range(start=self.start.lsp(), end=self.end.lsp())


class _Source(msgspec.Struct, kw_only=True, rename="camel"):
    text_document: DocumentRef | None = None
    text: str | None = None
    language_id: str | None = None  # inline text: else from `path`, else Python
    path: str | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOKENS)] | None = None
    speculation: Speculation | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] | None = None


class CompleteParams(_Source, kw_only=True):
    position: Position


class RefactorParams(_Source, kw_only=True):
    range: Range
    instruction: Annotated[str, msgspec.Meta(min_length=1, max_length=4000)]

    def __post_init__(self) -> None:
        if (problem := instruction_problem(self.instruction)) is not None:
            raise ValueError(problem)  # msgspec.convert makes it a ValidationError


@dataclass(frozen=True)
class Resolved:
    """The text a request works on, and where it came from."""

    text: str
    index: LineIndex
    language_id: str
    path: str | None
    uri: str | None
    version: int | None
    document: Document | None = None  # its tree saves the engine a parse


def parse(params: Any, kind: type[msgspec.Struct]) -> Any:
    """Decode raw JSON params into `kind`, or a clear InvalidParams error."""
    if isinstance(params, msgspec.Struct):
        params = msgspec.to_builtins(params)
    elif hasattr(params, "__attrs_attrs__"):  # an lsprotocol object
        params = msgspec.to_builtins(params.__dict__)
    try:
        return msgspec.convert(params, kind)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid params: {exc}") from None


def resolve(source: _Source, documents: DocumentStore) -> Resolved:
    """The document named by `source`, or its inline text; fails if not completable."""
    try:
        if source.text_document is not None:
            doc = documents.get(source.text_document.uri)
            doc.check_completable()
            return resolved(doc, source.path)
    except DocumentError as exc:
        raise RequestFailed(str(exc)) from None
    if source.text is None:
        raise InvalidParams("give either textDocument {uri} or text")
    if (problem := text_problem(source.text, documents.max_chars)) is not None:
        raise RequestFailed(problem)
    language_id = document_language_id(source.language_id or "", source.path or "")
    return Resolved(
        source.text, LineIndex(source.text), language_id or "python", source.path, None, None
    )


def resolved(doc: Document, path: str | None = None) -> Resolved:
    """An open document's current text as a request source."""
    path = path or _path_of(doc.uri)
    return Resolved(doc.text, doc.index, doc.language_id, path, doc.uri, doc.version, doc)


def offset(index: LineIndex, position: types.Position) -> int:
    try:
        return index.offset(position)
    except PositionError as exc:
        raise InvalidParams(f"position out of range: {exc}") from None


def offsets(index: LineIndex, range_: types.Range) -> tuple[int, int]:
    try:
        return index.offsets(range_)
    except PositionError as exc:
        raise InvalidParams(f"range out of range: {exc}") from None


def completion_request(
    src: Resolved,
    cursor: int,
    options: ServerOptions,
    params: _Source | None = None,
    *,
    typing: bool = False,
) -> CompletionRequest:
    """`typing`: an editor's completion as the user types, which may come from
    the short window on an unseen file, stops at a new line once it has run
    `max_predict_ms` and mid-line at `typing_deadline_ms` (one-shot calls always
    get the full prompt and no limit)."""
    return CompletionRequest(
        text=src.text,
        cursor=cursor,
        language_id=src.language_id,
        path=src.path,
        max_tokens=_pick(params and params.max_tokens, options.max_tokens),
        speculation=_pick(params and params.speculation, options.speculation),
        temperature=_pick(params and params.temperature, options.temperature),
        tree=_tree_of(src),
        quick_window=typing,
        max_predict_ms=options.max_predict_ms if typing else 0,
        max_predict_from_start=typing,
        deadline_ms=options.typing_deadline_ms if typing else 0,
    )


def _tree_of(src: Resolved) -> Callable[[], Any] | None:
    doc, text = src.document, src.text
    return (lambda: doc.syntax_tree(text)) if doc is not None else None


def refactor_request(
    src: Resolved, start: int, end: int, params: RefactorParams, options: ServerOptions
) -> RefactorRequest:
    return RefactorRequest(
        text=src.text,
        start=start,
        end=end,
        instruction=params.instruction,
        language_id=src.language_id,
        path=src.path,
        max_tokens=_pick(params.max_tokens, options.refactor_max_tokens),
        speculation=_pick(params.speculation, options.speculation),
        temperature=_pick(params.temperature, options.temperature),
    )


def _pick(value: Any, default: Any) -> Any:
    return default if value is None else value


def _path_of(uri: str) -> str | None:
    return uri_to_path(uri)
