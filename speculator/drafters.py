"""Drafters: tokens in, draft tokens out.

PromptLookupDrafter is pure (plain int lists), so it is unit-tested on arrays.
DraftModelDrafter wraps a small model with its own KV-cached session.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .tokens import common_prefix

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)

SEPARATOR = -1  # between corpus sources: a continuation never crosses it
MIN_CAP = 15  # the longest lookup draft before any has been accepted (16 rows)
# Words learned as renamed in one request, at most: each rebuilds the renamed
# copy of the sources, and a rewrite that adds text (a docstring) would
# otherwise "learn" a rename at nearly every rejection.
MAX_RENAMES = 8
ALIGNED_RUN = 8  # accepted tokens in a row before a match counts as "aligned"
MAX_JOINED = 3  # source tokens one written token may stand for (punctuation_edit)
CHANCE_BUCKET = "lookup:1"  # a draft placed by a one-token match


class Draft:
    """Proposed tokens plus what the controller needs to size and score them."""

    __slots__ = ("tokens", "drafter", "bucket", "q", "padding")

    def __init__(self, tokens: list[int], drafter: str, bucket: str, q: np.ndarray | None = None):
        self.tokens = tokens
        self.drafter = drafter
        self.bucket = bucket  # confidence class, e.g. "lookup:4" for a 4-gram match
        self.q = q  # draft probabilities per token (rows x vocab) when stochastic
        # Rows evaluated after the draft and never verified: they round the batch up to
        # a size the CPU kernels run more cheaply (Controller.verify_rows).
        self.padding = 0


class Drafter(Protocol):
    name: str

    def propose(self, history: Sequence[int], k: int) -> Draft | None: ...

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        """`accepted` drafts were taken; `correction` is the target's token in
        place of the first rejected one (None if none was rejected)."""
        ...

    def declined(self, draft: Draft) -> None:
        """The draft was not worth verifying: the next token is decoded plainly."""
        ...

    def copy_ahead(self, history: Sequence[int]) -> int | None:
        """Tokens still to come of a source the output is following (None if none)."""
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

    def copy_ahead(self, history: Sequence[int]) -> int | None:
        """Tokens left to copy of the source the output follows (aligned, or
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
        return end - self.expected

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

    # -- whole-word renames ----------------------------------------------------
    #
    # Token-level substitutions miss a renamed word wherever the tokenizer
    # merges it with its neighbours ('(r' -> '(red', 'newlevel'): so once the
    # target has written a whole new word where the source has another, the
    # source text is renamed, re-tokenized and matched as one more source.

    def _start_rename(self, rejected_at: int, correction: int, written_at: int) -> None:
        """Remember the source word at a rejection; the target's word, which
        starts at history index `written_at`, is complete later."""
        self._pending_rename = None
        if self.tokenize is None:
            return
        source, written = self._text(self.corpus[rejected_at]), self._text(correction)
        lead = _lead(source)
        if lead != _lead(written) or not _WORD_PREFIX.match(written, len(lead)):
            return  # not a word written where the source has a word
        found = self._word_at(rejected_at)
        if found:
            prefix, old = found
            self._pending_rename = (prefix, old, written_at)

    def _finish_rename(self, history: Sequence[int]) -> None:
        if self._pending_rename is None:
            return
        prefix, old, at = self._pending_rename
        written = "".join(self._text(t) for t in history[at : at + 8])
        match = _WORD_PREFIX.match(written, len(_lead(written)))
        if match is None or match.end() == len(written):
            if len(history) - at > 8:
                self._pending_rename = None  # no word, or one too long to be a rename
            return  # the word may go on: wait for the next token
        self._pending_rename = None
        new = prefix + match.group()
        if (
            new != old
            and _WORD.fullmatch(new)
            and not KEYWORDS.intersection((old, new))
            and self._learn_rename(old, new)
        ):
            self._rebuild_renamed(history)

    def _learn_rename(self, old: str, new: str) -> bool:
        """The target wrote `new` where the corpus has `old`: True if that
        changed the renames. `old` may be a rename's own new word, read in the
        renamed copy; then that rename was wrong (the target kept the original
        word, or chose another) and is corrected."""
        if self._rename_edits >= 2 * MAX_RENAMES:
            return False
        original = next((k for k, v in self.renames.items() if v == old), old)
        if original == new:
            del self.renames[original]
        elif self.renames.get(original) == new or (
            original not in self.renames and len(self.renames) >= MAX_RENAMES
        ):
            return False
        else:
            self.renames[original] = new
        self._rename_edits += 1
        return True

    def _word_at(self, position: int) -> tuple[str, str] | None:
        """(the part before this token, the whole identifier) for the identifier
        that the token at `position` starts or goes on with."""
        text = self._text(self.corpus[position])
        lead = _lead(text)
        prefix = ""
        i = position - 1
        while not lead and i >= 0 and self.corpus[i] != SEPARATOR:
            tail = _WORD_TAIL.search(self._text(self.corpus[i]))
            if tail is None:
                break
            prefix = tail.group() + prefix
            if tail.start() > 0:
                break
            i -= 1
        word = prefix + text[len(lead) :]
        for tok in self.corpus[position + 1 : position + 8]:
            piece = self._text(tok) if tok != SEPARATOR else " "
            cont = _WORD_PREFIX.match(piece)
            word += cont.group() if cont else ""
            if not cont or cont.end() < len(piece):
                break
        return (prefix, word) if _WORD.fullmatch(word) else None

    def _ends_word(self, position: int) -> bool:
        """Whether the token at `position` is the end of its identifier."""
        found = self._word_at(position)
        return (
            found is not None and found[1] == found[0] + self._text(self.corpus[position]).strip()
        )

    def _rebuild_renamed(self, history: Sequence[int]) -> None:
        """Replace the renamed copy of the sources and the prompt; keep pointers."""
        assert self.tokenize is not None
        prompt = list(history[: self._prompt_len or 0])
        joined = [t for src in self._sources + [prompt] for t in src]
        text = "".join(self._text(t) for t in joined)
        # No renames left (each one was corrected away): the copy is the original.
        words = "|".join(map(re.escape, self.renames)) or r"(?!)"
        pattern = re.compile(r"\b(" + words + r")\b")
        renamed = self._renamed_tokens(joined, pattern)
        # Where `expected` points, as a character offset in the renamed text.
        at = self._char_offset(self.expected, prompt)
        if at is not None:
            at += sum(
                len(self.renames[m.group()]) - len(m.group()) for m in pattern.finditer(text, 0, at)
            )
        old_start = self.history_start
        self._truncate(self._source_end)
        self._extend(renamed + [SEPARATOR])
        self.history_start = len(self.corpus)
        shift = self.history_start - old_start
        if self.expected is not None and self.expected >= old_start:
            self.expected += shift
        if self._last_start >= old_start:
            self._last_start += shift
        if at is not None:  # follow the renamed copy from here on
            self.expected = self._source_end + self._token_at(renamed, at)
        self._extend(list(history))

    def _renamed_tokens(self, tokens: list[int], pattern: re.Pattern[str]) -> list[int]:
        """`tokens` with the renames applied, re-tokenized piece by piece between
        control tokens, which are kept: they have no text, and a copy that lost
        them would run on from the selection into the chat template."""
        assert self.tokenize is not None
        out: list[int] = []
        for control, run in itertools.groupby(tokens, self._is_control):
            if control:
                out += run
            else:
                text = "".join(self._text(tok) for tok in run)
                out += self.tokenize(pattern.sub(lambda m: self.renames[m.group()], text))
        return out

    def _char_offset(self, position: int | None, prompt: list[int]) -> int | None:
        """`position` (in the sources or the prompt) as an offset in their joined text."""
        if position is None:
            return None
        sources = [t for t in self.corpus[: self._source_end] if t != SEPARATOR]
        if position < self._source_end:
            skipped = self.corpus[:position].count(SEPARATOR)
            tokens = sources[: position - skipped]
        elif self.history_start <= position < self.history_start + len(prompt):
            tokens = sources + prompt[: position - self.history_start]
        else:
            return None
        return sum(len(self._text(t)) for t in tokens)

    def _token_at(self, tokens: list[int], offset: int) -> int:
        """Index of the first token starting at or after a character offset."""
        chars = 0
        for i, tok in enumerate(tokens):
            if chars >= offset:
                return i
            chars += len(self._text(tok))
        return len(tokens)

    def _text(self, token: int) -> str:
        return self.token_bytes(token).decode("utf-8", errors="ignore")


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Keywords of the languages groundspec knows (Python, JavaScript/TypeScript, Go,
# Rust): a rename changes an identifier, so a keyword written where the source
# has another word is a rewrite (`let` -> `return`), not a rename to follow.
KEYWORDS = frozenset(
    """and as assert async await break case catch chan class const continue debugger
    def default defer del delete do elif else enum except export extends false False
    fallthrough finally fn for from func function go goto if impl implements import in
    instanceof interface is lambda let loop map match mod mut new nil None nonlocal not
    null of or package pass private protected public raise range readonly return select
    static struct super switch this throw true True try type typeof undefined use var
    void where while with yield""".split()
    # C, C++, C# and Java (read as plain text): the keywords that no other language
    # here uses as a name (not `template`, `typename` or `inline`, Python variables),
    # nor type names: a type swapped throughout (`int` -> `size_t`) recurs as a
    # rename does. A line the model moved above a `using` line was once learned as
    # a rename.
    + """constexpr decltype namespace noexcept nullptr sizeof synchronized throws
    typedef using""".split()
)
_WORD_PREFIX = re.compile(r"[A-Za-z0-9_]+")
_WORD_TAIL = re.compile(r"[A-Za-z0-9_]+$")


def _lead(text: str) -> str:
    """What a token has before its first letter, digit or underscore: ' (' of ' (r'."""
    match = re.match(r"[^A-Za-z0-9_]*", text)
    return match.group() if match else ""


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


def punctuation_edit(source: bytes, written: bytes) -> bool:
    """True if `written` is `source` with at most two punctuation characters
    added or dropped in one place ('`\n' -> '`;\n'), or the very same text
    (the target joined source tokens into one)."""
    start = 0
    while start < min(len(source), len(written)) and source[start] == written[start]:
        start += 1
    end = 0
    while (
        end < min(len(source), len(written)) - start
        and source[len(source) - 1 - end] == written[len(written) - 1 - end]
    ):
        end += 1
    dropped, added = source[start : len(source) - end], written[start : len(written) - end]
    # Only added or only dropped: a changed ',' -> ':' starts a type hint,
    # new text that the source cannot draft.
    if dropped and added:
        return False
    return len(dropped + added) <= 2 and all(_is_punctuation(c) for c in dropped + added)


def _is_punctuation(char: int) -> bool:
    return 33 <= char < 127 and not chr(char).isalnum() and char != ord("_")


def _is_name(piece: bytes) -> bool:
    """An identifier-like token that is not a keyword (learned renames are
    limited to these)."""
    piece = piece.strip()
    return (
        bool(piece)
        and piece.replace(b"_", b"").isalnum()
        and piece.decode("utf-8", "replace") not in KEYWORDS
    )


class DraftModelDrafter:
    """Greedy drafts from a small model; stops when its confidence drops.

    The draft session must already hold (nearly) the target's prompt: the
    engine keeps it in step (warm-up, keystroke syncs). Catching up on a
    whole prompt inside the decode loop would cost seconds that no draft
    wins back, so with `max_catch_up` set, a session lagging by more prompt
    tokens than that drafts nothing in this request.
    """

    name = "draft"

    def __init__(
        self,
        session: Session,
        prompt: Sequence[int],
        min_confidence: float = 0.5,
        max_catch_up: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.session = session
        self.min_confidence = min_confidence
        self.clock = clock
        self.prompt_len = len(prompt)
        lag = len(prompt) - common_prefix(session.cells, prompt)
        self.usable = max_catch_up is None or lag <= max_catch_up
        self.token_ms: float | None = None  # measured cost of one draft token, this request
        self.prompt_tokens_evaluated = 0  # prompt catch-up done inside decode (benchmarks)

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        if k <= 0 or not self.usable:
            return None
        # Bring the draft cache to the history: usually a trim plus a token or two.
        keep = common_prefix(self.session.cells, history)
        self.session.trim(keep)
        self.prompt_tokens_evaluated += max(0, self.prompt_len - keep)
        pending = list(history[keep:])
        if not pending:  # need logits for the last token: re-evaluate it
            self.session.trim(len(history) - 1)
            pending = [history[-1]]
        if len(pending) > self.session.n_batch:  # a whole prompt (the user chose `draft`)
            _, logits = self.session.sync([list(history)])
        else:
            logits = self.session.append(pending)[-1]
        tokens: list[int] = []
        started = self.clock()
        for _ in range(k):
            probs = _softmax(logits)
            tok = int(np.argmax(probs))
            if probs[tok] < self.min_confidence and tokens:
                break
            tokens.append(tok)
            if len(tokens) == k:
                break
            logits = self.session.append([tok])[-1]
        if len(tokens) > 1:
            ms = (self.clock() - started) * 1000 / (len(tokens) - 1)
            self.token_ms = ms if self.token_ms is None else 0.5 * (self.token_ms + ms)
        return Draft(tokens, self.name, "draft") if tokens else None

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        pass

    def declined(self, draft: Draft) -> None:
        pass

    def copy_ahead(self, history: Sequence[int]) -> int | None:
        return None  # a model's drafts follow no source


class PositionIndex:
    """Where each token and each pair of tokens occurs in a corpus, as end
    positions (exclusive, ascending); nothing across a SEPARATOR.

    Built at once with numpy over the corpus so far (the sources and the
    prompt: about 0.6 ms for 3,600 tokens, where a dict of every 1- to 6-gram
    cost 2 us a token, 3-5 ms in a request's first round), then kept up token
    by token as the output grows. Longer matches are found by walking back
    from a pair's occurrences (PromptLookupDrafter._matches)."""

    def __init__(self) -> None:
        self.built = False
        self._keys: list[int] = []  # sorted
        self._ends: list[int] = []  # the end position of each of _keys
        self._added: dict[int, list[int]] = {}  # key -> end positions since the build

    def build(self, corpus: list[int]) -> None:
        tokens = np.asarray(corpus, dtype=np.int64)
        ends = np.arange(1, len(tokens) + 1, dtype=np.int64)
        keys = np.concatenate((tokens, pair_key(tokens[:-1], tokens[1:])))
        at = np.concatenate((ends, ends[1:]))
        keep = np.concatenate(
            (tokens != SEPARATOR, (tokens[:-1] != SEPARATOR) & (tokens[1:] != SEPARATOR))
        )
        keys, at = keys[keep], at[keep]
        order = np.argsort(keys, kind="stable")  # stable: each key's ends stay ascending
        self._keys = keys[order].tolist()
        self._ends = at[order].tolist()
        self._added = {}
        self.built = True

    def invalidate(self) -> None:
        """The corpus was cut: build afresh when next asked."""
        self.built = False

    def extend(self, corpus: list[int], start: int) -> None:
        """Index corpus[start:], just appended (nothing before the first build)."""
        if not self.built:
            return
        for p in range(start, len(corpus)):
            token = corpus[p]
            if token == SEPARATOR:
                continue
            self._added.setdefault(token, []).append(p + 1)
            if p > 0 and corpus[p - 1] != SEPARATOR:
                self._added.setdefault(pair_key(corpus[p - 1], token), []).append(p + 1)

    def ends(self, key: int, before: int) -> list[int]:
        """Where `key` (a token, or a pair_key) ends, before position `before`."""
        first = bisect.bisect_left(self._keys, key)
        last = bisect.bisect_right(self._keys, key, first)
        found = self._ends[first:last] + self._added.get(key, [])
        while found and found[-1] >= before:
            found.pop()
        return found


def pair_key(first: Any, second: Any) -> Any:
    """One integer for a token pair (ints or numpy arrays), apart from all tokens."""
    return ((first + 1) << 32) | second


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max()
    e = np.exp(z)
    return np.asarray(e / e.sum())
