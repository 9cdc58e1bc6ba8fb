"""A parameter added to a constructor, stored where the others are.

`def __init__(self, size):` made `def __init__(self, size, ttl):` in a class whose
constructor keeps its parameters as attributes (`self.size = size`) leaves `ttl`
read nowhere: the next edit is `self.ttl = ttl`, after the line that stores the
parameter before it (before the first store, when none before it is stored). The
same for a JavaScript or TypeScript `constructor` (`this.ttl = ttl;`); a
TypeScript parameter property (`private ttl: number`) stores itself.

The rule reads the code as it stands: it follows a constructor whose parameters
the user's edit touched, and stores each parameter that its body neither stores
nor reads, when it stores at least one other parameter so. Splat parameters
(`*args`, `...rest`) are not stored.
"""

from __future__ import annotations

import re

import tree_sitter

from .line_edits import indentation
from .occurrences import MAX_PARSE_CHARS
from .trees import syntax_root

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
# Parameter nodes that hold one plain name (a splat or a TypeScript parameter
# property is none), and the field it stands in (None: the first identifier).
_PARAMETERS = {
    "identifier": None,
    "typed_parameter": None,  # python
    "default_parameter": "name",
    "typed_default_parameter": "name",
    "assignment_pattern": "left",  # javascript
    "required_parameter": "pattern",  # typescript
    "optional_parameter": "pattern",
}


def stored_parameter_lines(text: str, focus: tuple[int, int], language_id: str) -> dict[int, str]:
    """Lines of `text` (by 0-based number) followed by the store of a parameter the
    constructor whose signature the user's edit (lines `focus` [a, b)) touched does
    not store yet (a line becomes two: it and the store)."""
    kind = next((k for k in _CONSTRUCTORS if language_id in k[0]), None)
    if kind is None or len(text) > MAX_PARSE_CHARS:
        return {}
    _, name, definition, receiver = kind
    root = syntax_root(language_id, text)
    constructor = _constructor_at(root, focus, name, definition) if root is not None else None
    if constructor is None:
        return {}
    parameters = constructor.child_by_field_name("parameters")
    body = constructor.child_by_field_name("body")
    if parameters is None or body is None:
        return {}
    names = [n for n in _parameter_names(parameters) if n != receiver]
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
        store = f"{indentation(template)}{receiver}.{missing} = {missing}"
        store += ";" if template.rstrip().endswith(";") else ""
        rewrites[at] = f"{rewrites.get(at, lines[at])}\n{store}"
    return rewrites


def _constructor_at(
    root: tree_sitter.Node, focus: tuple[int, int], name: str, definition: str
) -> tree_sitter.Node | None:
    """The constructor whose parameters lie on lines `focus` touches."""
    pending = [root]
    while pending:
        node = pending.pop()
        if node.end_point[0] < focus[0] or node.start_point[0] >= focus[1]:
            continue
        spelled = node.child_by_field_name("name")
        parameters = node.child_by_field_name("parameters")
        if node.type == definition and spelled is not None and _text(spelled) == name:
            touched = parameters is not None and parameters.start_point[0] < focus[1]
            if touched and parameters is not None and parameters.end_point[0] >= focus[0]:
                return node
        pending.extend(node.named_children)
    return None


def _parameter_names(parameters: tree_sitter.Node) -> list[str]:
    names = []
    for parameter in parameters.named_children:
        if parameter.type not in _PARAMETERS:
            continue
        if any(c.type == "accessibility_modifier" for c in parameter.children):
            continue  # a TypeScript parameter property: stored already
        field = _PARAMETERS[parameter.type]
        if parameter.type == "identifier":
            spelled: tree_sitter.Node | None = parameter
        elif field is not None:
            spelled = parameter.child_by_field_name(field)
        else:
            spelled = next((c for c in parameter.named_children if c.type == "identifier"), None)
        if spelled is not None and spelled.type == "identifier":
            names.append(_text(spelled))
    return names


def _store_lines(
    lines: list[str], body: tree_sitter.Node, names: list[str], receiver: str
) -> dict[str, int]:
    """Each parameter stored as the attribute of its name (`self.size = size`,
    `self.encoder = encoder or default_encoder()`) on a line of the body's own:
    the line that stores it."""
    stores: dict[str, int] = {}
    for row in range(body.start_point[0], body.end_point[0] + 1):
        for name in names:
            pattern = rf"{receiver}\.{name}\s*(?::[^=]+)?=\s*.*\b{name}\b.*"
            if name not in stores and re.fullmatch(pattern, lines[row].strip()):
                stores[name] = row
    return stores


def _reads(body: tree_sitter.Node, name: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", _text(body)) is not None


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""
