"""Tree-sitter selected context: window boundaries, enclosing scope, siblings.

Everything here works on Python string offsets; tree-sitter speaks UTF-8
bytes, so we convert at the edges.
"""

from __future__ import annotations

import logging

import tree_sitter

from .chunks import identifiers
from .languages import new_parser
from .syntax import (
    MAX_DOCUMENT_CHARS,
    SCOPE_TYPES,
    STRING_OR_COMMENT,
    byte_offset,
    char_offset,
    utf8,
)

log = logging.getLogger(__name__)


class Grounding:
    """A parsed document and the context queries the prompt builder needs."""

    def __init__(self, text: str, language_id: str, tree: tree_sitter.Tree | None = None):
        """`tree`: the document's own tree of exactly `text`, if the caller has one
        (the server keeps it incrementally parsed); else `text` is parsed here."""
        self.text = text
        self.tree = tree
        self._utf8: bytes | None = None
        if tree is None and len(text) <= MAX_DOCUMENT_CHARS:
            parser = new_parser(language_id)
            if parser is not None:
                self.tree = parser.parse(self._bytes())

    def _bytes(self) -> bytes:
        if self._utf8 is None:
            self._utf8 = utf8(self.text)
        return self._utf8

    def _byte(self, offset: int) -> int:
        return byte_offset(self.text, offset)

    def _char(self, byte: int) -> int:
        return byte if self.text.isascii() else char_offset(self._bytes(), byte)

    def top_level_starts(self) -> list[int]:
        """Line numbers where top-level nodes begin: stable window boundaries."""
        if self.tree is None:
            return []
        return sorted({child.start_point[0] for child in self.tree.root_node.children})

    def top_level_ends(self) -> list[int]:
        if self.tree is None:
            return []
        return sorted({child.end_point[0] for child in self.tree.root_node.children})

    def _node_at(self, offset: int) -> tree_sitter.Node | None:
        if self.tree is None:
            return None
        b = self._byte(offset)
        return self.tree.root_node.descendant_for_byte_range(max(0, b - 1), max(0, b - 1))

    def in_string_or_comment(self, offset: int) -> bool:
        node = self._node_at(offset)
        while node is not None:
            if node.type in STRING_OR_COMMENT:
                return True
            node = node.parent
        return False

    def enclosing_scope(self, offset: int) -> tuple[int, int] | None:
        """(start, end) offsets of the innermost function/class around offset."""
        node = self._node_at(offset)
        while node is not None:
            if node.type in SCOPE_TYPES:
                return self._char(node.start_byte), self._char(node.end_byte)
            node = node.parent
        return None

    def enclosing_scopes(self, offset: int) -> list[tuple[int, int]]:
        """(start, end) offsets of every function/class around offset, outermost first."""
        found: list[tuple[int, int]] = []
        node = self._node_at(offset)
        while node is not None:
            if node.type in SCOPE_TYPES:
                found.append((self._char(node.start_byte), self._char(node.end_byte)))
            node = node.parent
        return found[::-1]

    def definitions(self) -> list[tuple[int, int]]:
        """(start, end) offsets of every function/class definition, in order."""
        if self.tree is None:
            return []
        found: list[tuple[int, int]] = []
        stack = [self.tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in SCOPE_TYPES:
                found.append((node.start_byte, node.end_byte))
            stack.extend(reversed(node.children))
        return [(self._char(s), self._char(e)) for s, e in sorted(found)]


def similar_siblings(grounding: Grounding, offset: int, limit: int = 3) -> list[str]:
    """Definitions that look like the one around `offset` (shared identifiers)."""
    scope = grounding.enclosing_scope(offset)
    here = set(
        identifiers(
            grounding.text[scope[0] : scope[1]]
            if scope
            else grounding.text[max(0, offset - 400) : offset]
        )
    )
    scored: list[tuple[float, int, str]] = []
    for start, end in grounding.definitions():
        if scope and start <= scope[0] < end:
            continue  # the scope itself or what contains it
        body = grounding.text[start:end]
        if len(body) > 4000:
            continue
        words = set(identifiers(body))
        if words and here:
            score = len(words & here) / len(words | here)
            scored.append((score, start, body))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [body for score, _start, body in scored[:limit] if score > 0.1]
