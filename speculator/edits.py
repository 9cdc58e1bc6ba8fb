"""Edit history for next-edit suggestions: what the user changed lately, as a person
would name it (a word typed, a line pasted, a rename), per open document.

A didChange batch arrives as replacements of one span by another, each against the
text the previous one left. Keystrokes that touch the last edit's span (typing on at
its end, a backspace into it, retyping a selected name) merge into that edit, so ten
keystrokes of a new name are one edit `old name -> new name`. An edit elsewhere, or
after a pause, starts a new one. Merges that end where they began (typed, then
deleted) leave nothing.

Edits hold offsets into the text before them, so the text before any of a document's
recent edits is rebuilt from the current text by undoing the newer ones
(`EditHistory.snapshots`); nothing but the edits themselves is stored. Memory is
bounded: a few edits per document, a character budget for each, a few documents.
"""

from __future__ import annotations

import difflib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Edits kept per document, and in other documents (the prompt shows a few).
MAX_EDITS = 6
MAX_DOCUMENTS = 32
# Characters of removed + inserted text kept per document: a pasted file is one
# edit too, but a second one pushes the first out.
MAX_CHARS = 32_000
# Keystrokes this far apart (seconds) are separate edits even where they touch.
MERGE_GAP_S = 8.0


@dataclass(frozen=True)
class Edit:
    """`old` at `start` of the text before the edit was replaced by `new`."""

    start: int
    old: str
    new: str
    at: float = 0.0  # when it was last extended (seconds, monotonic)

    @property
    def end(self) -> int:
        """End of the replaced span, in the text before the edit."""
        return self.start + len(self.old)

    @property
    def new_end(self) -> int:
        """End of the inserted span, in the text after the edit."""
        return self.start + len(self.new)

    def undo(self, after: str) -> str:
        """The text before this edit, from the text right after it."""
        return after[: self.start] + self.old + after[self.new_end :]

    def apply(self, before: str) -> str:
        return before[: self.start] + self.new + before[self.end :]


def merge(first: Edit, second: Edit) -> Edit | None:
    """One edit doing `first` then `second`, when `second` touches what `first`
    inserted (overlaps it or starts/ends right at it); else None.

    `second` is in the coordinates of the text after `first`. The result is in
    the coordinates of the text before `first`."""
    s2, e2 = second.start, second.end
    if e2 < first.start or s2 > first.new_end:
        return None
    lo = min(first.start, s2)
    # The text after `first` from `lo` on: second.old covers [s2, e2) of it.
    lead = second.old[: first.start - s2] if s2 < first.start else ""
    trail = second.old[first.new_end - s2 :] if e2 > first.new_end else ""
    span_after_first = lead + first.new + trail
    merged_new = span_after_first[: s2 - lo] + second.new + span_after_first[e2 - lo :]
    return Edit(lo, lead + first.old + trail, merged_new, second.at)


def lines_with_ends(text: str) -> list[str]:
    """The lines of `text` with their ends, split at "\\n" only, as every line number
    here counts them: str.splitlines also splits at "\\r", form feeds and U+2028,
    which would number a file holding one differently."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def common_ends(old: Sequence[object], new: Sequence[object]) -> tuple[int, int]:
    """How many items (characters, bytes, words) two sequences share at the start,
    and then at the end."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def trimmed(edit: Edit) -> Edit | None:
    """The edit without the text its old and new spans share at either end;
    None when nothing changed."""
    old, new = edit.old, edit.new
    head, tail = common_ends(old, new)
    if head == len(old) == len(new):
        return None
    return Edit(
        edit.start + head, old[head : len(old) - tail], new[head : len(new) - tail], edit.at
    )


class DocumentEdits:
    """One document's recent edits, oldest first, newest last.

    Each is kept as typed, spanning every keystroke merged into it, and trimmed
    only when read (`recent`): `side` deleted, then `l`, `e` typed reads as `sid ->
    l` (the `e` is shared), but the `n` typed next must still touch the edit."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []

    def record(self, edit: Edit, merge_gap_s: float = MERGE_GAP_S) -> None:
        last = self.edits[-1] if self.edits else None
        if last is not None and edit.at - last.at <= merge_gap_s:
            merged = merge(last, edit)
            if merged is not None:
                self.edits.pop()
                if trimmed(merged) is not None:  # typed, then deleted: nothing
                    self.edits.append(merged)
                return
        if trimmed(edit) is not None:
            self.edits.append(edit)
        self._bound()

    def recent(self) -> list[Edit]:
        """The edits, oldest first, each without the text its two sides share."""
        return [kept for edit in self.edits if (kept := trimmed(edit)) is not None]

    def _bound(self) -> None:
        while len(self.edits) > MAX_EDITS:
            self.edits.pop(0)
        while len(self.edits) > 1 and sum(len(e.old) + len(e.new) for e in self.edits) > MAX_CHARS:
            self.edits.pop(0)


class EditHistory:
    """Recent edits of every open document; the least recently edited documents
    are forgotten first (MAX_DOCUMENTS), and a closed one at once."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._docs: OrderedDict[str, DocumentEdits] = OrderedDict()

    def record(self, uri: str, start: int, old: str, new: str) -> None:
        """`old` at `start` became `new` (offsets into the text before this change)."""
        doc = self._docs.pop(uri, None) or DocumentEdits()
        self._docs[uri] = doc  # most recently edited last
        doc.record(Edit(start, old, new, self.clock()))
        while len(self._docs) > MAX_DOCUMENTS:
            self._docs.popitem(last=False)

    def reset(self, uri: str) -> None:
        """The whole text was replaced: earlier offsets mean nothing now."""
        self._docs.pop(uri, None)

    def forget(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def edits(self, uri: str) -> list[Edit]:
        doc = self._docs.get(uri)
        return doc.recent() if doc else []

    def elsewhere(self, uri: str, limit: int = 3) -> list[tuple[str, Edit]]:
        """The newest edits made in other documents, newest first."""
        found: list[tuple[str, Edit]] = []
        for other, doc in reversed(self._docs.items()):
            if other != uri:
                found += [(other, e) for e in reversed(doc.recent())]
        found.sort(key=lambda item: item[1].at, reverse=True)
        return found[:limit]


def snapshots(current: str, edits: list[Edit]) -> list[str]:
    """The text before each edit, and the current text last: len(edits) + 1 texts.
    The edits must be the document's, oldest first, ending with its newest."""
    texts = [current]
    for edit in reversed(edits):
        texts.append(edit.undo(texts[-1]))
    texts.reverse()
    return texts


def spans_now(edits: Sequence[Edit]) -> list[tuple[int, int]]:
    """Where each edit's new text lies in the text after the last one: [start, end)
    offsets, oldest first, a span grown over any later edit that overlapped it.
    The edits must be a chain, each against the text the one before it left."""
    spans: list[tuple[int, int]] = []
    for edit in edits:
        spans = [_shifted(span, edit) for span in spans]
        spans.append((edit.start, edit.new_end))
    return spans


def _shifted(span: tuple[int, int], edit: Edit) -> tuple[int, int]:
    start, end = span
    delta = len(edit.new) - len(edit.old)
    if edit.end <= start:
        return start + delta, end + delta  # before it (or inserted at its start)
    if edit.start >= end:
        return start, end  # after it
    return min(start, edit.start), max(end, edit.end) + delta


def edits_between(old: str, new: str, newest_line: int | None = None) -> list[Edit]:
    """The changes from `old` to `new` as an edit chain (each edit against the text the
    one before it left), one edit per run of changed lines, top to bottom, except
    that the run nearest `newest_line` (a 0-based line of `new`) comes last: it is
    taken as the user's latest edit. Keeps the last MAX_EDITS.

    For `groundspec next-edit`, whose history is a file's uncommitted changes."""
    old_lines = lines_with_ends(old)
    new_lines = lines_with_ends(new)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    runs = [op[1:] for op in matcher.get_opcodes() if op[0] != "equal"]
    if newest_line is not None and runs:
        nearest = min(runs, key=lambda r: _distance(newest_line, r[2], r[3]))
        runs.remove(nearest)
        runs.append(nearest)
    current = list(old_lines)
    applied: list[tuple[int, int, int]] = []  # (old line, old length, new length) done
    chain = []
    for a1, a2, b1, b2 in runs:
        # Where the run starts now: shifted by the runs above it applied before.
        at = a1 + sum(nl - ol for line, ol, nl in applied if line < a1)
        start = sum(len(line) for line in current[:at])
        removed = "".join(current[at : at + a2 - a1])
        added = "".join(new_lines[b1:b2])
        chain.append(Edit(start, removed, added))
        current[at : at + a2 - a1] = new_lines[b1:b2]
        applied.append((a1, a2 - a1, b2 - b1))
    return [e for e in (trimmed(e) for e in chain) if e is not None][-MAX_EDITS:]


def _distance(line: int, first: int, end: int) -> int:
    if first <= line < max(end, first + 1):
        return 0
    return min(abs(line - first), abs(line - (end - 1)))
