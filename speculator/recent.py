"""A bounded most-recently-used map whose order the caller reads.

The HTTP slot router (lsp_server/http_slots.py) keeps the latest documents of
all clients and picks a client's most recent one by walking them in order,
oldest first: cachetools' LRUCache bounds a map as well but does not expose its
order, so this rule stays here. The other bounded maps are LRUCaches."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(entries: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    """Store `value` as the newest entry and drop the oldest beyond `limit`."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > limit:
        entries.popitem(last=False)
