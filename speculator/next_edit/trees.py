"""Syntax trees of a next edit's texts, each parsed once per request.

Preparing a next edit reads the tree of the document now in three places (the
names the edit removed, their other places, the names it left unbound) and the
tree of the text before the edit in two: on a 300 KB file each parse was 31 ms.
The last few trees are kept per thread (a parser is never shared between
threads, speculator/languages.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator

import tree_sitter

from ..languages import new_parser
from ..syntax import utf8

# A method's own object (Python's `self` and `cls`, JavaScript's `this`): never a
# parameter that callers pass, stored or passed on.
RECEIVERS = frozenset({"self", "cls", "this"})
# Trees kept per thread: the text now and before the edit, of one request or two.
KEPT_TREES = 4

_local = threading.local()


def syntax_root(language_id: str, text: str) -> tree_sitter.Node | None:
    """The root node of `text`'s syntax tree; None when the language has no grammar."""
    tree = syntax_tree(language_id, text)
    return tree.root_node if tree is not None else None


def syntax_tree(language_id: str, text: str) -> tree_sitter.Tree | None:
    """`text`'s syntax tree (kept: never edit it, copy it); None without a grammar."""
    kept = _kept()
    key = (language_id, text)
    if key in kept:
        kept.move_to_end(key)
    else:
        parser = new_parser(language_id)
        kept[key] = parser.parse(utf8(text)) if parser is not None else None
        if len(kept) > KEPT_TREES:
            kept.popitem(last=False)
    return kept[key]


def _kept() -> OrderedDict[tuple[str, str], tree_sitter.Tree | None]:
    if not hasattr(_local, "trees"):
        _local.trees = OrderedDict()
    trees: OrderedDict[tuple[str, str], tree_sitter.Tree | None] = _local.trees
    return trees


def node_text(node: tree_sitter.Node | None) -> str:
    """The source text of a node ("" for none). A document may hold a lone surrogate
    (syntax.utf8 passes it through): it reads as U+FFFD here."""
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def is_python_method(function: tree_sitter.Node) -> bool:
    """Is a Python function a method: defined (decorated or not) in a class's body?"""
    parent = function.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    return (
        parent is not None
        and parent.type == "block"
        and parent.parent is not None
        and parent.parent.type == "class_definition"
    )


def descendants(
    root: tree_sitter.Node, types: frozenset[str], pruned: frozenset[str] = frozenset()
) -> Iterator[tree_sitter.Node]:
    """The nodes of `types` at or under `root`, in source order; under a node of
    `pruned` (a nested function), none."""
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type in types:
            yield node
        if node.type not in pruned or node.id == root.id:
            pending.extend(reversed(node.named_children))


def functions_at(root: tree_sitter.Node, row: int, types: frozenset[str]) -> list[tree_sitter.Node]:
    """The nodes of `types` (functions, calls) whose lines hold line `row`, an outer
    one before those inside it."""
    found, pending = [], [root]
    while pending:
        node = pending.pop()
        if node.type in types:
            found.append(node)
        spanning = [c for c in node.named_children if c.start_point[0] <= row <= c.end_point[0]]
        pending.extend(reversed(spanning))
    return found
