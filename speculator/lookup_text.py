"""What the lookup drafter (speculator/lookup.py) knows of token texts and positions.

Pure functions on bytes and strings (which edits a target makes to the source it
copies: whitespace, punctuation, renamed words) and the index of where each
token and token pair occurs in the corpus.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

import numpy as np

from .edits import common_ends

SEPARATOR = -1  # between corpus sources: a continuation never crosses it
MIN_CAP = 15  # the longest lookup draft before any has been accepted (16 rows)
# Words learned as renamed in one request, at most: each rebuilds the renamed
# copy of the sources, and a rewrite that adds text (a docstring) would
# otherwise "learn" a rename at nearly every rejection.
MAX_RENAMES = 8
ALIGNED_RUN = 8  # accepted tokens in a row before a match counts as "aligned"
MAX_JOINED = 3  # source tokens one written token may stand for (punctuation_edit)
CHANCE_BUCKET = "lookup:1"  # a draft placed by a one-token match


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
    start, end = common_ends(source, written)
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
