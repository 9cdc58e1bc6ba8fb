"""From the model's rewritten window to the one edit worth proposing, or none.

The rewrite is diffed against the window line by line; each run of changed lines
is a candidate, trimmed to the characters that change. A candidate is dropped when
it:
- touches the lines of the user's last edit (it would undo or redo their work);
- deletes or adds lines at the window's last line when the file goes on past it
  (the model lost its place or ran on: a cut, not an edit);
- changes only whitespace (a model's habit, not a person's next edit);
- is less likely than the confidence bar: the model's own probability of the
  tokens it wrote for the change, the least of them (one doubtful token is enough
  for a wrong edit); a rename carried on needs more (RENAME_BAR_POWER), an
  import copied from another file less (IMPORT_BAR_POWER).
  An insertion or deletion that could as well sit further on
  (a block written twice: the diff calls the first copy new, but the model chose
  to repeat where it wrote the second) is scored where it could sit last too:
  there the model left the text it was copying.
Of the candidates left, the most confident is proposed: one edit at a time, as
the editors show them, and only one that leaves the code parsing where it parsed
(core.py asks parses.py: that needs the whole document).
"""

from __future__ import annotations

import bisect
import difflib
import math
from dataclasses import dataclass, replace

from ..edits import common_ends, lines_with_ends
from .lint_fixes import apply_edits
from .prompts import CURSOR_MARKER
from .window import Window

# The least probability of a changed token for an edit to be proposed, measured on
# the dev tasks with the shipped model scoring the draft (docs/next-edit.md): right
# changes got 0.0046 to 0.99, the model all but ruled out half the wrong ones (0.0025
# or less); the bar sits between. Wrong ones above it are not told apart.
MIN_CONFIDENCE = 0.003
# A rename carried on must clear the bar raised to this power: 0.0096 for the default
# 0.003, and 0 or 1 where the bar is. On the dev sets the wrong ones under 0.007 were
# the old name meaning something else there (a word in a URL, another variable, a
# docstring's text), and the right ones scored 0.018 (tests/model) to 0.9996: where
# the model doubts a rename it has just seen made, it is rarely the same name.
RENAME_BAR_POWER = 0.8
# An import the import rule copied needs less: 0.00016 for the default bar. Its
# name is unbound without it, and its line is another file's; what the model
# doubts is the module's name, which it cannot foresee. In this repository's
# history (bench.next_edit_imports, at bar 0) the 40 imports drafted for a name the
# commit imported were all right and scored 0 to 0.62 (30 of them over 0.00016);
# the 2 drafted where the commit imported nothing scored under 0.00001.
IMPORT_BAR_POWER = 1.5


@dataclass(frozen=True)
class TextEdit:
    """Replace text[start:end] of the document by `new_text`."""

    start: int
    end: int
    new_text: str

    def apply(self, text: str) -> str:
        """`text` with this edit made."""
        return text[: self.start] + self.new_text + text[self.end :]


@dataclass(frozen=True)
class Candidate:
    edit: TextEdit
    first_line: int  # window lines [first_line, end_line) it replaces
    end_line: int
    confidence: float  # least probability of a token written for it
    mean_logprob: float
    whitespace_only: bool  # changes nothing but spaces and blank lines
    span: tuple[int, int]  # where its new text lies in the traced answer
    # The same change slid as far on as the text allows (an insertion before an equal
    # block), in the answer: where the model departed from the window; None: no slide.
    slid: tuple[int, int] | None = None
    bar_power: float = 1.0  # its confidence bar is the request's raised to this power


def bar_of(cand: Candidate, min_confidence: float) -> float:
    """The least confidence `cand` needs to be proposed."""
    return float(min_confidence**cand.bar_power)


@dataclass(frozen=True)
class TokenTrace:
    """Where each generated token ends in the answer, and its probability."""

    ends: list[int]
    probs: list[float]

    def tokens_over(self, start: int, end: int) -> list[float]:
        """Probabilities of the tokens that wrote any of answer[start:end] (an empty
        span: the token that wrote the character after it, where the change begins)."""
        first = bisect.bisect_right(self.ends, start)
        last = bisect.bisect_left(self.ends, max(end, start + 1))
        return self.probs[first : last + 1]


def candidates(
    window: Window, rewritten: str, trace: TokenTrace | None, answer_offset: int = 0
) -> list[Candidate]:
    """Every changed run of lines, as an edit of the document. `answer_offset`:
    where the rewritten window starts in the traced answer."""
    old_lines = lines_with_ends(window.text)
    new_lines = lines_with_ends(rewritten)
    old_starts = line_offsets(old_lines)
    new_starts = line_offsets(new_lines)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    found = []
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old = "".join(old_lines[a1:a2])
        new = "".join(new_lines[b1:b2])
        head, tail = common_ends(old, new)
        start = window.start + old_starts[a1] + head
        edit = TextEdit(start, start + len(old) - head - tail, new[head : len(new) - tail])
        span = (answer_offset + new_starts[b1] + head, answer_offset + new_starts[b2] - tail)
        blank = old.split() == new.split()
        # How far the change can slide on: what both texts still share from its start
        # (nothing for a replacement; an insertion or deletion before its own text).
        shift, _ = common_ends(
            window.text[old_starts[a1] + head :], rewritten[new_starts[b1] + head :]
        )
        slid = (span[0] + shift, span[1] + shift) if shift else None
        found.append(scored(Candidate(edit, a1, a2, 1.0, 0.0, blank, span, slid), trace))
    return found


def scored(cand: Candidate, trace: TokenTrace | None) -> Candidate:
    """The candidate with the confidence of the traced tokens that wrote it (None:
    no trace, sure)."""
    if trace is None:
        return replace(cand, confidence=1.0, mean_logprob=0.0)
    probs = trace.tokens_over(*cand.span)
    if cand.slid is not None and trace.ends and trace.ends[-1] >= cand.slid[1]:
        probs = probs + trace.tokens_over(*cand.slid)
    confidence = min(probs) if probs else 0.0
    mean = sum(math.log(max(p, 1e-12)) for p in probs) / len(probs) if probs else 0.0
    return replace(cand, confidence=confidence, mean_logprob=mean)


def choose(
    window: Window,
    found: list[Candidate],
    user_lines: tuple[int, int] | None,
    min_confidence: float = MIN_CONFIDENCE,
) -> Candidate | None:
    """The edit to propose (see the module's docstring), or None."""
    kept = [
        c
        for c in found
        if c.confidence >= bar_of(c, min_confidence) and fits(window, c, user_lines)
    ]
    return max(kept, key=lambda c: c.confidence, default=None)


def fits(window: Window, cand: Candidate, user_lines: tuple[int, int] | None) -> bool:
    """The structural rules, all but the confidence bar: not on the user's lines,
    not a cut at the window's end, not only whitespace."""
    if user_lines is not None and _overlaps(cand, user_lines):
        return False
    window_lines = window.text.count("\n") + (0 if window.text.endswith("\n") else 1)
    if not window.at_end_of_file and cand.end_line >= window_lines:
        return False
    return not cand.whitespace_only


def _overlaps(cand: Candidate, lines: tuple[int, int]) -> bool:
    """Does the candidate change (or insert inside) the window lines [a, b)?"""
    a, b = lines
    if cand.first_line == cand.end_line:  # an insertion before line first_line
        return a < cand.first_line < b
    return cand.first_line < b and a < cand.end_line


def line_offsets(lines: list[str]) -> list[int]:
    """Where each of `lines` (with their ends) starts, and where the last one ends."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def applied(text: str, edits: list[TextEdit]) -> str:
    """`text` with the proposed (non-overlapping) edits made."""
    return apply_edits(text, ((e.start, e.end, e.new_text) for e in edits))


def rewrites_like(window: Window, lines: list[str], cand: Candidate) -> bool:
    """Does `cand` rewrite only lines equal (stripped) to some of `lines`?"""
    changed = {line.strip() for line in lines if line.strip()}
    rewritten = window.text.split("\n")[cand.first_line : cand.end_line]
    return bool(rewritten) and all(line.strip() in changed for line in rewritten)


def why_none(
    window: Window,
    found: list[Candidate],
    user_lines: tuple[int, int] | None,
    min_confidence: float,
) -> str:
    """Why none of `found` is proposed, in words a user can act on (the CLI says it)."""
    if not found:
        return "no change to propose"
    fitting = [c for c in found if fits(window, c, user_lines)]
    if not fitting:
        return "each change touches the last edit's lines, is only whitespace or is cut off"
    best = max(fitting, key=lambda c: c.confidence)
    what = (
        "the likeliest change, a rename carried on,"
        if best.bar_power < 1
        else "the likeliest change"
    )
    bar = bar_of(best, min_confidence)
    return f"{what} scored {best.confidence:.5f}, under the bar of {bar:.2g}"


def without_marker(answer: str, trace: TokenTrace | None) -> tuple[str, TokenTrace | None]:
    """The answer without cursor markers the model copied, its trace shifted to match."""
    if CURSOR_MARKER not in answer:
        return answer, trace
    cleaned = answer.replace(CURSOR_MARKER, "")
    if trace is None:
        return cleaned, None
    cuts = []
    at = answer.find(CURSOR_MARKER)
    while at != -1:
        cuts.append(at)
        at = answer.find(CURSOR_MARKER, at + len(CURSOR_MARKER))

    def moved(end: int) -> int:
        shift = 0
        for cut in cuts:
            if end > cut:
                shift += min(len(CURSOR_MARKER), end - cut)
        return end - shift

    return cleaned, TokenTrace([moved(e) for e in trace.ends], list(trace.probs))
