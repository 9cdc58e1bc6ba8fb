"""The import for a name just used, drafted from the imports of other files.

When the user's recent edits used a name that nothing else in the file mentions
(`Path(...)` typed in a file without `from pathlib import Path`), and other files
of the workspace import that name, the draft adds their import: to this file's
one-line `from pathlib import ...` if it has one, else after its last import at
the top. The line is copied, never invented: a name no other file imports gets
nothing. Python only; the model still scores the change against the bar.

Not only the last edit is read: a user who typed `Path(...)`, then went on to
fix the line below, still lacks the import, and once they take another proposal
(a parameter stored, say) the import that was due is proposed next.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import NamedTuple

import tree_sitter

from ..types import Snippet
from .draft import BUILTINS, word_pattern
from .proposal import TextEdit
from .scope import BINDERS, field_of
from .trees import syntax_root
from .window import Hunk

log = logging.getLogger(__name__)

# Where the other files' imports come from: snippets of files that may import `name`.
ImportSources = Callable[[str], list[Snippet]]

MAX_SCAN_CHARS = 300_000
# Names looked up per request: an edit that wrote many new names is new code,
# not a use of one more import.
MAX_NAMES = 3
# The document's newest edits whose names are imported (a few: older ones the
# user has moved on from, or wrote on purpose).
IMPORTED_EDITS = 4
# A recent edit longer than this (a side's lines) is shown to a model scoring an
# import by its new lines that use the import's names, this many at most: the use
# is what the import answers, and a block of new code made such a prompt's diff
# more than twice a small edit's (docs/next-edit.md).
MAX_USE_LINES = 4
_IMPORT_TYPES = ("import_statement", "import_from_statement", "future_import_statement")
# A name in these places is being bound or is a member, not used.
_BINDING_PARENTS = frozenset(
    {
        "parameters",
        "lambda_parameters",
        "typed_parameter",
        "function_definition",
        "class_definition",
        "aliased_import",
        "dotted_name",
        "global_statement",
        "nonlocal_statement",
        "as_pattern_target",
    }
)
# Every import statement at any depth (`if TYPE_CHECKING:`), a parenthesized one
# whole (up to a bound, so that an unclosed one costs no scan to the file's end).
ANY_IMPORT = re.compile(
    r"^[ \t]*(from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]{0,4000}\)|[^\n]+)|import[ \t]+[^\n]+)",
    re.MULTILINE,
)
_RELATIVE = re.compile(r"^[ \t]*from[ \t]+\.", re.MULTILINE)


class ImportedName(NamedTuple):
    """One name a Python import binds: `from module import target [as alias]`, or
    `import target [as alias]` (module None)."""

    module: str | None
    target: str
    alias: str | None

    @property
    def bound(self) -> str:
        """The name the file gets: `p` for `import shop.price as p`, `shop` for
        `import shop.price`."""
        if self.alias is not None:
            return self.alias
        return self.target if self.module is not None else self.target.split(".")[0]

    @property
    def line(self) -> str:
        """This one name's import, as a line of its own."""
        alias = f" as {self.alias}" if self.alias is not None else ""
        head = f"from {self.module} " if self.module is not None else ""
        return f"{head}import {self.target}{alias}"


def imported_names(statement: str) -> list[ImportedName]:
    """The names one Python import statement binds; a parenthesized `from m import
    (a, b as c)` over several lines and its comments are read whole."""
    statement = re.sub(r"#[^\n]*|\\\n", " ", statement).strip()
    module: str | None = None
    if statement.startswith("from "):
        head, keyword, items = statement[5:].partition(" import ")
        module = head.strip()
        if not keyword or not re.fullmatch(r"\.*[\w.]*", module):
            return []
        items = items.strip().removeprefix("(").removesuffix(")")
    elif statement.startswith("import "):
        items = statement[7:]
    else:
        return []
    read = (_imported_name(module, item.split()) for item in items.split(","))
    return [name for name in read if name is not None]


def _imported_name(module: str | None, words: list[str]) -> ImportedName | None:
    """`target` or `target as alias`: a name in a `from` import, a dotted path in
    a plain one."""
    if len(words) == 3 and words[1] == "as" and words[2].isidentifier():
        alias: str | None = words[2]
    elif len(words) == 1:
        alias = None
    else:
        return None
    target = words[0]
    pieces = [target] if module is not None else target.split(".")
    if not all(piece.isidentifier() for piece in pieces):
        return None
    return ImportedName(module, target, None if alias == target else alias)


def import_lines(
    text: str,
    path: str,
    edits: Sequence[tuple[tuple[int, int], str]],
    language_id: str,
    sources: ImportSources | None,
) -> dict[int, str]:
    """Lines of `text` rewritten to import the names that the recent edits (each
    its lines [a, b) now and the text it removed) used and nothing here binds (a
    line may become two: it and the import). A name in a removed text is not
    imported: that could undo the edit (an import deleted)."""
    if sources is None or not edits or language_id != "python":
        return {}
    if len(text) > MAX_SCAN_CHARS:
        return {}
    root = syntax_root(language_id, text)
    if root is None:
        return {}
    removed = "\n".join(old for _, old in edits)
    names: list[str] = []
    for used in unbound_names(text, root, [focus for focus, _ in edits]):
        used = [n for n in used if not word_pattern(n, member=False).search(removed)]
        if len(used) <= MAX_NAMES:  # more: new code, not a use of one more import
            names += [n for n in used if n not in names]
    if not names:
        return {}
    rewrites: dict[int, str] = {}
    lines = text.split("\n")
    relative = _RELATIVE.search(text) is not None
    for name in names[:MAX_NAMES]:
        found = import_for(name, path, sources(name), relative)
        if found is not None:
            at, line = _placed(lines, root, found, name)
            rewrites[at] = _joined(rewrites.get(at, lines[at]), line, at, lines)
    return rewrites


def imported_by(text: str, edit: TextEdit, imports: frozenset[str]) -> list[str]:
    """The names bound by the lines `edit` writes into `text`, if they are all
    among `imports` (import_lines's); else none."""
    before = set(text.split("\n"))
    new = [line for line in edit.apply(text).split("\n") if line not in before]
    if not new or not all(line in imports for line in new):
        return []
    return [item.bound for line in new for item in imported_names(line)]


def uses_shown(hunks: list[Hunk], names: list[str]) -> list[Hunk]:
    """The recent edits as a prompt scoring an import of `names` shows them: each
    longer than MAX_USE_LINES cut to its new lines that use a name (none: left
    out); all of them if that leaves none."""
    if not names:
        return hunks
    uses = re.compile("|".join(word_pattern(n, member=False).pattern for n in names))
    shown = []
    for hunk in hunks:
        if max(len(hunk.before), len(hunk.after)) <= MAX_USE_LINES:
            shown.append(hunk)
            continue
        used = [i for i, line in enumerate(hunk.after) if uses.search(line)][:MAX_USE_LINES]
        if used:
            lines = [hunk.after[i] for i in used]
            shown.append(Hunk(hunk.path, hunk.first_line + used[0], [], lines, [], []))
    return shown or hunks


def unbound_names(
    text: str, root: tree_sitter.Node, edited: Sequence[tuple[int, int]]
) -> list[list[str]]:
    """For each recent edit's lines [a, b) in `edited`: the names used there, bound
    on none of those lines (a parameter, a variable assigned), that appear nowhere
    else in `text` and are not builtins."""
    lines = text.split("\n")
    skipped = {i for first, end in edited for i in range(first, end)}
    elsewhere = "\n".join(line for i, line in enumerate(lines) if i not in skipped)
    nodes = [list(_identifiers(root, focus)) for focus in edited]
    bound = {_name(node) for each in nodes for node in each if not _is_used(node)}
    return [_unbound(each, bound, elsewhere) for each in nodes]


def _unbound(nodes: list[tree_sitter.Node], bound: set[str], elsewhere: str) -> list[str]:
    found: list[str] = []
    for node in nodes:
        name = _name(node)
        if name in found or name in bound or name in BUILTINS:
            continue
        if word_pattern(name, member=False).search(elsewhere):
            continue
        found.append(name)
    return found


def _name(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _identifiers(root: tree_sitter.Node, focus: tuple[int, int]) -> Iterator[tree_sitter.Node]:
    start, end = (focus[0], 0), (focus[1], 0)
    node = root.descendant_for_point_range(start, end)
    stack = [node] if node is not None else []
    while stack:
        node = stack.pop()
        if node.end_point < start or node.start_point >= end:
            continue
        if node.type == "identifier":
            yield node
        stack.extend(reversed(node.children))


def _is_used(node: tree_sitter.Node) -> bool:
    """Is the identifier read (not bound, not a member, not a keyword's name)?"""
    parent = node.parent
    if parent is None or parent.type in _BINDING_PARENTS:
        return False
    if parent.type == "attribute":
        return parent.child_by_field_name("object") == node
    if parent.type in ("keyword_argument", "default_parameter", "typed_default_parameter"):
        return parent.child_by_field_name("name") != node
    child: tree_sitter.Node = node
    up: tree_sitter.Node | None = parent
    while up is not None and up.type not in ("expression_statement", "module", "block"):
        if (up.type, field_of(up, child)) in BINDERS:
            return False
        child, up = up, up.parent
    return True


def import_for(name: str, path: str, snippets: list[Snippet], relative: bool = False) -> str | None:
    """The import line binding `name` that the snippets' top-level imports use most
    (`from pathlib import Path`), none from this file's own module. `relative`:
    this file imports its own package's modules relatively (`from .types import
    X`), so the lines are written so; else a relative line is copied only from a
    file in this folder."""
    own = PurePosixPath(path)
    counts: Counter[str] = Counter()
    for snippet in snippets:
        source = PurePosixPath(snippet.path)
        for line in _imports_binding(snippet.text, name):
            target = _target(line, source)
            if target is None or _is_own_module(target, own):
                continue  # a name this file defines (further on, or not yet)
            styled = _in_style(line, target, own, source, relative)
            if styled is not None:
                counts[styled] += 1
    if not counts:
        return None
    return counts.most_common(1)[0][0]


def _target(line: str, source: PurePosixPath) -> list[str] | None:
    """The module an import line imports from, as parts (a relative one resolved
    against the folder of the file it is in); None when it climbs out of it."""
    module = line.split()[1]
    dots = len(module) - len(module.lstrip("."))
    if not dots:
        return module.split(".")
    base = source.parent.parts
    if dots - 1 > len(base):
        return None
    rest = module[dots:]
    return [*base[: len(base) - (dots - 1)], *(rest.split(".") if rest else [])]


def _is_own_module(target: list[str], own: PurePosixPath) -> bool:
    mine = own.with_suffix("").parts
    return len(target) <= len(mine) and tuple(target) == mine[len(mine) - len(target) :]


def _in_style(
    line: str, target: list[str], own: PurePosixPath, source: PurePosixPath, relative: bool
) -> str | None:
    """The line as this file would write it; None when it cannot be said."""
    if not line.startswith("from "):
        return line
    names = line.split(" import ", 1)[1]
    module = _relative(target, own.parent.parts) if relative else None
    if module is not None:
        return f"from {module} import {names}"
    if line.startswith("from ."):
        return line if source.parent == own.parent else None
    return line


def _relative(target: list[str], folder: tuple[str, ...]) -> str | None:
    """`target` as a relative module seen from the package `folder` (`..types`);
    None when it lies outside the package tree `folder` is in."""
    if not target or target[0] not in folder:
        return None
    top = folder.index(target[0])
    common = 0
    while top + common < len(folder) and common < len(target):
        if folder[top + common] != target[common]:
            break
        common += 1
    return "." * (len(folder) - top - common + 1) + ".".join(target[common:])


def _imports_binding(text: str, name: str) -> Iterator[str]:
    """The top-level imports in `text` that bind `name`, each as one line."""
    for match in ANY_IMPORT.finditer(text):
        if match.start(1) == match.start():  # not indented: not inside a block
            yield from (item.line for item in imported_names(match[1]) if item.bound == name)


def _placed(lines: list[str], root: tree_sitter.Node, line: str, name: str) -> tuple[int, str]:
    """Where the import goes: (line number, what that line becomes)."""
    imports = [c for c in root.children if c.type in _IMPORT_TYPES]
    module = line.split()[1] if line.startswith("from ") and " as " not in line else None
    for node in imports:
        row = node.start_point[0]
        same = module is not None and lines[row].startswith(f"from {module} import ")
        if same and node.end_point[0] == row and not re.search(r"[(#\\]", lines[row]):
            return row, _with_name(lines[row].rstrip(), name)
    if imports:
        last = imports[-1].end_point[0]
        return last, f"{lines[last]}\n{line}"
    docstring = _docstring_end(root)
    if docstring is not None:
        return docstring, f"{lines[docstring]}\n\n{line}"
    first = next((c.start_point[0] for c in root.children if c.type != "comment"), 0)
    return first, f"{line}\n\n{lines[first]}"


def _with_name(line: str, name: str) -> str:
    """`from M import a, c` with `name` among its names: in order if they are in
    order (as isort and ruff keep them: constants, classes, the rest), else last."""
    head, _, listed = line.partition(" import ")
    names = [n.strip() for n in listed.split(",")]
    if names != sorted(names, key=_import_order):
        return f"{line}, {name}"
    return f"{head} import {', '.join(sorted([*names, name], key=_import_order))}"


def _import_order(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _docstring_end(root: tree_sitter.Node) -> int | None:
    """The last line of the module's docstring, None if it has none."""
    first = next((c for c in root.children if c.type != "comment"), None)
    if first is None or first.type != "expression_statement":
        return None
    return int(first.end_point[0]) if first.children[0].type == "string" else None


def _joined(current: str, placed: str, at: int, lines: list[str]) -> str:
    """A second import placed at the same line as the first: both kept."""
    if current == lines[at]:
        return placed
    return current + placed[len(lines[at]) :] if placed.startswith(lines[at]) else current
