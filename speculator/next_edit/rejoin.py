"""Where a next edit's rewrite stops early: one edit is proposed at a time, so once
the answer holds a whole change that could be proposed, the rest of the window
need not be written.

The rule (`RejoinStop`, a StopRule on the answer's text): stop at the end of the
first line where the answer
- holds a change that passes proposal.fits (not on the user's lines, not only
  whitespace, not a cut at the window's end), and
- has gone back to copying the window after it (the answer diffed line by line
  against the window, less the window's unwritten rest), up to a line that is
  not blank and occurs once in the window (a blank line or a lone `else:` could
  match a later place and misread where the answer is), and for more lines than
  the change before drops (a line rewritten like one further down reads, until
  then, as the lines between dropped and that one copied).

The unwritten rest is then taken as the window's own text (`rest`), never diffed
as deletions. The rule reads only the text, not the model's probabilities, so
`off` and `auto`, which write the same text, stop at the same place. What it
gives up: a later change of the same rewrite, even a more confident one, is not
written and so not a candidate (docs/next-edit.md measures how often on dev).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from ..edits import lines_with_ends
from .prompts import CURSOR_MARKER
from .proposal import candidates, fits, line_offsets
from .window import Window


@dataclass(frozen=True)
class Rejoined:
    cut: int  # characters into the answer: the end of the re-joined line
    window_line: int  # the window line the unwritten rest starts at


class RejoinStop:
    """The StopRule above for one window; `rest` completes an answer it cut."""

    def __init__(self, window: Window, user_lines: tuple[int, int] | None) -> None:
        self.window = window
        self.user_lines = user_lines
        self._lines = lines_with_ends(window.text)
        self._starts = line_offsets(self._lines)
        # The decoder asks after every token; the answer only matters line by line.
        self._memo: tuple[str, Rejoined | None] = ("", None)

    def __call__(self, text: str) -> int | None:
        found = self.find(text)
        return None if found is None else found.cut

    def rest(self, answer: str) -> str | None:
        """The window's text this rule leaves unwritten, when `answer` ends where
        the rule cuts it (else None: the answer is whole)."""
        found = self.find(answer)
        if found is None or found.cut != len(answer):
            return None
        return self.window.text[self._starts[found.window_line] :]

    def find(self, text: str) -> Rejoined | None:
        """The first place the rule holds in `text`'s whole lines, if any."""
        written = text[: text.rfind("\n") + 1]
        if written != self._memo[0]:
            self._memo = (written, self._first(written))
        return self._memo[1]

    def _first(self, written: str) -> Rejoined | None:
        """Whether the answer is copying the window now, placed by a unique line,
        after a change that fits. Only the run the answer ends in is read: the cut
        is always the end of what was written, so the answer it leaves (what finish
        reads) gives the same answer here."""
        raw = lines_with_ends(written)
        new = [line.replace(CURSOR_MARKER, "") for line in raw]
        old = self._lines
        ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        if ops and ops[-1][0] == "delete" and ops[-1][3] == len(new):
            ops.pop()  # the window's unwritten rest
        if len(ops) < 2 or ops[-1][0] != "equal" or ops[-1][4] != len(new):
            return None
        _, c1, c2, d1, d2 = ops[-2]  # the change the answer re-joined the window after
        _, a1, a2, _, _ = ops[-1]
        # Lines a change drops could be lines it rewrote, read against a later place
        # (a line made like one further down): the answer must copy more than that.
        dropped = max(0, (c2 - c1) - (d2 - d1))
        if a2 - a1 <= dropped or not self._placed(a1, a2):
            return None
        found = candidates(self.window, "".join(new) + "".join(old[a2:]), None)
        if any(c.end_line <= a1 and fits(self.window, c, self.user_lines) for c in found):
            return Rejoined(len(written), a2)
        return None

    def _placed(self, a1: int, a2: int) -> bool:
        """Do the window lines [a1, a2) the answer copied place it for sure: a line
        that is not blank and whose run from a1 occurs once in the window?"""
        old = self._lines
        return any(
            old[a1 + k - 1].strip() and _occurrences(old, old[a1 : a1 + k]) == 1
            for k in range(1, a2 - a1 + 1)
        )


def _occurrences(lines: list[str], run: list[str]) -> int:
    n = len(run)
    return sum(lines[i : i + n] == run for i in range(len(lines) - n + 1))


def first_stop(*rules: Callable[[str], int | None]) -> Callable[[str], int | None]:
    """A stop rule that cuts where the earliest of `rules` cuts."""

    def stop(text: str) -> int | None:
        cuts = [cut for rule in rules if (cut := rule(text)) is not None]
        return min(cuts) if cuts else None

    return stop
