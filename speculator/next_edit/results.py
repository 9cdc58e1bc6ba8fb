"""A Go function's results grown by an error, carried to its returns and callers.

`func Load(path string) Config {` made `func Load(path string) (Config, error) {`
leaves each `return Config{}` in its body a value short, and the compiler says
so: the next edits are `return Config{}, err` where the return handles an error
(inside `if err != nil {`) and `return Config{Path: path}, nil` elsewhere.

The rule reads the code as it is, not the edit: any return of the function the
user is editing that is exactly one value short of results ending in `error` gets
that value. So after the user takes one return's fix, the next one follows. A
function literal's returns are its own; named results (which allow a bare
`return`) are left alone. So is a return of one call (`return os.ReadFile(path)`)
unless the function it calls is in this file and has one result: a call of one
with two is a whole return already.

Its callers are then a value short too: `items := LoadItems(dir)` becomes
`items, err := LoadItems(dir)` (error_checks.py then drafts the check after it).
Any such call in the file is fixed, wherever the user's edit was (one that wrote
`error` or an `err`: a result, a caller's fix, its check): a function or method
declared here whose last result is an `error`, called alone on the right of a
`:=` with one name fewer than its results. A method is matched by its name (the
value's type is not known here), but not on a name this file imports
(`disk.Count()` calls another package's function).
"""

from __future__ import annotations

import re

import tree_sitter

from .occurrences import MAX_PARSE_CHARS
from .signatures import GO_FUNCTIONS, go_results
from .trees import descendants, functions_at, node_text, syntax_root
from .window import lines_with_insertions

# How a call names a function (`Load(...)`) and a method (`s.Load(...)`).
_CALLED_AS = {"function_declaration": "identifier", "method_declaration": "selector_expression"}
_CALLEES = frozenset(_CALLED_AS.values())
# A Go module path's major version: an element `v2`, or a suffix `yaml.v3`.
_MAJOR_VERSION = re.compile(r"(?:^|\.)v\d+$")
_ERROR_WORD = re.compile(r"\berror\b|err\b|Err\b")


def short_return_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) whose return gets the error value it
    lacks, in the Go function around the line focus[0]; the lines in `focus` [a, b),
    the user's own edit, left out."""
    if language_id != "go" or len(text) > MAX_PARSE_CHARS:
        return {}
    root = syntax_root(language_id, text)
    if root is None:
        return {}
    functions = functions_at(root, focus[0], GO_FUNCTIONS)
    function = functions[-1] if functions else None  # the innermost
    if function is None:
        return {}
    count = _error_results(function)
    body = function.child_by_field_name("body")
    if count is None or body is None:
        return {}
    inserts = [
        _insert(ret, function)
        for ret in _returns(body)
        if _value_count(ret) == count - 1 and not _may_return_more(ret, root)
    ]
    rewrites = lines_with_insertions(text, inserts)
    return {i: line for i, line in rewrites.items() if not focus[0] <= i < focus[1]}


def _error_results(function: tree_sitter.Node) -> int | None:
    """How many results the function has, when they are unnamed and the last is an
    `error`; None otherwise."""
    results = go_results(function)
    if results is None or results.named or not results.end_in_error:
        return None
    return len(results.types)


def _returns(body: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The return statements of a function body, not those of its function literals."""
    return list(descendants(body, frozenset({"return_statement"}), frozenset({"func_literal"})))


def _value_count(ret: tree_sitter.Node) -> int:
    values = _values(ret)
    return len(values.named_children) if values is not None else 0


def _may_return_more(ret: tree_sitter.Node, root: tree_sitter.Node) -> bool:
    """Is the return's value one call of a function that is not known, here, to
    have one result?"""
    values = _values(ret)
    call = values.named_children[0] if values is not None and values.named_child_count else None
    if call is None or values is None or values.named_child_count != 1:
        return False
    callee = call.child_by_field_name("function") if call.type == "call_expression" else None
    if callee is None:
        return False
    name = node_text(callee.child_by_field_name("field") or callee)
    counts = {len(r.types) if r else None for r in map(go_results, _functions_named(root, name))}
    return counts != {1}


def _functions_named(root: tree_sitter.Node, name: str) -> list[tree_sitter.Node]:
    """The functions of this file declared as `name`, or a literal assigned to it."""
    found = []
    for node in descendants(root, GO_FUNCTIONS):
        if node.type != "func_literal":
            named = node.child_by_field_name("name")
        else:  # expression_list, then the assignment
            assigned = node.parent.parent if node.parent is not None else None
            named = assigned.child_by_field_name("left") if assigned is not None else None
        if node_text(named) == name:
            found.append(node)
    return found


def _values(ret: tree_sitter.Node) -> tree_sitter.Node | None:
    return next((c for c in ret.named_children if c.type == "expression_list"), None)


def _insert(ret: tree_sitter.Node, function: tree_sitter.Node) -> tuple[int, str]:
    """Where the missing value goes (a byte offset), and the text that adds it."""
    values, value = _values(ret), _error_value(ret, function)
    if values is None:
        return ret.children[0].end_byte, f" {value}"  # a bare `return`
    return values.end_byte, f", {value}"


def _error_value(ret: tree_sitter.Node, function: tree_sitter.Node) -> str:
    """`err` (the checked name) in a branch taken on an error, `nil` elsewhere."""
    node = ret
    while node.parent is not None and node.id != function.id:
        parent = node.parent
        if parent.type == "if_statement" and _is_consequence(parent, node):
            checked = _checked_error(parent.child_by_field_name("condition"))
            if checked is not None:
                return checked
        node = parent
    return "nil"


def _is_consequence(if_statement: tree_sitter.Node, child: tree_sitter.Node) -> bool:
    consequence = if_statement.child_by_field_name("consequence")
    return consequence is not None and consequence.id == child.id


def _checked_error(condition: tree_sitter.Node | None) -> str | None:
    """`err` of a condition `err != nil` (any name ending in err or Err)."""
    if condition is None or condition.type != "binary_expression":
        return None
    left = condition.child_by_field_name("left")
    operator = condition.child_by_field_name("operator")
    right = condition.child_by_field_name("right")
    if left is None or operator is None or right is None:
        return None
    name = node_text(left)
    is_error_name = left.type == "identifier" and name.lower().endswith("err")
    if node_text(operator) == "!=" and right.type == "nil" and is_error_name:
        return name
    return None


def short_assignment_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) whose `:=` of a call gets the `err`
    that the function it calls returns last, one value more than it names; after
    an edit (lines `focus` [a, b)) that wrote an error or handled one."""
    if language_id != "go" or len(text) > MAX_PARSE_CHARS:
        return {}
    edited = "\n".join(text.split("\n")[focus[0] : focus[1]])
    if _ERROR_WORD.search(edited) is None:
        return {}  # most edits: no tree walked (160 ms on a 220 KB file)
    root = syntax_root(language_id, text)
    if root is None:
        return {}
    counts, packages = _error_result_counts(root), _package_names(root)
    inserts = []
    for statement in descendants(root, frozenset({"short_var_declaration"})):
        left, right = statement.child_by_field_name("left"), statement.child_by_field_name("right")
        if left is None or right is None or right.named_child_count != 1:
            continue
        call = right.named_children[0]
        callee = call.child_by_field_name("function") if call.type == "call_expression" else None
        if callee is None or callee.type not in _CALLEES:
            continue
        if node_text(callee.child_by_field_name("operand")) in packages:
            continue  # `disk.Count()`: another package's function, not a method here
        name = node_text(callee.child_by_field_name("field") or callee)
        names = [node_text(n) for n in left.named_children]
        if counts.get((callee.type, name)) == len(names) + 1 and "err" not in names:
            inserts.append((left.end_byte, ", err"))
    return lines_with_insertions(text, inserts)


def _error_result_counts(root: tree_sitter.Node) -> dict[tuple[str, str], int]:
    """How many results each function and method declared here has, by how a call
    names it, when its last result is an `error` (and its name is declared once)."""
    counts: dict[tuple[str, str], int | None] = {}
    for function in descendants(root, frozenset({"function_declaration", "method_declaration"})):
        key = (_CALLED_AS[function.type], node_text(function.child_by_field_name("name")))
        results = go_results(function)
        is_error = results is not None and results.end_in_error
        counts[key] = len(results.types) if results and is_error and key not in counts else None
    return {key: count for key, count in counts.items() if count is not None}


def _package_names(root: tree_sitter.Node) -> set[str]:
    """The names this file's imports bind: an alias, else the path's last element
    (`gopkg.in/yaml.v3` and `example.com/cfg/v2` read as `yaml` and `cfg`)."""
    names = set()
    for spec in descendants(root, frozenset({"import_spec"})):
        alias = spec.child_by_field_name("name")
        path = node_text(spec.child_by_field_name("path")).strip('"`')
        parts = [_MAJOR_VERSION.sub("", part) for part in path.split("/")]
        if alias is not None:
            names.add(node_text(alias))
        elif any(parts):
            names.add([part for part in parts if part][-1])
    return names
