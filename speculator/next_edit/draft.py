"""The draft of a next edit: the window as it is, with the user's last edit
carried to the other places it applies.

The draft is what grounded speculation copies from: the decoder verifies it in
batches and generates only where the model's rewrite departs from it. It never
decides the output (greedy decoding does), so a wrong substitution costs a
rejected draft, not a wrong suggestion.

Substitutions are read from the last edit by diffing its old and new lines word
by word: a renamed identifier (`name -> attr_name`), a changed piece of text
(`{"firstresult": True} -> firstresult=True`, `0, 1, 10 -> 10`), or a whole line
changed the same way wherever it recurs (`pass -> ...`). Lines inserted after a
line are inserted after its twins too, text appended to a line is appended to
the lines that begin and end as it did (line_edits.py), and an argument or a
parameter added is carried to the other calls or into the body (call_edits.py).
A renamed attribute (`self.result -> self._result`) is carried only to
attributes, a renamed plain name only to plain names: the parameter `result` is
another variable. Word pairs come only from a line whose words were replaced in
place: where words were also added or removed (`H.wait(function() ... end)` ->
`H.client()`), the line was rewritten, and `wait -> client` is no rename.
A name renamed to a builtin (`List -> list`) is not renamed in import lines:
nobody imports `list`; the import is left for the user to remove.
"""

from __future__ import annotations

import builtins
import difflib
import keyword
import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from ..edits import common_ends
from .line_edits import (
    added,
    adds_no_cover,
    carry_added,
    carry_insertion,
    in_excluded_block,
    indentation,
    insertion,
    remark,
)
from .window import Hunk

# Marks a line that a rewrite deletes while the other rules run (draft_window).
_DELETED = "\x00deleted\x00"

_WORD = re.compile(r"\w+|\s+|[^\w\s]")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# A line that is a string alone (a docstring: `"""Api2 hook"""`), not code that
# starts with one (`"key": value,`).
_STRING_LINE = re.compile(r"""\s*[rRbBuU]{0,2}(?:"{3}|'{3}|"[^"]*"\s*$|'[^']*'\s*$)""")
_IMPORT_LINE = re.compile(r"\s*(?:from\s+[\w.]+\s+)?import\s")
# A changed piece of text shorter than this (bar whitespace) is too common to
# substitute blindly: "0" -> "1" would change every 0 in the window.
MIN_PIECE_CHARS = 4
# Unless the user made the same short change on this many lines: then it is a
# mechanical one (a space dropped in each `# type: ignore[a, b]`), carried with the
# token on each side of it.
MIN_SHORT_REPEATS = 2
# Words that are the language's own, not names: `None -> object` on one line is a
# change of that line's logic, not a rename to carry (Python's keywords, and the
# literals of the other languages).
KEYWORDS = frozenset(keyword.kwlist) | {"true", "false", "null", "nil", "undefined", "this"}
# Python's builtin names: used without an import.
BUILTINS = frozenset(dir(builtins))
# A line whose words changed in more ways than this was rewritten (a comment
# reworded), not renamed: `window -> of`, `a -> in` are not carried.
MAX_WORD_CHANGES = 2


@dataclass(frozen=True)
class Substitution:
    old: str
    new: str
    whole_word: bool  # identifiers: only where they stand as a word
    whole_line: bool = False  # a line equal to `old` (stripped) becomes `new`
    member: bool = False  # an identifier after a `.`: only such ones are replaced


def substitutions(hunk: Hunk) -> list[Substitution]:
    """What the edit changed, as substitutions to try elsewhere."""
    found: list[Substitution] = []
    short: list[Substitution] = []
    if len(hunk.before) == len(hunk.after):
        for old_line, new_line in zip(hunk.before, hunk.after, strict=True):
            if old_line != new_line:
                found += _line_substitutions(old_line, new_line)
                short += _widened_span(old_line, new_line)
    repeated = [sub for sub, n in Counter(short).items() if n >= MIN_SHORT_REPEATS]
    return _distinct(found + repeated)


def _widened_span(old_line: str, new_line: str) -> list[Substitution]:
    """A line's change too short to carry alone (`[assignment, misc]` ->
    `[assignment,misc]`: a space), with the token on each side of it: a piece to
    carry where the user made it on several lines (MIN_SHORT_REPEATS). None for a
    change at a line's start or end (`# ` commenting it out: line_edits.py)."""
    old_words, new_words = _WORD.findall(old_line.rstrip()), _WORD.findall(new_line.rstrip())
    head, tail = common_ends(old_words, new_words)
    old_span = "".join(old_words[head : len(old_words) - tail])
    new_span = "".join(new_words[head : len(new_words) - tail])
    if len(old_span.strip()) >= MIN_PIECE_CHARS or _IDENTIFIER.fullmatch(new_span):
        return []  # carried as it is, or a rename (_word_pairs)
    before, after = _token_before(old_words, head), _token_before(old_words[::-1], tail)
    if before is None or after is None:
        return []
    old = "".join(old_words[before : len(old_words) - after])
    new = "".join(new_words[before : len(new_words) - after])
    return [Substitution(old, new, False)] if len(old.strip()) >= MIN_PIECE_CHARS else []


def _token_before(words: list[str], at: int) -> int | None:
    """The index of the last token before `at` that is not whitespace, if any."""
    return next((i for i in range(at - 1, -1, -1) if not words[i].isspace()), None)


def _line_substitutions(old_line: str, new_line: str) -> list[Substitution]:
    old_line, new_line = old_line.rstrip(), new_line.rstrip()
    if new_line.startswith(old_line) and remark(new_line[len(old_line) :]):
        return []  # a comment for people explains this line only (line_edits.remark)
    if _prose(new_line) and not _prose(old_line):
        return []  # code made a docstring or a comment: it explains this place only
    found: list[Substitution] = []
    if old_line.strip() and new_line.strip():
        found.append(Substitution(old_line.strip(), new_line.strip(), False, whole_line=True))
    old_words, new_words = _WORD.findall(old_line), _WORD.findall(new_line)
    return found + _word_pairs(old_words, new_words) + _changed_span(old_words, new_words)


def _prose(line: str) -> bool:
    """Is `line` a string or a comment for people (not a tool's directive)?"""
    return remark(line) or _STRING_LINE.match(line) is not None


def _word_pairs(old_words: list[str], new_words: list[str]) -> list[Substitution]:
    """Each word (or piece) replaced in place, when that is all the line's change
    was: words added or removed, or more than MAX_WORD_CHANGES pairs (a sentence
    reworded), mean the line was rewritten, not renamed."""
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if any(tag != "replace" for tag, *_ in changed):
        return []
    pairs: list[Substitution] = []
    for _tag, a1, a2, b1, b2 in changed:
        old, new = "".join(old_words[a1:a2]), "".join(new_words[b1:b2])
        if not KEYWORDS.isdisjoint(old_words[a1:a2] + new_words[b1:b2]):
            continue  # `not in` -> `!=`, `None` -> `object`: that line's logic changed
        if _IDENTIFIER.fullmatch(old) and _IDENTIFIER.fullmatch(new):
            member = a1 > 0 and old_words[a1 - 1] == "."
            pairs.append(Substitution(old, new, True, member=member))
        elif len(old.strip()) >= MIN_PIECE_CHARS:
            pairs.append(Substitution(old, new, False))
    if len({(p.old, p.new) for p in pairs}) > MAX_WORD_CHANGES:
        return []
    if {p.new for p in pairs} & {p.old for p in pairs}:
        return []  # `a, b` -> `c, a`: the names moved to other values, none was renamed
    return pairs


def _changed_span(old_words: list[str], new_words: list[str]) -> list[Substitution]:
    """The words between the first and the last that differ, as one piece: a
    change made of several word-level steps (`{"a": 1}` -> `a=1`) or of a removal."""
    head, tail = common_ends(old_words, new_words)
    old_span = old_words[head : len(old_words) - tail]
    old, new = "".join(old_span), "".join(new_words[head : len(new_words) - tail])
    if sum(not w.isspace() for w in old_span) < 2 or len(old.strip()) < MIN_PIECE_CHARS:
        return []  # one word (`dict(x)` -> `(x)`) is too common to carry; a rename is not
    if old.strip() == "".join(old_words).strip():
        return []  # the whole line: a whole-line substitution
    if _replaces_keyword(old_span, new_words[head : len(new_words) - tail]):
        return []  # `None] | None` -> `T_UNSET] | T_UNSET`: that line's logic changed
    return [Substitution(old, new, False)]


def _replaces_keyword(old_words: list[str], new_words: list[str]) -> bool:
    """Does a keyword or literal stand in place of another word, either way?"""
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    return any(
        tag == "replace" and not KEYWORDS.isdisjoint(old_words[a1:a2] + new_words[b1:b2])
        for tag, a1, a2, b1, b2 in matcher.get_opcodes()
    )


def renames(hunk: Hunk | None) -> list[tuple[str, str]]:
    """The plain names (not attributes) the edit renamed, as (old, new)."""
    subs = substitutions(hunk) if hunk is not None else []
    return [(sub.old, sub.new) for sub in subs if sub.whole_word and not sub.member]


def _distinct(subs: list[Substitution]) -> list[Substitution]:
    seen: set[tuple[str, str, bool]] = set()
    kept = []
    for sub in subs:
        key = (sub.old, sub.new, sub.whole_line)
        if key not in seen and sub.old != sub.new:
            seen.add(key)
            kept.append(sub)
    return kept


def apply_substitutions(
    window: str,
    subs: list[Substitution],
    skip_lines: tuple[int, int] | None = None,
    within: tuple[int, int] | None = None,
) -> str:
    """The window with each substitution made on every line outside `skip_lines`
    (the window lines [a, b) the user's edit occupies: already done there) and, when
    the edit renamed a local, inside `within` (its function's lines: scope.py)."""
    if not subs:
        return window
    lines = window.split("\n")
    imports = _import_lines(lines)
    for i, line in enumerate(lines):
        if skip_lines is not None and skip_lines[0] <= i < skip_lines[1]:
            continue
        if within is not None and not within[0] <= i < within[1]:
            continue
        new = _substituted(line, _without_renames_to_builtins(subs) if i in imports else subs)
        if not (adds_no_cover(line, new) and in_excluded_block(lines, i)):
            lines[i] = new
    return "\n".join(lines)


def _without_renames_to_builtins(subs: list[Substitution]) -> list[Substitution]:
    """`subs` without the renames to a builtin (`List -> list`): for import lines."""
    return [sub for sub in subs if not (sub.whole_word and sub.new in BUILTINS)]


def is_imported(text: str, name: str) -> bool:
    """Does an import statement of `text` name `name`?"""
    lines = text.split("\n")
    pattern = word_pattern(name, member=False)
    return any(pattern.search(lines[i]) for i in _import_lines(lines))


def is_import_line(line: str) -> bool:
    """Does `line` begin an import statement?"""
    return _IMPORT_LINE.match(line) is not None


def _import_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines of import statements."""
    return {i for start, end in import_statements(lines) for i in range(start, end)}


def import_statements(lines: list[str]) -> list[tuple[int, int]]:
    """The lines [start, end) of each import statement (`from x import (` to its `)`)."""
    found: list[tuple[int, int]] = []
    in_parens = False
    for i, line in enumerate(lines):
        if in_parens:
            found[-1] = (found[-1][0], i + 1)
        elif is_import_line(line):
            found.append((i, i + 1))
        else:
            continue
        in_parens = (in_parens or "(" in line) and ")" not in line
    return found


def _substituted(line: str, subs: list[Substitution]) -> str:
    for sub in subs:
        if sub.whole_line:
            if line.strip() == sub.old:
                return indentation(line) + sub.new
            continue
        if sub.whole_word:
            line = word_pattern(sub.old, sub.member).sub(sub.new.replace("\\", "\\\\"), line)
        elif sub.old in line and (not sub.new or sub.new not in line):
            line = piece_pattern(sub.old).sub(sub.new.replace("\\", "\\\\"), line)
    return line


def piece_pattern(piece: str) -> re.Pattern[str]:
    """A changed piece of text where it stands as whole words: a piece that begins
    or ends with a word character not inside a longer word. The piece was whole
    words where the user changed it; `window -> 37` from a comment's words must not
    make `choose_window` into `choose_37`."""
    before = r"(?<!\w)" if re.match(r"\w", piece) else ""
    after = r"(?!\w)" if re.search(r"\w$", piece) else ""
    return re.compile(before + re.escape(piece) + after)


def word_pattern(name: str, member: bool) -> re.Pattern[str]:
    """`name` as a whole word: after a `.` (an attribute) or, if not `member`, not.
    Never `super().name`: the base class's member keeps its name when a subclass
    renames its own (`def shutdown` -> `def _shutdown` over `super().shutdown()`)."""
    before = r"(?<=\.)(?<!super\(\)\.)" if member else r"(?<![\w.])"
    return re.compile(rf"{before}{re.escape(name)}(?!\w)")


def draft_window(
    window: str,
    hunk: Hunk | None,
    skip_lines: tuple[int, int] | None,
    rewrites: Mapping[int, str | None] | None = None,
    scope: tuple[int, int] | None = None,
    members: Collection[str] = (),
    renames: bool = True,
) -> str:
    """The window with the last edit's substitutions, and the lines it inserted
    (line_edits.py), carried to its other lines; `rewrites`: window lines written
    anew by call_edits.py (an argument or a parameter carried on), lint_fixes.py
    (None: a line deleted) or across.py (a rename made in another file; `hunk`
    None: nothing else is carried); `scope`: the
    window lines a renamed local's substitutions are confined to (scope.py);
    `members`: names renamed where they are declared as members (a field, a
    method), renamed only as attributes (members.py); not
    `renames`: the draft without the renamed words (is a change a rename's?)."""
    if rewrites:
        # A deleted line stays as a marker until the end, so that `skip_lines` and
        # `scope` still count the window's lines as they are.
        lines = window.split("\n")
        written = (rewrites.get(i, line) for i, line in enumerate(lines))
        window = "\n".join(_DELETED if line is None else line for line in written)
    if hunk is not None:
        subs = [sub for sub in substitutions(hunk) if renames or not sub.whole_word]
        subs = [replace(s, member=True) if s.whole_word and s.old in members else s for s in subs]
        lines = apply_substitutions(window, subs, skip_lines, scope).split("\n")
        ins, add = insertion(hunk), added(hunk)  # at most one of them
        if ins is not None:
            lines = carry_insertion(lines, ins, skip_lines)
        elif add is not None:
            lines = carry_added(lines, add, skip_lines)
        window = "\n".join(lines)
    return "\n".join(line for line in window.split("\n") if line != _DELETED)
