"""A required parameter added to a function, passed by the callers that have it.

`func Load(path string)` made `func Load(ctx context.Context, path string)`
leaves each call `Load(path)` an argument short: Go does not compile it, and in
Python (`def load(session, path):`) it raises a TypeError. Where the calling
function has a `ctx` of its own (a parameter, or a variable set before the
call), the next edit passes it: `Load(ctx, path)`. Where it has none, what to
pass is the user's choice, and nothing is drafted.

The rule reads the code as it stands: it follows the function whose new
parameter is on the lines the user just edited (the one required parameter
there), and fills the calls in this file that are exactly one argument short,
passing nothing by name or unpacked. A Python function is called by its name, a
method on `self` or `cls`; a Go function by its name, a method on any value.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import tree_sitter

from .occurrences import MAX_PARSE_CHARS
from .trees import is_python_method, node_text, syntax_root
from .window import lines_with_insertions

_FUNCTIONS = {
    "python": frozenset({"function_definition"}),
    "go": frozenset({"function_declaration", "method_declaration"}),
}
_CALLERS = {
    "python": frozenset({"function_definition"}),
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
}
_CALLS = frozenset({"call", "call_expression"})
# Python parameters that a call must fill by position; any other kind ends them
# (a default, a splat, a bare `*`).
_REQUIRED = frozenset({"identifier", "typed_parameter"})
_RECEIVERS = frozenset({"self", "cls"})


class _Signature(NamedTuple):
    name: str
    is_method: bool
    required: list[tree_sitter.Node]  # the parameters' name nodes, in order
    new: int  # which of them the user just added


def caller_argument_lines(
    text: str, focus: tuple[int, int], old_lines: list[str], language_id: str
) -> dict[int, str]:
    """Lines of `text` (by 0-based number) where a call of the function whose new
    parameter the user's edit wrote (lines `focus` [a, b) now, `old_lines` before)
    passes the caller's own value of that name."""
    if language_id not in _FUNCTIONS or len(text) > MAX_PARSE_CHARS:
        return {}
    root = syntax_root(language_id, text)
    if root is None:
        return {}
    signature = _signature_at(root, focus, " ".join(old_lines), language_id)
    if signature is None:
        return {}
    name = node_text(signature.required[signature.new])
    inserts = []
    for call in _calls_of(root, signature, language_id):
        arguments = call.child_by_field_name("arguments")
        values = _positional(arguments) if arguments is not None else None
        if values is None or len(values) != len(signature.required) - 1:
            continue
        if arguments is not None and _has_own(call, name, language_id):
            inserts.append(_insertion(arguments, values, signature.new, name))
    return lines_with_insertions(text, inserts)


def _signature_at(
    root: tree_sitter.Node, focus: tuple[int, int], old: str, language_id: str
) -> _Signature | None:
    """The function with one required parameter on lines `focus` that the text
    `old` they replaced did not name."""
    node: tree_sitter.Node | None = root
    while node is not None:
        if node.type in _FUNCTIONS[language_id]:
            break
        node = next(
            (c for c in node.named_children if c.start_point[0] <= focus[0] <= c.end_point[0]),
            None,
        )
    if node is None:
        return None
    name, parameters = node.child_by_field_name("name"), node.child_by_field_name("parameters")
    if name is None or parameters is None:
        return None
    required = _required(parameters, language_id)
    is_method = node.type == "method_declaration" or is_python_method(node)
    if required is None:
        return None
    if language_id == "python" and is_method and required:
        required = required[1:] if node_text(required[0]) in _RECEIVERS else required
    new = [
        i
        for i, n in enumerate(required)
        if focus[0] <= n.start_point[0] < focus[1] and not _names(old, node_text(n))
    ]
    if len(new) != 1:
        return None
    return _Signature(node_text(name), is_method, required, new[0])


def _required(parameters: tree_sitter.Node, language_id: str) -> list[tree_sitter.Node] | None:
    """The name nodes of the parameters a call fills by position; None when the
    function takes a variable number (Go's `...`)."""
    names: list[tree_sitter.Node] = []
    for parameter in parameters.named_children:
        if language_id == "go":
            if parameter.type != "parameter_declaration":
                return None
            names += [c for c in parameter.named_children if c.type == "identifier"]
            continue
        if parameter.type not in _REQUIRED:
            break
        spelled = parameter if parameter.type == "identifier" else parameter.named_children[0]
        if spelled.type != "identifier":
            break  # `*args: int`: what follows is passed by name
        names.append(spelled)
    return names


def _calls_of(
    root: tree_sitter.Node, signature: _Signature, language_id: str
) -> list[tree_sitter.Node]:
    found, pending = [], [root]
    while pending:
        node = pending.pop()
        pending.extend(node.named_children)
        callee = node.child_by_field_name("function") if node.type in _CALLS else None
        if callee is None:
            continue
        if not signature.is_method:
            if callee.type == "identifier" and node_text(callee) == signature.name:
                found.append(node)
            continue
        member = callee.child_by_field_name("attribute") or callee.child_by_field_name("field")
        receiver = callee.child_by_field_name("object") or callee.child_by_field_name("operand")
        if member is None or receiver is None or node_text(member) != signature.name:
            continue
        if language_id == "go" or node_text(receiver) in _RECEIVERS:
            found.append(node)
    return found


def _positional(arguments: tree_sitter.Node) -> list[tree_sitter.Node] | None:
    """A call's arguments, when all are passed by position and none unpacked."""
    values = [a for a in arguments.named_children if a.type != "comment"]
    plain = ("keyword_argument", "list_splat", "dictionary_splat", "variadic_argument")
    if any(a.type in plain for a in values) or arguments.text and b"..." in arguments.text:
        return None
    return values


def _has_own(call: tree_sitter.Node, name: str, language_id: str) -> bool:
    """Does a function around the call (a closure sees its outer function's names)
    have `name` before it: a parameter, a variable?"""
    caller = call.parent
    while caller is not None:
        if caller.type in _CALLERS[language_id]:
            before = (caller.text or b"")[: call.start_byte - caller.start_byte]
            if _names(before.decode("utf-8"), name):
                return True
        caller = caller.parent
    return False


def _names(text: str, name: str) -> bool:
    """Does `text` name `name` (not as an attribute)?"""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _insertion(
    arguments: tree_sitter.Node, values: list[tree_sitter.Node], at: int, name: str
) -> tuple[int, str]:
    """Where `name` goes among the call's arguments, as the `at`-th, and its text."""
    if not values:
        return arguments.children[0].end_byte, name
    if at < len(values):
        return values[at].start_byte, f"{name}, "
    return values[-1].end_byte, f", {name}"
