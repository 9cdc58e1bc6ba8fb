"""A field renamed where it is declared is renamed where it is read.

`price: float` in a dataclass made `cost: float` is a rename of the attribute
`item.price` everywhere the class is used, not of the plain name `price` (a
parameter called so in the next function is another variable). So when the user's
edit renames a name it declares as a field, the rename is carried to attributes
(`.price`) only, as a renamed attribute (`self.price` -> `self.cost`) is.

Fields, in the grammars served: a name assigned in a Python class body (a
dataclass field, a class attribute, an enum member); a property of a TypeScript
interface, object type or class, or of a JavaScript class; a field of a Go or
Rust struct.
"""

from __future__ import annotations

import tree_sitter

from ..edits import Edit
from ..syntax import byte_offset
from .occurrences import MAX_PARSE_CHARS, identifiers_on_lines
from .scope import field_of
from .trees import syntax_root

# (declaration, field): the field names the property or struct field it declares.
_DECLARES = frozenset(
    {
        ("property_signature", "name"),  # typescript: interface, object type
        ("public_field_definition", "name"),  # typescript class
        ("field_definition", "property"),  # javascript class
        ("field_declaration", "name"),  # go, rust struct
    }
)


def renamed_fields(
    text: str, language_id: str, edit: Edit, renames: list[tuple[str, str]]
) -> frozenset[str]:
    """The old names of the plain `renames` (old, new) whose new name the `edit`
    declares as a field on the lines it occupies in `text` (the text now)."""
    if not renames or len(text) > MAX_PARSE_CHARS:
        return frozenset()
    root = syntax_root(language_id, text)
    if root is None:
        return frozenset()
    declared = {
        match.group()
        for match in identifiers_on_lines(text, root, edit.start, edit.new_end)
        if _declares_field(root, text, match.start(), match.end())
    }
    return frozenset(old for old, new in renames if new in declared)


def as_attributes(names: list[str], fields: frozenset[str]) -> list[str]:
    """`names` (occurrences.removed_names) with each renamed field as an attribute
    (`.price`): the places to go to are where it is read."""
    return [f".{name}" if name in fields else name for name in names]


def _declares_field(root: tree_sitter.Node, text: str, start: int, end: int) -> bool:
    node = root.descendant_for_byte_range(byte_offset(text, start), byte_offset(text, end))
    parent = node.parent if node is not None else None
    if node is None or parent is None:
        return False
    field = field_of(parent, node)
    if (parent.type, field) in _DECLARES:
        return True
    return parent.type == "assignment" and field == "left" and _in_class_body(parent)


def _in_class_body(assignment: tree_sitter.Node) -> bool:
    """Is this Python assignment a statement of a class body (not of a method)?"""
    statement = assignment.parent
    block = statement.parent if statement is not None else None
    owner = block.parent if block is not None else None
    return (
        statement is not None
        and statement.type == "expression_statement"
        and block is not None
        and block.type == "block"
        and owner is not None
        and owner.type == "class_definition"
    )
