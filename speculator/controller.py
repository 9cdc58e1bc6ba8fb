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
import math

# Verify cost (ms) by batch size for the default target on the 2-core machine,
# measured with llama-cpp-python 0.3.36 (bench/archive/bench-drafting.md). Only the
# shape matters: observe_cost() rescales it to what this machine measures.
# A batch of a multiple of 8 rows is cheaper than one row more or less (the
# CPU matmul kernels work on 8-row tiles): 16 rows cost 221 ms, 15 rows 271.
DEFAULT_COST_MS = {1: 33.1, 2: 58.7, 3: 80.1, 4: 99.2, 8: 168.7, 9: 206.6, 16: 221.0,
                   17: 264.9, 24: 332.4, 25: 355.4, 32: 396.7, 33: 426.3, 48: 594.9,
                   49: 620.8, 56: 705.0, 57: 730.0, 64: 738.2, 65: 736.3}  # fmt: skip
# (56 and 57 rows: measured later as 21.3x and 21.0x one row, against 21.5x for 64.)
# Draft lengths tried: k drafts make a batch of k + 1 rows, a multiple of 8 past 4.
# At most 64 rows: from 64 query rows on, stock ggml's CPU flash attention switches
# to a tiled kernel that makes a 64-row batch cost less than a 56-row one (29x one
# row against 31x at a 1,000-token context; on one thread under load 31x against
# 36x); our build takes it from 32 rows (.ci/patches/ggml-fa-tiled-from-32-rows.patch).
# Its rounding differs from the 1-row path about as often as the batches just
# below it do (docs/exactness.md). Longer batches gain little more per row (128
# rows: 53x) and lose more on a miss (bench/archive/benchmarks.md, "64-row verify batches").
DRAFT_SIZES = (1, 2, 3, 7, 15, 23, 31, 47, 63)
# The verify curve on one CPU thread, as multiples of a 1-row step (`python -m
# bench.verify_cost --threads 1 --context 500`, 2026-11-26; the same within 5%
# with one busy core). Adaptive threads run one thread whenever another process
# keeps a core busy (threads.py), and there a batch of up to 12 rows costs about a
# step per row (8 rows: 9.1 steps), where the table above, measured on two
# threads, prices 2 to 8 rows at 1.8 to 5.1 steps: short drafts cannot pay.
ONE_THREAD_SHAPE = {1: 1.0, 2: 2.1, 3: 3.0, 4: 3.8, 8: 9.1, 9: 9.8, 12: 11.8, 16: 11.2,
                    17: 13.3, 24: 17.5, 32: 20.1, 48: 28.0, 56: 34.2, 64: 32.7}  # fmt: skip
MAX_VERIFY_ROWS = DRAFT_SIZES[-1] + 1
# One draft-model token costs about this many target 1-row steps (27 ms against
# 33 ms on the 2-core machine, DESIGN.md). A ratio, not milliseconds: under load
# both models slow down together, so an absolute figure would make the draft
# model look cheaper exactly when the machine is busy. Replaced by the draft
# model's own measured cost once it has drafted (DraftModelDrafter.token_ms).
DRAFT_TOKEN_RATIO = 0.8

# Starting points, replaced by what is measured. Completions are short and
# often new code, so a wrong long draft costs more than it can win; a
# refactor mostly copies its selection, so lookup drafts start trusted.
REFACTOR_PRIORS = {"lookup:0": 0.4, "lookup:1": 0.5, "lookup:2": 0.7, "lookup:3": 0.8,
                   "lookup:4": 0.85, "lookup:resync": 0.8, "lookup:rename": 0.9,
                   "lookup:aligned": 0.95, "lookup:punctuation": 0.8,
                   "draft": 0.6}  # fmt: skip
PRIOR_ACCEPTANCE = {
    "lookup:0": 0.2,
    "lookup:1": 0.3,
    "lookup:2": 0.45,
    "lookup:3": 0.55,
    "lookup:4": 0.65,
    "lookup:resync": 0.6,
    "lookup:rename": 0.7,
    "lookup:aligned": 0.85,
    "lookup:punctuation": 0.6,
    "draft": 0.5,
}
PRIOR_WEIGHT = 4.0  # the first-token prior counts as this many observed drafts
# The continuation prior counts as this many tokens: a round verifies up to 63
# of them, so one early failure must not shut long drafts out for good.
CONTINUATION_WEIGHT = 16.0
DECAY = 0.98  # per observed round: recent behaviour matters more


class VerifyCost:
    """Verify ms by batch size: a tabled shape times what this machine measures."""

    def __init__(self, table: dict[int, float], rows: int):
        self.table = table
        self._global_scale = 1.0  # measured / tabled cost, all batch sizes
        self._scale: dict[int, float] = {}  # the same, per tabled batch size
        # The table's shape and nearest tabled size per row count, worked out once:
        # cost() runs for every draft size in every round, and on a GPU a round
        # is a few ms, so a scan of the table per call shows in the profile.
        self._shape = [_interpolate(table, n) for n in range(rows + 1)]
        self._nearest_size = [self._scan_nearest(n) for n in range(rows + 1)]

    def measured(self, rows: int) -> bool:
        return self._nearest(rows) in self._scale

    def cost(self, rows: int) -> float:
        return self._tabled(rows) * self._scale.get(self._nearest(rows), self._global_scale)

    def observe(self, rows: int, ms: float) -> None:
        """Fold a measured verify time into the global and the per-size scale."""
        ratio = ms / self._tabled(rows)
        # The first measurement replaces the table's scale outright: the table is
        # another machine's (a GPU's step is a tenth of the tabled CPU step).
        first = not self._scale
        self._global_scale = ratio if first else 0.9 * self._global_scale + 0.1 * ratio
        size = self._nearest(rows)
        self._scale[size] = 0.7 * self._scale.get(size, self._global_scale) + 0.3 * ratio

    def _tabled(self, rows: int) -> float:
        if 0 <= rows < len(self._shape):
            return self._shape[rows]
        return _interpolate(self.table, rows)

    def _nearest(self, rows: int) -> int:
        if 0 <= rows < len(self._nearest_size):
            return self._nearest_size[rows]
        return self._scan_nearest(rows)

    def _scan_nearest(self, rows: int) -> int:
        return min(self.table, key=lambda s: abs(s - rows))


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
        # Per bucket: decayed [first hits, first trials, next hits, next trials].
        self._counts: dict[str, list[float]] = {}
        # Samples of a plain round in a run of plain rounds over one right after
        # another batch shape (decode.LossGuard: about 0.5 on a GPU). None: a CPU,
        # where the two cost the same.
        self.steady_samples: list[float] | None = []
        self._rows = max(max(self.cost_ms), MAX_VERIFY_ROWS, max_draft + 1)
        self._many_threads = VerifyCost(self.cost_ms, self._rows)
        # A CPU build prices rounds on one thread apart (price_one_thread_apart).
        self._one_thread: VerifyCost | None = None
        self._costs = self._many_threads

    def price_one_thread_apart(self) -> None:
        """Keep a second curve, shaped as ONE_THREAD_SHAPE, for the rounds a
        CPU build runs on one thread (under load: threads.py)."""
        self._one_thread = self._priced(ONE_THREAD_SHAPE)

    def price_by_measured(self, shapes: dict[int, dict[int, float]], max_threads: int) -> None:
        """Price rounds by this machine's measured curves (speculator/verify_curve.py),
        {threads: {rows: x one row}}, in place of the tabled shapes. Only the
        shape is taken: observe_cost() scales it to the steps timed here."""
        priced = {threads: self._priced(shape) for threads, shape in shapes.items()}
        if max_threads in priced:
            self._many_threads = priced[max_threads]
        if 1 in priced:
            self._one_thread = priced[1]
        self._costs = self._many_threads

    def _priced(self, shape: dict[int, float]) -> VerifyCost:
        """A curve of this shape ({rows: x one row}) starting from the tabled step."""
        step_ms = self.cost_ms[min(self.cost_ms)]
        return VerifyCost({rows: ratio * step_ms for rows, ratio in shape.items()}, self._rows)

    def use_threads(self, threads: int) -> None:
        """The next rounds run on this many CPU threads."""
        one_thread = self._one_thread if threads == 1 else None
        self._costs = one_thread or self._many_threads

    def rates(self, bucket: str) -> tuple[float, float]:
        """(P(first draft token accepted), P(next accepted | the one before was))."""
        first = self.priors.get(bucket, 0.5)
        after = (1.0 + first) / 2  # a draft that starts right tends to go on right
        f_hits, f_trials, n_hits, n_trials = self._counts.get(bucket, [0.0] * 4)
        a1 = (f_hits + first * PRIOR_WEIGHT) / (f_trials + PRIOR_WEIGHT)
        a2 = (n_hits + after * CONTINUATION_WEIGHT) / (n_trials + CONTINUATION_WEIGHT)
        return min(0.995, a1), min(0.995, a2)

    def measured(self, rows: int) -> bool:
        """Whether a batch of about this size was timed here (not only tabled)."""
        return self._costs.measured(rows)

    def cost(self, rows: int) -> float:
        """Expected verify ms for a batch: the tabled shape times the measured scale."""
        return self._costs.cost(rows)

    def verify_rows(self, drafts: int, max_rows: int = MAX_VERIFY_ROWS) -> int:
        """Rows to verify a draft of `drafts` tokens with: drafts + 1, or a draft
        size's larger batch (padded, decode.Decoder) where the curve prices it lower.

        ggml's CPU kernels run some batch sizes much more cheaply than the sizes
        just below them (one EPYC thread: 16 rows cost 8.5 steps, 15 rows 10.6;
        64 rows 26.9, 63 rows 31.3), and a draft that runs out (the rest of a
        selection) ends anywhere. Never past `max_rows` (the context's room)."""
        rows = drafts + 1
        padded = [size + 1 for size in DRAFT_SIZES if rows < size + 1 <= self._pad_limit(max_rows)]
        return min([rows, *padded], key=self.cost)  # the first of equals: the fewest rows

    def verify_cost(self, drafts: int, max_rows: int = MAX_VERIFY_ROWS) -> float:
        """Expected ms to verify a draft of `drafts` tokens (in verify_rows' batch)."""
        return self.cost(self.verify_rows(drafts, max_rows))

    def verify_costs(self, drafts: int) -> list[float]:
        """[verify_cost(k) for k in 0..drafts], each grid batch priced once: the loss
        guard prices every length in every round, where verify_cost apart would price
        the grid above each length again."""
        limit = self._pad_limit(MAX_VERIFY_ROWS)
        grid = {size + 1: self.cost(size + 1) for size in DRAFT_SIZES if size + 1 <= limit}
        cheapest_above = min([ms for rows, ms in grid.items() if rows > drafts + 1] or [math.inf])
        costs = [0.0] * (drafts + 1)
        for k in range(drafts, -1, -1):
            costs[k] = min(self.cost(k + 1), cheapest_above)
            cheapest_above = min(cheapest_above, grid.get(k + 1, math.inf))
        return costs

    def _pad_limit(self, max_rows: int) -> int:
        """The largest batch a draft is padded to: a draft longer than max_draft is
        never padded past its own rows, as none is above it within this limit."""
        return min(max_rows, self._rows, self.max_draft + 1)

    def draft_length(self, bucket: str, available: int, extra_cost_ms: float = 0.0) -> int:
        """Best number of drafts to verify (0 = plain decoding).

        extra_cost_ms is what producing each draft token costs (0 for lookup).
        """
        a1, a2 = self.rates(bucket)
        best_k, best_rate = 0, 1.0 / self.cost(1)
        run = 0.0  # expected accepted drafts after the first: 1 + a2 + ... + a2^(k-1)
        term = 1.0
        for k in range(1, min(available, self.max_draft, MAX_VERIFY_ROWS - 1) + 1):
            run += term
            term *= a2
            if k not in DRAFT_SIZES and k != available:
                continue
            rate = (1.0 + a1 * run) / (self.verify_cost(k) + extra_cost_ms * k)
            if rate > best_rate:
                best_k, best_rate = k, rate
        return best_k

    def observe_acceptance(self, bucket: str, drafted: int, accepted: int) -> None:
        """The first token either was accepted or not; then `accepted - 1`
        continuations succeeded, and one failed if the draft was cut short."""
        counts = self._decayed(bucket)
        counts[0] += accepted > 0
        counts[1] += 1
        if accepted > 0:
            counts[2] += accepted - 1
            counts[3] += accepted - 1 + (accepted < drafted)

    def declined(self, bucket: str) -> None:
        """A draft of this bucket was not worth verifying. Forget a little, so
        a bucket judged on a bad stretch is tried again after a while rather
        than never (without trials there would be nothing to learn from)."""
        self._decayed(bucket)

    def _decayed(self, bucket: str) -> list[float]:
        counts = self._counts.setdefault(bucket, [0.0] * 4)
        counts[:] = [c * DECAY for c in counts]
        return counts

    def observe_cost(self, rows: int, ms: float) -> None:
        """Fold a measured verify time into the curve of the current thread count."""
        self._costs.observe(rows, ms)


def controllers_by_kind(cpu_only: bool) -> dict[str, Controller]:
    """One controller per request kind, as the engine keeps them: completions
    and refactors accept drafts very differently, so each learns apart.

    `cpu_only`: the target runs on ggml's CPU backend, which replays no graphs,
    so a plain round right after a batch costs what a steady one does: the
    loss guard's steady ratio is known to be 1 (decode.LossGuard), and the
    first request need not spend plain rounds to learn it."""
    controllers = {
        "completion": Controller(),
        # A refactor copies long runs of its selection: allow 64-token drafts.
        "refactor": Controller(priors=REFACTOR_PRIORS, max_draft=64),
    }
    if cpu_only:
        for controller in controllers.values():
            controller.steady_samples = None
            controller.price_one_thread_apart()
    return controllers


def _interpolate(table: dict[int, float], rows: int) -> float:
    sizes = sorted(table)
    i = bisect.bisect_left(sizes, rows)
    if i < len(sizes) and sizes[i] == rows:
        return table[rows]
    if i == 0:
        return table[sizes[0]]
    a, b = (sizes[-2], sizes[-1]) if i == len(sizes) else (sizes[i - 1], sizes[i])
    return table[a] + (table[b] - table[a]) * (rows - a) / (b - a)
