"""The one syntax layer: node types, the document size limit, UTF-8 offsets.

Python strings are indexed by code point; tree-sitter speaks UTF-8 bytes and
(row, byte column) points. Text is encoded with `surrogatepass` everywhere,
so a lone surrogate (valid JSON, sent by editors mid-edit) is 3 bytes in
every conversion instead of an exception.
"""

from __future__ import annotations

# Larger documents are kept in sync but never parsed or completed.
MAX_DOCUMENT_CHARS = 2_000_000

# Functions and classes: what a refactor without a selection applies to, and
# the scopes the prompt builder looks at (python, js/ts, go, rust).
DEFINITION_TYPES = frozenset(
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
SCOPE_TYPES = DEFINITION_TYPES | {
    "decorated_definition",  # python
    "arrow_function",  # js/ts
    "type_declaration",  # go
    "struct_item",
    "trait_item",  # rust
}
STRING_OR_COMMENT = frozenset(
    {
        "string",
        "string_content",
        "comment",
        "template_string",
        "raw_string_literal",
        "interpreted_string_literal",
        "line_comment",
        "block_comment",
    }
)


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(utf8(text))


def byte_offset(text: str, offset: int) -> int:
    """UTF-8 byte offset of a code-point offset."""
    return offset if text.isascii() else utf8_len(text[:offset])


def char_offset(data: bytes, byte: int) -> int:
    """Code-point offset of a UTF-8 byte offset into `data`."""
    head = data[:byte]
    try:
        return len(head.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:  # a byte offset inside a character
        return len(head.decode("utf-8", "replace"))


def point(text: str, offset: int) -> tuple[int, int]:
    """tree-sitter point of an offset: (row counted by "\\n", column in UTF-8 bytes)."""
    row = text.count("\n", 0, offset)
    return row, utf8_len(text[line_start(text, offset) : offset])


def line_start(text: str, offset: int) -> int:
    """The offset where the line holding `offset` starts."""
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """The offset of the "\\n" that ends the line holding `offset` (the text's end)."""
    end = text.find("\n", offset)
    return len(text) if end == -1 else end
