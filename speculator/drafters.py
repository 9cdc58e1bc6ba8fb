"""Drafters: tokens in, draft tokens out.

PromptLookupDrafter is pure (plain int lists), so it is unit-tested on arrays.
DraftModelDrafter wraps a small model with its own KV-cached session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)

SEPARATOR = -1  # between corpus sources: a continuation never crosses it
MIN_CAP = 4  # the longest lookup draft before any has been accepted
ALIGNED_RUN = 8  # accepted tokens in a row before a match counts as "aligned"


class Draft:
    """Proposed tokens plus what the controller needs to size and score them."""

    __slots__ = ("tokens", "drafter", "bucket", "q")

    def __init__(self, tokens: list[int], drafter: str, bucket: str, q: np.ndarray | None = None):
        self.tokens = tokens
        self.drafter = drafter
        self.bucket = bucket  # confidence class, e.g. "lookup:4" for a 4-gram match
        self.q = q  # draft probabilities per token (rows x vocab) when stochastic


class Drafter(Protocol):
    name: str

    def propose(self, history: Sequence[int], k: int) -> Draft | None: ...

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        """`accepted` drafts were taken; `correction` is the target's token in
        place of the first rejected one (None if none was rejected)."""
        ...


class PromptLookupDrafter:
    """Continue the longest suffix of the history found in the grounding corpus.

    The corpus is static sources (tree-sitter spans, workspace snippets) plus
    the live history (prompt + generated). Among matches of the longest n-gram
    we take the one nearest the position where the last accepted draft ended
    (so a refactor stays aligned with its source), else the most recent one.
    """

    name = "lookup"

    def __init__(
        self,
        sources: Sequence[Sequence[int]],
        max_ngram: int = 6,
        min_ngram: int = 1,
        token_bytes: Callable[[int], bytes] | None = None,
    ):
        # Without token texts, tokens are opaque words (unit tests on int arrays).
        self.token_bytes = token_bytes or (lambda token: b"w%d" % token)
        # Learned renames: source token -> the token the target wrote instead.
        self.substitutions: dict[int, int] = {}
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.corpus: list[int] = []
        self.index: dict[tuple[int, ...], list[int]] = {}  # n-gram -> end positions (exclusive)
        self.history_start = 0
        self.expected: int | None = None  # where we think the output is in the corpus
        self.run = 0  # drafted tokens accepted in a row since the last rejection
        self.resync = False  # the last rejection was a whitespace edit: trust `expected`
        self._last_start = 0
        for source in sources:
            self._extend(list(source))
            self._extend([SEPARATOR])
        self.history_start = len(self.corpus)

    def _extend(self, tokens: list[int]) -> None:
        for tok in tokens:
            self.corpus.append(tok)
            end = len(self.corpus)
            if tok == SEPARATOR:
                continue
            for n in range(self.min_ngram, self.max_ngram + 1):
                gram = tuple(self.corpus[end - n : end])
                if len(gram) < n or SEPARATOR in gram:
                    break
                self.index.setdefault(gram, []).append(end)

    def _sync_history(self, history: Sequence[int]) -> None:
        """Append the part of the history the corpus has not seen yet."""
        seen = len(self.corpus) - self.history_start
        if seen > len(history) or list(self.corpus[self.history_start :]) != list(history[:seen]):
            # History was rewritten (new request): rebuild the live part.
            self._truncate(self.history_start)
            seen = 0
        self._extend(list(history[seen:]))

    def _truncate(self, n: int) -> None:
        for gram, ends in list(self.index.items()):
            kept = [e for e in ends if e <= n]
            if kept:
                self.index[gram] = kept
            else:
                del self.index[gram]
        del self.corpus[n:]

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        if k <= 0 or not history:
            return None
        self._sync_history(history)
        # Slow start: a long draft only after the source has been followed for a while.
        k = min(k, max(MIN_CAP, 2 * self.run))
        end_of_history = len(self.corpus)
        if self.resync and self.expected is not None and self.expected < end_of_history:
            draft = self._draft_from(self.expected, k, "lookup:resync")
            if draft is not None:
                return draft
        for n in range(min(self.max_ngram, len(history)), self.min_ngram - 1, -1):
            ends = [e for e in self.index.get(tuple(history[-n:]), ()) if e < end_of_history]
            if not ends:
                continue
            start = self._pick(ends)
            aligned = self.run >= ALIGNED_RUN and start == self.expected
            draft = self._draft_from(
                start, k, "lookup:aligned" if aligned else f"lookup:{min(n, 4)}"
            )
            if draft is not None:
                return draft
        if self.expected is not None and self.expected < end_of_history:
            # No n-gram matches (e.g. a renamed identifier): keep walking the source.
            return self._draft_from(self.expected, k, "lookup:0")
        return None

    def _draft_from(self, start: int, k: int, bucket: str) -> Draft | None:
        tokens = self._continuation(start, k)
        if not tokens:
            return None
        self._last_start = start
        return Draft(tokens, self.name, bucket)

    def _pick(self, ends: list[int]) -> int:
        if self.expected is not None:
            return min(ends, key=lambda e: (abs(e - self.expected), -e))  # type: ignore[operator]
        return ends[-1]

    def _continuation(self, start: int, k: int) -> list[int]:
        out: list[int] = []
        for tok in self.corpus[start : start + k]:
            if tok == SEPARATOR:
                break
            out.append(self.substitutions.get(tok, tok))
        return out

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        rejected_at = self._last_start + accepted
        self.resync = False
        if correction is None:  # all taken; the target's next token follows them
            self.run += accepted
            self.expected = rejected_at + 1
            return
        self.run = 0
        self.expected = rejected_at + 1  # by default the target replaced one token
        if rejected_at >= len(self.corpus) or self.corpus[rejected_at] == SEPARATOR:
            return
        source = self.corpus[rejected_at]
        edit = whitespace_edit(self.token_bytes(source), self.token_bytes(correction))
        if edit == "insert":  # e.g. ' ' before '6': the source token is still due
            self.expected, self.resync = rejected_at, True
        elif edit == "delete":  # the target skipped a blank token of the source
            nxt = rejected_at + 1
            if nxt < len(self.corpus) and self.corpus[nxt] == correction:
                self.expected, self.resync = nxt + 1, True
        elif edit == "respace":  # '*' written as ' *'
            self.resync = True
        elif source in self.substitutions:
            del self.substitutions[source]  # the learned rename was wrong here
        elif _is_word(self.token_bytes(source)) and _is_word(self.token_bytes(correction)):
            self.substitutions[source] = correction


def whitespace_edit(source: bytes, written: bytes) -> str | None:
    """How `written` differs from `source` if only in whitespace (formatting):
    'insert' (written is blank), 'delete' (source is blank), 'respace' (same
    text, other spacing), or None (a real edit)."""
    if not written.strip() and source.strip():
        return "insert"
    if not source.strip() and written.strip():
        return "delete"
    if source.strip() == written.strip() and source != written:
        return "respace"
    return None


def _is_word(piece: bytes) -> bool:
    """An identifier-like token (learned renames are limited to these)."""
    piece = piece.strip()
    return bool(piece) and piece.replace(b"_", b"").isalnum()


class DraftModelDrafter:
    """Greedy drafts from a small model; stops when its confidence drops."""

    name = "draft"

    def __init__(self, session: Session, prompt: Sequence[int], min_confidence: float = 0.5):
        self.session = session
        self.prompt = list(prompt)
        self.min_confidence = min_confidence
        self._synced = False

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        if k <= 0:
            return None
        if not self._synced:
            self.session.sync([self.prompt])
            self._synced = True
        # Bring the draft cache to the history: usually a trim plus a token or two.
        keep = common_prefix(self.session.cells, history)
        self.session.trim(keep)
        pending = list(history[keep:])
        if not pending:  # need logits for the last token: re-evaluate it
            self.session.trim(len(history) - 1)
            pending = [history[-1]]
        logits = self.session.append(pending)[-1]
        tokens: list[int] = []
        for _ in range(k):
            probs = _softmax(logits)
            tok = int(np.argmax(probs))
            if probs[tok] < self.min_confidence and tokens:
                break
            tokens.append(tok)
            if len(tokens) == k:
                break
            logits = self.session.append([tok])[-1]
        return Draft(tokens, self.name, "draft") if tokens else None

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        pass


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max()
    e = np.exp(z)
    return np.asarray(e / e.sum())
