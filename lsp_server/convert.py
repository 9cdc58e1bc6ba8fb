"""LSP positions (0-based line, UTF-16 code units) <-> Python string offsets.

The engine works on code-point offsets into a Python string; LSP counts
UTF-16 units, so an astral character (emoji) is one code point but two units.
LSP line breaks are "\\n", "\\r\\n" and "\\r" (not the extra ones str.splitlines knows).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

import numpy as np
import numpy.typing as npt
from lsprotocol import types

_EOL = re.compile(r"\r\n|\r|\n")


class PositionError(ValueError):
    """A position that does not exist in the document (line past the end)."""


def utf16_len(text: str) -> int:
    """Number of UTF-16 code units in `text`."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (valid in JSON strings) is one unit, as in the editor.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_to_codepoints(line: str, units: int) -> int:
    """Code-point index in `line` of a UTF-16 column, clamped to the line.

    A column inside a surrogate pair stays before that character.
    """
    if line.isascii():
        return min(units, len(line))
    count = 0
    for index, char in enumerate(line):
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            return index
    return len(line)


class LineIndex:
    """Line starts of one text snapshot, for position <-> offset conversion.

    The starts live in a numpy array: after an edit, shifting the starts of
    the 100,000 lines below it is one vector add instead of a Python loop."""

    def __init__(self, text: str, starts: npt.NDArray[np.int64] | None = None) -> None:
        self.text = text
        if starts is None:
            found = [0] + [m.end() for m in _EOL.finditer(text)]
            starts = np.array(found, dtype=np.int64)
        self._starts = starts

    @property
    def starts(self) -> list[int]:
        """Offsets where the lines start (a copy, as Python ints)."""
        return [int(s) for s in self._starts]

    def edited(self, start: int, end: int, new: str, text: str) -> LineIndex:
        """The index of `text`, which is this text with [start, end) replaced by `new`.

        Costs a short rescan around the edit instead of the whole text (a 2 MB
        document takes 70 ms to index). Line starts before `start` and after
        `end` cannot change, except by a "\r" + "\n" joining or splitting at
        the edges, which the rescan of one character either side covers."""
        starts = self._starts
        low = max(1, int(np.searchsorted(starts, start, "left")))
        high = max(low, int(np.searchsorted(starts, end + 1, "left")))
        delta = len(new) - (end - start)
        window_start = max(0, start - 1)
        window = text[window_start : start + len(new) + 1]
        middle = [
            window_start + m.end()
            for m in _EOL.finditer(window)
            if start <= window_start + m.end() <= start + len(new)
        ]
        tail = starts[high:] + delta
        return LineIndex(text, np.concatenate((starts[:low], np.array(middle, np.int64), tail)))

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, line: int) -> int:
        return int(self._starts[line])

    def line_text(self, line: int) -> str:
        """The line's text without its line break."""
        start = self.line_start(line)
        end = self.line_start(line + 1) if line + 1 < self.line_count else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset(self, position: types.Position, *, strict: bool = True) -> int:
        """Offset of an LSP position.

        A character past the end of its line means the end of the line (the LSP
        spec says so). A line past the end raises PositionError when `strict`,
        else means the end of the text (how editors' own buffers clamp).
        """
        if position.line < 0 or position.character < 0:
            raise PositionError(f"negative position {position.line}:{position.character}")
        if position.line >= self.line_count:
            if strict:
                raise PositionError(
                    f"line {position.line} is past the end of the document "
                    f"({self.line_count} lines)"
                )
            return len(self.text)
        line = self.line_text(position.line)
        return self.line_start(position.line) + utf16_to_codepoints(line, position.character)

    def position(self, offset: int) -> types.Position:
        """LSP position of an offset (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        line = int(np.searchsorted(self._starts, offset, "right")) - 1
        start = self.line_start(line)
        return types.Position(line=line, character=utf16_len(self.text[start:offset]))

    def offsets(self, range_: types.Range, *, strict: bool = True) -> tuple[int, int]:
        start = self.offset(range_.start, strict=strict)
        end = self.offset(range_.end, strict=strict)
        if end < start:
            raise PositionError("range end is before its start")
        return start, end

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))


def uri_to_path(uri: str) -> str | None:
    """The file system path of a file: URI, None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path) or None
