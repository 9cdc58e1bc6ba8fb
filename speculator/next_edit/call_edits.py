"""A call or a signature changed, carried on, beside draft.py's substitutions:

- an argument added to one call (`shlex.split(line)` -> `shlex.split(line,
  comments=True)`) is added to the other calls of the same function that lack it;
  one added last without a name fills the same parameter only in calls with as
  many arguments, none unpacked or named (`cmd_output('git', 'ls-files', '-z')` gaining
  `'--deduplicate'` says nothing of `cmd_output(*diff_cmd, ref)`);
- a parameter added with a name as its default (`timeout: float = TIMEOUT_S`)
  takes that name's place in the function's body: the body now reads the parameter;
- a Go function's results grown by an `error` reach its returns and its
  callers (results.py), and an error assigned gets its check (error_checks.py);
- a function made async is awaited where async code calls it (awaits.py);
- a parameter added to a constructor is stored where the others are, and one
  added to a wrapper passed on where the others are (new_parameters.py);
- a required parameter added is passed by the callers that have a value of that
  name (caller_arguments.py), and one removed is no longer passed
  (dropped_arguments.py).

Both give lines of the document rewritten, by line number: the draft writes them
(draft.py) and the window follows them as it follows renames (core.prepare).
Only a one-line change that inserted text, and nothing else, is read this way.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..edits import common_ends
from ..syntax import byte_offset
from .awaits import awaited_call_lines
from .caller_arguments import caller_argument_lines
from .draft import word_pattern
from .dropped_arguments import dropped_argument_lines
from .error_checks import error_check_lines
from .line_edits import indentation
from .new_parameters import forwarded_parameter_lines, stored_parameter_lines
from .occurrences import nearby
from .results import short_assignment_lines, short_return_lines
from .window import Hunk, line_of, line_starts, lines_with_insertions

_CALLEE = re.compile(r"[A-Za-z_][\w.]*$")
_KEYWORD_ARGUMENT = re.compile(r"\s*(\w+)\s*=(?!=)")
_DEF = re.compile(r"\s*(async\s+)?def\s")
# What comes before a definition's name: `def`, `class`, `function`, `fn`, Go's
# `func` and a Go method's `func (s *Store)`.
_SIGNATURE_HEAD = re.compile(r"\b(def|class|function|fn)\s+$|\bfunc\s*(\([^()]*\)\s*)?$")
# `, name: type = DEFAULT` or `name=DEFAULT, ` inserted into a signature.
_PARAMETER = re.compile(r",?\s*(\w+)\s*(?::[^=,]+)?=\s*([A-Za-z_][\w.]*)\s*,?\s*")
# A call's parentheses are looked for this far (characters): calls are short.
MAX_CALL_CHARS = 2000
# A signature spans at most this many lines above the changed one.
MAX_SIGNATURE_LINES = 15
# The body a new parameter's default is replaced in: at most this many lines.
MAX_BODY_LINES = 200
# Larger documents are not searched (as occurrences.MAX_PARSE_CHARS).
MAX_SCAN_CHARS = 300_000


@dataclass(frozen=True)
class ArgumentInsertion:
    """`text` inserted into a call of `callee`: after its `(` when `first`, else
    before its `)`, where the call had `arguments`."""

    callee: str
    text: str
    first: bool
    arguments: int = 0

    @property
    def positional_last(self) -> bool:
        """An argument without a name, added after the others: its parameter is
        the one at its position."""
        done = self.text.strip(", ")
        return not self.first and not _KEYWORD_ARGUMENT.match(done) and not done.startswith("*")


@dataclass(frozen=True)
class NewParameter:
    """A parameter `name` added to a signature with the name `default` as its default."""

    name: str
    default: str


def carried_lines(
    text: str,
    hunk: Hunk | None,
    focus: tuple[int, int] | None,
    language_id: str,
    before: str | None = None,
) -> dict[int, str | None]:
    """Lines of `text` (by 0-based number) rewritten with the hunk's argument or
    parameter carried on, with the values its Go function's returns now lack, with
    the calls of a function it made async awaited, or with a new parameter stored,
    passed on or passed by its callers (a line may become two); the lines in
    `focus` [a, b), the user's edit, left out. An import the edit needs is
    drafted apart (imports.py), for as long as any recent edit leaves its name
    unbound: before or after these.
    `before`: the text before the edit, where an argument that a call no longer
    passes is read (dropped_arguments.py; its lines deleted are None)."""
    if hunk is None or focus is None or len(text) > MAX_SCAN_CHARS:
        return {}
    rewrites = short_assignment_lines(text, focus, language_id)
    rewrites.update(short_return_lines(text, focus, language_id))
    rewrites.update(error_check_lines(text, focus, language_id))
    rewrites.update(awaited_call_lines(text, focus, language_id))
    rewrites.update(stored_parameter_lines(text, focus, language_id))
    rewrites.update(caller_argument_lines(text, focus, hunk.before, language_id))
    ins = argument_insertion(hunk)
    if ins is not None:
        rewrites.update(_with_argument(text, ins, focus))
    param = new_parameter(hunk) if language_id == "python" else None
    # A new parameter takes its default's place in the body or, where the body does
    # not use its default, is passed on as the others are: one or the other.
    replaced = _default_replaced(text, param, focus, rewrites) if param is not None else {}
    rewrites.update(replaced or forwarded_parameter_lines(text, focus, language_id))
    if before is None:
        return dict(rewrites)
    return {**dropped_argument_lines(text, before, focus, language_id), **rewrites}


def _default_replaced(
    text: str, param: NewParameter, focus: tuple[int, int], rewrites: dict[int, str]
) -> dict[int, str]:
    """The body's lines (as `rewrites` wrote them) with the new parameter in its
    default's place."""
    lines = text.split("\n")
    default = word_pattern(param.default, member=False)
    replaced = {}
    for i in body_lines(lines, focus):
        new = default.sub(param.name, rewrites.get(i, lines[i]))
        if new != lines[i]:
            replaced[i] = new
    return replaced


def argument_insertion(hunk: Hunk) -> ArgumentInsertion | None:
    """The argument a one-line edit inserted into a call, None if it did something else."""
    inserted = _inserted(hunk)
    if inserted is None:
        return None
    old, at, text = inserted
    if not re.search(r"\w", text) or len(text.strip()) < 2:
        return None
    if at > 0 and old[at - 1] == "(":
        opening, first, arguments = at - 1, True, 0
    elif at < len(old) and old[at] == ")":
        found = _opening(old, at)
        if found is None:
            return None
        opening, first, arguments = found, False, len(_arguments(old[found + 1 : at]))
    else:
        return None
    callee = _CALLEE.search(old[:opening])
    if callee is None or keyword.iskeyword(callee.group().split(".")[-1]):
        return None
    if _SIGNATURE_HEAD.search(old[: callee.start()]):
        return None  # a signature: new_parameter's, or caller_arguments.py's
    return ArgumentInsertion(callee.group(), text, first, arguments)


def new_parameter(hunk: Hunk) -> NewParameter | None:
    """The parameter a one-line edit added with a name as its default, if it did."""
    inserted = _inserted(hunk)
    if inserted is None:
        return None
    old, at, text = inserted
    match = _PARAMETER.fullmatch(text)
    if match is None or "(" not in old[:at] and not hunk.context_above:
        return None
    name, default = match.groups()
    if default in ("None", "True", "False", "self", name) or keyword.iskeyword(default):
        return None
    return NewParameter(name, default)


def body_lines(lines: list[str], focus: tuple[int, int]) -> list[int]:
    """The lines of the body of the function whose signature holds line focus[0]
    (none when no `def` is found above it)."""
    top = next(
        (
            i
            for i in range(focus[0], max(-1, focus[0] - MAX_SIGNATURE_LINES), -1)
            if _DEF.match(lines[i])
        ),
        None,
    )
    if top is None:
        return []
    # The signature ends at the first line ending in `:` from the def on.
    end = next(
        (
            i
            for i in range(top, min(len(lines), top + MAX_SIGNATURE_LINES))
            if _ends_block(lines[i])
        ),
        None,
    )
    if end is None or end < focus[0]:
        return []
    depth = len(indentation(lines[top]))
    body = []
    for i in range(end + 1, min(len(lines), end + 1 + MAX_BODY_LINES)):
        if lines[i].strip() and len(indentation(lines[i])) <= depth:
            break
        body.append(i)
    return body


def _inserted(hunk: Hunk) -> tuple[str, int, str] | None:
    """For a hunk that changed one line by inserting text into it: the old line,
    where the text went, and the text."""
    head, tail = common_ends(hunk.before, hunk.after)
    if len(hunk.before) != len(hunk.after) or len(hunk.before) - head - tail != 1:
        return None
    old, new = hunk.before[head], hunk.after[head]
    first, last = common_ends(old, new)
    if first + last != len(old) or len(new) <= len(old):
        return None
    return old, first, new[first : len(new) - last]


def _opening(line: str, closing: int) -> int | None:
    """Where the `(` matching the `)` at `closing` is, if on the line."""
    depth = 0
    for i in range(closing, -1, -1):
        depth += {")": 1, "(": -1}.get(line[i], 0)
        if depth == 0:
            return i
    return None


def _closing(text: str, opening: int) -> int | None:
    """Where the `)` matching the `(` at `opening` is (strings skipped roughly)."""
    stop = min(len(text), opening + MAX_CALL_CHARS)
    for i, char, depth in _code_chars(text, opening, stop):
        if char in ")]}" and depth == 0:
            return i if char == ")" else None
    return None


def _code_chars(text: str, start: int, stop: int) -> Iterator[tuple[int, str, int]]:
    """Each character of text[start:stop] outside strings (found roughly: no
    prefixes, no triple quotes), with the depth of brackets after it."""
    depth, quote = 0, ""
    for i in range(start, stop):
        char = text[i]
        if quote:
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
        else:
            depth += (char in "([{") - (char in ")]}")
            yield i, char, depth


def _with_argument(text: str, ins: ArgumentInsertion, focus: tuple[int, int]) -> dict[int, str]:
    """The lines where other calls of the callee get the inserted argument."""
    starts = line_starts(text)
    done = ins.text.strip(", ")
    keyword_arg = _KEYWORD_ARGUMENT.match(done)
    positional_last = ins.positional_last
    inserts: list[tuple[int, str]] = []
    for match in re.finditer(rf"(?<![\w.]){re.escape(ins.callee)}\s*\(", text):
        line = line_of(starts, match.start())
        opening = match.end() - 1
        closing = _closing(text, opening)
        if not nearby(line, focus) or closing is None:
            continue
        args = text[opening + 1 : closing]
        if done in args or keyword_arg and re.search(rf"\b{keyword_arg[1]}\s*=", args):
            continue
        if positional_last and not _same_slots(args, ins.arguments):
            continue
        if not args.strip():
            inserts.append((opening + 1, done))
        elif ins.first:
            inserts.append((opening + 1, ins.text))
        elif not args.rstrip().endswith(","):
            inserts.append((closing, ins.text))
    return lines_with_insertions(text, [(byte_offset(text, at), piece) for at, piece in inserts])


def _same_slots(args: str, count: int) -> bool:
    """Are `args` `count` arguments, none unpacked (`*rest`) or named?"""
    found = _arguments(args)
    named = any(a.startswith("*") or _KEYWORD_ARGUMENT.match(a) for a in found)
    return len(found) == count and not named


def _arguments(args: str) -> list[str]:
    """A call's arguments, split at its own commas."""
    found, start = [], 0
    for i, char, depth in _code_chars(args, 0, len(args)):
        if char == "," and depth == 0:
            found.append(args[start:i].strip())
            start = i + 1
    found.append(args[start:].strip())
    return [a for a in found if a]


def _ends_block(line: str) -> bool:
    code = line.split("#", 1)[0].rstrip()
    return code.endswith(":")
