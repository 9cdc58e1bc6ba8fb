"""The lookup drafter's whole-word renames (speculator/lookup.py).

Token-level substitutions miss a renamed word wherever the tokenizer merges it
with its neighbours ('(r' -> '(red', 'newlevel'): so once the target has
written a whole new word where the source has another, the source text is
renamed, re-tokenized and matched as one more source. PromptLookupDrafter
inherits these methods; the state they read and write is its own.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from .lookup_text import (
    _WORD,
    _WORD_PREFIX,
    _WORD_TAIL,
    KEYWORDS,
    MAX_RENAMES,
    SEPARATOR,
    _lead,
)


class RenameLearning:
    """Learns renames from the target's rejections and rebuilds the renamed copy."""

    tokenize: Callable[[str], list[int]] | None
    token_bytes: Callable[[int], bytes]
    corpus: list[int]
    renames: dict[str, str]
    expected: int | None
    history_start: int
    _rename_edits: int
    _pending_rename: tuple[str, str, int] | None
    _sources: list[list[int]]
    _source_end: int
    _prompt_len: int | None
    _last_start: int

    def _extend(self, tokens: list[int]) -> None:
        raise NotImplementedError

    def _truncate(self, n: int) -> None:
        raise NotImplementedError

    def _is_control(self, token: int) -> bool:
        raise NotImplementedError

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
