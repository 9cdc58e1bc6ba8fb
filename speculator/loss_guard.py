"""The loss guard: one request's speculation never costs much more than plain decoding.

Split from the decode loop (speculator/decode.py), which asks it before every
drafted round how long a draft it can afford.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Sequence


class LossGuard:
    """Keeps one request's speculation from costing more than plain decoding.

    Both sides are measured in this request, under whatever load the machine
    has now: `plain_ms` is what a plain (1-row) round costs, and a drafting
    round that took `ms` and emitted `n` tokens earned `n * plain_ms - ms`. The
    earnings so far plus a small allowance (a share of the plain time of the
    tokens emitted, or of the expected output where the caller knows one:
    Decoder._project_length) are the most the next round may risk, and a
    round's risk is its worst case: every draft rejected, one token for the
    whole batch.
    A losing request therefore drafts less and less (down to not at all), and
    its total loss stays within the allowance.

    On a GPU build a plain round right after a batch of another shape costs
    about twice what plain rounds cost under `off`: ggml-cuda replays a step
    as a CUDA graph only from the third call of one shape on (docs/gpu.md).
    So `t1` is the cost of such a cold round, and `steady_ratio`, learned on
    the third plain round in a row (here or in an earlier request), is what a
    steady one costs beside it. A ratio is a property of the build, not of
    the load, so `plain_ms` = t1 * ratio follows the load as t1 does. The
    cold rounds after a draft are charged their excess over `plain_ms`. On a
    CPU the ratio is 1 within noise and the guard is the CPU guard.
    """

    # The most a request may lose, as a share of its plain time. Tuned on the dev
    # split with the replay simulator (bench/simulate.py): 0.05 gave refactors a
    # median of 1.87x, 0.10 gave 2.00x (worst task 0.92x); bench/archive/benchmarks.md.
    # With this build's curves 0.075 costs the dev refactors nothing (one thread:
    # median 2.267x both, mean 2.055x against 2.064x; two threads the same), and a
    # request that spends all of it reads 0.93x, not 0.91x, before a busy
    # machine's noise (one `off` run of three 10-30% slower than the others);
    # bench/archive/benchmarks.md, "A 7.5% loss share".
    ALLOWANCE = 0.075
    # A completion's share is smaller. Its drafts rarely pay on a CPU (37 dev
    # completions: none drafted on 32 under load, on 34 quiet), while a loss of
    # the full 10% plus a noisy step reads below the 0.90x bound. Dev, under load:
    # worst task 0.88x with 0.10, 0.97x with 0.05; medians 1.00x either way, and
    # quiet 1.005x against 1.003x (bench/archive/benchmarks.md, "Completions lose half as much").
    COMPLETION_ALLOWANCE = 0.05
    # ... of at least this many tokens, to try drafting at all: a refactor may risk
    # three quarters of a plain step before it has earned anything, a completion half. A
    # rejected 1-token draft costs a CPU 0.8-1.1 steps, so a completion drafts only
    # once its own length pays for a miss (16 tokens or more). Before, a 6-token
    # held-out completion lost a step to one and read 0.75x.
    MIN_TOKENS = 10
    # A late round (a GPU step of 2 ms that waits 4 ms for a busy core) must not
    # raise plain decoding's price: as moving averages, t1 and the steady ratio
    # doubled it now and then, and wrong drafts lost 20-45% in place of 10%
    # (tests/unit/test_decode.py). A delay only ever raises a sample, so on a
    # GPU each is the least of its last SAMPLES: a busier machine shows in all
    # of them, a late round in one. On a CPU t1 is their median: under a busy
    # core every round, drafting or plain, waits now and then, and pricing
    # plain by its luckiest round read sound drafts as losses and cut them
    # short (EPYC, one busy core, 2026-11-28: worst test refactor 0.95x and
    # 0.88x with the least, 1.03x and 0.95x with the median).
    SAMPLES = 5
    PROBE_EVERY = 24  # drafting rounds between plain measurements of t1
    FIRST_PROBE = 4  # drafting rounds before the first plain measurement, at the latest
    # ggml-cuda runs the first call of a new shape directly, captures a graph on
    # the second and replays it from the third.
    STEADY_AFTER = 3
    # A steady/cold ratio above this is a CPU's round-to-round noise (one pair of
    # rounds on a busy 2-core machine: 0.85-1.15); an H100's graph replay gives 0.5.
    NOISE_RATIO = 0.8

    def __init__(
        self,
        t1_estimate_ms: float,
        expected_tokens: int = 0,
        steady_samples: Sequence[float] | None = (),
        allowance: float = ALLOWANCE,
        t1_measured: bool = True,
    ):
        self.allowance = allowance  # the share of plain time this request may lose
        # The length the caller expects (a refactor: its selection's) sizes the
        # allowance from the start, so the first drafts can be long ones; the
        # decoder keeps it in step with a copy the output follows, and drops it
        # to what was written once the output leaves that copy (_project_length).
        self.expected_tokens = expected_tokens
        self.t1 = t1_estimate_ms  # from earlier requests; replaced by measurements
        # An estimate this machine measured is one of t1's samples; a table's is not.
        self._t1_samples = deque([t1_estimate_ms] if t1_measured else [], maxlen=self.SAMPLES)
        self.measured = False
        # Steady/cold ratios seen here and in earlier requests (empty: no run of
        # plain rounds seen yet; None: a CPU, which replays no graphs, ratio 1).
        self.steady_samples = (
            None if steady_samples is None else deque(steady_samples, maxlen=self.SAMPLES)
        )
        self.earned_ms = 0.0
        self.tokens = 0
        self.plain_streak = 0  # plain rounds in a row, up to now
        self._run_cold_ms = t1_estimate_ms  # the cheapest cold round of this run
        self.drafted = False
        # The first plain measurement of t1: after FIRST_PROBE drafting rounds at the
        # latest, or at once when the estimate is a table's, not this machine's.
        self._since_plain = self.PROBE_EVERY - (self.FIRST_PROBE if t1_measured else 0)

    @property
    def steady_ratio(self) -> float | None:
        """A steady plain round's cost over a cold one's, as measured."""
        if self.steady_samples is None:
            return 1.0
        return min(self.steady_samples) if self.steady_samples else None

    @property
    def replay_ratio(self) -> float:
        """A steady plain round's cost over a cold one's: 1 where they do not differ."""
        ratio = self.steady_ratio
        return 1.0 if ratio is None or ratio > self.NOISE_RATIO else ratio

    @property
    def plain_ms(self) -> float:
        """What plain decoding pays per token now."""
        return self.t1 * self.replay_ratio

    def must_probe(self) -> bool:
        """Measure a plain round now: the estimate of t1 is old or from another
        request, or was never measured on this machine (a new session's first
        round). Where graphs may be replayed, also until two steady rounds were
        seen (a new session's first request: STEADY_AFTER + 1 plain rounds), and
        while fewer than SAMPLES were, a probe runs on to sample two more: two
        late rounds in a row would otherwise price every request after them."""
        samples = self.steady_samples
        if samples is not None and len(samples) < 2:
            return True
        sampling = samples is not None and len(samples) < self.SAMPLES
        if sampling and 0 < self.plain_streak <= self.STEADY_AFTER:
            return True
        return self._since_plain >= self.PROBE_EVERY

    def budget_ms(self) -> float:
        """The most the next round may lose against plain decoding."""
        tokens = max(self.tokens, self.expected_tokens, self.MIN_TOKENS)
        return self.earned_ms + self.allowance * tokens * self.plain_ms

    def observe_plain(self, ms: float, wasted_ms: float = 0.0) -> None:
        """A round without a draft took `ms`, after `wasted_ms` spent looking
        for a draft that was not taken: that is a loss."""
        self.plain_streak += 1
        cold_ms = ms
        if self.plain_streak < self.STEADY_AFTER:
            self._run_cold_ms = ms if self.plain_streak == 1 else min(self._run_cold_ms, ms)
            if self.drafted:  # what the last draft's batch shape still costs
                self.earned_ms -= ms * (1.0 - self.replay_ratio)
        else:
            # The first two steady rounds of a run are samples of the ratio, each
            # against the cold rounds that opened the run.
            if self.steady_samples is not None and self.plain_streak <= self.STEADY_AFTER + 1:
                self.steady_samples.append(ms / self._run_cold_ms)
            cold_ms = ms / self.replay_ratio
        # t1 follows a change of load within SAMPLES // 2 + 1 rounds on a CPU;
        # on a GPU a lighter load at once, a heavier one after SAMPLES rounds.
        self._t1_samples.append(cold_ms)
        self.t1 = self._plain_price(self._t1_samples)
        self.measured = True
        self.earned_ms -= wasted_ms
        self.tokens += 1
        self._since_plain = 0

    def _plain_price(self, samples: Sequence[float]) -> float:
        """t1 from its samples: the least on a GPU, the median on a CPU (SAMPLES)."""
        return statistics.median(samples) if self.steady_samples is None else min(samples)

    def observe_draft_round(self, ms: float, emitted: int) -> None:
        self.earned_ms += emitted * self.plain_ms - ms
        self.tokens += emitted
        self.plain_streak = 0
        self.drafted = True
        self._since_plain += 1


def allowance_for(kind: str) -> float:
    """The share of its plain time a request of this kind ("completion",
    "refactor") may lose to drafting."""
    return LossGuard.COMPLETION_ALLOWANCE if kind == "completion" else LossGuard.ALLOWANCE
