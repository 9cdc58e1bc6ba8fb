"""A Go error assigned and not checked yet: the check that follows it.

`data, err := os.ReadFile(path)` written (or `data := f()` made `data, err :=
f()`) in a function whose last result is an `error`, with no statement after it
that reads `err`, leaves `err` unused (the compiler says so) and the error
unhandled. The next edit is

        if err != nil {
                return nil, err
        }

the function's other results given their zero values: `nil`, `0`, `""`, `false`,
`T{}` for a struct type declared in this file. Where one is not known here (a
type of another file or package that is not a pointer, slice, map, channel,
function or interface) nothing is drafted; nor where the function returns no
error (`main`: whether to log, panic or go on is the user's choice).

Like results.py, the rule reads the code as it stands: the assignments on the
lines the user just edited.
"""

from __future__ import annotations

import re

import tree_sitter

from .line_edits import indentation
from .occurrences import MAX_PARSE_CHARS
from .signatures import GO_FUNCTIONS, go_results
from .trees import descendants, functions_at, node_text, syntax_root

_ASSIGNMENTS = frozenset({"short_var_declaration", "assignment_statement"})
_NIL_TYPES = frozenset(
    {
        "pointer_type",
        "slice_type",
        "map_type",
        "channel_type",
        "function_type",
        "interface_type",
    }
)
_NUMBERS = re.compile(r"u?int(8|16|32|64)?|float(32|64)|complex(64|128)|byte|rune|uintptr")
_ZEROS = {"string": '""', "bool": "false", "error": "nil", "any": "nil"}


def error_check_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) followed by the check of an error that
    an assignment on lines `focus` [a, b) stores and nothing after it reads (a line
    becomes four: it and the check)."""
    if language_id != "go" or len(text) > MAX_PARSE_CHARS:
        return {}
    root = syntax_root(language_id, text)
    functions = functions_at(root, focus[0], GO_FUNCTIONS) if root is not None else []
    body = functions[-1].child_by_field_name("body") if functions else None
    zeros = _zero_results(functions[-1], root) if functions and root is not None else None
    if body is None or zeros is None:
        return {}
    lines = text.split("\n")
    rewrites = {}
    for statement in descendants(body, _ASSIGNMENTS, frozenset({"func_literal"})):
        if not focus[0] <= statement.start_point[0] < focus[1]:
            continue
        name = _unchecked_error(statement, body)
        if name is None:
            continue
        row, indent = statement.end_point[0], indentation(lines[statement.start_point[0]])
        returned = ", ".join([*zeros, name])
        check = f"{indent}if {name} != nil {{\n{indent}\treturn {returned}\n{indent}}}"
        rewrites[row] = f"{lines[row]}\n{check}"
    return rewrites


def _unchecked_error(statement: tree_sitter.Node, body: tree_sitter.Node) -> str | None:
    """The error name (`err`, `readErr`) that a statement in a block assigns from a
    call, when the statement after it does not read it. Last in an inner block, it
    may be checked after that block: left alone."""
    left, right = statement.child_by_field_name("left"), statement.child_by_field_name("right")
    if left is None or right is None or statement.parent is None:
        return None
    if statement.parent.type not in ("statement_list", "block"):
        return None  # `if err := f(); err != nil`: checked there
    if not any(v.type == "call_expression" for v in right.named_children):
        return None
    names = [node_text(n) for n in left.named_children if n.type == "identifier"]
    errors = [n for n in names if n.lower().endswith("err")]
    if len(errors) != 1:
        return None
    following = statement.next_named_sibling
    while following is not None and following.type == "comment":
        following = following.next_named_sibling
    if following is None:
        blocks = (statement.parent, statement.parent.parent)
        return errors[0] if any(b is not None and b.id == body.id for b in blocks) else None
    if re.search(rf"\b{errors[0]}\b", node_text(following)):
        return None
    return errors[0]


def _zero_results(function: tree_sitter.Node, root: tree_sitter.Node) -> list[str] | None:
    """The zero values of a function's results before its last, an `error`; None
    when it returns no error or a zero value is not known here."""
    results = go_results(function)
    if results is None or not results.end_in_error:
        return None
    structs = _struct_names(root) if len(results.types) > 1 else set()
    zeros = [_zero_value(kind, structs) for kind in results.types[:-1]]
    return None if None in zeros else [z for z in zeros if z is not None]


def _struct_names(root: tree_sitter.Node) -> set[str]:
    return {
        node_text(spec.child_by_field_name("name"))
        for spec in descendants(root, frozenset({"type_spec"}))
        if (spec.child_by_field_name("type") or spec).type == "struct_type"
    }


def _zero_value(kind: tree_sitter.Node, structs: set[str]) -> str | None:
    if kind.type in _NIL_TYPES:
        return "nil"
    name = node_text(kind)
    if kind.type != "type_identifier":
        return None
    if _NUMBERS.fullmatch(name):
        return "0"
    if name in _ZEROS:
        return _ZEROS[name]
    return f"{name}{{}}" if name in structs else None
