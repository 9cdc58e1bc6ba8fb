"""Split source text into line chunks and reduce text to identifier sets.

Pure functions used by the workspace index (speculator/workspace.py). A chunk
is a run of about `target_lines` whole lines; it ends where a top-level line
(no indentation) starts, so a chunk tends to hold whole definitions, like
llama.vim's ring of chunks but cut on syntax-free boundaries that work for
every language.
"""

from __future__ import annotations

import re
import sys

# Identifiers of 3+ characters: shorter ones (i, x, id) match everywhere and
# carry no signal about which file is related.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


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

    A chunk closes at the first top-level line after `target_lines` lines, and
    always by 1.5 x `target_lines` lines or `max_chars` characters (minified
    files). Blank-only chunks are dropped.
    """
    lines = text.splitlines(keepends=True)
    hard_limit = target_lines + target_lines // 2
    pieces: list[tuple[int, str]] = []
    start = 0
    size = 0
    for i, line in enumerate(lines):
        n = i - start
        top_level = bool(line) and not line[0].isspace()
        if n >= hard_limit or size + len(line) > max_chars or (n >= target_lines and top_level):
            _append(pieces, start, lines[start:i], max_chars)
            start, size = i, 0
        size += len(line)
    _append(pieces, start, lines[start:], max_chars)
    return pieces


def _append(pieces: list[tuple[int, str]], start: int, lines: list[str], max_chars: int) -> None:
    text = "".join(lines)
    if text.strip():
        pieces.append((start, text[:max_chars]))  # only a single huge line is cut
