"""Where a renamed local lives: the function that binds it.

A parameter or a local variable renamed is another variable than a name spelled
the same in the next function or at module level: `def scale(value, factor)`
renamed to `amount` says nothing of the global `value` below it, and renaming that
one would change what the code means. So a rename of a name that a function
around the edit binds (a parameter of it, or a target it assigns) is carried only
inside that function, as an editor's rename of a local is, though not to the
function's own name (`def total(self)` around a local `total`: a name of the
scope outside). A name the function does not bind (a global, an import, a name
declared `global` there) is carried as before.

A type swapped in one declaration's annotation (`salt: _t_str_bytes` ->
`salt: _t_opt_str_bytes`, `-> list[float]` -> `-> list[Any]`) is a choice made for
that parameter or that function, not a rename of the type: its reach is the
edited lines, and it is carried nowhere (`annotation_swap`). So is one swapped in
a type alias's value (`Headers: TypeAlias = MutableMapping[str, str]`). A generic
swapped in a declaration with its arguments kept (`-> Iterator[None]` ->
`-> Generator[None]`, `Mapping[str, X]` -> `dict[str, X]`) is the file's
convention changing: carried as a rename.

The exceptions one `except` clause catches changed (`except ValueError:` ->
`except (ValueError, TypeError):`) are what that handler's `try` body raises: the
other handlers that read the same catch what theirs raise, and the change is
carried nowhere (`handler_change`). On the dev sets the draft carried it 3 times
and the next edit was never that.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import tree_sitter

from ..edits import Edit
from ..syntax import byte_offset, line_end, line_start
from .draft import word_pattern
from .occurrences import MAX_PARSE_CHARS
from .trees import syntax_root

# Nodes that open a function scope, in the grammars served.
FUNCTIONS = frozenset(
    {
        "function_definition",  # python
        "function_declaration",  # javascript, typescript, go
        "generator_function_declaration",
        "function_expression",
        "arrow_function",
        "method_definition",
        "method_declaration",  # go
        "func_literal",
        "function_item",  # rust
        "closure_expression",
    }
)
# A function's fields that hold its parameters.
_PARAMETER_FIELDS = ("parameters", "parameter", "receiver")
# (statement, field): the field's names are bound by the statement (imports.py
# reads them too: a name the edit binds needs no import).
BINDERS = frozenset(
    {
        ("assignment", "left"),  # python
        ("augmented_assignment", "left"),
        ("for_statement", "left"),
        ("for_in_clause", "left"),
        ("named_expression", "name"),
        ("as_pattern", "alias"),
        ("variable_declarator", "name"),  # javascript, typescript
        ("for_in_statement", "left"),
        ("short_var_declaration", "left"),  # go
        ("range_clause", "left"),
        ("let_declaration", "pattern"),  # rust
    }
)
# Nodes a bound name may stand in on its way up to what binds it (destructuring,
# a parameter's wrapper); an attribute, a call or a subscript is a use instead.
_PATTERNS = frozenset(
    {
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "list_splat_pattern",
        "dictionary_splat_pattern",
        "typed_parameter",
        "default_parameter",
        "typed_default_parameter",
        "as_pattern_target",
        "array_pattern",
        "object_pattern",
        "assignment_pattern",
        "rest_pattern",
        "required_parameter",
        "optional_parameter",
        "parameter_declaration",
        "variadic_parameter_declaration",
        "expression_list",
        "parameter",
        "mut_pattern",
    }
)
# Fields that hold a use even inside a pattern: a default value, a type.
_USE_FIELDS = frozenset({"value", "right", "type", "default", "return_type"})
# Fields that hold a declaration's type, in the grammars served.
_TYPE_FIELDS = frozenset({"type", "return_type", "result"})
# Python's exception handlers, and the parts of one that are not what it catches.
_HANDLERS = frozenset({"except_clause", "except_group_clause"})
_NOT_CAUGHT = frozenset({"except", "*", ":", "block", "comment"})


def carried_within(
    text: str,
    language_id: str,
    edit: Edit,
    renames: list[tuple[str, str]],
    focus: tuple[int, int] | None,
    members: Collection[str] = (),
) -> tuple[int, int] | None:
    """The lines [first, end) the last `edit` (made on the lines `focus`) is carried
    within: a renamed local's function; `focus` alone for a choice made for one
    declaration or one handler; None: anywhere, as a renamed member (`members`,
    members.py) is: read as an attribute anywhere, it is no local nor a type
    swapped (a Go struct's fields stand in a type)."""
    if members:
        return None
    scope = local_scope(text, language_id, edit.start, renames)
    if scope is not None:
        return scope
    if annotation_swap(text, language_id, edit.start, edit.new_end, renames):
        return focus
    return focus if handler_change(text, language_id, edit) else None


def local_scope(
    text: str, language_id: str, at: int, renames: list[tuple[str, str]]
) -> tuple[int, int] | None:
    """The lines [first, end) of the innermost function around offset `at` that
    binds every (old, new) plain name renamed (either spelling: the user may have
    renamed the binding or a use first); None when there is none (a global), no
    rename, or no grammar."""
    if not renames or len(text) > MAX_PARSE_CHARS:
        return None
    root = syntax_root(language_id, text)
    if root is None:
        return None
    offset = byte_offset(text, at)
    node: tree_sitter.Node | None = root.descendant_for_byte_range(offset, offset)
    while node is not None:
        if node.type in FUNCTIONS and all(_binds(node, pair) for pair in renames):
            return _body_rows(node, renames)
        node = node.parent
    return None


def _body_rows(function: tree_sitter.Node, renames: list[tuple[str, str]]) -> tuple[int, int]:
    """The rows [first, end) of `function`, from the row after its own name where
    that is a name renamed: `def total(self)` binds `total` outside the function,
    another variable than the local `total` renamed inside it."""
    first = function.start_point.row
    name = function.child_by_field_name("name")
    spelled = {word for pair in renames for word in pair}
    if name is not None and (name.text or b"").decode() in spelled:
        first = name.end_point.row + 1
    return first, function.end_point.row + 1


def _binds(function: tree_sitter.Node, names: tuple[str, str]) -> bool:
    """Does `function` bind one of `names` (as a parameter or an assignment target),
    and declare neither `global` nor `nonlocal`? Its text is searched for the names
    and only their nodes are read (a 5,000-line function using the name 10,000
    times: 4 ms when a parameter binds it, 45 ms to find that nothing does)."""
    source = function.text or b""
    parameters = {
        node.id
        for field in _PARAMETER_FIELDS
        if (node := function.child_by_field_name(field)) is not None
    }
    words = [rb"(?<!\w)" + re.escape(name.encode()) + rb"(?!\w)" for name in names]
    if any(re.search(rb"\b(?:global|nonlocal)\b[^\n]*" + word, source) for word in words):
        return False
    for word in words:
        for match in re.finditer(word, source):
            at = function.start_byte + match.start()
            node = function.descendant_for_byte_range(at, at + len(match.group()))
            if node is not None and node.type == "identifier":
                if _is_binding(node, function, parameters):
                    return True
    return False


def _is_binding(name: tree_sitter.Node, function: tree_sitter.Node, parameters: set[int]) -> bool:
    """Is this identifier a name being bound, not used: a parameter, or within an
    assignment's target through patterns only?"""
    node = name
    while (parent := node.parent) is not None and node.id != function.id:
        field = field_of(parent, node)
        if node.id in parameters or (parent.type, field) in BINDERS:
            return True
        if field in _USE_FIELDS or (parent.id not in parameters and parent.type not in _PATTERNS):
            return False
        node = parent
    return False


def field_of(parent: tree_sitter.Node, child: tree_sitter.Node) -> str | None:
    """The name of the field `child` stands in under `parent`, if any."""
    for index, node in enumerate(parent.children):
        if node.id == child.id:
            return parent.field_name_for_child(index)
    return None


def annotation_swap(
    text: str, language_id: str, start: int, end: int, renames: list[tuple[str, str]]
) -> bool:
    """Does each new name of the plain names renamed stand, on the lines the edit
    [start, end) occupies in `text`, only in a declaration's type annotation?
    False with no rename or no grammar."""
    if not renames or len(text) > MAX_PARSE_CHARS:
        return False
    root = syntax_root(language_id, text)
    if root is None:
        return False
    first, last = line_start(text, start), line_end(text, end)
    for _old, new in renames:
        uses = list(word_pattern(new, False).finditer(text, first, last))
        kinds = {_annotation(root, text, use.start(), use.end()) for use in uses}
        if not uses or None in kinds:
            return False
        if kinds == {"type"} and all(text.startswith("[", use.end()) for use in uses):
            return False  # `Iterator[None]` -> `Generator[None]`: the file's convention
    return True


def _annotation(root: tree_sitter.Node, text: str, start: int, end: int) -> str | None:
    """Where text[start:end] stands: in a declaration's type annotation ("type"),
    in a type alias's value ("alias"), or elsewhere (None)."""
    node: tree_sitter.Node | None = root.descendant_for_byte_range(
        byte_offset(text, start), byte_offset(text, end)
    )
    while node is not None and (parent := node.parent) is not None:
        field = field_of(parent, node)
        if field in _TYPE_FIELDS:
            return "type"
        if field == "right" and _alias(parent):
            return "alias"
        node = parent
    return None


def _alias(statement: tree_sitter.Node) -> bool:
    """Does `statement` define a type alias (`type X = ...`, `X: TypeAlias = ...`),
    whose value is a declaration's type too?"""
    if statement.type == "type_alias_statement":
        return True
    annotation = statement.child_by_field_name("type")
    return statement.type == "assignment" and (
        annotation is not None and (annotation.text or b"").endswith(b"TypeAlias")
    )


def handler_change(text: str, language_id: str, edit: Edit) -> bool:
    """Did `edit` change only the exceptions an `except` clause catches (read in the
    text before it and in `text`, after it)?"""
    before = edit.undo(text)
    return _in_caught(before, language_id, edit.start, edit.end) and _in_caught(
        text, language_id, edit.start, edit.new_end
    )


def _in_caught(text: str, language_id: str, start: int, end: int) -> bool:
    """Does text[start:end] lie in what an `except` clause catches?"""
    if len(text) > MAX_PARSE_CHARS:
        return False
    root = syntax_root(language_id, text)
    if root is None:
        return False
    first, last = byte_offset(text, start), byte_offset(text, end)
    node: tree_sitter.Node | None = root.descendant_for_byte_range(first, last)
    while node is not None and node.type not in _HANDLERS:
        node = node.parent
    if node is None:
        return False
    caught = next((c for c in node.children if c.type not in _NOT_CAUGHT), None)
    if caught is not None and caught.type == "as_pattern":
        caught = caught.children[0]  # not the name it is bound to
    return caught is not None and caught.start_byte <= first and last <= caught.end_byte
