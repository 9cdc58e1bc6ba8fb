"""The decode loop on a modelled target: exact output, and never slower than plain.

The fake target's greedy choice after any history is fixed by `truth`, and
each batch advances a fake clock by a modelled cost (a k-row batch costs
what the controller's measured curve says, times a load factor), so the
tests are deterministic and need no model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from speculator.controller import (
    DEFAULT_COST_MS,
    ONE_THREAD_SHAPE,
    REFACTOR_PRIORS,
    Controller,
    controllers_by_kind,
)
from speculator.decode import (
    Decoder,
    StopRule,
    repeating_tail,
    unfinished_refactor,
)
from speculator.drafters import Draft, DraftModelDrafter
from speculator.lookup import PromptLookupDrafter
from speculator.loss_guard import LossGuard, allowance_for
from speculator.outcome import DecodeOutcome, StopReason
from speculator.sampling import SamplingParams, next_token

VOCAB = 64
END = 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ModelledTarget:
    """A target session whose next token after prompt + output[:i] is truth[i]."""

    def __init__(
        self,
        prompt: list[int],
        truth: list[int],
        clock: Clock,
        load: float = 1.0,
        n_ctx: int = 4096,
        curve: Callable[[int], float] | None = None,
        replay_discount: float = 1.0,
        threads: int = 2,
    ):
        self.prompt_len = len(prompt)
        self.threads = threads
        self.curve = curve or _curve
        # A GPU build replays a batch shaped like the two before it as a CUDA
        # graph: it costs this share of the curve (1.0: a CPU, no such thing).
        self.replay_discount = replay_discount
        self.cells = list(prompt)
        self.truth = truth
        self.clock = clock
        self.load = load
        self.n_ctx = n_ctx
        self.batches: list[int] = []

    def first_logits(self) -> np.ndarray:
        return self._row(0)

    def _row(self, generated: int) -> np.ndarray:
        row = np.zeros(VOCAB, dtype=np.float32)
        row[self.truth[generated] if generated < len(self.truth) else END] = 1.0
        return row

    def room(self) -> int:
        return self.n_ctx - 1 - len(self.cells)

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        rows = len(tokens)
        replayed = self.batches[-2:] == [rows, rows]
        self.batches.append(rows)
        discount = self.replay_discount if replayed else 1.0
        self.clock.now += self.curve(rows) * self.load * discount / 1000
        start = len(self.cells) - self.prompt_len
        self.cells.extend(tokens)
        return np.stack([self._row(start + i + 1) for i in range(rows)])

    def trim(self, n: int) -> None:
        del self.cells[n:]


def _curve(rows: int) -> float:
    sizes = sorted(DEFAULT_COST_MS)
    nearest = min(sizes, key=lambda s: abs(s - rows))
    return DEFAULT_COST_MS[nearest] * rows / nearest if rows > 65 else DEFAULT_COST_MS[nearest]


class LearnsNothing:
    """A lookup drafter's hooks, for test drafters that learn nothing from them."""

    name = "lookup"

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        pass

    def declined(self, draft: Draft) -> None:
        pass

    def copy_ahead(self, history: Sequence[int]) -> int | None:
        return None


class WrongDrafter(LearnsNothing):
    """Proposes k confident-looking tokens that are always wrong."""

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        return Draft([63] * k, self.name, "lookup:aligned")


def _decode(
    truth: list[int],
    drafters: list,
    load: float = 1.0,
    controller: Controller | None = None,
    target: ModelledTarget | None = None,
    expected_tokens: int | None = None,
    token_bytes: Callable[[int], bytes] = lambda t: b" t%d" % t,
    allowance: float = LossGuard.ALLOWANCE,
) -> tuple[list[int], float, ModelledTarget]:
    """Decode `truth`; the caller expects `expected_tokens` (default: all of it)."""
    clock = Clock()
    prompt = [5, 6, 7, 8]
    if target is None:
        target = ModelledTarget(prompt, truth, clock, load)
    else:
        target.clock = clock
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=token_bytes,
        is_end=lambda t: t == END,
        controller=controller or Controller(priors=REFACTOR_PRIORS, max_draft=64),
        drafters=drafters,
        params=SamplingParams(),
        clock=clock,
        allowance=allowance,
    )
    expected = len(truth) if expected_tokens is None else expected_tokens
    out = decoder.run(target.first_logits(), len(truth) + 8, expected_tokens=expected)
    return out.tokens, clock.now * 1000, target


class TruthDrafter(LearnsNothing):
    """Drafts the true next tokens, at most `longest`: always right."""

    def __init__(self, truth: list[int], prompt_len: int, longest: int, bucket: str):
        self.truth = truth
        self.prompt_len = prompt_len
        self.longest = longest
        self.bucket = bucket

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        done = len(history) - self.prompt_len
        coming = self.truth[done : done + min(k, self.longest)]
        return Draft(coming, self.name, self.bucket) if coming else None


def _one_thread_curve(rows: int) -> float:
    sizes = sorted(ONE_THREAD_SHAPE)
    return float(np.interp(rows, sizes, [ONE_THREAD_SHAPE[s] for s in sizes])) * 33.1


@pytest.mark.parametrize("threads", [1, 2])
def test_short_drafts_are_priced_by_the_thread_count_of_the_last_step(threads: int) -> None:
    """On two threads a right 3-token draft pays (4 rows cost 3 steps) and is
    verified; on one it cannot (about 4 steps), and the CPU controller,
    reading the session's thread count, leaves it."""
    _, truth = _copying_truth(60)
    curve = _one_thread_curve if threads == 1 else None
    target = ModelledTarget([5, 6, 7, 8], truth, Clock(), curve=curve, threads=threads)
    controller = controllers_by_kind(cpu_only=True)["refactor"]
    # Right, but too short to pay on one CPU thread, where a 4-row batch costs about 4 steps.
    short_copy = TruthDrafter(truth, prompt_len=4, longest=3, bucket="lookup:3")
    spec, _, target = _decode(truth, [short_copy], controller=controller, target=target)
    assert spec == truth[:-1]
    if threads == 1:
        assert set(target.batches) == {1}
    else:  # drafted, and accepted: fewer rounds than tokens
        assert max(target.batches) == 4 and len(target.batches) < len(truth) / 2


def _copying_truth(n: int = 300) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(1)
    source = [int(t) for t in rng.integers(1, 60, size=n)]
    return source, source + [END]


def test_speculation_is_exact_and_faster_when_drafts_are_right() -> None:
    source, truth = _copying_truth()
    plain, plain_ms, _ = _decode(truth, [])
    lookup = PromptLookupDrafter([source])
    spec, spec_ms, target = _decode(truth, [lookup])
    assert spec == plain == truth[:-1]
    assert plain_ms / spec_ms > 2.0
    assert max(target.batches) > 8  # it did verify long drafts


@pytest.mark.parametrize("load", [1.0, 2.5])
def test_always_wrong_drafts_cost_at_most_the_allowance(load: float) -> None:
    rng = np.random.default_rng(2)
    truth = [int(t) for t in rng.integers(1, 60, size=200)] + [END]
    plain, plain_ms, _ = _decode(truth, [], load=load)
    # A controller that trusts the drafter fully: only the guard stands between
    # it and a 64-row batch every round.
    trusting = Controller(max_draft=64, priors={"lookup:aligned": 0.995})
    spec, spec_ms, _ = _decode(truth, [WrongDrafter()], load=load, controller=trusting)
    assert spec == plain
    assert spec_ms <= plain_ms * (1 + LossGuard.ALLOWANCE) + 2 * _curve(1) * load


@pytest.mark.parametrize("length", [30, 300])
def test_a_completion_loses_at_most_its_smaller_share(length: int) -> None:
    """Completions rarely gain from drafts on a CPU, so a loss of a refactor's
    full allowance plus a noisy step would read below the 0.90x bound: on one
    busy core, always-wrong drafts cost a completion at most its own share."""
    rng = np.random.default_rng(2)
    truth = [int(t) for t in rng.integers(1, 60, size=length)] + [END]

    def run(drafters: list, kind: str) -> float:
        target = ModelledTarget([5, 6, 7, 8], truth, Clock(), load=2.0, curve=_cpu_curve)
        trusting = Controller(priors={"lookup:aligned": 0.995})
        _, ms, _ = _decode(
            truth,
            drafters,
            target=target,
            controller=trusting,
            expected_tokens=0,
            allowance=allowance_for(kind),
        )
        return ms

    plain_ms = run([], "completion")
    completion_ms = run([WrongDrafter()], "completion")
    assert allowance_for("completion") < allowance_for("refactor")
    assert completion_ms <= plain_ms * (1 + allowance_for("completion")) + 2.0 * _cpu_curve(1)
    refactor_ms = run([WrongDrafter()], "refactor")
    assert completion_ms <= refactor_ms + 1e-6
    if length > 100:  # short, both lose the one wrong draft their shares allow
        assert completion_ms < refactor_ms


# An H100's verify curve (docs/gpu.md): ms by batch rows, measured between
# batches of other shapes; a 1-row step replayed as a CUDA graph costs half.
GPU_COST_MS = {1: 3.9, 2: 5.0, 8: 5.2, 16: 6.5, 32: 7.1, 64: 9.2}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_copy_after_added_text_is_drafted_though_the_added_text_lost(seed: int) -> None:
    """A docstring before the copied selection: the lookup drafts on the added
    text fail (it opens like the source, then goes its own way), and that
    spends the allowance a selection-sized output gives. The output is longer
    than the selection, though, and the copy that follows is sure: it must
    still be drafted."""
    rng = np.random.default_rng(seed)
    source = [int(t) for t in rng.integers(1, 40, size=200)]
    new_text = [int(t) for t in rng.integers(40, 60, size=60)]
    added: list[int] = []
    for i in range(5):
        added += source[6 * i : 6 * i + 6] + new_text[12 * i : 12 * i + 12]
    truth = added + source + [END]
    plain, plain_ms, _ = _decode(truth, [], expected_tokens=len(source))
    spec, spec_ms, _ = _decode(truth, [PromptLookupDrafter([source])], expected_tokens=len(source))
    assert spec == plain == truth[:-1]
    # The copy is 200 of 290 tokens; decoded plainly, the whole stays near 1.0x.
    assert plain_ms / spec_ms > 1.25


# Tonight's 2-core CPU curve (bench/archive/benchmarks.md): a verify row costs most of a step.
CPU_CURVE: dict[int, float] = {
    1: 32,
    2: 66,
    4: 115,
    8: 249,
    16: 331,
    24: 502,
    32: 587,
    48: 842,
    64: 946,
}


def _interpolated(table: dict[int, float], rows: int) -> float:
    sizes = sorted(table)
    return float(np.interp(rows, sizes, [table[s] for s in sizes]))


def _cpu_curve(rows: int) -> float:
    return _interpolated(CPU_CURVE, rows)


def test_a_rewrite_that_leaves_its_selection_early_loses_at_most_its_own_allowance() -> None:
    """The allowance is lent on the selection's length before the tokens exist.
    A rewrite that copies the start of a 120-token selection and then writes
    15 tokens of its own (`return` where the source goes on) is 45 tokens
    long: once it has left the copy, drafting from the source must not spend
    the loan of the 75 tokens that will never come."""
    rng = np.random.default_rng(0)
    source = [int(t) for t in rng.integers(1, 40, size=120)]
    truth = source[:30] + [40] + [int(t) for t in rng.integers(41, 60, size=14)] + [END]

    def piece(token: int) -> bytes:
        return b" return" if token == 40 else b"(" if token > 40 else b" w%d" % token

    def run(drafters: list) -> tuple[list[int], float]:
        target = ModelledTarget([5, 6, 7, 8], truth, Clock(), curve=_cpu_curve)
        out, ms, _ = _decode(
            truth, drafters, target=target, expected_tokens=len(source), token_bytes=piece
        )
        return out, ms

    plain, plain_ms = run([])
    spec, spec_ms = run([PromptLookupDrafter([source], token_bytes=piece)])
    assert spec == plain == truth[:-1]
    assert spec_ms <= plain_ms * (1 + LossGuard.ALLOWANCE) + _cpu_curve(1)


def _gpu_curve(rows: int) -> float:
    return _interpolated(GPU_COST_MS, rows)


def test_wrong_drafts_on_a_gpu_lose_at_most_the_allowance_of_graph_replayed_plain() -> None:
    """Plain decoding on a GPU replays each step as a CUDA graph; a draft breaks
    the run of same-shaped steps, so the plain rounds after it cost twice as
    much. The guard must count that, or it measures 'plain' at the cold price
    and lets drafting lose far more than its allowance."""
    rng = np.random.default_rng(5)
    truth = [int(t) for t in rng.integers(1, 60, size=200)] + [END]

    def gpu() -> ModelledTarget:
        return ModelledTarget([5, 6, 7, 8], truth, Clock(), curve=_gpu_curve, replay_discount=0.5)

    plain, plain_ms, _ = _decode(truth, [], target=gpu())
    trusting = Controller(cost_ms=GPU_COST_MS, max_draft=64, priors={"lookup:aligned": 0.995})
    spec, spec_ms, _ = _decode(truth, [WrongDrafter()], controller=trusting, target=gpu())
    assert spec == plain
    assert spec_ms <= plain_ms * (1 + LossGuard.ALLOWANCE) + 3 * _gpu_curve(1)


class LateRoundsTarget(ModelledTarget):
    """A GPU target whose rounds now and then wait for a busy core: a fifth of
    them take up to 4 ms longer (a step is 2-4 ms). The delays come from a
    seeded stream, the same for plain and speculative decoding."""

    def __init__(self, truth: list[int], seed: int):
        super().__init__([5, 6, 7, 8], truth, Clock(), curve=_gpu_curve, replay_discount=0.5)
        self.delays = np.random.default_rng(seed)

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        rows = super().append(tokens)
        if self.delays.random() < 0.2:
            self.clock.now += 4.0 * self.delays.random() / 1000
        return rows


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_late_rounds_do_not_raise_the_price_of_plain_decoding(seed: int) -> None:
    """A late plain round must not make plain decoding look dear: taken as the
    going price, it lets wrong drafts lose far more than the allowance. With
    moving averages of t1 and the steady ratio, a session of such requests
    lost 20-45% (one late steady round at its start priced every request after
    it as a CPU's); now it stays within the allowance, and no request of it
    loses more than 20% (over 40 seeds: 3 of 200 requests past the allowance,
    when five late rounds came in a row)."""
    truth = [int(t) for t in np.random.default_rng(5).integers(1, 60, size=200)] + [END]
    trusting = controllers_by_kind(cpu_only=False)["refactor"]
    trusting.priors = {"lookup:aligned": 0.995}
    session_plain_ms = session_spec_ms = 0.0
    for request in range(5):  # what one request learns, the next one starts from
        stream = 100 * seed + request
        _, plain_ms, _ = _decode(truth, [], target=LateRoundsTarget(truth, stream))
        target = LateRoundsTarget(truth, stream)
        spec, spec_ms, _ = _decode(truth, [WrongDrafter()], controller=trusting, target=target)
        assert spec == truth[:-1]
        assert spec_ms <= plain_ms / 0.8
        session_plain_ms += plain_ms
        session_spec_ms += spec_ms
    assert session_spec_ms <= session_plain_ms * (1 + LossGuard.ALLOWANCE) + 3 * _gpu_curve(1)


@pytest.mark.parametrize("length", [6, 40])
def test_a_short_completion_risks_no_step_it_cannot_pay_for(length: int) -> None:
    """A completion may lose its share of at least 10 tokens' plain time, half a
    step. On a CPU a rejected 1-token draft costs most of a step, so a 6-token
    completion (a held-out one read 0.75x so) drafts nothing, even from a
    drafter it trusts; a longer one still verifies right drafts once its own
    length pays for a miss."""
    truth = [int(t) for t in np.random.default_rng(3).integers(1, 60, size=length)] + [END]

    def run(drafter: LearnsNothing | None) -> tuple[list[int], float, ModelledTarget]:
        target = ModelledTarget([5, 6, 7, 8], truth, Clock())
        trusting = controllers_by_kind(cpu_only=True)["completion"]
        trusting.priors = {"lookup:aligned": 0.995}
        drafters = [drafter] if drafter else []
        allowance = allowance_for("completion")
        return _decode(truth, drafters, target=target, controller=trusting, expected_tokens=0,
                       allowance=allowance)  # fmt: skip

    plain, plain_ms, _ = run(None)
    wrong, wrong_ms, wrong_target = run(WrongDrafter())
    right, right_ms, right_target = run(
        TruthDrafter(truth, 4, longest=len(truth), bucket="lookup:aligned")
    )
    assert wrong == right == plain == truth[:-1]
    if length < 10:
        assert set(wrong_target.batches) == set(right_target.batches) == {1}
        assert wrong_ms == right_ms == plain_ms
    else:
        assert max(right_target.batches) > 1 and right_ms < plain_ms


class SlowDrafter(LearnsNothing):
    """Every look costs 10 target steps of Python; two in three find nothing,
    the third proposes a draft whose first token only is right."""

    def __init__(self, clock: Clock, truth: list[int]):
        self.clock = clock
        self.truth = truth
        self.looks = 0

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        self.clock.now += 10 * _curve(1) / 1000
        self.looks += 1
        if self.looks % 3:
            return None
        done = len(history) - 4  # the prompt is 4 tokens
        return Draft(self.truth[done : done + 1] + [63] * (k - 1), self.name, "lookup:aligned")


def test_the_cost_of_looking_for_drafts_counts_as_a_loss() -> None:
    rng = np.random.default_rng(4)
    truth = [int(t) for t in rng.integers(1, 60, size=200)] + [END]
    plain, plain_ms, _ = _decode(truth, [])
    trusting = Controller(max_draft=64, priors={"lookup:aligned": 0.995})
    clock = Clock()
    decoder, target = _decoder(truth, [SlowDrafter(clock, truth)], trusting, clock)
    out = decoder.run(target.first_logits(), 300, expected_tokens=200)
    assert out.tokens == plain
    # Past the allowance: the look that overdraws it and one more while broke
    # (Decoder._keep_following); what a look costs is known only once it is made.
    look_ms = 10 * _curve(1)
    assert clock.now * 1000 <= plain_ms * (1 + LossGuard.ALLOWANCE) + 2 * look_ms + 2 * _curve(1)


def test_guard_budget_follows_what_drafting_earned() -> None:
    guard = LossGuard(t1_estimate_ms=30.0, t1_measured=False)
    guard.observe_plain(40.0)  # measured now: the machine is busier than the table says
    assert guard.t1 == 40.0
    start = guard.budget_ms()
    guard.observe_draft_round(ms=100.0, emitted=10)  # 10 tokens for 2.5 steps: earned
    assert guard.budget_ms() > start + 250
    guard.observe_draft_round(ms=800.0, emitted=1)  # a long draft, all rejected: lost
    assert guard.budget_ms() < start


def test_guard_probes_plain_rounds_to_measure_the_load() -> None:
    first = LossGuard(t1_estimate_ms=30.0)  # no steady round seen yet: plain until two
    for _ in range(LossGuard.STEADY_AFTER + 1):
        assert first.must_probe()
        first.observe_plain(30.0)
    assert not first.must_probe()
    guard = LossGuard(t1_estimate_ms=30.0, steady_samples=[1.0] * LossGuard.SAMPLES)
    rounds = 0
    while not guard.must_probe():
        guard.observe_draft_round(ms=30.0, emitted=2)
        rounds += 1
    assert rounds == LossGuard.FIRST_PROBE
    guard.observe_plain(31.0)
    assert not guard.must_probe()
    guessed = LossGuard(
        t1_estimate_ms=33.0, steady_samples=[1.0] * LossGuard.SAMPLES, t1_measured=False
    )
    assert guessed.must_probe()  # a table's t1: measure it before any draft is sized by it
    guessed.observe_plain(45.0)
    assert not guessed.must_probe()
    assert guessed.t1 == 45.0
    # Fewer ratio samples than SAMPLES: a probe runs on until it has sampled two more.
    sampling = LossGuard(t1_estimate_ms=4.0, steady_samples=[0.5, 0.5])
    sampling.observe_draft_round(ms=5.0, emitted=2)
    probe_run = 0
    while sampling.must_probe() or probe_run == 0:
        sampling.observe_plain(4.0 if probe_run < LossGuard.STEADY_AFTER - 1 else 2.0)
        probe_run += 1
    assert probe_run == LossGuard.STEADY_AFTER + 1
    assert list(sampling.steady_samples) == [0.5] * 4


@pytest.mark.parametrize("cpu_only, plain_first", [(True, 1), (False, LossGuard.STEADY_AFTER + 1)])
def test_a_new_sessions_first_request_drafts_after_one_plain_round_on_a_cpu(
    cpu_only: bool, plain_first: int
) -> None:
    """A CPU replays no graphs, so its steady ratio is known (1) and the first
    request only measures t1, in one plain round; elsewhere it learns the
    ratio from the two steady rounds after STEADY_AFTER - 1 cold ones first."""
    copy, truth = _copying_truth()
    source = [7, 8, *copy]  # the prompt's end and what follows it: a match from the first token
    controller = controllers_by_kind(cpu_only)["refactor"]
    spec, _, target = _decode(truth, [PromptLookupDrafter([source])], controller=controller)
    assert spec == truth[:-1]
    assert target.batches[:plain_first] == [1] * plain_first
    assert target.batches[plain_first] > 1
    _, _, again = _decode(truth, [PromptLookupDrafter([source])], controller=controller)
    assert again.batches[0] > 1  # t1 was measured here before: the next request drafts at once


def test_guard_learns_steady_plain_rounds_and_charges_the_cold_ones_after_a_draft() -> None:
    guard = LossGuard(t1_estimate_ms=4.0)
    for ms in (4.0, 4.0, 2.0, 2.0):  # after the prompt: two cold rounds, then steady
        guard.observe_plain(ms)
    assert guard.steady_ratio == 0.5
    assert guard.plain_ms == 2.0
    assert guard.earned_ms == 0.0  # the prompt's shape change is plain decoding's too
    guard.observe_draft_round(ms=5.0, emitted=2)
    assert guard.earned_ms == pytest.approx(2 * 2.0 - 5.0)
    guard.observe_plain(4.0)  # the draft broke the run: this round is cold
    assert guard.earned_ms == pytest.approx(2 * 2.0 - 5.0 - 2.0)
    assert guard.steady_ratio == 0.5


def test_guard_follows_the_load_with_a_learned_ratio_and_ignores_a_cpus_noise() -> None:
    gpu = LossGuard(t1_estimate_ms=4.0, steady_samples=[0.5])  # learned in an earlier request
    gpu.observe_plain(8.0)  # one late round is not a busier machine
    assert gpu.plain_ms == 2.0
    for _ in range(LossGuard.SAMPLES - 1):  # cold rounds twice as long, round after round
        gpu.observe_plain(8.0)
    assert gpu.plain_ms == 4.0  # not the earlier request's steady 2.0
    cpu = LossGuard(t1_estimate_ms=30.0)
    for ms in (30.0, 31.0, 27.0):  # a steady round 10% faster: noise, not graph replay
        cpu.observe_plain(ms)
    assert cpu.steady_ratio is not None and cpu.steady_ratio < 1.0
    assert cpu.plain_ms == cpu.t1
    cpu.observe_draft_round(ms=60.0, emitted=3)
    before = cpu.earned_ms
    cpu.observe_plain(35.0)  # cold after a draft, but a CPU has no cold rounds
    assert cpu.earned_ms == before


def test_a_busy_cpu_prices_plain_rounds_by_their_median_a_gpu_by_the_least() -> None:
    # Under a busy core a CPU's rounds, plain and drafting alike, wait now and then:
    # the luckiest plain round would make every draft round look like a loss.
    rounds = (50.0, 36.0, 52.0, 49.0, 51.0)
    cpu = LossGuard(t1_estimate_ms=50.0, steady_samples=None)
    gpu = LossGuard(t1_estimate_ms=50.0, steady_samples=[1.0] * LossGuard.SAMPLES)
    for ms in rounds:
        cpu.observe_plain(ms)
        gpu.observe_plain(ms)
    assert cpu.plain_ms == 50.0
    assert gpu.plain_ms == 36.0
    cpu.observe_draft_round(ms=100.0, emitted=3)  # a 3-token round at two steps' price
    assert cpu.earned_ms == pytest.approx(3 * 50.0 - 100.0)
    for ms in (80.0, 80.0, 80.0):  # the load doubles: t1 follows within three rounds
        cpu.observe_plain(ms)
    assert cpu.plain_ms == 80.0


def test_a_full_context_keeps_what_was_generated() -> None:
    clock = Clock()
    truth = list(range(1, 60))
    target = ModelledTarget([5, 6, 7, 8], truth, clock, n_ctx=20)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == END,
        controller=Controller(),
        drafters=[PromptLookupDrafter([truth])],
        params=SamplingParams(),
        clock=clock,
    )
    out = decoder.run(target.first_logits(), max_tokens=100)
    assert out.stop is StopReason.CONTEXT_FULL
    assert out.tokens == truth[: len(out.tokens)]
    assert len(out.tokens) == 20 - 1 - 4 + 1  # every cell used, plus the last emitted token


def test_a_repeating_tail_is_a_loop() -> None:
    assert repeating_tail([1, 2, 3] * 40)
    assert repeating_tail(list(range(10)) + [7] * 100)
    assert not repeating_tail([1, 2, 3] * 10)  # too short to call it a loop
    rng = np.random.default_rng(3)
    assert not repeating_tail([int(t) for t in rng.integers(0, 50, size=400)])


def test_repeating_what_the_prompt_repeats_is_not_a_loop() -> None:
    table = [1, 2, 3, 4, 5, 6] * 40  # e.g. a table of similar lines being rewritten
    assert repeating_tail(table)
    assert not repeating_tail(table, prompt=[0, 0] + table[:60])


def test_a_looping_generation_stops_the_same_with_and_without_drafts() -> None:
    truth = [9, 10, 11, 12] * 100
    plain, _, _ = _decode(truth, [])
    spec, _, _ = _decode(truth, [PromptLookupDrafter([truth[:40]])])
    assert spec == plain
    assert len(plain) < 200


class _DraftSession:
    def __init__(self, cells: list[int]):
        self.cells = cells


def test_the_draft_model_never_catches_up_on_a_whole_prompt() -> None:
    prompt = list(range(1, 1601))
    cold = DraftModelDrafter(_DraftSession([]), prompt, max_catch_up=16)  # type: ignore[arg-type]
    assert not cold.usable
    assert cold.propose(prompt, 8) is None
    in_step = DraftModelDrafter(_DraftSession(prompt[:-3]), prompt, max_catch_up=16)  # type: ignore[arg-type]
    assert in_step.usable
    asked = DraftModelDrafter(_DraftSession([]), prompt)  # type: ignore[arg-type]
    assert asked.usable  # the user chose `draft`: it may catch up


def _timed_decoder(
    truth: list[int], max_ms: float = 0.0, deadline_ms: float = 0.0
) -> tuple[Decoder, ModelledTarget]:
    clock = Clock()
    target = ModelledTarget([5, 6, 7, 8], truth, clock)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        # token 9 is a new line; every token costs one modelled step (~20-30 ms)
        token_bytes=lambda t: b"\n" if t == 9 else b" t%d" % t,
        is_end=lambda t: t == END,
        controller=Controller(),
        drafters=[],
        params=SamplingParams(),
        clock=clock,
        max_ms=max_ms,
        deadline_ms=deadline_ms,
    )
    return decoder, target


def test_the_time_limit_stops_at_the_first_new_line_after_it() -> None:
    # t_max_predict_ms as llama-server applies it: past the limit, the next new
    # line (kept) ends the generation; before the limit a new line does not.
    truth = [1, 9, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 9, 12, END]
    decoder, target = _timed_decoder(truth, max_ms=3 * _curve(1))
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out
    assert out.tokens == truth[:10]  # through the second new line, the first after the limit
    assert target.cells[4:] == out.tokens[:-1]  # as at any stop: the last one is not in the KV


def test_without_a_new_line_the_time_limit_never_stops() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, END]
    decoder, target = _timed_decoder(truth, max_ms=1.0)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert not out.timed_out and out.tokens == truth[:-1]


def test_the_deadline_stops_mid_line_before_a_round_that_would_end_past_it() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, END]
    deadline = 3.5 * _curve(1)
    decoder, target = _timed_decoder(truth, deadline_ms=deadline)
    started = target.clock()
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out and out.cut_short
    # the first token is free (the prompt's logits); each next one costs a step
    assert out.tokens == truth[:4]
    assert (target.clock() - started) * 1000 <= deadline


def test_a_drafted_round_that_would_end_past_the_deadline_is_not_started() -> None:
    """A plain round prices the next one at a step; a right draft makes it a batch
    of many steps (16 rows, 5.7 steps past a deadline, before the fix). Within the
    deadline a draft is verified shorter, or not at all."""
    truth = list(range(10, 60)) * 3 + [END]
    drafted = 0
    for tenths in range(20, 600, 5):  # deadlines of 2 to 60 steps
        controller = Controller(priors=REFACTOR_PRIORS, max_draft=64)
        clock = Clock()
        deadline = tenths / 10 * controller.cost(1)
        right = TruthDrafter(truth, prompt_len=4, longest=48, bucket="lookup:aligned")
        decoder, target = _decoder(
            truth, [right], controller, clock, curve=controller.cost, deadline_ms=deadline
        )
        out = decoder.run(target.first_logits(), max_tokens=160, expected_tokens=150)
        assert out.cut_short and out.tokens == truth[: len(out.tokens)]
        assert clock.now * 1000 <= deadline + 1e-6, (tenths, target.batches)
        drafted += max(target.batches) > 1
    assert drafted > 100  # drafts still run where they fit


def test_a_deadline_shorter_than_one_round_leaves_the_first_line_to_the_time_limit() -> None:
    # A cold prompt spent the deadline: a token alone is not worth showing.
    truth = [1, 2, 9, 3, 4, END]
    decoder, target = _timed_decoder(truth, max_ms=0.001, deadline_ms=0.001)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out and not out.cut_short
    assert out.tokens == truth[:3]  # the first line, through its new line


def test_without_a_deadline_a_long_line_runs_to_its_end() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, END]
    decoder, target = _timed_decoder(truth)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert not out.cut_short and out.tokens == truth[:-1]


def _decoder(
    truth: list[int],
    drafters: list,
    controller: Controller | None = None,
    clock: Clock | None = None,
    curve: Callable[[int], float] | None = None,
    deadline_ms: float = 0.0,
) -> tuple[Decoder, ModelledTarget]:
    """A decoder over a modelled target whose greedy output is `truth`."""
    clock = clock or Clock()
    target = ModelledTarget([5, 6, 7, 8], truth, clock, curve=curve)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == END,
        controller=controller or Controller(priors=REFACTOR_PRIORS, max_draft=64),
        drafters=drafters,
        params=SamplingParams(),
        clock=clock,
        deadline_ms=deadline_ms,
    )
    return decoder, target


def _generate(
    truth: list[int], drafters: list, max_tokens: int, stop: StopRule | None = None
) -> DecodeOutcome:
    decoder, target = _decoder(truth, drafters)
    return decoder.run(target.first_logits(), max_tokens, stop)


@pytest.mark.parametrize("drafting", [False, True])
def test_only_an_end_token_or_the_stop_rule_finishes_a_generation(drafting: bool) -> None:
    """A refactor applies its output only when the model finished it
    (drafted, the end token arrives inside an accepted draft)."""
    _, truth = _copying_truth(80)

    def drafters() -> list:
        return [PromptLookupDrafter([truth])] if drafting else []

    def tenth_token(text: str) -> int | None:
        return len(text) if text.count(" t") >= 10 else None

    ended = _generate(truth, drafters(), 200)
    assert ended.finished and ended.tokens == truth[:-1]
    assert _generate(truth, drafters(), 200, tenth_token).finished
    assert not _generate(truth, drafters(), 40).finished  # the token limit
    looping = _generate([1, 2, 3] * 80 + [END], drafters(), 400)
    assert looping.stop is StopReason.LOOPED and not looping.finished


def test_an_unfinished_refactor_says_why() -> None:
    outcome = DecodeOutcome()
    assert "limit of 300 tokens: raise maxTokens" in unfinished_refactor(outcome, 300, 200)
    assert "ran past 512 tokens for a 256-token selection" in unfinished_refactor(outcome, 512, 256)
    outcome.stop = StopReason.LOOPED
    message = unfinished_refactor(outcome, 512, 256)
    assert "repeating itself" in message and message.endswith("the selection is unchanged")


def test_a_negative_seed_is_random_and_a_tiny_temperature_is_greedy() -> None:
    """llama-server's `"seed": -1` means a random seed; numpy refused it (a 500 over
    HTTP). A subnormal temperature overflowed the logits to NaN probabilities."""
    logits = np.array([1.0, 3.0, 2.0], dtype=np.float32)
    drawn = {next_token(logits, SamplingParams(1.0, seed=-1)) for _ in range(64)}
    assert len(drawn) > 1  # random, and not one fixed stream per call
    tiny = SamplingParams(temperature=1e-320)
    assert tiny.greedy and next_token(logits, tiny) == 1
    assert not SamplingParams(temperature=1e-3).greedy


def test_a_draft_that_runs_out_is_verified_in_a_padded_batch_and_stays_exact(
    epyc_one_thread: dict[int, float],
) -> None:
    """Drafts of 13 tokens on one CPU thread, where 16 rows cost less than 14: each
    is verified in a 16-row batch, the two padding rows are never taken as output,
    and only the 13 drafted tokens count as drafted."""
    shape = epyc_one_thread
    sizes = sorted(shape)

    def lumpy(rows: int) -> float:
        return float(np.interp(rows, sizes, [shape[s] for s in sizes])) * 50.0

    _, truth = _copying_truth(200)
    clock = Clock()
    target = ModelledTarget([5, 6, 7, 8], truth, clock, curve=lumpy, threads=1)
    controller = controllers_by_kind(cpu_only=True)["refactor"]
    controller.price_by_measured({1: shape}, max_threads=1)
    drafter = TruthDrafter(truth, prompt_len=4, longest=13, bucket="lookup:aligned")
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == END,
        controller=controller,
        drafters=[drafter],
        params=SamplingParams(),
        clock=clock,
        allowance=allowance_for("refactor"),
    )
    out = decoder.run(target.first_logits(), len(truth) + 8, expected_tokens=len(truth))
    assert out.tokens == truth[:-1]
    assert set(target.batches[1:-1]) == {16}  # never the 14 rows a 13-token draft needs
    # The padding is neither drafted nor accepted (the last draft ends on END).
    assert out.drafted - 1 <= out.accepted <= out.drafted <= len(truth)
