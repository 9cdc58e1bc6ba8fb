"""A name imported into a package's `__init__.py`, exported in its `__all__`.

A package's `__init__.py` that lists its exports in `__all__` imports names to
export them: after the user adds `from .core import Parser`, the next edit is
`"Parser",` in `__all__`. The draft writes it there, one entry to a line as the
list has them, in the place where its neighbours sort around it (or at the end).
Only names from the project's own modules: a `typing` or stdlib import is for
the module's own use. Private names (`_helper`) are not exported. Python only;
the model still scores the line against the bar.
"""

from __future__ import annotations

import ast
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import PurePosixPath

log = logging.getLogger(__name__)

MAX_SCAN_CHARS = 300_000
# Modules whose names a package imports for itself, not to export them.
_OWN_USE = frozenset({*sys.stdlib_module_names, "__future__", "typing_extensions"})
_DIGITS = re.compile(r"(\d+)")
# An entry alone on its line, with its comma: the form a new entry is written in.
_ENTRY = re.compile(r"""[ \t]*(["'])[\w.]+\1,[ \t]*""")


@dataclass(frozen=True)
class Entry:
    name: str
    line: int  # 0-based


def export_lines(before: str, text: str, path: str, language_id: str) -> dict[int, str]:
    """Lines of `text` rewritten to add to `__all__` the names that the last edit
    (`before` -> `text`) imported from the project's own modules."""
    if language_id != "python" or PurePosixPath(path).name != "__init__.py":
        return {}
    if max(len(before), len(text)) > MAX_SCAN_CHARS:
        return {}
    old, new = _parsed(before), _parsed(text)
    if old is None or new is None:
        return {}
    entries = exported(new)
    if not entries or len({e.line for e in entries}) < len(entries):
        return {}  # no `__all__`, or one written several names to a line
    listed = {e.name for e in entries}
    known = {*imported(old), *listed}
    added = [n for n in imported(new) if n not in known]
    added = [n for n in added if not n.startswith("_") or n.startswith("__")]
    if not added:
        return {}
    lines = text.split("\n")
    name = added[0]
    after = _place(entries, name)
    anchor = after or entries[0]
    if _ENTRY.fullmatch(lines[anchor.line]) is None:
        return {}  # an entry beside other code, or without its comma: not copied
    line = lines[anchor.line].replace(anchor.name, name, 1)
    log.info("next edit: %r exported in __all__", name)
    if after is None:  # it sorts before the first entry
        return {anchor.line: line + "\n" + lines[anchor.line]}
    return {anchor.line: lines[anchor.line] + "\n" + line}


def exported(tree: ast.Module) -> list[Entry]:
    """`__all__`'s entries, when it is a module-level list or tuple of strings."""
    for node in tree.body:
        value = None
        if isinstance(node, ast.Assign) and _is_all(node.targets[0]):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and _is_all(node.target):
            value = node.value
        if isinstance(value, ast.List | ast.Tuple):
            names = [e for e in value.elts if isinstance(e, ast.Constant)]
            if len(names) != len(value.elts) or not names:
                return []
            return [Entry(str(e.value), e.lineno - 1) for e in names if isinstance(e.value, str)]
    return []


def imported(tree: ast.Module) -> list[str]:
    """Names that the module's top-level imports bind from the project's modules
    (relative ones, or packages other than the stdlib's), in their order."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and _own_module(node):
            names += [a.asname or a.name for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            own = [a for a in node.names if a.name.split(".")[0] not in _OWN_USE]
            names += [a.asname for a in own if a.asname]
    return names


def _own_module(node: ast.ImportFrom) -> bool:
    return node.level > 0 or (node.module or "").split(".")[0] not in _OWN_USE


def _place(entries: list[Entry], name: str) -> Entry | None:
    """The entry that `name` goes after: the first of two that sort around it,
    else the last (None: before the first, when the list starts in order and
    `name` sorts before it)."""
    key = _sort_key(name)
    for left, right in zip(entries, entries[1:], strict=False):
        if _sort_key(left.name) < key < _sort_key(right.name):
            return left
    first = _sort_key(entries[0].name)
    in_order = len(entries) == 1 or first < _sort_key(entries[1].name)
    if key < first and in_order:
        return None
    return entries[-1]


def _sort_key(name: str) -> list[str | int]:
    """Numbers in a name compare as numbers (`py39` < `py310`), as people sort."""
    return [int(p) if i % 2 else p for i, p in enumerate(_DIGITS.split(name))]


def _is_all(target: ast.expr) -> bool:
    return isinstance(target, ast.Name) and target.id == "__all__"


def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
