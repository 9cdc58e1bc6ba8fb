"""Where a next edit may go: a window of whole lines around the cursor and the
user's last edit, and the recent edits as line hunks (what the prompts show).

Offsets are Python string offsets into the document's current text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import overload

from ..edits import Edit, snapshots, spans_now
from ..syntax import utf8

# Lines the model rewrites around the cursor. On the dev tasks the next edit lies
# in this window (widened to the last edit) in 30 of 51, in 8 above and 12 below
# in 37 (docs/next-edit.md); each line more is paid in prompt and output tokens.
LINES_ABOVE = 6
LINES_BELOW = 8
# Recent edits are shown with this many unchanged lines around them.
DIFF_CONTEXT = 2
# The most lines of one side of an edit shown in a prompt.
MAX_HUNK_LINES = 24

# A draft-only model scores the draft's change reading only this many lines above
# and below it (the full window only finds the change). On the dev tasks that
# ask, new prompt tokens fell by 30% (mean 290 -> 204) with the same proposals
# right (9) and wrong (4); 3 lines scored the same and proposed one more wrong.
SCORE_CONTEXT_LINES = 2


@dataclass(frozen=True)
class Window:
    """Lines [first_line, end_line) of the text: offsets [start, end)."""

    first_line: int
    end_line: int
    start: int
    end: int
    text: str
    cursor: int | None  # the cursor's offset in `text`; None: the cursor is elsewhere
    at_end_of_file: bool


@dataclass(frozen=True)
class Hunk:
    """One recent edit as whole lines: `before` lines became `after` lines,
    starting at line `first_line` (0-based) of the text before the edit."""

    path: str
    first_line: int
    before: list[str]
    after: list[str]
    context_above: list[str]
    context_below: list[str]

    def unified(self, numbered: bool = True, context: int = DIFF_CONTEXT) -> str:
        """The hunk as a unified diff body (no file header), with at most `context`
        unchanged lines each side; not `numbered`: its header a bare `@@`."""
        above = self.context_above[-context:] if context else []
        below = self.context_below[:context]
        start = self.first_line - len(above)
        old_len = len(above) + len(self.before) + len(below)
        new_len = len(above) + len(self.after) + len(below)
        numbers = f" -{start + 1},{old_len} +{start + 1},{new_len} @@" if numbered else ""
        lines = [f"@@{numbers}"]
        lines += [" " + line for line in above]
        lines += ["-" + line for line in self.before]
        lines += ["+" + line for line in self.after]
        lines += [" " + line for line in below]
        return "\n".join(lines) + "\n"


def line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def line_of(starts: list[int], offset: int) -> int:
    """The 0-based line holding `offset` (bisect over line starts)."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


@overload
def edited_lines(text: str, edit: Edit) -> tuple[int, int]: ...
@overload
def edited_lines(text: str, edit: None) -> None: ...
@overload
def edited_lines(text: str, edit: Edit | None) -> tuple[int, int] | None: ...
def edited_lines(text: str, edit: Edit | None) -> tuple[int, int] | None:
    """Lines [first, end) of the current text that the edit's new text occupies
    (an edit that only deleted: the line where it happened, end = first + 1)."""
    if edit is None:
        return None
    starts = line_starts(text)
    first = line_of(starts, edit.start)
    last = line_of(starts, max(edit.start, edit.new_end - 1))
    return first, last + 1


def recent_lines(text: str, edits: list[Edit], count: int) -> list[tuple[tuple[int, int], str]]:
    """The lines [first, end) of the current text that each of the newest `count`
    edits wrote, and the text it removed: newest first. `edits` is the document's
    chain, oldest first, ending with its newest."""
    starts = line_starts(text)
    found = []
    for edit, (start, end) in list(zip(edits, spans_now(edits), strict=True))[::-1][:count]:
        first = line_of(starts, start)
        found.append(((first, line_of(starts, max(start, end - 1)) + 1), edit.old))
    return found


def choose_window(
    text: str,
    cursor: int,
    focus: tuple[int, int] | None = None,
    above: int = LINES_ABOVE,
    below: int = LINES_BELOW,
) -> Window:
    """Whole lines from `above` lines over the cursor (or the edit in focus, if it
    starts higher) to `below` lines under the cursor (or under the focus)."""
    starts = line_starts(text)
    total = len(starts) if not text.endswith("\n") else len(starts) - 1
    total = max(total, 1)
    cursor_line = line_of(starts, cursor)
    top, bottom = cursor_line, cursor_line + 1
    if focus is not None:
        top, bottom = min(top, focus[0]), max(bottom, focus[1])
    first = max(0, top - above)
    end = min(total, bottom + below)
    start_offset = starts[first]
    end_offset = starts[end] if end < len(starts) else len(text)
    return Window(
        first_line=first,
        end_line=end,
        start=start_offset,
        end=end_offset,
        text=text[start_offset:end_offset],
        cursor=min(max(cursor - start_offset, 0), end_offset - start_offset),
        at_end_of_file=end_offset >= len(text),
    )


def scoring_window(text: str, lines: tuple[int, int], cursor: int) -> Window:
    """The lines a draft-only model reads to score a change on document `lines`
    [a, b): those and SCORE_CONTEXT_LINES around them, the user's `cursor` marked if
    it lies among them. Not marked elsewhere: a marker at an import's place held the
    model to the text there (confidence 0.002 against 0.62 without it)."""
    at = line_starts(text)[lines[0]]
    scored = choose_window(text, at, lines, SCORE_CONTEXT_LINES, SCORE_CONTEXT_LINES)
    inside = scored.start <= cursor <= scored.end
    return replace(scored, cursor=cursor - scored.start if inside else None)


def hunk_of(before_text: str, edit: Edit, path: str, context: int = DIFF_CONTEXT) -> Hunk:
    """The edit (made on `before_text`) as whole lines with context around them."""
    after_text = edit.apply(before_text)
    old_starts = line_starts(before_text)
    first = line_of(old_starts, edit.start)
    old_last = line_of(old_starts, max(edit.start, edit.end - 1)) if edit.old else first
    new_starts = line_starts(after_text)
    new_last = line_of(new_starts, max(edit.start, edit.new_end - 1)) if edit.new else first
    old_lines = before_text.split("\n")
    new_lines = after_text.split("\n")
    before = old_lines[first : old_last + 1][:MAX_HUNK_LINES]
    after = new_lines[first : new_last + 1][:MAX_HUNK_LINES]
    if not edit.old and edit.new.endswith("\n") and edit.start == old_starts[first]:
        before = []  # whole lines inserted before `first`
        after = new_lines[first : first + edit.new.count("\n")][:MAX_HUNK_LINES]
    if not edit.new and edit.old.endswith("\n") and edit.start == old_starts[first]:
        after = []  # whole lines deleted
        before = old_lines[first : first + edit.old.count("\n")][:MAX_HUNK_LINES]
    end_old = first + len(before)
    return Hunk(
        path=path,
        first_line=first,
        before=before,
        after=after,
        context_above=old_lines[max(0, first - context) : first],
        context_below=old_lines[end_old : end_old + context],
    )


def recent_hunks(text: str, edits: list[Edit], path: str, limit: int = 3) -> list[Hunk]:
    """The document's newest edits (oldest of them first) as hunks."""
    texts = snapshots(text, edits)
    hunks = [hunk_of(texts[i], edit, path) for i, edit in enumerate(edits)]
    return [h for h in hunks if h.before != h.after][-limit:]


def lines_in_window(window: Window, lines: tuple[int, int] | None) -> tuple[int, int] | None:
    """Document lines [a, b) as lines of the window, None when they lie outside it
    (a window moved to another place of the last edit's names)."""
    if lines is None or lines[1] <= window.first_line or lines[0] >= window.end_line:
        return None
    return lines[0] - window.first_line, lines[1] - window.first_line


def clipped_to_window(window: Window, lines: tuple[int, int] | None) -> tuple[int, int] | None:
    """Document lines [a, b) as the window's lines they cover (empty when none)."""
    if lines is None:
        return None
    first = min(max(lines[0] - window.first_line, 0), window.end_line - window.first_line)
    return first, max(first, min(lines[1], window.end_line) - window.first_line)


def original_window(text: str, edits: list[Edit], window: Window) -> str:
    """The window's lines as they were before the last edit (shifted by the lines
    it added or removed); the window as it is when the last edit was elsewhere."""
    if not edits:
        return window.text
    before = snapshots(text, edits[-1:])[0]
    last = edits[-1]
    delta = last.new.count("\n") - last.old.count("\n")
    lines = before.split("\n")
    first, end = window.first_line, window.end_line
    if window.start >= last.new_end:  # below the edit (a moved window): all shifted
        first, end = max(0, first - delta), end - delta
    elif window.end > last.start:  # the window holds the edit
        end -= delta
    return "".join(line + "\n" for line in lines[first : max(first, end)])


def lines_with_insertions(text: str, inserts: list[tuple[int, str]]) -> dict[int, str]:
    """The lines of `text` (by 0-based number) that change when each piece is
    inserted at its byte offset into the UTF-8 text (as a syntax tree counts)."""
    rewrites = lines_with_replacements(text, [(at, at, piece) for at, piece in inserts])
    return {i: line for i, line in rewrites.items() if line is not None}


def lines_with_replacements(
    text: str, replacements: list[tuple[int, int, str]]
) -> dict[int, str | None]:
    """The lines of `text` (by 0-based number) that change when each byte range
    [start, end) of the UTF-8 text is replaced by its piece: the first line of a
    range gets the range's lines as replaced (two lines or more when the piece
    adds some), the lines after it None (deleted). Ranges that overlap are left out."""
    data = utf8(text)
    starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
    blocks: list[tuple[int, int, list[tuple[int, int, str]]]] = []
    done = 0
    for start, end, piece in sorted(replacements):
        if start < done:
            continue  # overlaps the one before
        first, last = bisect_right(starts, start) - 1, bisect_right(starts, end) - 1
        if blocks and first <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(last, blocks[-1][1]), blocks[-1][2])
        else:
            blocks.append((first, last, []))
        blocks[-1][2].append((start, end, piece))
        done = max(done, end)
    lines = text.split("\n")
    rewrites: dict[int, str | None] = {}
    for first, last, pieces in blocks:
        block_end = starts[last + 1] - 1 if last + 1 < len(starts) else len(data)
        block = data[starts[first] : block_end]
        for start, end, piece in reversed(pieces):
            at, to = start - starts[first], end - starts[first]
            block = block[:at] + utf8(piece) + block[to:]
        try:
            new = block.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            continue  # a range that splits a character (a tree of broken text)
        if new != lines[first] or last > first:
            rewrites[first] = new
        rewrites.update(dict.fromkeys(range(first + 1, last + 1)))
    return rewrites
