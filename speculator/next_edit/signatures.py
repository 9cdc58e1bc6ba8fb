"""Functions as their calls see them (Python, Go, JavaScript and TypeScript):
which parameters a call fills by position, which by name, the calls of a
function in a file, and what a Go function returns.

caller_arguments.py reads them when a parameter is added (its callers pass it),
dropped_arguments.py when one is removed (its callers stop passing it),
results.py and error_checks.py when a Go function's results end in an error.
"""

from __future__ import annotations

from typing import NamedTuple

import tree_sitter

from .trees import RECEIVERS, descendants, functions_at, is_python_method, node_text

_SCRIPT_FUNCTIONS = frozenset(
    {"function_declaration", "method_definition", "arrow_function", "function_expression"}
)
FUNCTIONS = {
    "python": frozenset({"function_definition"}),
    "go": frozenset({"function_declaration", "method_declaration"}),
    **dict.fromkeys(
        ("javascript", "javascriptreact", "typescript", "typescriptreact"), _SCRIPT_FUNCTIONS
    ),
}
# Go functions with results of their own (a literal's returns are not its parent's).
GO_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})
CALLS = frozenset({"call", "call_expression", "new_expression"})
_CLASSES = frozenset({"class_definition", "class_declaration", "class"})
# Parameters that hold one plain name (a splat or a destructured one holds none),
# and the field it stands in (None: the first named child).
_NAMED = {
    "identifier": None,
    "typed_parameter": None,  # python
    "default_parameter": "name",
    "typed_default_parameter": "name",
    "assignment_pattern": "left",  # javascript
    "required_parameter": "pattern",  # typescript
    "optional_parameter": "pattern",
}


class Signature(NamedTuple):
    name: str
    is_method: bool
    positional: list[tree_sitter.Node]  # the name nodes, in order, bar the receiver
    required: int  # how many of them a call must fill
    open_ended: bool  # more may follow (`*args`, Go's `...`)
    keywords: frozenset[str]  # the names a call may pass by name (Python)
    any_keyword: bool  # `**kwargs`
    # Names a call may qualify a function with: the module it comes from, as this
    # file imports it (`price.total(...)` after `import price`).
    qualifiers: frozenset[str] = frozenset()

    @property
    def names(self) -> list[str]:
        return [node_text(n) for n in self.positional]


class GoResults(NamedTuple):
    types: list[tree_sitter.Node]  # one per value returned: `(a, b int)` gives two
    named: bool  # `(n int, err error)`: a bare `return` returns them

    @property
    def end_in_error(self) -> bool:
        return bool(self.types) and node_text(self.types[-1]) == "error"


def go_results(function: tree_sitter.Node) -> GoResults | None:
    """What a Go function returns; None where a result's type does not parse."""
    result = function.child_by_field_name("result")
    if result is None:
        return GoResults([], False)
    if result.type != "parameter_list":
        return GoResults([result], False)
    types: list[tree_sitter.Node] = []
    named = False
    for declaration in result.named_children:
        if declaration.type == "comment":
            continue
        kind = declaration.child_by_field_name("type")
        if kind is None:
            return None
        names = declaration.children_by_field_name("name")
        named = named or bool(names)
        types += [kind] * max(1, len(names))
    return GoResults(types, named)


def signature_at(root: tree_sitter.Node, row: int, language_id: str) -> Signature | None:
    """The signature of the innermost function around line `row`."""
    functions = functions_at(root, row, FUNCTIONS[language_id])
    return signature_of(functions[-1], language_id) if functions else None


def signature_of(function: tree_sitter.Node, language_id: str) -> Signature | None:
    """How calls see the function; None for one without a name (a callback)."""
    name, parameters = _name_of(function), function.child_by_field_name("parameters")
    if name is None or parameters is None:
        return None
    if language_id == "go":
        return _go_signature(name, function.type == "method_declaration", parameters)
    signature: Signature | None
    if language_id == "python":
        signature = _python_signature(name, is_python_method(function), parameters)
    else:
        signature = _script_signature(name, function.type == "method_definition", parameters)
    constructor = name == ("__init__" if language_id == "python" else "constructor")
    return _as_class_call(signature, function) if constructor and signature else signature


def _as_class_call(signature: Signature, function: tree_sitter.Node) -> Signature:
    """A constructor as its calls see it: the class's name, called (`Cache(...)`,
    `new Cache(...)`)."""
    node = function.parent
    while node is not None and node.type not in _CLASSES:
        node = node.parent
    name = node.child_by_field_name("name") if node is not None else None
    if not signature.is_method or name is None:
        return signature
    return signature._replace(name=node_text(name), is_method=False)


def callee_of(call: tree_sitter.Node) -> tree_sitter.Node | None:
    """What a call calls: `f` of `f(x)`, `Cache` of `new Cache(x)`."""
    return call.child_by_field_name("function") or call.child_by_field_name("constructor")


def _name_of(function: tree_sitter.Node) -> str | None:
    """A function's name, or the name of the variable a literal is assigned to."""
    name = function.child_by_field_name("name")
    if name is None and function.parent is not None:
        if function.parent.type == "variable_declarator":
            name = function.parent.child_by_field_name("name")
    return node_text(name) if name is not None and name.type != "error" else None


def _go_signature(name: str, is_method: bool, parameters: tree_sitter.Node) -> Signature:
    positional: list[tree_sitter.Node] = []
    open_ended = False
    for parameter in parameters.named_children:
        if parameter.type == "parameter_declaration":
            positional += [c for c in parameter.named_children if c.type == "identifier"]
        open_ended = open_ended or parameter.type == "variadic_parameter_declaration"
    return Signature(name, is_method, positional, len(positional), open_ended, frozenset(), False)


def _python_signature(name: str, is_method: bool, parameters: tree_sitter.Node) -> Signature:
    positional: list[tree_sitter.Node] = []
    keywords: set[str] = set()
    required, by_name_only, open_ended, any_keyword = 0, False, False, False
    for parameter in parameters.named_children:
        inner = parameter.named_children[0] if parameter.type == "typed_parameter" else parameter
        if inner.type in ("keyword_separator", "list_splat_pattern"):
            by_name_only = True  # what follows is passed by name only
            open_ended = open_ended or inner.type == "list_splat_pattern"
        any_keyword = any_keyword or inner.type == "dictionary_splat_pattern"
        spelled = parameter_name(parameter)
        if spelled is None:
            continue
        keywords.add(node_text(spelled))
        if by_name_only:
            continue
        positional.append(spelled)
        if parameter.type in ("identifier", "typed_parameter") and required == len(positional) - 1:
            required += 1
    if is_method and positional and node_text(positional[0]) in RECEIVERS:
        keywords.discard(node_text(positional[0]))
        positional, required = positional[1:], max(required - 1, 0)
    return Signature(
        name, is_method, positional, required, open_ended, frozenset(keywords), any_keyword
    )


def _script_signature(name: str, is_method: bool, parameters: tree_sitter.Node) -> Signature | None:
    positional: list[tree_sitter.Node] = []
    required, open_ended = 0, False
    for parameter in parameters.named_children:
        pattern = parameter.child_by_field_name("pattern") or parameter
        if pattern.type == "rest_pattern":
            open_ended = True  # `...more`: the last
            break
        spelled = parameter_name(parameter)
        if spelled is None:
            return None  # destructured or a comment: which name a call fills is unclear
        positional.append(spelled)
        optional = parameter.type in ("optional_parameter", "assignment_pattern")
        if not optional and parameter.child_by_field_name("value") is None:
            required += 1 if required == len(positional) - 1 else 0
    return Signature(name, is_method, positional, required, open_ended, frozenset(), False)


def parameter_name(parameter: tree_sitter.Node) -> tree_sitter.Node | None:
    """The name node of a Python, JavaScript or TypeScript parameter that has a
    plain name; None for a splat, a destructured one or a comment."""
    if parameter.type not in _NAMED:
        return None
    field = _NAMED[parameter.type]
    if parameter.type == "identifier":
        return parameter
    spelled = (
        parameter.child_by_field_name(field) if field is not None else parameter.named_children[0]
    )
    return spelled if spelled is not None and spelled.type == "identifier" else None


def calls_of(
    root: tree_sitter.Node, signature: Signature, language_id: str
) -> list[tree_sitter.Node]:
    """The calls in the file that reach the function: a Python function by its name
    (or on one of its qualifiers), a method on `self` or `cls`; a Go function by its
    name, a method on any value; a JavaScript or TypeScript function by its name (or
    on a qualifier), a method on `this`."""
    found = []
    for node in descendants(root, CALLS):
        callee = callee_of(node)
        if callee is None:
            continue
        if callee.type == "identifier":
            if not signature.is_method and node_text(callee) == signature.name:
                found.append(node)
            continue
        member = next(
            (m for f in ("attribute", "field", "property") if (m := callee.child_by_field_name(f))),
            None,
        )
        receiver = callee.child_by_field_name("object") or callee.child_by_field_name("operand")
        if member is None or receiver is None or node_text(member) != signature.name:
            continue
        receivers = RECEIVERS if signature.is_method else signature.qualifiers
        if node_text(receiver) in receivers or signature.is_method and language_id == "go":
            found.append(node)
    return found


def arguments_of(call: tree_sitter.Node) -> list[tree_sitter.Node] | None:
    """A call's arguments (bar comments), when none is unpacked (`*args`, Go's `xs...`)."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None or arguments.text is not None and b"..." in arguments.text:
        return None
    values = [a for a in arguments.named_children if a.type != "comment"]
    unpacked = ("list_splat", "dictionary_splat", "variadic_argument")
    return None if any(a.type in unpacked for a in values) else values


def by_position(values: list[tree_sitter.Node]) -> list[tree_sitter.Node]:
    """The arguments passed by position: those before the first passed by name."""
    named = [i for i, a in enumerate(values) if a.type == "keyword_argument"]
    return values[: named[0]] if named else values


def keyword_name(argument: tree_sitter.Node) -> str | None:
    """The name a Python argument is passed by (`strict` of `strict=True`)."""
    if argument.type != "keyword_argument":
        return None
    return node_text(argument.child_by_field_name("name"))
