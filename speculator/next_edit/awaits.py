"""Calls of a function made async, awaited where async code uses them.

`def fetch(url):` made `async def fetch(url):` (in TypeScript or JavaScript,
`async function load()` or an `async` method) leaves each call of it returning a
coroutine (a promise) where its result was used. Inside async functions the next
edits are `await fetch(url)`: where the call is a statement alone, an assignment's
value or the value returned. Elsewhere it is left alone: a call passed on
(`asyncio.gather(fetch(a), fetch(b))`) is awaited by what takes it, a result kept
in a name that is awaited later (`reply = self.do_history()`, then `if
inspect.isawaitable(reply): reply = await reply`) is awaited there, and a call in
a plain function needs that function made async first, the user's choice.

The rule reads the code as it stands: it follows a function whose async
definition, or an awaited call of it, is on the lines the user just edited. So
once one `await` is taken, the next call follows. Only functions defined async in
this file are followed, called by name or, for a method, on `self` or `this`;
and a function made async in another file, in the files that import it
(across.py), called by name or on its module (`api.fetch_user(...)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter

from .occurrences import MAX_PARSE_CHARS, nearby
from .trees import RECEIVERS, descendants, functions_at, is_python_method, node_text, syntax_root
from .window import lines_with_insertions

# The function definitions of each grammar served (an `async` child marks them async).
_FUNCTIONS = frozenset(
    {
        "function_definition",  # python
        "lambda",
        "function_declaration",  # javascript, typescript
        "function_expression",
        "function",
        "generator_function_declaration",
        "method_definition",
        "arrow_function",
    }
)
_CLASSES = frozenset({"class_definition", "class_declaration", "class_body", "class"})
_CALLS = frozenset({"call", "call_expression"})
_AWAITS = frozenset({"await", "await_expression"})
# Where a call's result is used as it stands: (the parent's type, the call's field).
_USED = frozenset(
    {
        ("expression_statement", None),
        ("return_statement", None),
        ("assignment", "right"),  # python
        ("variable_declarator", "value"),  # javascript, typescript
        ("assignment_expression", "right"),
    }
)
_ASYNC_WORD = re.compile(r"\b(?:async|await)\b")
_LANGUAGES = frozenset({"python", "javascript", "javascriptreact", "typescript", "typescriptreact"})


def awaited_call_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) where a call of a function the user's edit
    (lines `focus` [a, b)) made async, or awaited, gets its `await`."""
    if language_id not in _LANGUAGES or len(text) > MAX_PARSE_CHARS:
        return {}
    edited = "\n".join(text.split("\n")[focus[0] : focus[1]])
    if _ASYNC_WORD.search(edited) is None:
        return {}  # most edits: no tree walked
    root = syntax_root(language_id, text)
    if root is None:
        return {}
    defined = _async_definitions(root)
    followed = {
        name
        for name in _names_on_lines(root, focus)
        if name in defined and defined[name] is not None
    }
    rewrites = _awaited(text, root, defined, followed) if followed else {}
    return {i: line for i, line in rewrites.items() if nearby(i, focus)}


def made_async(text: str, before: str, row: int, language_id: str) -> str | None:
    """The name of the function (not a method) that an edit on line `row` made
    async (`before`: the text it changed)."""
    if language_id not in _LANGUAGES or max(len(text), len(before)) > MAX_PARSE_CHARS:
        return None
    root, old_root = syntax_root(language_id, text), syntax_root(language_id, before)
    new = functions_at(root, row, _FUNCTIONS) if root is not None else []
    old = functions_at(old_root, row, _FUNCTIONS) if old_root is not None else []
    if not new or not old or _is_method(new[-1]) or _is_async(old[-1]):
        return None
    name = new[-1].child_by_field_name("name")
    return node_text(name) if name is not None and _is_async(new[-1]) else None


def awaited_calls(
    text: str, language_id: str, name: str, modules: frozenset[str] = frozenset()
) -> dict[int, str]:
    """Lines of `text` where a call of the function `name`, made async in another
    file, gets its `await`: by its name, or on one of `modules` (the names this
    file gives that file's module); none where this file defines a function of
    that name."""
    if language_id not in _LANGUAGES or len(text) > MAX_PARSE_CHARS:
        return {}
    root = syntax_root(language_id, text)
    if root is None or name in _async_definitions(root):
        return {}
    return _awaited(text, root, {name: False}, {name}, modules)


def _awaited(
    text: str,
    root: tree_sitter.Node,
    defined: dict[str, bool | None],
    followed: set[str],
    modules: frozenset[str] = frozenset(),
) -> dict[int, str]:
    """The lines where the calls of the `followed` functions get their `await`."""
    starts = [
        (call.start_byte, "await ")
        for call in descendants(root, _CALLS)
        if _callee(call, defined, modules) in followed and _unawaited(call) and _in_async(call)
    ]
    return lines_with_insertions(text, starts)


def _async_definitions(root: tree_sitter.Node) -> dict[str, bool | None]:
    """Each function's name: whether it is a method (its calls are on `self` or
    `this`), None when a definition of that name is not async (which one a call
    reaches is unknown)."""
    found: dict[str, bool | None] = {}
    for function in descendants(root, _FUNCTIONS):
        name = function.child_by_field_name("name")
        if name is None:
            continue
        spelled, is_method = node_text(name), _is_method(function)
        if not _is_async(function) or found.get(spelled, is_method) != is_method:
            found[spelled] = None
        elif spelled not in found:
            found[spelled] = is_method
    return found


def _names_on_lines(root: tree_sitter.Node, focus: tuple[int, int]) -> Iterator[str]:
    """Names of the functions defined, or of the calls awaited, on lines `focus`."""
    first, end = focus
    for node in descendants(root, _FUNCTIONS | _AWAITS):
        name = node.child_by_field_name("name")
        if name is not None and first <= name.start_point[0] < end:
            yield node_text(name)
        call = next((c for c in node.named_children if c.type in _CALLS), None)
        if node.type in _AWAITS and call is not None and first <= call.start_point[0] < end:
            callee = call.child_by_field_name("function")
            if callee is not None:
                yield node_text(callee).rsplit(".", 1)[-1]


def _callee(
    call: tree_sitter.Node, defined: dict[str, bool | None], modules: frozenset[str]
) -> str | None:
    """The async function a call reaches: by name or on one of `modules`, or a
    method on `self` or `this`."""
    callee = call.child_by_field_name("function")
    if callee is None:
        return None
    if callee.type == "identifier":
        name = node_text(callee)
        return name if defined.get(name) is False else None
    receiver = callee.child_by_field_name("object")
    member = callee.child_by_field_name("attribute") or callee.child_by_field_name("property")
    if receiver is None or member is None:
        return None
    name, on = node_text(member), node_text(receiver)
    if on in modules:
        return name if defined.get(name) is False else None
    return name if on in RECEIVERS and defined.get(name) is True else None


def _unawaited(call: tree_sitter.Node) -> bool:
    """Is the call's result used as it stands (not awaited, not passed on)?"""
    parent = call.parent
    if parent is None:
        return False
    field = next(
        (parent.field_name_for_child(i) for i, c in enumerate(parent.children) if c.id == call.id),
        None,
    )
    if (parent.type, field) not in _USED:
        return False
    target = parent.child_by_field_name("left") or parent.child_by_field_name("name")
    return target is None or not _awaited_later(call, node_text(target))


def _awaited_later(call: tree_sitter.Node, name: str) -> bool:
    """Does the function around the call await the name its result is given to, or
    test it for that (`if inspect.isawaitable(reply): reply = await reply`)?"""
    function = _enclosing_function(call)
    if function is None:
        return False
    after = (function.text or b"")[call.end_byte - function.start_byte :].decode("utf-8", "replace")
    spelled = re.escape(name)
    return (
        re.search(rf"\bawait\s+{spelled}\b|\bis(?:awaitable|coroutine)\(\s*{spelled}\s*\)", after)
        is not None
    )


def _in_async(node: tree_sitter.Node) -> bool:
    """Is the innermost function around `node` async?"""
    function = _enclosing_function(node)
    return function is not None and _is_async(function)


def _enclosing_function(node: tree_sitter.Node) -> tree_sitter.Node | None:
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
        parent = parent.parent
    return parent


def _is_method(function: tree_sitter.Node) -> bool:
    in_class = function.parent is not None and function.parent.type in _CLASSES
    return in_class or is_python_method(function)


def _is_async(function: tree_sitter.Node) -> bool:
    return any(c.type == "async" for c in function.children)
