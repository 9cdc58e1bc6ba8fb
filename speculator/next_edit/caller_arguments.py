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
method on `self` or `cls`; a Go function by its name, a method on any value; a
JavaScript or TypeScript function by its name (a `const` holding one too), a
method on `this`.
"""

from __future__ import annotations

import re

import tree_sitter

from .occurrences import MAX_PARSE_CHARS
from .signatures import FUNCTIONS, Signature, arguments_of, calls_of, signature_at
from .trees import node_text, syntax_root
from .window import lines_with_insertions

# What holds a caller's own names: a function, and a literal (a closure sees them).
_CALLERS = {
    **FUNCTIONS,
    "python": frozenset({"function_definition"}),
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
}


def caller_argument_lines(
    text: str, focus: tuple[int, int], old_lines: list[str], language_id: str
) -> dict[int, str]:
    """Lines of `text` (by 0-based number) where a call of the function whose new
    parameter the user's edit wrote (lines `focus` [a, b) now, `old_lines` before)
    passes the caller's own value of that name."""
    added = added_parameter(text, focus, old_lines, language_id)
    return passed_at_calls(text, added, language_id) if added is not None else {}


def added_parameter(
    text: str, focus: tuple[int, int], old_lines: list[str], language_id: str
) -> tuple[Signature, int] | None:
    """The function whose one new required parameter an edit wrote on lines `focus`
    (`old_lines` before it), and which parameter that is."""
    if language_id not in FUNCTIONS or len(text) > MAX_PARSE_CHARS:
        return None
    root = syntax_root(language_id, text)
    signature = signature_at(root, focus[0], language_id) if root is not None else None
    new = _new_parameter(signature, focus, " ".join(old_lines)) if signature else None
    return (signature, new) if signature is not None and new is not None else None


def passed_at_calls(text: str, added: tuple[Signature, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) where a call one argument short passes
    the caller's own value of the new parameter's name."""
    root = syntax_root(language_id, text) if len(text) <= MAX_PARSE_CHARS else None
    if root is None:
        return {}
    signature, new = added
    name = signature.names[new]
    inserts = []
    for call in calls_of(root, signature, language_id):
        arguments, values = call.child_by_field_name("arguments"), arguments_of(call)
        if arguments is None or values is None or len(values) != signature.required - 1:
            continue
        if any(v.type == "keyword_argument" for v in values):
            continue
        if _has_own(call, name, language_id):
            inserts.append(_insertion(arguments, values, new, name))
    return lines_with_insertions(text, inserts)


def _new_parameter(signature: Signature, focus: tuple[int, int], old: str) -> int | None:
    """Which required parameter of the function is the one on lines `focus` that
    the text `old` they replaced did not name (None: not one alone)."""
    if signature.open_ended:
        return None  # a call's count of arguments does not say which it fills
    new = [
        i
        for i, n in enumerate(signature.positional[: signature.required])
        if focus[0] <= n.start_point[0] < focus[1] and not _names(old, node_text(n))
    ]
    return new[0] if len(new) == 1 else None


def _has_own(call: tree_sitter.Node, name: str, language_id: str) -> bool:
    """Does a function around the call (a closure sees its outer function's names)
    have `name` before it: a parameter, a variable?"""
    caller = call.parent
    while caller is not None:
        if caller.type in _CALLERS[language_id]:
            before = (caller.text or b"")[: call.start_byte - caller.start_byte]
            if _names(before.decode("utf-8", "replace"), name):
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
