"""Where else the last edit applies: the other places its changed names occur.

A rename is rarely made once. The names the edit took away (identifiers its old
lines had more of than its new ones: `_tag2proc` in `self._tag2proc` ->
`self._tags2proc`) are read from the parse trees of the text before and after it,
and found in the rest of the document with tree-sitter, as identifier nodes only: a
name in a string or a comment is not code to change. A name taken away as an
attribute (`.result`, written so) is looked up as attributes only, a plain name as
plain names only. The edit's other substitutions (a changed piece of text, a whole
line changed: draft.py) are found as text outside strings and comments, and so are
the lines that lines it inserted follow and the twins of a line it appended text to
(line_edits.py); an edit made in a docstring or comment is carried there instead, as
whole lines only.

Only places within MAX_PLACE_LINES of the edit count. When none of them lies in the
window around the cursor but one does elsewhere, the window is widened to reach it
when that costs a few lines, or else moved to it: the model rewrites one window of
the usual size either way, so a request costs what it did. On the dev tasks the next
edit lies outside the cursor's window in 21 of 51; in 4 of them it is such a place
(docs/next-edit.md).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator

import tree_sitter

from ..edits import Edit
from ..syntax import STRING_OR_COMMENT, byte_offset, line_end, line_start
from .draft import is_import_line, piece_pattern, substitutions, word_pattern
from .line_edits import added, added_twins, anchors, insertion
from .trees import syntax_root
from .window import LINES_ABOVE, LINES_BELOW, Hunk, Window, choose_window, line_of, line_starts

log = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# Lines a window may grow by to reach a place instead of moving to it.
MAX_WIDEN_LINES = 6
# Lines kept below a place the window widens to (proposal.choose drops a change
# on the window's last line: the model may have stopped there, not ended).
MARGIN_LINES = 2
# A changed line or piece of text that recurs more often than this within
# MAX_PLACE_LINES of the edit (`try:`) points nowhere in particular: its places are
# not followed. Counted near the edit: a `# type: ignore` removed is followed to
# the one nearby though the file has ten.
MAX_TEXT_PLACES = 4
# Places farther than this from the edit (lines) are not followed. People's next
# edit is near their last: on the dev sets every right proposal lay within 24 lines
# of the edit and every one beyond 30 was wrong; and a change the user cannot see
# interrupts more than it helps. A rename that reaches further is a rename request.
MAX_PLACE_LINES = 30
# Larger documents are not searched: each request parses the text before and after
# the edit (about 35 ms per 100,000 characters each).
MAX_PARSE_CHARS = 300_000
# Code inside a string (f-string or template interpolations): its names count.
_CODE_IN_STRING = frozenset({"interpolation", "template_substitution"})


def removed_names(before: str, after: str, edit: Edit, language_id: str) -> list[str]:
    """Identifiers the edit took away: more of them on the lines it changed in
    `before` (the text before it) than on its lines in `after` (the text now),
    attributes written with their dot (`.result`). Words in strings and comments
    are not names. Empty without a grammar."""
    if max(len(before), len(after)) > MAX_PARSE_CHARS:
        return []
    old_root, new_root = syntax_root(language_id, before), syntax_root(language_id, after)
    if old_root is None or new_root is None:
        return []
    old = _names_on_lines(before, old_root, edit.start, edit.end)
    new = _names_on_lines(after, new_root, edit.start, edit.new_end)
    return sorted(name for name, count in old.items() if count > new[name])


def occurrence_lines(
    text: str,
    language_id: str,
    names: list[str],
    hunk: Hunk | None,
    skip: tuple[int, int] | None = None,
    scope: tuple[int, int] | None = None,
) -> list[int]:
    """The 0-based lines of `text` where `names` occur as identifiers, or the hunk's
    other substitutions as code (when they recur at most MAX_TEXT_PLACES times);
    lines in `skip` [a, b) (the edit) left out, as are those more than
    MAX_PLACE_LINES from it and those outside `scope` (the function a renamed local
    lives in: scope.py). Empty when the language has no grammar or the document is
    too large to parse."""
    root = syntax_root(language_id, text) if len(text) <= MAX_PARSE_CHARS else None
    if root is None:
        return []
    starts = line_starts(text)
    in_code = _edit_in_code(root, text, starts, skip)
    found: set[int] = set()
    used: set[int] = set()  # where a name the edit renamed in an import is used
    for name in names:
        pattern = word_pattern(name.lstrip("."), name.startswith("."))
        for match in pattern.finditer(text):
            if is_identifier(root, text, match.start(), match.end()):
                found.add(line_of(starts, match.start()))
    if hunk is not None and all(is_import_line(line) for line in hunk.after if line.strip()):
        used, found = found, set()
    for sub in substitutions(hunk) if hunk is not None else []:
        if sub.whole_word:
            continue  # a renamed identifier: one of the names
        lines = set()
        for match in piece_pattern(sub.old).finditer(text):
            at = match.start()
            line = line_of(starts, at)
            whole = text[starts[line] : line_end(text, at)].strip() == sub.old
            if (whole or not sub.whole_line) and _carried_to(root, text, at, whole, in_code):
                lines.add(line)
        if skip is not None:
            lines = {line for line in lines if nearby(line, skip)}
        if len(lines) <= MAX_TEXT_PLACES:
            found |= lines
    if scope is not None:
        found = {line for line in found if scope[0] <= line < scope[1]}
    found |= _line_edit_places(text, root, starts, hunk, skip, in_code)
    if skip is not None:
        found = {line for line in found if nearby(line, skip)}
        used -= set(range(*skip))
    return sorted(found | used)


def nearby(line: int, edited: tuple[int, int]) -> bool:
    """Is `line` outside the `edited` lines [a, b) and at most MAX_PLACE_LINES from them?"""
    first, end = edited
    return first - MAX_PLACE_LINES <= line < first or end <= line < end + MAX_PLACE_LINES


def _line_edit_places(
    text: str,
    root: tree_sitter.Node,
    starts: list[int],
    hunk: Hunk | None,
    skip: tuple[int, int] | None,
    in_code: bool,
) -> set[int]:
    """Where line_edits.py carries the hunk: the line below an anchor of inserted
    lines like the edit's own anchor, or a twin of the line text was appended to
    (in code if the edit was: `in_code`)."""
    ins = insertion(hunk) if hunk is not None else None
    add = added(hunk) if hunk is not None else None
    lines = text.split("\n")
    if ins is not None:
        anchor = skip[0] - 1 if skip is not None else -1
        kind = _line_in_code(root, text, starts, anchor) if anchor >= 0 else True
        found = anchors(lines, ins)
        return {i + 1 for i in found if _line_in_code(root, text, starts, i) == kind}
    if add is not None:
        twins = added_twins(lines, add, skip)
        return {i for i in twins if _line_in_code(root, text, starts, i) == in_code}
    return set()


def _carried_to(root: tree_sitter.Node, text: str, at: int, whole: bool, in_code: bool) -> bool:
    """Is a piece or line at `at` a place? In code, for an edit made in code; in a
    string or comment only as a whole line, for an edit made there: a piece of
    prose or of a template recurs by chance, a whole line copied does not."""
    if _in_code(root, text, at):
        return in_code
    return whole and not in_code


def _edit_in_code(
    root: tree_sitter.Node, text: str, starts: list[int], edited: tuple[int, int] | None
) -> bool:
    """Was the edit made in code (True unless its first line is in a string or a
    comment: a docstring's line)? Its pieces and lines are carried to the same
    kind of text: a docstring's `:raises:` line to the docstring of the sibling."""
    return edited is None or _line_in_code(root, text, starts, edited[0])


def _line_in_code(root: tree_sitter.Node, text: str, starts: list[int], line: int) -> bool:
    """Is the line's first character (after its indentation) code?"""
    if line >= len(starts):
        return True
    start = starts[line]
    body = text[start : line_end(text, start)]
    return _in_code(root, text, start + len(body) - len(body.lstrip()))


def target_window(
    text: str,
    cursor: int,
    focus: tuple[int, int] | None,
    places: list[int],
    above: int = LINES_ABOVE,
    below: int = LINES_BELOW,
) -> Window:
    """The window the model rewrites: around the cursor (and the edit in `focus`)
    unless none of `places` (lines) is in it; then widened to the nearest place if
    that adds at most MAX_WIDEN_LINES, else moved to it (the same size)."""
    window = choose_window(text, cursor, focus, above, below)
    inside = [p for p in places if window.first_line <= p < window.end_line]
    if inside and min(inside) == window.end_line - 1 and not window.at_end_of_file:
        # Only on the last line, where a change is never proposed: a few more lines.
        return choose_window(text, cursor, focus, above, below + MARGIN_LINES)
    if not places or inside:
        return window
    starts = line_starts(text)
    cursor_line = line_of(starts, cursor)
    nearest = min(places, key=lambda p: (abs(p - cursor_line), p))
    if nearest < window.first_line and window.first_line - nearest <= MAX_WIDEN_LINES:
        return choose_window(text, cursor, focus, above + window.first_line - nearest, below)
    if nearest >= window.end_line and nearest + 1 - window.end_line <= MAX_WIDEN_LINES:
        # Lines past the place too: a change on a window's last line is not proposed.
        extra = nearest + 1 - window.end_line + MARGIN_LINES
        return choose_window(text, cursor, focus, above, below + extra)
    log.debug("next edit: window moved from line %d to line %d", cursor_line, nearest)
    # The place's line start stands for the cursor: where the model should look.
    return choose_window(text, _first_char(text, starts[nearest]), None, above, below)


def is_identifier(root: tree_sitter.Node, text: str, start: int, end: int) -> bool:
    """Is text[start:end] exactly one identifier node, in code?"""
    lo, hi = byte_offset(text, start), byte_offset(text, end)
    node = root.descendant_for_byte_range(lo, hi)
    if node is None or not node.type.endswith("identifier"):
        return False
    if (node.start_byte, node.end_byte) != (lo, hi):
        return False
    return _in_code(root, text, start)


def identifiers_on_lines(
    text: str, root: tree_sitter.Node, start: int, end: int
) -> Iterator[re.Match[str]]:
    """The identifiers in code on the whole lines holding text[start:end]."""
    first = line_start(text, start)
    last = line_end(text, max(start, end - 1))
    for match in _IDENTIFIER.finditer(text, first, last):
        if is_identifier(root, text, match.start(), match.end()):
            yield match


def _names_on_lines(text: str, root: tree_sitter.Node, start: int, end: int) -> Counter[str]:
    """The identifiers on the whole lines holding text[start:end], attributes
    with their dot."""
    names: Counter[str] = Counter()
    for match in identifiers_on_lines(text, root, start, end):
        dot = "." if match.start() > 0 and text[match.start() - 1] == "." else ""
        names[dot + match.group()] += 1
    return names


def _in_code(root: tree_sitter.Node, text: str, offset: int) -> bool:
    """Is the character at `offset` code, not inside a string or comment?"""
    at = byte_offset(text, offset)
    node: tree_sitter.Node | None = root.descendant_for_byte_range(at, at + 1)
    while node is not None:
        if node.type in _CODE_IN_STRING:
            return True
        if node.type in STRING_OR_COMMENT:
            return False
        node = node.parent
    return True


def _first_char(text: str, line_start: int) -> int:
    """The line's first non-blank character (its start, if it is blank)."""
    end = line_end(text, line_start)
    line = text[line_start:end]
    return line_start + len(line) - len(line.lstrip())
