"""An argument the function no longer takes, dropped from the calls that pass it.

`def load(path, encoding, strict):` made `def load(path, encoding):` leaves each
call `load("a.txt", "utf-8", True)` an argument over: Python raises a TypeError,
Go and TypeScript do not compile. The next edit drops the argument where the
removed parameter stood (`load("a.txt", "utf-8")`) and, in Python, one passed by its name
(`strict=True`), unless a `**kwargs` takes it now.

Once the user has taken one (or dropped an argument by hand), the last edit is a
call's: an argument dropped from a call of a function defined in this file that
no longer takes it is dropped from its other calls the same way, those that pass
as many by position or that pass it by name.

The rule compares the code as it stands with the text before the edit: the
function (or the call) at the edit's first line in both, the same one in each.
"""

from __future__ import annotations

from typing import NamedTuple

import tree_sitter

from .occurrences import MAX_PARSE_CHARS
from .signatures import (
    CALLS,
    FUNCTIONS,
    Signature,
    arguments_of,
    by_position,
    callee_of,
    calls_of,
    keyword_name,
    signature_of,
)
from .trees import descendants, functions_at, node_text, syntax_root
from .window import lines_with_replacements

# A name read: `{strict}` in JavaScript reads `strict` too.
_NAMES = frozenset({"identifier", "shorthand_property_identifier"})
# Nodes whose field of that name holds a label, not a value read.
_LABELLED = {"keyword_argument": "name", "attribute": "attribute"}


class Dropped(NamedTuple):
    """What the calls of a function stop passing: the argument at `at` of those
    that pass `counts` by position, and the one passed by the name `keyword`."""

    signature: Signature
    at: int | None
    counts: range
    keyword: str | None


def dropped_argument_lines(
    text: str, before: str, focus: tuple[int, int], language_id: str
) -> dict[int, str | None]:
    """Lines of `text` (by 0-based number) where a call stops passing the argument
    that the user's edit (lines `focus` [a, b) now; `before`, the text it changed)
    removed from the function's parameters or from one of its calls."""
    dropped = removed_parameter(text, before, focus[0], language_id)
    if dropped is None and language_id in FUNCTIONS and len(before) <= MAX_PARSE_CHARS:
        root, old_root = syntax_root(language_id, text), syntax_root(language_id, before)
        if root is not None and old_root is not None:
            dropped = _argument_removed(root, old_root, focus[0], language_id)
    return dropped_at_calls(text, dropped, language_id) if dropped is not None else {}


def removed_parameter(text: str, before: str, row: int, language_id: str) -> Dropped | None:
    """The parameter an edit on line `row` removed from its function's signature
    (`before`: the text it changed)."""
    if language_id not in FUNCTIONS or max(len(text), len(before)) > MAX_PARSE_CHARS:
        return None
    root, old_root = syntax_root(language_id, text), syntax_root(language_id, before)
    if root is None or old_root is None:
        return None
    return _parameter_removed(root, old_root, row, language_id)


def dropped_at_calls(text: str, dropped: Dropped, language_id: str) -> dict[int, str | None]:
    """Lines of `text` (by 0-based number) where a call stops passing the argument."""
    root = syntax_root(language_id, text) if len(text) <= MAX_PARSE_CHARS else None
    if root is None:
        return {}
    cuts = [_cut(call, dropped) for call in calls_of(root, dropped.signature, language_id)]
    return lines_with_replacements(text, [c for c in cuts if c is not None])


def _parameter_removed(
    root: tree_sitter.Node, old_root: tree_sitter.Node, row: int, language_id: str
) -> Dropped | None:
    """The parameter the edit removed from the signature of the function at `row`."""
    pair = _same_innermost(root, old_root, row, FUNCTIONS[language_id])
    if pair is None:
        return None
    new, old = (signature_of(f, language_id) for f in pair)
    if new is None or old is None or new.name != old.name:
        return None
    index = _one_removed(old.names, new.names)
    gone = [old.names[index]] if index is not None else []
    if new.names == old.names:  # one passed by name only (after `*`)
        gone = sorted(old.keywords - new.keywords)
    if len(gone) != 1 or _reads(pair[0], gone[0]):
        return None  # a body that reads it still is the next edit's place
    keyword = gone[0] if not new.any_keyword else None
    if index is None:
        return Dropped(new, None, range(0), keyword) if keyword else None
    # A value passed by position at `index` was that parameter's, in a call that
    # passed no more than the function took.
    counts = range(index + 1, 10_000 if old.open_ended else len(old.positional) + 1)
    return Dropped(new, index, counts, keyword)


def _argument_removed(
    root: tree_sitter.Node, old_root: tree_sitter.Node, row: int, language_id: str
) -> Dropped | None:
    """The argument the edit removed from the call at `row`, when the function it
    calls is defined in this file and no longer takes it."""
    pair = _same_innermost(root, old_root, row, CALLS)
    if pair is None:
        return None
    new_call, old_call = pair
    new_values, old_values = arguments_of(new_call), arguments_of(old_call)
    if new_values is None or old_values is None:
        return None
    signature = _callee_signature(root, new_call, language_id)
    if signature is None:
        return None
    new_texts = [node_text(a) for a in by_position(new_values)]
    old_texts = [node_text(a) for a in by_position(old_values)]
    if new_texts == old_texts:  # one passed by name, removed
        kept = [node_text(a) for a in new_values]
        index = _one_removed([node_text(a) for a in old_values], kept)
        keyword = keyword_name(old_values[index]) if index is not None else None
        if keyword is None or keyword in signature.keywords or signature.any_keyword:
            return None
        return Dropped(signature, None, range(0), keyword)
    index = _one_removed(old_texts, new_texts)
    if index is None or signature.open_ended or len(old_texts) <= len(signature.positional):
        return None  # the function still takes that many
    return Dropped(signature, index, range(len(old_texts), len(old_texts) + 1), None)


def _same_innermost(
    root: tree_sitter.Node, old_root: tree_sitter.Node, row: int, types: frozenset[str]
) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """The innermost node of `types` around line `row` that the edit changed, now
    and before it (the same one: it starts at the same byte, before the edit)."""
    old = {n.start_byte: n for n in functions_at(old_root, row, types)}
    pairs = [
        (n, old[n.start_byte])
        for n in functions_at(root, row, types)
        if n.start_byte in old and n.text != old[n.start_byte].text
    ]
    return pairs[-1] if pairs else None


def _callee_signature(
    root: tree_sitter.Node, call: tree_sitter.Node, language_id: str
) -> Signature | None:
    """The signature of the one function in this file of the name the call calls."""
    callee = callee_of(call)
    if callee is None:
        return None
    name = node_text(callee).rsplit(".", 1)[-1]
    signatures = (signature_of(f, language_id) for f in descendants(root, FUNCTIONS[language_id]))
    found = [s for s in signatures if s is not None and s.name == name][:2]
    if len(found) != 1 or found[0].is_method != (callee.type != "identifier"):
        return None
    return found[0]


def _one_removed(old: list[str], new: list[str]) -> int | None:
    """Where `new` is `old` with one item removed; None when it is not."""
    if len(old) != len(new) + 1:
        return None
    index = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(new))
    return index if old[index + 1 :] == new[index:] else None


def _cut(call: tree_sitter.Node, dropped: Dropped) -> tuple[int, int, str] | None:
    """The bytes of the call to delete: the dropped argument and its comma."""
    values = arguments_of(call)
    if values is None:
        return None
    at = None
    if dropped.at is not None and len(by_position(values)) in dropped.counts:
        at = dropped.at
    elif dropped.keyword is not None:
        at = next((i for i, a in enumerate(values) if keyword_name(a) == dropped.keyword), None)
    if at is None:
        return None
    if at + 1 < len(values):
        return values[at].start_byte, values[at + 1].start_byte, ""
    if at > 0:
        return values[at - 1].end_byte, values[at].end_byte, ""
    return values[at].start_byte, values[at].end_byte, ""


def _reads(function: tree_sitter.Node, name: str) -> bool:
    """Does the function's body use `name` (not as an argument's name or a member)?"""
    body = function.child_by_field_name("body")
    names = descendants(body, _NAMES) if body is not None else iter(())
    return any(node_text(n) == name and not _labels(n) for n in names)


def _labels(identifier: tree_sitter.Node) -> bool:
    """Is the identifier the name of an argument (`strict=`) or a member (`x.strict`)?"""
    parent = identifier.parent
    if parent is None or parent.type not in _LABELLED:
        return False
    label = parent.child_by_field_name(_LABELLED[parent.type])
    return label is not None and label.id == identifier.id
