"""Open documents: exact text per URI and a tree-sitter tree kept in step.

Edits arrive as LSP ranges (UTF-16); they are applied to the Python string and,
as byte offsets and (row, byte column) points, to the tree with Tree.edit
before an incremental reparse. Documents that are too large or binary keep
their text (edits still apply) but get no tree and no completions.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import tree_sitter
from lsprotocol import types

from speculator.languages import new_parser

from .convert import LineIndex

log = logging.getLogger(__name__)

Change = types.TextDocumentContentChangeEvent

# Node types a refactor without a selection applies to (python/js/ts/go/rust).
_DEFINITIONS = frozenset(
    {
        "function_definition",
        "class_definition",
        "function_declaration",
        "method_definition",
        "class_declaration",
        "method_declaration",
        "function_item",
        "impl_item",
    }
)


class DocumentError(Exception):
    """The request names a document we cannot serve (unknown, binary, too large)."""


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _point(text: str, offset: int) -> tuple[int, int]:
    """tree-sitter point of an offset: (row counted by "\\n", column in UTF-8 bytes)."""
    row = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return row, _utf8_len(text[line_start:offset])


def _byte_offset(text: str, offset: int) -> int:
    return offset if text.isascii() else _utf8_len(text[:offset])


def text_problem(text: str, max_chars: int) -> str | None:
    """Why `text` cannot be completed, or None if it can."""
    if len(text) > max_chars:
        return (
            f"document is too large for completions ({len(text):,} characters, limit {max_chars:,})"
        )
    if "\x00" in text:
        return "document looks binary (it contains NUL bytes); no completions"
    return None


class Document:
    """One open document: text, version, tree, and why it cannot be completed."""

    def __init__(self, uri: str, language_id: str, version: int, text: str, max_chars: int) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.text = text
        self.max_chars = max_chars
        self.last_edit = 0  # offset just after the last edit: where the cursor likely is
        self._index: LineIndex | None = None
        self._parser = new_parser(language_id)
        self.tree: tree_sitter.Tree | None = None
        self.problem: str | None = None
        self._check_and_reparse()

    @property
    def index(self) -> LineIndex:
        """Line index of the current text (rebuilt lazily after an edit)."""
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    def enclosing_definition(self, offset: int) -> tuple[int, int] | None:
        """Offsets of the innermost function or class around `offset`, from the tree."""
        if self.tree is None:
            return None
        data = self.text.encode("utf-8")
        at = _byte_offset(self.text, offset)
        node: tree_sitter.Node | None = self.tree.root_node.descendant_for_byte_range(at, at)
        while node is not None and node.type not in _DEFINITIONS:
            node = node.parent
        if node is None:
            return None
        start = len(data[: node.start_byte].decode("utf-8", errors="replace"))
        end = start + len(data[node.start_byte : node.end_byte].decode("utf-8", errors="replace"))
        return start, end

    def check_completable(self) -> None:
        if self.problem is not None:
            raise DocumentError(f"{self.uri}: {self.problem}")

    def apply(self, changes: Sequence[Change], version: int) -> None:
        """Apply didChange content changes in order (each against the previous result)."""
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                self._apply_partial(change.range, change.text)
            else:
                self.text = change.text
                self.last_edit = len(change.text)
                self.tree = None
        self.version = version
        had_problem = self.problem
        self._set_problem()
        if self.tree is None or had_problem != self.problem:
            self._check_and_reparse()
        elif self._parser is not None:
            # One incremental reparse for the whole batch of edits.
            self.tree = self._parser.parse(self.text.encode("utf-8"), self.tree)

    def _apply_partial(self, range_: types.Range, new: str) -> None:
        # Editors clamp out-of-range edits to the buffer; do the same rather than fail.
        start, end = self.index.offsets(range_, strict=False)
        old = self.text
        self.text = old[:start] + new + old[end:]
        self.last_edit = start + len(new)
        if self.tree is not None:
            self._edit_tree(old, start, end, len(new))

    def _edit_tree(self, old: str, start: int, end: int, new_len: int) -> None:
        assert self.tree is not None
        new_end = start + new_len
        self.tree.edit(
            start_byte=_byte_offset(old, start),
            old_end_byte=_byte_offset(old, end),
            new_end_byte=_byte_offset(self.text, new_end),
            start_point=_point(old, start),
            old_end_point=_point(old, end),
            new_end_point=_point(self.text, new_end),
        )

    def _set_problem(self) -> None:
        self.problem = text_problem(self.text, self.max_chars)

    def _check_and_reparse(self) -> None:
        self._set_problem()
        if self.problem is not None or self._parser is None:
            self.tree = None
            return
        self.tree = self._parser.parse(self.text.encode("utf-8"))


class DocumentStore:
    """Documents by URI, as the client opened them."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._docs: dict[str, Document] = {}

    def __len__(self) -> int:
        return len(self._docs)

    def open(self, item: types.TextDocumentItem) -> Document:
        doc = Document(item.uri, item.language_id, item.version, item.text, self.max_chars)
        self._docs[item.uri] = doc
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
        doc.apply(changes, version)
        return doc

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)
