"""Where a completion stops and how it is cleaned up.

Rules (the most common complaints about completion tools):
- single-line vs multi-line, decided from the syntax at the cursor;
- never repeat the suffix: stop where the completion starts writing the text
  that already follows the cursor (closing brackets, the next line);
- brackets: a closer that would close a bracket opened before the cursor,
  which the suffix already closes, ends the completion;
- indentation: a multi-line completion ends when it dedents out of the block.
"""

from __future__ import annotations

import re
import textwrap

from .grounding import Grounding
from .syntax import line_end, line_start

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}
MAX_LINES = 16


def is_multiline(text: str, cursor: int, grounding: Grounding) -> bool:
    """Multi-line at an empty line or after a block opener; single-line otherwise."""
    before = text[line_start(text, cursor) : cursor]
    after = text[cursor : line_end(text, cursor)]
    if after.strip() or grounding.in_string_or_comment(cursor):
        return False
    return not before.strip() or before.rstrip().endswith((":", "{", "(", "[", "=>"))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class CompletionStop:
    """A stop rule for the decode loop: returns the cut index or None."""

    def __init__(self, text: str, cursor: int, multiline: bool):
        end = line_end(text, cursor)
        self.multiline = multiline
        self.rest_of_line = text[cursor:end].strip()
        self.cursor_column_text = text[line_start(text, cursor) : cursor]
        self.at_blank_line = not self.cursor_column_text.strip()
        self.base_indent = _indent(self.cursor_column_text)
        if not self.at_blank_line:  # after a block opener: the block is one level deeper
            self.base_indent += 1
        self.next_line = next((ln.strip() for ln in text[end + 1 :].split("\n") if ln.strip()), "")

    def __call__(self, completion: str) -> int | None:
        cut = self._bracket_cut(completion)
        if not self.multiline:
            newline = completion.find("\n")
            if newline >= 0:
                cut = newline if cut is None else min(cut, newline)
            return self._suffix_cut(completion, cut)
        return self._multiline_cut(completion, cut)

    def _bracket_cut(self, completion: str) -> int | None:
        """Stop before a closer that closes a bracket from before the cursor,
        when the rest of the line already holds that closer."""
        depth: list[str] = []
        for i, ch in enumerate(completion):
            if ch in OPENERS:
                depth.append(ch)
            elif ch in CLOSERS:
                if depth:
                    depth.pop()
                elif ch in self.rest_of_line:
                    return i
        return None

    def _suffix_cut(self, completion: str, cut: int | None) -> int | None:
        """Single line: drop a tail that repeats the rest of the current line."""
        if not self.rest_of_line:
            return cut
        head = completion if cut is None else completion[:cut]
        at = head.find(self.rest_of_line)
        if at >= 0:
            return at
        return cut

    def _block_indent(self, first_line: str) -> int:
        """The indentation a multi-line completion stays at or within. At a blank
        line the user may have typed only part of the indentation, so the first
        line written, once it has text, says where the block is."""
        if self.at_blank_line and first_line.strip():
            return _indent(self.cursor_column_text + first_line)
        return self.base_indent

    def _multiline_cut(self, completion: str, cut: int | None) -> int | None:
        offset = 0
        lines = completion.split("\n")
        complete = lines[:-1]  # the last line may still grow
        block = self._block_indent(lines[0])
        for n, line in enumerate(lines):
            stripped = line.strip()
            growing = n == len(complete)
            if n > 0 and stripped:
                # A line's indentation is final once it has text: a dedent ends
                # the completion without waiting for the line to end.
                dedented = _indent(line) < block
                repeats_suffix = not growing and self.next_line and stripped == self.next_line
                if dedented or repeats_suffix:
                    return _min(cut, offset - 1)
            if growing:
                break
            if n >= MAX_LINES:
                return _min(cut, offset - 1)
            offset += len(line) + 1
        if len(complete) >= 2 and not complete[-1].strip() and not complete[-2].strip():
            return _min(cut, offset - len(complete[-1]) - len(complete[-2]) - 2)
        return cut


class StopStrings:
    """llama-server's end for a completion that ends at the limit: nothing but its
    stop strings stops it (besides the token limit, end tokens and the context).
    The cut keeps the stop string: the caller drops it and names it."""

    def __init__(self, stops: list[str]):
        self.stops = [stop for stop in stops if stop]

    def __call__(self, completion: str) -> int | None:
        ends = [at + len(stop) for stop in self.stops if (at := completion.find(stop)) >= 0]
        return min(ends) if ends else None


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def finish_completion(completion: str, multiline: bool) -> str:
    """Final cleanup: no trailing blank lines or trailing spaces."""
    if multiline:
        completion = "\n".join(line.rstrip() for line in completion.split("\n")).rstrip("\n")
    return completion.rstrip() if not multiline else completion


# The end of a word that a deadline may have cut short.
_WORD_TAIL = re.compile(r"\w+$")


def cut_at_deadline(completion: str) -> str:
    """A completion that a deadline stopped, maybe mid-line: past its first
    line, less the unfinished last line; on its first line, less the last word,
    which may be half of one (`self._ready_no` of `self._ready_nodes`, a wrong
    name once accepted), unless that word is all there is."""
    head, newline, _last = completion.rpartition("\n")
    if newline and head.strip():
        return head
    trimmed = _WORD_TAIL.sub("", completion)
    return trimmed if trimmed.strip() else completion


def dedented_selection(text: str, start: int, end: int) -> tuple[str, str]:
    """(the selection as a refactor's prompt shows it, its lead).

    The lead is the whitespace before the selection on its first line when
    nothing else is there (a selection made from a `def` keyword): shown with
    it, the first line is indented like the rest. The code is then dedented,
    so a method reads as a function: shown indented, the model would make up
    a class around it or give its body the wrong depth."""
    lead = text[line_start(text, start) : start]
    lead = "" if lead.strip() else lead
    return textwrap.dedent(lead + text[start:end]), lead


def finish_refactor(output: str, selection: str, lead: str = "") -> str:
    """Give the rewrite the selection's indentation (`lead` + `selection`, less
    the lead, which the edit does not replace), its trailing newline and its
    line endings."""
    code = output.rstrip()
    if code.startswith("\n"):
        code = code[1:]
    want = _common_indent(lead + selection)
    have = _common_indent(code)
    if len(want) > len(have):
        code = "\n".join((want[len(have) :] + ln) if ln.strip() else ln for ln in code.split("\n"))
    if code.startswith(lead):
        code = code[len(lead) :]
    if selection.endswith("\n"):
        code += "\n"
    if _uses_crlf(selection):  # the model may write some lines with "\n" alone
        code = re.sub(r"\r?\n", "\r\n", code)
    return code


def _uses_crlf(text: str) -> bool:
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


def _common_indent(code: str) -> str:
    indents = [line[: _indent(line)] for line in code.split("\n") if line.strip()]
    if not indents:
        return ""
    return min(indents, key=len)
