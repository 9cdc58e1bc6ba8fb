"""A parameter added to a function, put to use where the function uses the others.

- **Stored.** `def __init__(self, size):` made `def __init__(self, size, ttl):` in
  a constructor that keeps its parameters as attributes (`self.size = size`, or
  `self._size = size`) leaves `ttl` read nowhere: the next edit is `self.ttl =
  ttl`, after the line that stores the parameter before it (before the first
  store, when none before it is stored). The same for a JavaScript or TypeScript
  `constructor` (`this.ttl = ttl;`); a TypeScript parameter property (`private
  ttl: number`) stores itself.
- **Passed on.** A Python function that passes every other parameter of its own
  on to a call (`self._data_build(data, modname, path)` in `string_build(self,
  data, modname, path)`) is a wrapper: a parameter added to it is passed on too,
  by name (`is_stub=is_stub`).

Both read the code as it stands: they follow the function whose parameters the
user's edit touched, and put to use each parameter that its body does not read.
Splat parameters (`*args`, `...rest`) are neither stored nor passed on.
"""

from __future__ import annotations

import re

import tree_sitter

from .line_edits import indentation
from .occurrences import MAX_PARSE_CHARS
from .signatures import parameter_name
from .trees import RECEIVERS, descendants, node_text, syntax_root
from .window import lines_with_insertions

# (language ids, constructor name, definition type, the receiver stores go on)
_CONSTRUCTORS = (
    (frozenset({"python"}), "__init__", "function_definition", "self"),
    (
        frozenset({"javascript", "javascriptreact", "typescript", "typescriptreact"}),
        "constructor",
        "method_definition",
        "this",
    ),
)
# Python scopes of their own inside a function.
_NESTED = frozenset({"function_definition", "lambda", "class_definition"})
# A call passes on at least this many parameters of its function's own to be that
# wrapper's: one alone (`os.fspath(path)`, `self.socket.send(data)`) is a use.
MIN_PASSED_ON = 2


def stored_parameter_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) followed by the store of a parameter the
    constructor whose signature the user's edit (lines `focus` [a, b)) touched does
    not read yet (a line becomes two: it and the store)."""
    kind = next((k for k in _CONSTRUCTORS if language_id in k[0]), None)
    if kind is None:
        return {}
    _, name, definition, receiver = kind
    found = _signature_at(text, focus, language_id, definition)
    if found is None or node_text(found[0].child_by_field_name("name")) != name:
        return {}
    _, body, names = found
    lines = text.split("\n")
    stores = _store_lines(lines, body, names, receiver)
    if not stores:
        return {}
    rewrites: dict[int, str] = {}
    for index, missing in enumerate(names):
        if missing in stores or _reads(body, missing):
            continue
        after = [stores[n] for n in names[:index] if n in stores]
        at = max(after) if after else min(stores.values()) - 1
        template = lines[max(after) if after else min(stores.values())]
        private = "_" if template.lstrip().startswith(f"{receiver}._") else ""
        store = f"{indentation(template)}{receiver}.{private}{missing} = {missing}"
        store += ";" if template.rstrip().endswith(";") else ""
        rewrites[at] = f"{rewrites.get(at, lines[at])}\n{store}"
    return rewrites


def forwarded_parameter_lines(
    text: str, focus: tuple[int, int], language_id: str
) -> dict[int, str]:
    """Lines of `text` (by 0-based number) where a call that passes on every other
    parameter of the Python function whose signature the user's edit touched
    passes on the one its body does not read yet, by name."""
    if language_id != "python":
        return {}
    found = _signature_at(text, focus, language_id, "function_definition")
    if found is None:
        return {}
    _, body, names = found
    missing = [n for n in names if not _reads(body, n)]
    others = set(names) - set(missing)
    if len(missing) != 1 or len(others) < MIN_PASSED_ON:
        return {}
    inserts = [
        (args.children[-1].start_byte, f", {missing[0]}={missing[0]}")
        for args in _argument_lists(body)
        if _passed_on(args) == others and args.children[-1].type == ")"
    ]
    return lines_with_insertions(text, inserts)


def _signature_at(
    text: str, focus: tuple[int, int], language_id: str, definition: str
) -> tuple[tree_sitter.Node, tree_sitter.Node, list[str]] | None:
    """The function whose parameters lie on lines `focus` touches, its body and its
    parameters' names (bar the receiver and splats)."""
    if len(text) > MAX_PARSE_CHARS:
        return None
    root = syntax_root(language_id, text)
    pending = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if node.end_point[0] < focus[0] or node.start_point[0] >= focus[1]:
            continue
        parameters = node.child_by_field_name("parameters")
        body = node.child_by_field_name("body")
        if node.type == definition and parameters is not None and body is not None:
            if parameters.start_point[0] < focus[1] and parameters.end_point[0] >= focus[0]:
                names = [n for n in _parameter_names(parameters) if n not in RECEIVERS]
                return node, body, names
        pending.extend(node.named_children)
    return None


def _parameter_names(parameters: tree_sitter.Node) -> list[str]:
    """The plain names of the parameters, bar TypeScript parameter properties
    (`private clock: Clock`: stored already)."""
    names = []
    for parameter in parameters.named_children:
        if any(c.type == "accessibility_modifier" for c in parameter.children):
            continue
        spelled = parameter_name(parameter)
        if spelled is not None:
            names.append(node_text(spelled))
    return names


def _store_lines(
    lines: list[str], body: tree_sitter.Node, names: list[str], receiver: str
) -> dict[str, int]:
    """Each parameter stored as the attribute of its name (`self.size = size`,
    `self._size = size`, `self.encoder = encoder or default_encoder()`) on a line
    of the body's own: the line that stores it."""
    stores: dict[str, int] = {}
    for row in range(body.start_point[0], body.end_point[0] + 1):
        for name in names:
            pattern = rf"{receiver}\._?{name}\s*(?::[^=]+)?=\s*.*\b{name}\b.*"
            if name not in stores and re.fullmatch(pattern, lines[row].strip()):
                stores[name] = row
    return stores


def _argument_lists(body: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The argument lists of the calls in a function body (not in nested functions)."""
    calls = descendants(body, frozenset({"call"}), _NESTED)
    lists = (call.child_by_field_name("arguments") for call in calls)
    return [a for a in lists if a is not None and a.type == "argument_list"]


def _passed_on(arguments: tree_sitter.Node) -> set[str] | None:
    """The names a call's arguments pass on as they are (`data`, `path=path`);
    None when any argument is something else."""
    names = set()
    for argument in arguments.named_children:
        if argument.type == "identifier":
            names.add(node_text(argument))
            continue
        key = argument.child_by_field_name("name") if argument.type == "keyword_argument" else None
        value = argument.child_by_field_name("value") if key is not None else None
        if key is None or value is None or node_text(key) != node_text(value):
            return None
        names.add(node_text(key))
    return names


def _reads(body: tree_sitter.Node, name: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", node_text(body)) is not None
