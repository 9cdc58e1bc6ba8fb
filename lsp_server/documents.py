"""Open documents: exact text per URI, and a tree-sitter tree parsed lazily.

Edits arrive as LSP ranges (UTF-16). A didChange batch is applied all or
nothing to the Python string (text is stored exactly as sent, lone surrogates
included) and its line index is updated around each edit, so a keystroke
costs microseconds even in a 2M-character document. The matching tree edits
are queued; the incremental reparse (0.7 s for 2M characters) runs only when
someone asks for the tree, on their thread, never on the protocol's loop.
Documents that are too large or binary keep their text but get no tree and
no completions.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import tree_sitter
from lsprotocol import types

from speculator.edits import EditHistory
from speculator.languages import document_language_id, new_parser
from speculator.syntax import DEFINITION_TYPES, byte_offset, char_offset, point, utf8
from speculator.validate import text_problem

from .convert import LineIndex, PositionError

log = logging.getLogger(__name__)

Change = types.TextDocumentContentChangeEvent
# Arguments of tree_sitter.Tree.edit: start, old end, new end (bytes), then the same as points.
TreeEdit = tuple[int, int, int, tuple[int, int], tuple[int, int], tuple[int, int]]
# One change as applied: (offset, old text, new text), offsets into the text before it.
Replacement = tuple[int, str, str]
# Tree edits kept for the next incremental parse; past this many (a document
# edited for a long time without a completion) the next parse starts afresh.
MAX_PENDING_EDITS = 256


class DocumentError(Exception):
    """The request names a document we cannot serve (unknown, binary, too large)."""


class Document:
    """One open document: text, version, tree, and why it cannot be completed.

    The text fields change on the event loop only. The tree is owned by
    `syntax_tree()`, which may run on any thread (one at a time)."""

    def __init__(self, uri: str, language_id: str, version: int, text: str, max_chars: int) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.text = text
        self.max_chars = max_chars
        self.last_edit = 0  # offset just after the last edit: where the cursor likely is
        self._index = LineIndex(text)
        self._parser = new_parser(language_id)
        self.problem = text_problem(text, max_chars)
        self._state = threading.Lock()  # text and pending edits, held briefly
        self._parsing = threading.Lock()  # the parser and the tree, held while parsing
        self._tree: tree_sitter.Tree | None = None
        self._tree_text: str | None = None  # the text self._tree was parsed from
        self._pending: list[TreeEdit] | None = None  # None: parse from scratch

    @property
    def index(self) -> LineIndex:
        """Line index of the current text."""
        return self._index

    @property
    def tree(self) -> tree_sitter.Tree | None:
        """The tree of the current text (parses now if edits are pending)."""
        return self.syntax_tree(self.text)

    def syntax_tree(self, text: str) -> tree_sitter.Tree | None:
        """The tree of `text` if it is still this document's text, else None.

        Reparses incrementally with the edits made since the last parse. Call
        it off the event loop for large documents: the parse takes ~0.35 s per
        million characters."""
        with self._parsing:
            with self._state:
                if self.problem is not None or self._parser is None or text is not self.text:
                    return None
                if self._tree_text is text:
                    return self._tree
                old, edits = self._tree, self._pending
                self._pending = []
            data = utf8(text)
            if old is not None and edits is not None:
                old = old.copy()  # a caller may still be reading the previous tree
                for edit in edits:
                    old.edit(*edit)
                tree = self._parser.parse(data, old)
            else:
                tree = self._parser.parse(data)
            with self._state:
                self._tree, self._tree_text = tree, text
            return tree

    def enclosing_definition(self, offset: int) -> tuple[int, int] | None:
        """Offsets of the innermost function or class around `offset`, from the tree."""
        text = self.text
        tree = self.syntax_tree(text)
        if tree is None:
            return None
        at = byte_offset(text, offset)
        node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(at, at)
        while node is not None and node.type not in DEFINITION_TYPES:
            node = node.parent
        if node is None:
            return None
        data = utf8(text)
        return char_offset(data, node.start_byte), char_offset(data, node.end_byte)

    def check_completable(self) -> None:
        if self.problem is not None:
            raise DocumentError(f"{self.uri}: {self.problem}")

    def apply(self, changes: Sequence[Change], version: int) -> list[Replacement] | None:
        """Apply didChange content changes in order (each against the previous result).

        All or nothing: if one change cannot be applied, the document keeps the
        text and version it had, and DocumentError says why. Returns what was
        replaced, (offset, old, new) each against the text the one before left
        (the edit history's input), or None when a change sent the whole text."""
        text, index, last_edit = self.text, self._index, self.last_edit
        edits: list[TreeEdit] | None = []
        replaced: list[Replacement] | None = []
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                try:
                    # Editors clamp out-of-range edits to the buffer; do the same.
                    start, end = index.offsets(change.range, strict=False)
                except PositionError as exc:
                    raise DocumentError(f"{self.uri}: change not applied: {exc}") from None
                new_text = text[:start] + change.text + text[end:]
                if replaced is not None:
                    replaced.append((start, text[start:end], change.text))
                if edits is not None:
                    edits.append(_tree_edit(text, new_text, start, end, len(change.text)))
                index = index.edited(start, end, change.text, new_text)
                text, last_edit = new_text, start + len(change.text)
            else:
                text, last_edit, edits, replaced = change.text, len(change.text), None, None
                index = LineIndex(text)
        self._commit(text, index, last_edit, version, edits)
        return replaced

    def _commit(
        self,
        text: str,
        index: LineIndex,
        last_edit: int,
        version: int,
        edits: list[TreeEdit] | None,
    ) -> None:
        problem = text_problem(text, self.max_chars)
        with self._state:
            self.text, self._index, self.last_edit, self.version = text, index, last_edit, version
            if problem is not None or self.problem is not None or edits is None:
                self._pending = None  # the next parse starts from scratch
            elif self._pending is not None:
                self._pending += edits
                if len(self._pending) > MAX_PENDING_EDITS:
                    self._pending = None
            self.problem = problem


def _tree_edit(old: str, new: str, start: int, end: int, new_len: int) -> TreeEdit:
    new_end = start + new_len
    return (
        byte_offset(old, start),
        byte_offset(old, end),
        byte_offset(new, new_end),
        point(old, start),
        point(old, end),
        point(new, new_end),
    )


class DocumentStore:
    """Documents by URI, as the client opened them."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._docs: dict[str, Document] = {}
        self.history = EditHistory()  # recent edits, for next-edit suggestions

    def __len__(self) -> int:
        return len(self._docs)

    def all(self) -> list[Document]:
        """The open documents, as a list (the store may change while it is read)."""
        return list(self._docs.values())

    def open(self, item: types.TextDocumentItem) -> Document:
        language_id = document_language_id(item.language_id, item.uri)
        doc = Document(item.uri, language_id, item.version, item.text, self.max_chars)
        self._docs[item.uri] = doc
        self.history.reset(item.uri)
        if doc.problem:
            log.warning("%s: %s", item.uri, doc.problem)
        return doc

    def get(self, uri: str) -> Document:
        doc = self._docs.get(uri)
        if doc is None:
            raise DocumentError(f"unknown document {uri} (send textDocument/didOpen first)")
        return doc

    def change(self, uri: str, version: int, changes: Sequence[Change]) -> Document:
        doc = self.get(uri)
        replaced = doc.apply(changes, version)
        if replaced is None:
            self.history.reset(uri)
        for start, old, new in replaced or ():
            self.history.record(uri, start, old, new)
        return doc

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)
        self.history.forget(uri)
