"""Lines inserted after a line, carried on: the same lines inserted after the other
lines equal to it (`raise PluginValidationError(` given a new first argument),
indented as each of them is. And text appended to a line (`  # pragma: no cover`
after `except AttributeError:`), appended to the lines built as that line was
(`except Exception:`: the same tokens, bar names, numbers and strings); text added
at its start (`# ` commenting it out, `await `), to the lines that begin and end
with the same words as that line did; an `f` prefix, only to the strings that
have a `{` to fill. A comment appended is carried only when
a tool reads it (`# type: ignore[x]`): one written for people explains the line
it was put on; `# pragma: no cover` is not carried into a block that it already
excludes. Beside draft.py's substitutions, which change lines in place.

Lines compare stripped. More than MAX_INSERTED_LINES inserted are a new block. An
anchor shorter than MIN_ANCHOR_CHARS (`try:`, `else:`) or recurring more than
MAX_ANCHOR_PLACES times points nowhere in particular and is not followed. Pasted
lines are not carried the other way (deleted where they also stand): right after
a paste, copying is likelier than moving.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..edits import common_ends
from .window import Hunk

MAX_ANCHOR_PLACES = 4
MIN_ANCHOR_CHARS = 12
# More lines than this are a new block, not a change to repeat (and a hunk shows
# at most window.MAX_HUNK_LINES of them: a longer one would be carried cut).
MAX_INSERTED_LINES = 8
# Text appended shorter than this (bar whitespace: `,`, `)`) is finishing the line,
# not a change to repeat. At a line's start one character (`#`) is a change.
MIN_APPENDED_CHARS = 2
_TOKEN = re.compile(r"\w+|[^\w\s]")
# A line's build (_shape): string literals, then words (names, keywords, numbers).
_STRING = re.compile(r"[rRbBuUfF]*(?:'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\")")
_WORD = re.compile(r"\w+")
_WORD_PAIR = re.compile(r"\w\w")
# A string prefix that makes an f-string (`f"`, `rf'`): it fills the string's `{}`.
_F_PREFIX = re.compile(r"[rRbB]?[fF][rRbB]?$")
# A special method's definition (`def __init__(`).
_SPECIAL_DEF = re.compile(r"\s*def\s+__\w+__\s*\(")
_COMMENT = re.compile(r"\s*(?:#|//|--)")
# A comment a tool reads: a lowercase word that a colon, a bracket or an `=` follows,
# or that ends it (`# pragma: no cover`, `# type: ignore[x]`, `// @ts-ignore`, `# nosec`),
# or a hyphenated one (`// eslint-disable-line no-console`).
_DIRECTIVE = re.compile(r"\s*(?:#|//|--)\s*(?:@?[a-z][\w.-]*(?:[:\[=(]|\s*$)|[a-z]+-[\w-]+)")
# coverage.py's exclusion: on a line that opens a block it excludes the whole block,
# so it is not carried into a block already excluded.
_NO_COVER = re.compile(r"#\s*pragma:\s*no\s*cover", re.IGNORECASE)


@dataclass(frozen=True)
class Insertion:
    """Lines a hunk inserted (as written) below the line `anchor` (stripped)."""

    anchor: str
    indent: str  # the anchor line's indentation
    lines: tuple[str, ...]


def insertion(hunk: Hunk) -> Insertion | None:
    """The lines the hunk inserted whole, and the line above them; None when it
    replaced or deleted lines, or inserted blank ones."""
    before, after = hunk.before, hunk.after
    head, tail = common_ends(before, after)
    added = after[head : len(after) - tail]
    above = hunk.context_above + before[:head]
    if head + tail != len(before) or not any(line.strip() for line in added) or not above:
        return None
    if len(added) > MAX_INSERTED_LINES:
        return None
    anchor = above[-1].strip()
    if len(anchor) < MIN_ANCHOR_CHARS:
        return None
    return Insertion(anchor, indentation(above[-1]), tuple(added))


def anchors(lines: list[str], ins: Insertion) -> list[int]:
    """Indexes of the lines equal to the anchor that are not yet followed by the
    inserted lines (none when the anchor recurs too often)."""
    twins = [i for i, line in enumerate(lines) if line.strip() == ins.anchor]
    if len(twins) > MAX_ANCHOR_PLACES:
        return []
    done = [line.strip() for line in ins.lines]
    return [i for i in twins if [s.strip() for s in lines[i + 1 : i + 1 + len(done)]] != done]


def carry_insertion(lines: list[str], ins: Insertion, skip: tuple[int, int] | None) -> list[str]:
    """`lines` with the inserted lines after each anchor outside `skip` [a, b)."""
    at = {i for i in anchors(lines, ins) if _outside(i, skip)}
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i in at:
            out += [_reindented(new, ins.indent, indentation(line)) for new in ins.lines]
    return out


@dataclass(frozen=True)
class Added:
    """Text a hunk added at one end of one line (after its indentation, or at its
    end), and that line's first and last tokens and its shape (_shape) before it."""

    first: str
    last: str
    text: str
    at_start: bool
    shape: str


def added(hunk: Hunk) -> Added | None:
    """What the hunk added at the start or the end of its one line; None for any
    other edit."""
    if len(hunk.before) != 1 or len(hunk.after) != 1:
        return None
    old, new = hunk.before[0].rstrip(), hunk.after[0].rstrip()
    ends = _ends(old)
    if ends is None:
        return None
    if new.startswith(old) and len(new[len(old) :].strip()) >= MIN_APPENDED_CHARS:
        text = new[len(old) :]
        glued = _glued(old, text) or remark(text)
        return None if glued else Added(*ends, text, False, _shape(old))
    body, new_body = old.lstrip(), new.lstrip()
    if new.startswith(indentation(old)) and new_body.endswith(body) and new_body != body:
        text = new_body[: -len(body)]
        return None if _glued(text, body) else Added(*ends, text, True, _shape(old))
    return None


def remark(text: str) -> bool:
    """Is `text` a comment written for people (`# Defensive: see #3728`)? It explains
    the line it was put on; a tool's directive (_DIRECTIVE) repeats on its twins."""
    return _COMMENT.match(text) is not None and _DIRECTIVE.match(text) is None


def _glued(left: str, right: str) -> bool:
    """Do the two join inside a word (`count` + `er`: a word retyped, not added)?"""
    return _WORD_PAIR.fullmatch(left[-1:] + right[:1]) is not None


def added_twins(lines: list[str], add: Added, skip: tuple[int, int] | None) -> list[int]:
    """Indexes of the lines outside `skip` [a, b) that begin and end as the edited
    line did (none when more than MAX_ANCHOR_PLACES do), and for text appended at
    the end, are built as it was. What is appended speaks of what the line does: a
    finding silenced (`# noqa: UP036` on `if sys.version_info < (3, 10):`) is not
    one on a line that only begins and ends alike (`if sys.version_info < (3, 13)
    and ...:`), nor is an item added to a list's last line one for its other lines."""
    at = [
        i
        for i, line in enumerate(lines)
        if _outside(i, skip)
        and _ends(line) == (add.first, add.last)
        and _fills(line, add)
        and not (_NO_COVER.search(add.text) and in_excluded_block(lines, i))
    ]
    if len(at) > MAX_ANCHOR_PLACES:
        return []
    return [i for i in at if add.at_start or _shape(lines[i]) == add.shape]


def _fills(line: str, add: Added) -> bool:
    """Has `line` what the text added does something to? An `f` prefix on a string
    without a `{` would change nothing (and linters flag it). `async ` makes a
    coroutine, which no special method (`__init__`, `__repr__`) may be: Python
    calls those itself, and would not await them."""
    if add.at_start and _F_PREFIX.match(add.text) and "{" not in line:
        return False
    return not (add.at_start and add.text.strip() == "async" and _SPECIAL_DEF.match(line))


def adds_no_cover(old: str, new: str) -> bool:
    """Does `new` exclude from coverage the line `old` that was not?"""
    return _NO_COVER.search(new) is not None and _NO_COVER.search(old) is None


def in_excluded_block(lines: list[str], i: int) -> bool:
    """Does a block that holds line `i` open on a line excluded from coverage?"""
    indent = len(indentation(lines[i]))
    for line in reversed(lines[:i]):
        own = len(indentation(line))
        if not line.strip() or own >= indent:
            continue
        if _NO_COVER.search(line) and line.split("#")[0].rstrip().endswith(":"):
            return True
        indent = own
    return False


def carry_added(lines: list[str], add: Added, skip: tuple[int, int] | None) -> list[str]:
    """`lines` with the text added to the edited line's twins (added_twins)."""
    at = set(added_twins(lines, add, skip))
    return [_with_text(line, add) if i in at else line for i, line in enumerate(lines)]


def _with_text(line: str, add: Added) -> str:
    if add.at_start:
        return indentation(line) + add.text + line.lstrip()
    return line.rstrip() + add.text


def _outside(i: int, skip: tuple[int, int] | None) -> bool:
    return skip is None or not skip[0] <= i < skip[1]


def _shape(line: str) -> str:
    """How the line is built: its tokens with each string literal as `$` and each
    word (a name, a keyword, a number) as `w`. `assert isinstance(claims, dict)` and
    `assert isinstance(endpoint, BaseEndpoint)` are built alike."""
    code = _WORD.sub("w", _STRING.sub("$", line.strip()))
    return " ".join(_TOKEN.findall(code))


def _ends(line: str) -> tuple[str, str] | None:
    tokens = _TOKEN.findall(line)
    return (tokens[0], tokens[-1]) if tokens else None


def indentation(line: str) -> str:
    """The line's leading whitespace."""
    return line[: len(line) - len(line.lstrip())]


def _reindented(line: str, old: str, new: str) -> str:
    """`line`, written under an anchor indented `old`, under one indented `new`."""
    return new + line[len(old) :] if line.startswith(old) else line
