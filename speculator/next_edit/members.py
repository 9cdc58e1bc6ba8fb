"""A member renamed where it is declared is renamed where it is read.

`price: float` in a dataclass made `cost: float`, or `def cheapest(self)` made
`def cheapest_item(self)`, renames the attribute `item.price` or the call
`cart.cheapest()` wherever the class is used, not the plain name (a parameter
`price` in the next function is another variable; `open` in a method's name is not
the builtin). So when the user's edit renames a name it declares as a member,
the rename is carried to attributes (`.price`) only, as a renamed attribute
(`self.price` -> `self.cost`) is.

Members, in the grammars served: a name assigned in a Python class body (a
dataclass field, a class attribute, an enum member) or a method defined there; a
property or method of a TypeScript interface, object type or class, or of a
JavaScript class; a field of a Go or Rust struct; a Go method; a function of a
Rust `impl` block.
"""

from __future__ import annotations

import tree_sitter

from ..edits import Edit
from ..syntax import byte_offset
from .occurrences import MAX_PARSE_CHARS, identifiers_on_lines
from .scope import field_of
from .trees import syntax_root

# (declaration, field): the field holds the name of the member it declares.
_DECLARES = frozenset(
    {
        ("property_signature", "name"),  # typescript: interface, object type
        ("method_signature", "name"),
        ("public_field_definition", "name"),  # typescript class
        ("method_definition", "name"),  # javascript, typescript class
        ("field_definition", "property"),  # javascript class
        ("field_declaration", "name"),  # go, rust struct
        ("method_declaration", "name"),  # go
    }
)


def renamed_members(
    text: str, language_id: str, edit: Edit, renames: list[tuple[str, str]]
) -> frozenset[str]:
    """The old names of the plain `renames` (old, new) whose new name the `edit`
    declares as a member on the lines it occupies in `text` (the text now)."""
    if not renames or len(text) > MAX_PARSE_CHARS:
        return frozenset()
    root = syntax_root(language_id, text)
    if root is None:
        return frozenset()
    declared = {
        match.group()
        for match in identifiers_on_lines(text, root, edit.start, edit.new_end)
        if _declares_member(root, text, match.start(), match.end())
    }
    return frozenset(old for old, new in renames if new in declared)


def as_attributes(names: list[str], members: frozenset[str]) -> list[str]:
    """`names` (occurrences.removed_names) with each renamed member as an attribute
    (`.price`): the places to go to are where it is read."""
    return [f".{name}" if name in members else name for name in names]


def _declares_member(root: tree_sitter.Node, text: str, start: int, end: int) -> bool:
    node = root.descendant_for_byte_range(byte_offset(text, start), byte_offset(text, end))
    parent = node.parent if node is not None else None
    if node is None or parent is None:
        return False
    field = field_of(parent, node)
    if (parent.type, field) in _DECLARES:
        return True
    if parent.type == "function_item" and field == "name":  # rust: in an `impl` block?
        return _owner(parent, "declaration_list") == "impl_item"
    if parent.type == "function_definition" and field == "name":  # python: a method?
        return _owner(_undecorated(parent), "block") == "class_definition"
    if parent.type == "assignment" and field == "left":  # python: a class attribute?
        return _owner(parent.parent, "block") == "class_definition"
    return False


def _undecorated(definition: tree_sitter.Node) -> tree_sitter.Node:
    """The decorated definition around a Python function, or the function itself."""
    parent = definition.parent
    return parent if parent is not None and parent.type == "decorated_definition" else definition


def _owner(node: tree_sitter.Node | None, body: str) -> str | None:
    """The type of the node whose `body` (a node of that type) holds `node`."""
    block = node.parent if node is not None else None
    if block is None or block.type != body or block.parent is None:
        return None
    return block.parent.type
