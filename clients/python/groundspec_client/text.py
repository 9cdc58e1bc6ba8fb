"""LSP positions in Python strings, edits, and what scripts do with a result."""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path
from typing import Any

from .results import Range

LANGUAGE_IDS = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
}

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (LSP's `character` unit)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def offset(text: str, line: int, character: int) -> int:
    """String index of the LSP position (line, UTF-16 character) in `text`.
    Lines end at "\r\n", "\r" or "\n", as LSP says (and the server counts)."""
    start = 0
    for _ in range(line):
        found = _LINE_BREAK.search(text, start)
        if found is None:
            return len(text)
        start = found.end()
    found = _LINE_BREAK.search(text, start)
    row = text[start : len(text) if found is None else found.start()]
    units = 0
    for index, char in enumerate(row):
        if units >= character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(row)


def position(text: str, index: int) -> dict[str, int]:
    """The LSP position of string index `index` in `text` (the inverse of `offset`)."""
    before = text[:index]
    breaks = list(_LINE_BREAK.finditer(before))
    line_start = breaks[-1].end() if breaks else 0
    return {"line": len(breaks), "character": utf16_len(before[line_start:])}


def apply_edit(text: str, range_: Range | dict[str, Any], new_text: str) -> str:
    """`text` with the LSP `range` replaced by `new_text` (a refactor result)."""
    if isinstance(range_, Range):
        start = offset(text, range_.start.line, range_.start.character)
        end = offset(text, range_.end.line, range_.end.character)
    else:
        start = offset(text, range_["start"]["line"], range_["start"]["character"])
        end = offset(text, range_["end"]["line"], range_["end"]["character"])
    return text[:start] + new_text + text[end:]


def changed_span(old: str, new: str) -> tuple[int, int, str]:
    """(start, end, replacement): the one edit of `old` that gives `new`, as small as
    a common prefix and suffix make it (what an editor's didChange would send)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    # Never split a "\r\n": LSP has no position between its two characters.
    if prefix and old[prefix - 1] == "\r":
        prefix -= 1
    if suffix and old[len(old) - suffix] == "\n":
        suffix -= 1
    return prefix, len(old) - suffix, new[prefix : len(new) - suffix]


def write_or_show_diff(path: str | os.PathLike[str], old: str, new: str, write: bool) -> None:
    """Write the rewritten text to `path`, or print a unified diff of the change
    to stdout (for scripts whose default is to show what they would change)."""
    if write:
        Path(path).write_text(new, encoding="utf-8")
        return
    name = str(path)
    diff = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), name, name
    )
    sys.stdout.writelines(diff)


def language_id(path: str | os.PathLike[str]) -> str:
    return LANGUAGE_IDS.get(Path(path).suffix.lower(), "plaintext")
