"""Does a proposed edit write a name that nothing defines? (Python, ruff)

A change that turns working code into a NameError is never the next edit: `self.`
taken off an attribute that is no local (`{self.type_name}` -> `{type_name}`), an
f-prefix carried to a string whose placeholder names nothing, a word the user
respelled in prose carried into `__all__`. ruff's undefined-name findings are
compared by name before and after the change. A name stays allowed where the code
already used it undefined (the user is mid-edit), and where the user's recent edits
wrote it: a rename in progress, whose definition or import is renamed next. A name
the change only stops defining is the rename's business (its other places follow
in later changes), so it is not looked at. Another language, a file too long to
lint, or no ruff at hand: every change passes.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Collection
from pathlib import PurePosixPath
from typing import NamedTuple

from ..syntax import line_end, line_start
from .lint_fixes import MAX_LINT_CHARS, ruff_findings
from .proposal import TextEdit

log = logging.getLogger(__name__)

UNDEFINED_NAME = "F821"
UNDEFINED_EXPORT = "F822"  # a name in `__all__` that the module does not define
# ruff names the name first, in backticks: "Undefined name `x`".
QUOTED_NAME = re.compile(r"`([^`]+)`")
WORD = re.compile(r"[A-Za-z_]\w*")


def leaves_undefined(
    language_id: str, path: str, text: str, edit: TextEdit, written: Collection[str] = ()
) -> bool:
    """Does `text` with `edit` use undefined, on the lines the edit writes, a name
    that `text` does not and that is not among the names the user `written`
    lately; or export in `__all__` a name that the module does not define?"""
    if language_id != "python" or len(text) > MAX_LINT_CHARS:
        return False
    name = PurePosixPath(path).name or "untitled.py"
    edited = edit.apply(text)
    before, after = _undefined(text, name), _undefined(edited, name)
    if before is None or after is None:
        return False
    start = line_start(edited, edit.start)
    lines = edited[start : line_end(edited, edit.start + max(len(edit.new_text) - 1, 0))]
    on_lines = set(WORD.findall(lines)) - set(written)
    new = sorted(
        found for code, found in after - before if code == UNDEFINED_EXPORT or found in on_lines
    )
    if new:
        log.info("next edit: a change that leaves %s undefined is not proposed", ", ".join(new))
    return bool(new)


class Source(NamedTuple):
    """A document, and the names its user wrote lately."""

    text: str
    path: str
    language_id: str
    written: frozenset[str]


def writes_undefined(source: Source, edit: TextEdit) -> bool:
    """leaves_undefined, for `source`."""
    text, path, language_id, written = source
    return leaves_undefined(language_id, path, text, edit, written)


def words(texts: Collection[str]) -> frozenset[str]:
    """The names written in `texts` (the new text of the user's recent edits)."""
    return frozenset(w for t in texts for w in WORD.findall(t))


# The document's own findings are asked once for all the changes checked in it.
@functools.lru_cache(maxsize=4)
def _undefined(text: str, name: str) -> frozenset[tuple[str, str]] | None:
    """The (rule, name) of each name `text` uses undefined; None: ruff could not say."""
    found = ruff_findings(text, name, (UNDEFINED_NAME, UNDEFINED_EXPORT))
    if found is None:
        return None
    return frozenset(
        (str(d.get("code")), m.group(1))
        for d in found
        if isinstance(d, dict)
        and d.get("code") in (UNDEFINED_NAME, UNDEFINED_EXPORT)
        and (m := QUOTED_NAME.search(str(d.get("message", ""))))
    )
