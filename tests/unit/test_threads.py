"""The thread policy leaves cores that other processes keep busy to them."""

from __future__ import annotations

from speculator.threads import (
    CpuSample,
    ThreadPolicy,
    busy_ticks,
    read_cpu_sample,
    usable_cores,
)


class Machine:
    """CPU counters of a fake 2-core machine: `others` cores' worth of other work."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.busy = 0.0
        self.own = 0.0
        self.others = 0.0
        self.ours = 1.0

    def run(self, seconds: float) -> None:
        self.wall += seconds
        self.busy += (self.others + self.ours) * seconds
        self.own += self.ours * seconds

    def sample(self) -> CpuSample:
        return CpuSample(self.wall, self.busy, self.own)


def policy_on(machine: Machine, max_threads: int = 2) -> ThreadPolicy:
    return ThreadPolicy(max_threads, cores=[0, 1], sampler=machine.sample)


def steps(policy: ThreadPolicy, machine: Machine, seconds: float) -> int:
    """Steps of 0.1 s for `seconds`; the thread count at the end."""
    for _ in range(round(seconds / 0.1)):
        machine.run(0.1)
        policy.current(now=machine.wall)
    return policy.threads


def test_all_threads_on_a_quiet_machine() -> None:
    machine = Machine()
    policy = policy_on(machine)
    assert steps(policy, machine, 3.0) == 2


def test_one_busy_core_leaves_one_thread_and_comes_back_when_it_stops() -> None:
    machine = Machine()
    policy = policy_on(machine)
    steps(policy, machine, 1.0)
    machine.others = 1.0  # a compiler starts
    assert steps(policy, machine, 2.0) == 1
    machine.others = 0.0  # and ends
    assert steps(policy, machine, 2.0) == 2


def test_a_light_background_process_keeps_all_threads() -> None:
    machine = Machine()
    machine.others = 0.2  # an editor blinking its cursor
    policy = policy_on(machine)
    assert steps(policy, machine, 3.0) == 2


def test_never_below_one_thread_or_above_the_configured_count() -> None:
    machine = Machine()
    machine.others = 2.0
    policy = policy_on(machine)
    assert steps(policy, machine, 3.0) == 1
    machine.others = 0.0
    single = policy_on(machine, max_threads=1)
    assert steps(single, machine, 3.0) == 1


def test_fixed_when_not_adaptive_or_without_counters() -> None:
    machine = Machine()
    machine.others = 1.0
    fixed = ThreadPolicy(2, cores=[0, 1], sampler=machine.sample, adaptive=False)
    assert steps(fixed, machine, 3.0) == 2
    blind = ThreadPolicy(2, cores=[0, 1], sampler=lambda: None)
    assert steps(blind, machine, 3.0) == 2


def test_reads_this_machines_counters() -> None:
    cores = usable_cores()
    assert cores
    first = read_cpu_sample(cores)
    if first is None:  # no /proc/stat: the policy stays at the configured count
        return
    sum(i * i for i in range(200_000))  # spend some CPU time
    second = read_cpu_sample(cores)
    assert second is not None
    assert second.own_s >= first.own_s and second.busy_s >= first.busy_s
    assert second.wall_s > first.wall_s


PROC_STAT = """cpu  300 50 30 900 5 0 2 1 0 0
cpu0 100 40 10 400 2 0 1 0 0 0
cpu1 200 10 20 500 3 0 1 1 0 0
intr 12345
"""


def test_busy_ticks_counts_our_cores_and_leaves_niced_work_out() -> None:
    # cpu0: user 100 + system 10 + softirq 1; nice 40 only when we are niced ourselves
    assert busy_ticks(PROC_STAT, [0], count_nice=False) == 111
    assert busy_ticks(PROC_STAT, [0], count_nice=True) == 151
    assert busy_ticks(PROC_STAT, [0, 1], count_nice=False) == 111 + 222


def test_pinned_runs_the_steps_inside_on_that_many_threads() -> None:
    machine = Machine()
    machine.others = 1.0
    policy = policy_on(machine)
    assert steps(policy, machine, 2.0) == 1
    with policy.pinned(2):
        assert policy.current(now=machine.wall) == 2
    with policy.pinned(8):  # never above the configured count
        assert policy.current(now=machine.wall) == 2
    assert steps(policy, machine, 0.3) == 1


def test_free_for_asks_the_counters_when_nothing_is_known() -> None:
    for others, free in ((0.0, {1: True, 2: True}), (1.0, {1: True, 2: False})):
        machine = Machine()
        machine.others = others

        def sample(machine: Machine = machine) -> CpuSample:
            machine.run(0.2)  # time passes between looks
            return machine.sample()

        policy = ThreadPolicy(2, cores=[0, 1], sampler=sample)
        assert {n: policy.free_for(n, settle_s=0.0) for n in (1, 2)} == free
