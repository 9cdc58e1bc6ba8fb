"""Split source text into line chunks and reduce text to identifier sets.

Pure functions used by the workspace index (speculator/workspace.py). Chunks
are aligned to definitions: a chunk starts where a function, method or class
starts (found by a cheap pattern that covers Python, JS/TS, Go, Rust and the
like, so the index needs no parser), so the prompt gets a similar definition
whole rather than the tail of one and the head of the next. Code outside
definitions is cut into runs of about `target_lines` lines at top-level lines,
like llama.vim's ring of chunks.
"""

from __future__ import annotations

import re
import sys

# Identifiers of 3+ characters: shorter ones (i, x, id) match everywhere and
# carry no signal about which file is related.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

# The first line of a definition (or of its decorators). Group 1: a container
# (class, impl, ...), whose nested definitions start chunks of their own.
_DEFINITION = re.compile(
    r"[ \t]*(?:@\w"
    r"|(?:export\s+)?(?:default\s+)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
    r"(?:(class|impl|struct|enum|trait|interface)|def|function\*?|func|fn)\b"
    r"|(?:export\s+)?(?:const|let|var)\s+\w+\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|\w+\s*=>|\(\s*$))"
)
MIN_CHUNK_LINES = 6  # smaller runs (decorators, a class line) join the next definition


class Chunk:
    """Lines [start_line, start_line + n) of one file, with its identifier set."""

    __slots__ = ("path", "start_line", "text", "tokens")

    def __init__(self, path: str, start_line: int, text: str) -> None:
        self.path = path
        self.start_line = start_line  # 0-based
        self.text = text
        self.tokens = identifiers(text)


def identifiers(text: str) -> tuple[str, ...]:
    """The distinct identifiers of `text`, interned so chunks share the strings."""
    return tuple(sys.intern(word) for word in dict.fromkeys(_IDENT.findall(text)))


def split_lines(text: str, target_lines: int = 32, max_chars: int = 4096) -> list[tuple[int, str]]:
    """Cut `text` into (start_line, chunk_text) pieces.

    A chunk closes before a definition that is not nested in the one the chunk
    started with (once the chunk has MIN_CHUNK_LINES lines), before the first
    top-level line after `target_lines` lines, and always by 2 x `target_lines`
    lines or `max_chars` characters (minified files). Blank-only chunks are dropped.
    """
    lines = text.splitlines(keepends=True)
    hard_limit = 2 * target_lines
    pieces: list[tuple[int, str]] = []
    start = size = 0
    # Indentation of the function the chunk started with: definitions nested
    # deeper stay in it. Chunks of containers or loose code cut at any definition.
    scope = _NO_DEFINITION
    pending = True  # no line but blanks and decorators yet: the scope is not known
    for i, line in enumerate(lines):
        n = i - start
        indent, container = _definition(line)
        new_definition = indent is not None and indent <= scope and n >= MIN_CHUNK_LINES
        top_level = bool(line) and not line[0].isspace()
        if (
            n >= hard_limit
            or size + len(line) > max_chars
            or new_definition
            or (n >= target_lines and top_level)
        ):
            _append(pieces, start, lines[start:i], max_chars)
            start, size, pending, scope = i, 0, True, _NO_DEFINITION
        if pending and line.strip() and not line.lstrip().startswith("@"):
            pending = False
            if indent is not None and not container:
                scope = indent
        size += len(line)
    _append(pieces, start, lines[start:], max_chars)
    return pieces


_NO_DEFINITION = 1 << 30


def _definition(line: str) -> tuple[int | None, bool]:
    """(indentation, is a container) of a line that starts a definition, else (None, False)."""
    match = _DEFINITION.match(line)
    if match is None:
        return None, False
    return len(line) - len(line.lstrip(" \t")), match.group(1) is not None


def _append(pieces: list[tuple[int, str]], start: int, lines: list[str], max_chars: int) -> None:
    text = "".join(lines)
    if text.strip():
        pieces.append((start, text[:max_chars]))  # only a single huge line is cut
