"""Decide how many drafted tokens to verify, from measured acceptance and cost.

With per-token acceptance a and verify cost c(n) for a batch of n rows, a
round that verifies k drafts yields 1 + a + a^2 + ... + a^k tokens on average
for c(k + 1) time. We pick the k with the best tokens per ms, and k = 0 (plain
decoding) whenever no k beats it: speculation never knowingly slows us down.
Acceptance is learned per confidence bucket ("lookup:4", "draft", ...), cost
per batch size, both as decayed running estimates, so the policy follows the
hardware (CPU verify batches are expensive, GPU ones are nearly free).
"""

from __future__ import annotations

import bisect

# Verify cost (ms) by batch size for the default target on the 2-core machine
# (DESIGN.md). Only a starting point: observe() replaces it with measurements.
# 64 rows: 1.5x the 32-row batch, as measured on this machine (docs/benchmarks.md).
DEFAULT_COST_MS = {1: 71.0, 2: 95.0, 4: 157.0, 8: 329.0, 16: 483.0, 32: 748.0, 64: 1130.0}
DRAFT_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
DRAFT_TOKEN_MS = 27.0  # one draft-model token on the 2-core machine (DESIGN.md)

# Starting points, replaced by what is measured. Completions are short and
# often new code, so a wrong long draft costs more than it can win; a
# refactor mostly copies its selection, so lookup drafts start trusted.
REFACTOR_PRIORS = {"lookup:0": 0.4, "lookup:1": 0.5, "lookup:2": 0.7, "lookup:3": 0.8,
                   "lookup:4": 0.85, "lookup:resync": 0.8, "lookup:aligned": 0.95,
                   "draft": 0.6}  # fmt: skip
PRIOR_ACCEPTANCE = {
    "lookup:0": 0.2,
    "lookup:1": 0.3,
    "lookup:2": 0.45,
    "lookup:3": 0.55,
    "lookup:4": 0.65,
    "lookup:resync": 0.6,
    "lookup:aligned": 0.85,
    "draft": 0.5,
}
PRIOR_WEIGHT = 4.0  # prior counts as this many observed tokens
DECAY = 0.98  # per observed round: recent behaviour matters more


class Controller:
    def __init__(
        self,
        cost_ms: dict[int, float] | None = None,
        max_draft: int = 32,
        priors: dict[str, float] | None = None,
    ):
        self.priors = priors or PRIOR_ACCEPTANCE
        self.cost_ms = dict(cost_ms or DEFAULT_COST_MS)
        self.max_draft = max_draft
        self._hits: dict[str, float] = {}
        self._global_scale = 1.0  # measured / tabled cost, all batch sizes
        self._scale: dict[int, float] = {}  # the same, per tabled batch size
        self._trials: dict[str, float] = {}

    def acceptance(self, bucket: str) -> float:
        prior = self.priors.get(bucket, 0.5)
        hits = self._hits.get(bucket, 0.0) + prior * PRIOR_WEIGHT
        trials = self._trials.get(bucket, 0.0) + PRIOR_WEIGHT
        return min(0.995, hits / trials)

    def cost(self, rows: int) -> float:
        """Expected verify ms for a batch: the tabled shape times the measured scale."""
        size = self._nearest(rows)
        return _interpolate(self.cost_ms, rows) * self._scale.get(size, self._global_scale)

    def _nearest(self, rows: int) -> int:
        return min(self.cost_ms, key=lambda s: abs(s - rows))

    def draft_length(self, bucket: str, available: int, extra_cost_ms: float = 0.0) -> int:
        """Best number of drafts to verify (0 = plain decoding).

        extra_cost_ms is what producing each draft token costs (0 for lookup).
        """
        a = self.acceptance(bucket)
        best_k, best_rate = 0, 1.0 / self.cost(1)
        expected = 0.0
        term = 1.0
        for k in range(1, min(available, self.max_draft) + 1):
            term *= a
            expected += term
            if k not in DRAFT_SIZES and k != available:
                continue
            rate = (1.0 + expected) / (self.cost(k + 1) + extra_cost_ms * k)
            if rate > best_rate:
                best_k, best_rate = k, rate
        return best_k

    def observe_acceptance(self, bucket: str, drafted: int, accepted: int) -> None:
        """Geometric model: `accepted` successes, then one failure if any was rejected."""
        for store in (self._hits, self._trials):
            store[bucket] = store.get(bucket, 0.0) * DECAY
        self._hits[bucket] = self._hits.get(bucket, 0.0) + accepted
        self._trials[bucket] = self._trials.get(bucket, 0.0) + accepted + (accepted < drafted)

    def observe_cost(self, rows: int, ms: float) -> None:
        """Fold a measured verify time into the global and the per-size scale."""
        ratio = ms / _interpolate(self.cost_ms, rows)
        self._global_scale = 0.9 * self._global_scale + 0.1 * ratio
        size = self._nearest(rows)
        self._scale[size] = 0.7 * self._scale.get(size, self._global_scale) + 0.3 * ratio


def _interpolate(table: dict[int, float], rows: int) -> float:
    sizes = sorted(table)
    i = bisect.bisect_left(sizes, rows)
    if i < len(sizes) and sizes[i] == rows:
        return table[rows]
    if i == 0:
        return table[sizes[0]]
    a, b = (sizes[-2], sizes[-1]) if i == len(sizes) else (sizes[i - 1], sizes[i])
    return table[a] + (table[b] - table[a]) * (rows - a) / (b - a)
