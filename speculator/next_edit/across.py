"""A rename or a signature changed in another file, carried into this one.

When the user's newest edit was made in another document (a function renamed
there, then this file opened), the edit to follow is that rename where this file
still uses the old name: the import, the calls. Only definitions are followed (a
function, class, method or type, or a module-level name): a local variable renamed
elsewhere says nothing about a variable of the same name here, and only into a
file that imports the renamed one's module.
The old name is replaced where it stands as an identifier in code, plain or as an
attribute (`shapes.describe`, `circle.area`); never in strings or comments.

A function there that was made async, gained a required parameter or lost one
has its calls here fixed as in its own file (awaits.py, caller_arguments.py,
dropped_arguments.py): the calls of a function by its name or on its module, as
this file imports it (`price.total(...)`), and in Go (one package) of a method
too.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import tree_sitter

from ..edits import Edit
from ..syntax import byte_offset, line_end
from .awaits import awaited_calls, made_async
from .caller_arguments import added_parameter, passed_at_calls
from .dropped_arguments import dropped_at_calls, removed_parameter
from .imports import ANY_IMPORT, imported_names
from .lint_fixes import LineRewrites
from .occurrences import MAX_PARSE_CHARS, identifiers_on_lines, is_identifier
from .signatures import Signature
from .trees import syntax_root
from .window import line_of, line_starts

# Nodes that define a name other files use, in the grammars served (their `name`
# field); parameters and keyword arguments have one too, and are left out.
_DEFINITIONS = frozenset(
    {
        "function_definition",  # python
        "class_definition",
        "function_declaration",  # javascript, typescript, go
        "generator_function_declaration",
        "class_declaration",
        "method_definition",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "method_declaration",  # go
        "type_spec",
        "function_item",  # rust
        "struct_item",
        "enum_item",
        "trait_item",
    }
)
# An import is a short line: longer ones (minified code) are not searched.
MAX_IMPORT_CHARS = 500
# Files that stand for their folder's module.
_PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib"})
# Python's module-level `NAME = value`: an assignment, its name in `left`.
_ASSIGNMENTS = frozenset({"assignment"})
_MODULES = frozenset({"module", "program", "source_file"})
# A script's module bound to a name: `import * as price from "./price"`,
# `const price = require("./price")`.
_SCRIPT_MODULE = re.compile(
    r"""(?:import\s+\*\s+as\s+(?P<name>\w+)\s+from\s+|(?:const|let|var)\s+(?P<required>\w+)"""
    r"""\s*=\s*require\(\s*)["'](?P<path>[^"']+)["']"""
)


def carried_across(
    text: str, path: str, language_id: str, newest: tuple[str, str, Edit] | None
) -> LineRewrites:
    """Lines of `text` rewritten by the newest edit, made in a document of the same
    language (its file suffix) that this one imports (`newest`: its path, its text
    before the edit, the edit): a definition it renamed, renamed here; the calls of
    a function whose parameters it changed, fixed."""
    if newest is None:
        return {}
    source, before, edit = newest
    if PurePosixPath(source).suffix != PurePosixPath(path).suffix:
        return {}
    if not imports_from(text, path, source):
        return {}
    return renamed_lines(text, language_id, before, edit) or called_lines(
        text, language_id, before, edit, module_names(text, language_id, source)
    )


def called_lines(
    text: str,
    language_id: str,
    before: str,
    edit: Edit,
    qualifiers: frozenset[str] = frozenset(),
) -> LineRewrites:
    """The lines of `text` (0-based) whose calls of a function that `edit` (made on
    the other document's `before`) made async, gave a parameter or took one from,
    fixed: by its name, or on one of `qualifiers` (its module's names here:
    `price.total(...)`)."""
    after = edit.apply(before)
    row = after.count("\n", 0, edit.start)
    awaited = made_async(after, before, row, language_id)
    if awaited is not None:
        return dict(awaited_calls(text, language_id, awaited, qualifiers))
    dropped = removed_parameter(after, before, row, language_id)
    if dropped is not None:
        if not _callable_here(dropped.signature, language_id):
            return {}
        dropped = dropped._replace(signature=dropped.signature._replace(qualifiers=qualifiers))
        return dropped_at_calls(text, dropped, language_id)
    old_lines = before.split("\n")[row : row + edit.old.count("\n") + 1]
    focus = (row, row + edit.new.count("\n") + 1)
    added = added_parameter(after, focus, old_lines, language_id)
    if added is None or not _callable_here(added[0], language_id):
        return {}
    signature, at = added
    return dict(passed_at_calls(text, (signature._replace(qualifiers=qualifiers), at), language_id))


def _callable_here(signature: Signature, language_id: str) -> bool:
    """Are the calls here by that name the function's? A method's are where the
    receiver's type is known: on `self` in its class, on any value in Go's package."""
    return not signature.is_method or language_id == "go"


def imports_from(text: str, path: str, source: str) -> bool:
    """Does the document at `path` import the module at `source` (a line naming the
    module, `from shapes import ...`, `import { x } from "./shapes"`, `use
    crate::shapes`)? In Go, a file sees its own package: the same folder."""
    here, there = PurePosixPath(path), PurePosixPath(source)
    if len(text) > MAX_PARSE_CHARS:
        return False
    if there.suffix == ".go":
        return here.parent == there.parent
    module = _module_of(there)
    named = re.compile(
        rf"\b(import|from|require|use|mod)\b.*(?<![\w-]){re.escape(module)}(?![\w-])"
    )
    lines = (line for line in text.splitlines() if len(line) <= MAX_IMPORT_CHARS)
    return bool(module) and any(named.search(line) for line in lines)


def _module_of(path: PurePosixPath) -> str:
    """The module a file is: its stem, or its folder's name for a package file."""
    return path.parent.name if path.stem in _PACKAGE_FILES else path.stem


def module_names(text: str, language_id: str, source: str) -> frozenset[str]:
    """The names this file calls the module at `source` by: Python's `import
    price`, `import shop.price` (`shop.price`), `import shop.price as p`, `from shop
    import price`; a script's `import * as price from "./price"`, `const price =
    require("./price")`. Go has none: a package's files call each other bare."""
    module = _module_of(PurePosixPath(source))
    if language_id == "python":
        return frozenset(
            item.alias or item.target
            for statement in ANY_IMPORT.finditer(text)
            for item in imported_names(statement[1])
            if item.target.split(".")[-1] == module
        )
    lines = [line.strip() for line in text.splitlines() if len(line) <= MAX_IMPORT_CHARS]
    found = set()
    for line in lines:
        bound = _SCRIPT_MODULE.match(line)
        if bound is not None and PurePosixPath(bound["path"]).stem == module:
            found.add(bound["name"] or bound["required"])
    return frozenset(found)


def renamed_lines(text: str, language_id: str, before: str, edit: Edit) -> dict[int, str]:
    """The lines of `text` (0-based) that use a definition `edit` (made on the other
    document's `before`) renamed, each with the old name replaced; empty when the
    edit renamed no definition or this document does not use one."""
    if max(len(text), len(before)) > MAX_PARSE_CHARS:
        return {}
    renames = renamed_definitions(language_id, before, edit)
    root = syntax_root(language_id, text) if renames else None
    if root is None:
        return {}
    spans: dict[int, list[tuple[int, int, str]]] = {}
    starts = line_starts(text)
    for old, new in renames.items():
        for match in re.finditer(rf"(?<!\w){re.escape(old)}(?!\w)", text):
            if is_identifier(root, text, match.start(), match.end()):
                line = line_of(starts, match.start())
                spans.setdefault(line, []).append((match.start(), match.end(), new))
    return {line: _replaced(text, starts[line], found) for line, found in spans.items()}


def renamed_definitions(language_id: str, before: str, edit: Edit) -> dict[str, str]:
    """{old: new} for the definition the edit renamed: the one definition name on
    its lines before it, another one on them after it."""
    after = edit.apply(before)
    old = _definition_names(language_id, before, edit.start, edit.end)
    new = _definition_names(language_id, after, edit.start, edit.new_end)
    if len(old) != 1 or len(new) != 1 or old == new:
        return {}
    return {old[0]: new[0]}


def _definition_names(language_id: str, text: str, start: int, end: int) -> list[str]:
    """Names defined on the whole lines holding text[start:end]."""
    root = syntax_root(language_id, text)
    if root is None:
        return []
    found = identifiers_on_lines(text, root, start, end)
    return [match.group() for match in found if _defines(root, text, match.start())]


def _defines(root: tree_sitter.Node, text: str, offset: int) -> bool:
    """Is the identifier at `offset` the name a definition gives?"""
    at = byte_offset(text, offset)
    node = root.descendant_for_byte_range(at, at + 1)
    parent = node.parent if node is not None else None
    if node is None or parent is None:
        return False
    if parent.type in _DEFINITIONS:
        named = parent.child_by_field_name("name")
        return named is not None and named.start_byte == node.start_byte
    if parent.type in _ASSIGNMENTS:  # NAME = value, at module level only
        left = parent.child_by_field_name("left")
        statement = parent.parent
        top = statement.parent if statement is not None else None
        return left is not None and left.id == node.id and top is not None and top.type in _MODULES
    return False


def _replaced(text: str, line_start: int, spans: list[tuple[int, int, str]]) -> str:
    """The line at `line_start` with each (start, end, new) span replaced."""
    end_of_line = line_end(text, line_start)
    out, at = [], line_start
    for start, end, new in sorted(spans):
        out += [text[at:start], new]
        at = end
    out.append(text[at:end_of_line])
    return "".join(out)
