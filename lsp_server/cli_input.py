"""The command line's input: a source file, a 1-based position, a line range.

Each is checked before any model loads, so a typo costs nothing and says what
was wrong in one line. A file that cannot be used is `CannotError` (exit 1);
a position or flag that does not fit it is `UsageError` (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from speculator.syntax import MAX_DOCUMENT_CHARS
from speculator.types import EngineError
from speculator.validate import check_text

from .cli_common import CannotError, UsageError
from .convert import LineIndex

# The engine's limit in characters; a UTF-8 character is at most 4 bytes.
MAX_FILE_BYTES = 4 * MAX_DOCUMENT_CHARS


def read_source(path_text: str) -> str:
    path = Path(path_text)
    if not path.exists():
        raise CannotError(f"no such file: {path_text}")
    if not path.is_file():
        raise CannotError(f"not a file: {path_text}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CannotError(f"cannot read {path_text}: {exc.strerror or exc}") from None
    if not data.strip():
        raise CannotError(f"{path_text} is empty")
    if len(data) > MAX_FILE_BYTES:
        raise CannotError(f"{path_text} is too large ({len(data)} bytes; limit {MAX_FILE_BYTES})")
    if b"\x00" in data:  # anywhere, as groundspec/complete refuses (UTF-8 has no other NUL)
        raise CannotError(f"{path_text} looks binary (it contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")  # editors do not show or count a BOM
    except UnicodeDecodeError:
        raise CannotError(f"{path_text} is not UTF-8 text") from None
    try:
        check_text(text)  # the engine's own limits, here before the models load
    except EngineError as exc:
        raise CannotError(f"{path_text}: {exc}") from None
    return text


def parse_location(location: str) -> tuple[str, int, int]:
    """PATH:LINE:COL, 1-based; PATH may itself contain colons."""
    parts = location.rsplit(":", 2)
    if len(parts) != 3 or not _is_number(parts[1]) or not _is_number(parts[2]):
        raise UsageError(f"expected PATH:LINE:COL with numbers, got {location!r}")
    line, col = int(parts[1]), int(parts[2])
    if line < 1 or col < 1:
        raise UsageError("LINE and COL are 1-based")
    return parts[0], line, col


def cursor_offset(text: str, line: int, col: int) -> int:
    """Offset of 1-based LINE:COL (COL counts characters; one past the end is allowed)."""
    index = LineIndex(text)
    if line > index.line_count:
        raise UsageError(f"line {line} is past the end of the file ({index.line_count} lines)")
    row = index.line_text(line - 1)
    if col > len(row) + 1:
        raise UsageError(f"column {col} is past the end of line {line} ({len(row)} characters)")
    return index.starts[line - 1] + col - 1


def line_range(text: str, spec: str) -> tuple[int, int]:
    """Offsets covering whole lines A-B (1-based, inclusive)."""
    a_text, sep, b_text = spec.partition("-")
    if not sep:
        b_text = a_text
    if not _is_number(a_text) or not _is_number(b_text):
        raise UsageError(f"--lines expects A-B with numbers, got {spec!r}")
    a, b = int(a_text), int(b_text)
    index = LineIndex(text)
    # The empty rest after a final line break is no line to select (as wc -l counts).
    ends_with_break = len(text) > 0 and index.line_start(index.line_count - 1) == len(text)
    lines = index.line_count - 1 if ends_with_break else index.line_count
    if a < 1 or b < a:
        raise UsageError(f"invalid line range {spec}: it must be 1-based with A <= B")
    if b > lines:
        raise UsageError(f"line {b} is past the end of the file ({lines} lines)")
    end = index.starts[b] if b < index.line_count else len(text)
    return index.starts[a - 1], end


def _is_number(text: str) -> bool:
    """Plain digits 0-9 (str.isdigit also takes "²", which int() refuses)."""
    return text.isascii() and text.isdigit()


def check_request_flags(args: argparse.Namespace) -> None:
    """The limits groundspec/complete and groundspec/refactor put on the same fields."""
    from .options import MAX_TOKENS

    if not 1 <= args.max_tokens <= MAX_TOKENS:
        raise UsageError(f"--max-tokens must be between 1 and {MAX_TOKENS}, got {args.max_tokens}")
    if not 0.0 <= args.temperature <= 2.0:  # NaN fails too
        raise UsageError(f"--temperature must be between 0 and 2, got {args.temperature}")
