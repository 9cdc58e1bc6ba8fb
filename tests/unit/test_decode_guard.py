"""The loss guard (speculator/loss_guard.py) on its own and in the decode loop:
what it learns of plain rounds, when it probes, the budget drafting earns, and a
new session's first request. The modelled target: tests/unit/modelled_decode.py.
"""

from __future__ import annotations

import pytest
from modelled_decode import _copying_truth, _decode

from speculator.controller import controllers_by_kind
from speculator.lookup import PromptLookupDrafter
from speculator.loss_guard import LossGuard


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
