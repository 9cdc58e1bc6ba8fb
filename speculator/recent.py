"""Bounded most-recently-used maps: one eviction rule for every small memory.

The remote backend's typing anchors and slot pins, the HTTP slot router, the
typed-ahead cache and the workspace index's last answers all keep "the latest N
of something" in an OrderedDict, oldest first. Each decides for itself what
counts as use (a lookup that matches, a request that routes) and how it locks;
this module holds only the shared rule for storing and forgetting."""

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
