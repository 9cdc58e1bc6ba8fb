"""The decode loop on a modelled target: exact output, and never slower than plain.

The fake target's greedy choice after any history is fixed by `truth`, and
each batch advances a fake clock by a modelled cost (a k-row batch costs
what the controller's measured curve says, times a load factor), so the
tests are deterministic and need no model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from modelled_decode import (
    END,
    Clock,
    LearnsNothing,
    ModelledTarget,
    TruthDrafter,
    WrongDrafter,
    _copying_truth,
    _curve,
    _decode,
    _decoder,
)

from speculator.controller import ONE_THREAD_SHAPE, Controller, controllers_by_kind
from speculator.decode import Decoder
from speculator.drafters import Draft, DraftModelDrafter
from speculator.lookup import PromptLookupDrafter
from speculator.loss_guard import LossGuard, allowance_for
from speculator.sampling import SamplingParams, next_token


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
