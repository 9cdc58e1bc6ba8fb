"""A name the user imported anew, removed from the import that brought it before.

Moving an import (`from typing import Callable` -> `from collections.abc import
Callable`) is typed as a new import line first; the old statement then binds the
name a second time while unused (pyflakes' F811, new with the edit), and the next
edit takes it out there. The old statement is rewritten by ruff's own fix for an
unused import (F401), run on the statement alone with its other names kept in
use: a parenthesized list loses just that line, a statement left with no name
goes. Python only, and only after an edit on an import line; the model still
scores the change against the bar.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import PurePosixPath

from ..edits import Edit
from .draft import import_statements
from .line_edits import indentation
from .lint_fixes import MAX_LINT_CHARS, UNUSED_IMPORT, LineRewrites, fixed_by, ruff_findings
from .window import edited_lines

log = logging.getLogger(__name__)

REDEFINED_UNUSED = "F811"
# ruff's message: "Redefinition of unused `Callable` from line 3: ...".
_FROM_LINE = re.compile(r"`([^`]+)` from line (\d+)")
PROBE_NAME = "probe.py"  # not an `__init__.py`: its imports are no exports

# (name, the 0-based line binding it first, the line binding it again)
Redefinition = tuple[str, int, int]


def reimport_lines(before: str, text: str, edit: Edit, path: str, language_id: str) -> LineRewrites:
    """Lines of `text` rewritten to take out of an older import statement the names
    that the last edit (`before` -> `text`) imported again; {} when it did not."""
    if language_id != "python" or max(len(before), len(text)) > MAX_LINT_CHARS:
        return {}
    lines = text.split("\n")
    statements = import_statements(lines)
    focus = edited_lines(text, edit)
    ours = range(*focus)
    if not any(_statement(statements, line) for line in ours):
        return {}
    name = PurePosixPath(path).name or "untitled.py"
    old, new = _redefinitions(before, name), _redefinitions(text, name)
    if old is None or new is None:
        return {}
    known = {found for found, _, _ in old}
    taken: dict[tuple[int, int], set[str]] = {}
    for found, first, again in new:
        other = again if first in ours else first
        mine = first if first in ours else again
        stmt = _statement(statements, other)
        if found in known or mine not in ours or other in ours or stmt is None:
            continue
        if _statement(statements, mine) is not None:
            taken.setdefault(stmt, set()).add(found)
    rewrites: dict[int, str | None] = {}
    for (start, end), names in taken.items():
        kept = _without(lines[start:end], names)
        if kept is not None:
            log.info("next edit: %s imported anew, taken out of line %d", ", ".join(names), start)
            rewrites[start] = kept or None
            rewrites.update(dict.fromkeys(range(start + 1, end)))
    return rewrites


def _redefinitions(text: str, name: str) -> list[Redefinition] | None:
    """The names `text` binds again while unused (F811); None: ruff could not say."""
    found = ruff_findings(text, name, (REDEFINED_UNUSED,))
    if found is None:
        return None
    out = []
    for d in found:
        if not isinstance(d, dict) or d.get("code") != REDEFINED_UNUSED:
            continue
        m = _FROM_LINE.search(str(d.get("message", "")))
        location = d.get("location")
        if m and isinstance(location, dict) and isinstance(location.get("row"), int):
            out.append((m.group(1), int(m.group(2)) - 1, location["row"] - 1))
    return out


def _statement(statements: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    """The lines [start, end) of the import statement that holds `line`, if one does."""
    return next(((s, e) for s, e in statements if s <= line < e), None)


def _without(lines: list[str], names: set[str]) -> str | None:
    """The import statement `lines` with `names` taken out by ruff's F401 fix ("":
    none left); None when it is not one statement that binds them all."""
    indent = indentation(lines[0])
    body = "\n".join(line.removeprefix(indent) for line in lines)
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Import | ast.ImportFrom):
        return None
    bound = [a.asname or a.name.split(".")[0] for a in tree.body[0].names]
    if not names <= set(bound):
        return None
    kept = [b for b in bound if b not in names]
    probe = body + "\n" + (", ".join(kept) + "\n" if kept else "")
    fixed = fixed_by(probe, PROBE_NAME, (0, len(lines) - 1), UNUSED_IMPORT)
    if fixed == probe:
        return None  # ruff could not fix it
    statement = fixed.split("\n")
    if kept:
        statement = statement[:-2]  # the probe's line of uses, and the text's end
    new = "\n".join(indent + line if line.strip() else line for line in statement)
    return new.rstrip("\n") if new.strip() else ""
