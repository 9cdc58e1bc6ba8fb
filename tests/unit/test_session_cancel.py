"""What a cancelled prompt sync leaves reusable (speculator.session), without a model."""

from __future__ import annotations

from typing import Any

import pytest

from speculator.session import Session, segments_within
from speculator.types import Cancelled, CancelToken

# A FIM prompt's segments: header, prefix, rest of line, following lines, middle.
HEADER = list(range(1000, 1100))
PREFIX = list(range(2000, 2300))
REST = [3000, 3001]
FOLLOWING = list(range(4000, 4350))
MIDDLE = [5000]


class CancelledAtLastToken(Session):
    """The real sync and its bookkeeping; the KV calls stubbed, and every
    evaluation cancelled before its first batch (a keystroke came)."""

    def __init__(self, cells: list[int], segments: list[tuple[int, tuple[int, ...]]]) -> None:
        self.cells, self.segments = list(cells), list(segments)
        self.n_ctx, self.can_shift = 8192, True

    def _rm(self, seq: int, p0: int, p1: int) -> None:
        pass

    def _eval_range(self, prompt: list[int], start: int, end: int, *args: Any, **kw: Any) -> Any:
        self._keep_evaluated(prompt, start)  # what a cancelled batch leaves
        raise Cancelled()


def test_a_warm_up_cancelled_at_its_last_token_keeps_the_suffix_movable() -> None:
    """Issue 63 (after kill -9): didOpen restores a document's saved KV and its
    warm-up re-syncs it; the editor's first completion cancels that warm-up at
    its last token. The suffix's KV is still in the cache and must still be
    moved, or the completion evaluates the following lines again (350 tokens:
    the quick window answered instead)."""
    saved = [HEADER, PREFIX, REST, FOLLOWING, MIDDLE]
    cells = [t for seg in saved for t in seg]
    session = CancelledAtLastToken(cells, segments_within(saved, len(cells)))
    with pytest.raises(Cancelled):
        session.sync(saved, cancel=CancelToken())
    assert session.cells == cells[:-1]
    typed = PREFIX + [2900, 2901, 2902]  # two more lines typed before the cursor
    pending = session.pending([HEADER, typed, REST, FOLLOWING, MIDDLE], shift_reuse=True)
    assert pending == 3 + len(REST) + len(MIDDLE)


def test_segments_within_keeps_only_whole_segments() -> None:
    segments = [[1, 2], [3, 4, 5], [], [6]]
    assert segments_within(segments, 6) == [(0, (1, 2)), (2, (3, 4, 5)), (5, ()), (5, (6,))]
    assert segments_within(segments, 4) == [(0, (1, 2))]
    assert segments_within(segments, 0) == []
