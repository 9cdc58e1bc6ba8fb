"""Token-sequence arithmetic shared by the KV session and the drafters.

Its own module so that neither imports the other: the session trims its cache
to a common prefix, a drafter measures how far behind its cache is.
"""

from __future__ import annotations

from collections.abc import Sequence


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
