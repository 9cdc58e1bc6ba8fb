"""The lookup drafter: continue the history from where it matches the sources.

Pure (plain int lists), so it is unit-tested on arrays; it follows a source
the output copies through whitespace, punctuation and renamed words
(speculator/lookup_text.py, speculator/lookup_renames.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from .drafters import Draft
from .lookup_renames import RenameLearning
from .lookup_text import (
    ALIGNED_RUN,
    CHANCE_BUCKET,
    MAX_JOINED,
    MIN_CAP,
    SEPARATOR,
    PositionIndex,
    _is_name,
    pair_key,
    punctuation_edit,
    whitespace_edit,
)


class PromptLookupDrafter(RenameLearning):
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
        tokenize: Callable[[str], list[int]] | None = None,
        renames: dict[str, str] | None = None,
        follow_respacing: bool = True,
    ):
        # Without token texts, tokens are opaque words (unit tests on int arrays).
        # Plain tokens follow the source across a change of whitespace (a refactor
        # re-wrapping a line: _follow_plain_tokens).
        self.follow_respacing = follow_respacing
        self.token_bytes = token_bytes or (lambda token: b" w%d" % token)
        self.tokenize = tokenize  # None: no renamed copy of the source (see _start_rename)
        # Learned renames: source token -> the token the target wrote instead.
        self.substitutions: dict[int, int] = {}
        self._control: dict[int, bool] = {}  # token -> is a control token (cache)
        # Renames as whole words, for the renamed copy of the source: given (a
        # rename instruction, speculator.instructions) or learned from the target.
        self.renames: dict[str, str] = dict(renames or {})
        self._rename_edits = 0  # renames learned or corrected: each rebuilds the copy
        # (text before the renamed piece, old word, history index of the new word)
        self._pending_rename: tuple[str, str, int] | None = None
        self._sources = [list(source) for source in sources]
        self._source_end = 0  # corpus length of the sources (the renamed copy follows)
        self._prompt_len: int | None = None  # history length at the first proposal
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.corpus: list[int] = []
        self.positions = PositionIndex()  # where each token and token pair occurs
        self.history_start = 0
        self.expected: int | None = None  # where we think the output is in the corpus
        self.run = 0  # drafted tokens accepted in a row since the last rejection
        self.resync = False  # the last rejection was a known edit: trust `expected`
        self._resync_bucket = "lookup:resync"  # or "lookup:rename" after a learned rename
        self._last_start = 0
        self._proposed_at = 0  # history length at the last proposal
        self._next_len: int | None = None  # history length `expected` was set for
        for source in self._sources:
            self._extend(source)
            self._extend([SEPARATOR])
        self._source_end = self.history_start = len(self.corpus)

    @classmethod
    def for_request(
        cls,
        kind: str,
        sources: Sequence[Sequence[int]],
        token_bytes: Callable[[int], bytes],
        tokenize: Callable[[str], list[int]] | None,
        renames: dict[str, str] | None = None,
    ) -> PromptLookupDrafter:
        """The drafter for a request of this kind ("completion", "refactor").

        Only a refactor learns whole-word renames (the renamed copy): a
        completion writes new code, where a learned rename rarely pays and its
        rebuild re-tokenizes the whole prompt, 5-47 ms on the 2-core machine,
        more than a decode step (bench/archive/benchmarks.md, "Completions learn no
        renames"). Nor does it follow a re-wrapped line through plain tokens: its
        extra drafts did not pay on the test split (bench/archive/benchmarks.md, "a
        re-wrapped line"). `renames`: the renames a refactor's instruction asks for."""
        learns = kind == "refactor"
        return cls(
            sources,
            token_bytes=token_bytes,
            tokenize=tokenize if learns else None,
            renames=renames,
            follow_respacing=learns,
        )

    def _extend(self, tokens: list[int]) -> None:
        start = len(self.corpus)
        self.corpus.extend(tokens)
        self.positions.extend(self.corpus, start)

    def _sync_history(self, history: Sequence[int]) -> None:
        """Append the part of the history the corpus has not seen yet."""
        seen = len(self.corpus) - self.history_start
        if seen > len(history) or list(self.corpus[self.history_start :]) != list(history[:seen]):
            # History was rewritten (new request): rebuild the live part.
            self._truncate(self.history_start)
            seen = 0
        self._extend(list(history[seen:]))

    def _truncate(self, n: int) -> None:
        del self.corpus[n:]
        self.positions.invalidate()

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        if k <= 0 or not history:
            return None
        if self._prompt_len is None:
            self._prompt_len = len(history) - 1  # the last token was just decoded
            if self.renames and self.tokenize is not None:
                self._rebuild_renamed(history)  # the given renames, from the first draft
        self._sync_history(history)
        self._follow_plain_tokens(history)
        self._finish_rename(history)
        self._proposed_at = len(history)
        # Slow start: a long draft only after the source has been followed for a while.
        k = min(k, max(MIN_CAP, 2 * self.run))
        end_of_history = len(self.corpus)
        if self.resync and self.expected is not None and self.expected < end_of_history:
            bucket = "lookup:aligned" if self.run >= ALIGNED_RUN else self._resync_bucket
            draft = self._draft_from(self.expected, k, bucket)
            if draft is not None:
                return draft
        for n, ends in self._matches(history, end_of_history):
            if n < self.min_ngram:
                break
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

    def copy_ahead(self, history: Sequence[int]) -> Sequence[int] | None:
        """The tokens left to copy of the source the output follows (aligned, or
        stepping over a known edit), None when it follows none.

        What a refactor has written plus what is left of the copy is a better
        estimate of its length than its selection: text added before the copy
        (a docstring) makes it longer, and the loss guard sizes its allowance
        by that length. Only a copy of given text counts (the sources, the
        prompt), not of the output."""
        if self._prompt_len is None or self.expected is None:
            return None
        self._sync_history(history)
        self._follow_plain_tokens(history)
        following = self.run >= ALIGNED_RUN or self.resync
        if not following or self.expected >= self.history_start + self._prompt_len:
            return None
        end = self.expected
        while end < len(self.corpus) and not self._ends_copy(self.corpus[end]):
            end += 1
        return self.corpus[self.expected : end]

    def declined(self, draft: Draft) -> None:
        """Follow the source from where the declined draft would have gone.

        Plain tokens that match it then build the run that makes a later draft
        "aligned", the one bucket whose drafts pay where a verify row costs
        nearly a full step (one thread on a busy machine: bench/archive/benchmarks.md).
        Without this, a drafter whose first drafts were all declined never had
        a place in the source to follow, and its drafts stayed declined."""
        if self._last_start != self.expected:
            self.run = 0
        self.expected = self._last_start
        self._next_len = self._proposed_at

    def _follow_plain_tokens(self, history: Sequence[int]) -> None:
        """Move `expected` over tokens decoded without a draft since the last
        feedback (rounds where no draft was worth verifying), while they still
        match the source, up to a change of whitespace (as feedback() steps over
        one in a draft); any other mismatch ends a resync."""
        if self._next_len is None or self.expected is None or len(history) <= self._next_len:
            return
        for tok in history[self._next_len :]:
            source = self.corpus[self.expected] if self.expected < len(self.corpus) else None
            if source is not None and tok in (source, self.substitutions.get(source)):
                if tok == source:  # a learned rename the target did not make here
                    self.substitutions.pop(source, None)
                self.expected += 1
                self.run += 1  # the target is following the source: trust it more
                continue
            following = self.follow_respacing and (self.resync or self.run >= ALIGNED_RUN)
            step = None
            if following and source is not None and source != SEPARATOR:
                step = self._whitespace_step(self.expected, tok)
            if step is None:
                self.resync = False
                self.run = 0
                break
            # A line re-wrapped after a rename ("``\n    is" written "`` is"): the
            # source goes on in step, which an n-gram match cannot see across it.
            self.expected += step
            self.resync, self._resync_bucket = True, "lookup:resync"
        self._next_len = len(history)

    def _whitespace_step(self, position: int, written: int) -> int | None:
        """How many source tokens from `position` a written token stands for when
        the two differ only in whitespace: 0 (a blank inserted), 1 (respaced),
        2 (a blank source token skipped, the next one written); None otherwise."""
        edit = whitespace_edit(self.token_bytes(self.corpus[position]), self.token_bytes(written))
        if edit == "insert":
            return 0
        if edit == "respace":
            return 1
        following = position + 1
        if edit == "delete" and following < len(self.corpus) and self.corpus[following] == written:
            return 2
        return None

    def _draft_from(self, start: int, k: int, bucket: str) -> Draft | None:
        tokens = self._continuation(start, k)
        if not tokens:
            return None
        self._last_start = start
        return Draft(tokens, self.name, bucket)

    def _matches(self, history: Sequence[int], end: int) -> Iterator[tuple[int, list[int]]]:
        """For n from the longest down to 1, the end positions (exclusive,
        ascending, before `end`) of the corpus n-grams equal to the history's
        last n tokens (n at most max_ngram); only the n that have some.

        Occurrences of the last token pair are walked back in Python: they
        are few, and this runs between decode steps, where the caches are cold
        and every numpy call costs microseconds."""
        if not self.positions.built:
            self.positions.build(self.corpus)
        longest = min(self.max_ngram, len(history))
        if longest >= 2:
            ends = self.positions.ends(pair_key(history[-2], history[-1]), end)
            lengths = []
            for e in ends:
                n = 2
                while n < longest and e > n and self.corpus[e - 1 - n] == history[-1 - n]:
                    n += 1
                lengths.append(n)
            for n in range(max(lengths, default=1), 1, -1):
                yield n, [e for e, length in zip(ends, lengths, strict=True) if length >= n]
        ends = self.positions.ends(history[-1], end)
        if ends:
            yield 1, ends

    def _pick(self, ends: list[int]) -> int:
        if self.expected is not None:
            return min(ends, key=lambda e: (abs(e - self.expected), -e))  # type: ignore[operator]
        # Not following anything yet: a renamed copy, where there is one, is
        # what the target is asked to write.
        renamed = [e for e in ends if self._source_end < e < self.history_start]
        return (renamed or ends)[-1]

    def _continuation(self, start: int, k: int) -> list[int]:
        out: list[int] = []
        for tok in self.corpus[start : start + k]:
            if self._ends_copy(tok):
                break
            out.append(self.substitutions.get(tok, tok))
        return out

    def _ends_copy(self, token: int) -> bool:
        """A copy from the corpus never runs past a source boundary or a marker."""
        return token == SEPARATOR or self._is_control(token)

    def _is_control(self, token: int) -> bool:
        """A chat-template or FIM marker (no text of its own). A copy of the
        prompt stops there: past the selection's end the prompt goes on with
        the template, which the target does not write, so drafting on would
        only fill a long verify batch with sure rejections."""
        known = self._control.get(token)
        if known is None:
            known = self._control[token] = self.token_bytes(token) == b""
        return known

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        rejected_at = self._last_start + accepted
        self.resync = False
        # The history will end with the correction (or bonus) token: index next_len - 1.
        next_len = self._next_len = self._proposed_at + accepted + 1
        if correction is None:  # all taken; the target's next token follows them
            self.run += accepted
            self.expected = rejected_at + 1
            return
        self.run = 0
        if accepted == 0 and self._placed_by_chance(draft):
            return  # `expected` stays where the output was last seen in the source
        self.expected = rejected_at + 1  # by default the target replaced one token
        if rejected_at >= len(self.corpus) or self.corpus[rejected_at] == SEPARATOR:
            return
        source = self.corpus[rejected_at]
        self._resync_bucket = "lookup:resync"
        if whitespace_edit(self.token_bytes(source), self.token_bytes(correction)):
            # ' ' inserted before '6', '*' written ' *', a blank source token skipped
            if (step := self._whitespace_step(rejected_at, correction)) is not None:
                self.expected, self.resync = rejected_at + step, True
        elif source in self.substitutions:
            del self.substitutions[source]  # the learned rename was wrong here
        elif (
            _is_name(self.token_bytes(source))
            and _is_name(self.token_bytes(correction))
            and self._ends_word(rejected_at)
        ):
            # A renamed word (or its last piece): the source goes on in step after it.
            self.substitutions[source] = correction
            self.resync, self._resync_bucket = True, "lookup:rename"
        elif (covered := self._punctuation_edit(rejected_at, correction)) is not None:
            # ';' added at a line's end, or dropped: the source goes on after it.
            self.expected, self.resync = rejected_at + covered, True
            self._resync_bucket = "lookup:punctuation"
        self._start_rename(rejected_at, correction, next_len - 1)

    def _placed_by_chance(self, draft: Draft) -> bool:
        """Whether one token, matched away from where the output was last seen
        in the source (a ',' in new text), placed this draft. Rejected at once,
        such a draft says nothing about how the source was edited: learning a
        "rename" from it would trust its continuation as a copy (an import line
        added above a signature read as `length` renamed to `Optional`)."""
        return draft.bucket == CHANCE_BUCKET and self._last_start != self.expected

    def _punctuation_edit(self, position: int, correction: int) -> int | None:
        """How many source tokens from `position` the target's token stands for,
        if it writes their text with a small punctuation edit or only joins them."""
        written = self.token_bytes(correction)
        pieces: list[bytes] = []
        for tok in self.corpus[position : position + MAX_JOINED + 1]:
            if self._ends_copy(tok):
                break
            pieces.append(self.token_bytes(tok))
        text = b"".join(pieces)
        if text.startswith(written) and len(text) > len(written):
            return None  # the same text cut into other tokens: no edit to step over
        for covered in range(1, min(len(pieces), MAX_JOINED) + 1):
            if punctuation_edit(b"".join(pieces[:covered]), written):
                return covered
        return None
