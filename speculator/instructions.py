"""What a refactor instruction says about its output, for the drafters.

A rename instruction ("Rename the parameters r, g, b to red, green, blue",
"Rename `opts` to `pairs` and `args` to `rest`") names the edit exactly, so
the lookup drafter can copy a renamed selection from the first token instead
of learning each rename from a rejected draft. A wrong reading only costs
rejected drafts: the target verifies every token.
"""

from __future__ import annotations

import re

# "to" between the old names and the new ones; "->" and "=>" as people type them.
_ARROW = re.compile(r"\s+(?:to|into|as)\s+|\s*(?:->|=>|→)\s*", re.IGNORECASE)
_BACKTICKED = re.compile(r"`([A-Za-z_$][\w$]*)`")
_BARE = re.compile(r"[A-Za-z_$][\w$]*")
# Words around the names in a plain-text instruction that are never the names.
_FILLER = frozenset(
    "a an and also all argument arguments attribute attributes both class constant constants "
    "each every field fields function functions its local method methods name names of "
    "param parameter parameters property properties receiver rename the their them type "
    "variable variables var vars".split()
)


def rename_pairs(instruction: str, selection: str) -> dict[str, str]:
    """{old: new} for each rename the instruction asks for, where the old name
    is a whole word of the selection; {} for any other instruction.

    Names are read in order around each "to": the old names since the last
    rename, and as many new names after it. In an instruction that quotes
    names in backticks, only the quoted words count."""
    if not re.search(r"\brename\b|->|=>|→", instruction, re.IGNORECASE):
        return {}
    quoted = bool(_BACKTICKED.search(instruction))
    parts = _ARROW.split(instruction)
    pairs: dict[str, str] = {}
    carried: list[str] = []  # new names of the previous part, before its old ones
    for left, right in zip(parts, parts[1:], strict=False):
        olds = _names(left, quoted)[len(carried) :]
        news = _names(right, quoted)[: len(olds)]
        carried = news
        if not olds or len(news) != len(olds):
            continue
        for old, new in zip(olds, news, strict=True):
            if old != new and re.search(rf"(?<![\w$]){re.escape(old)}(?![\w$])", selection):
                pairs[old] = new
    return pairs


def _names(text: str, quoted: bool) -> list[str]:
    if quoted:
        return _BACKTICKED.findall(text)
    return [w for w in _BARE.findall(text) if w.lower() not in _FILLER]
