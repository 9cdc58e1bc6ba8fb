"""A CPU build measures its own verify curve once and keeps it on disk."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from speculator.threads import CpuSample, ThreadPolicy
from speculator.verify_curve import (
    CONTEXT_TOKENS,
    CURVE_ROWS,
    FORMAT_VERSION,
    SLACK,
    CurveStore,
    cpu_kernels_fingerprint,
    curve_key,
    machine_shapes,
    measure_shapes,
)

TOKENS = list(range(CONTEXT_TOKENS + max(CURVE_ROWS)))


class CostedSession:
    """A session whose batches cost `curve[rows]` steps of `step_s` on a fake clock;
    `slow_every` makes every n-th append twice as slow, and the one after it too
    (a load that comes and goes)."""

    def __init__(self, curve: dict[int, float], step_s: float = 0.1, slow_every: int = 0):
        self.curve = curve
        self.step_s = step_s
        self.slow_every = slow_every
        self.now = 0.0
        self.cells: list[int] = []
        self.appends: list[int] = []
        self.threads_seen: list[int] = []
        self.policy: ThreadPolicy | None = None

    def clock(self) -> float:
        return self.now

    def append(self, tokens: Sequence[int]) -> None:
        self.appends.append(len(tokens))
        if self.policy is not None:
            self.threads_seen.append(self.policy.current())
        slow = self.slow_every and (len(self.appends) // 2) % self.slow_every == 0
        self.now += self.curve.get(len(tokens), 0.0) * self.step_s * (2 if slow else 1)
        self.cells.extend(tokens)

    def trim(self, n: int) -> None:
        del self.cells[n:]


VM_ONE_THREAD = {1: 1.0, 2: 1.7, 3: 2.1, 4: 1.8, 8: 3.5, 15: 4.9, 16: 4.4, 24: 6.6, 31: 8.6,
                 32: 7.9, 47: 11.8, 48: 10.9, 63: 14.1, 64: 12.7,
                 CONTEXT_TOKENS: 20.0}  # fmt: skip


def test_the_shape_is_each_batch_against_the_step_timed_beside_it() -> None:
    session = CostedSession(VM_ONE_THREAD, slow_every=3)
    shapes = measure_shapes(session, busy_policy(0.0), TOKENS, [1], rounds=3, clock=session.clock)
    assert shapes[1] == {k: pytest.approx(VM_ONE_THREAD[k]) for k in (1, *CURVE_ROWS)}
    assert session.cells == []  # left empty, as the engine loaded it


class StepDescheduledOnce(CostedSession):
    """The 1-row step before the first 32-row batch waits a time slice: alone it
    would price that batch at half its cost."""

    def append(self, tokens: Sequence[int]) -> None:
        super().append(tokens)
        if len(tokens) == 1 and self.appends.count(32) == 0 and self.appends.count(24) == 1:
            self.now += self.step_s


def test_a_step_descheduled_in_one_round_is_outvoted_by_the_others() -> None:
    session = StepDescheduledOnce(VM_ONE_THREAD)
    shape = measure_shapes(session, busy_policy(0.0), TOKENS, [1], clock=session.clock)[1]
    assert shape == {k: pytest.approx(VM_ONE_THREAD[k]) for k in (1, *CURVE_ROWS)}
    once = StepDescheduledOnce(VM_ONE_THREAD)
    single = measure_shapes(once, busy_policy(0.0), TOKENS, [1], rounds=1, clock=once.clock)[1]
    assert single[32] == pytest.approx(VM_ONE_THREAD[32] / 2)  # what one round stored


def test_a_timing_gone_wrong_is_clamped_not_believed() -> None:
    curve = {**VM_ONE_THREAD, 2: 0.1, 64: 500.0}  # a batch faster than a step; a stall
    session = CostedSession(curve)
    shape = measure_shapes(
        session, busy_policy(0.0), TOKENS, [1], rows=(2, 64), clock=session.clock
    )[1]
    assert shape[2] == 1.0 and shape[64] == SLACK * 64


def test_too_few_tokens_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="too few"):
        measure_shapes(CostedSession(VM_ONE_THREAD), busy_policy(0.0), TOKENS[:150], [1])


def busy_policy(others: float) -> ThreadPolicy:
    """A 2-core machine where other processes use `others` cores, sampled on a
    clock that moves 0.2 s per look."""
    clock = {"wall": 0.0}

    def sample() -> CpuSample:
        clock["wall"] += 0.2
        return CpuSample(clock["wall"], (others + 1.0) * clock["wall"], clock["wall"])

    return ThreadPolicy(2, cores=[0, 1], sampler=sample)


def shapes_for(session: CostedSession, policy: ThreadPolicy, store: CurveStore):  # type: ignore[no-untyped-def]
    session.policy = policy
    return machine_shapes(
        session, policy, lambda text: TOKENS, "model-a", store, clock=session.clock
    )


def test_measured_once_per_thread_count_then_read_from_disk(tmp_path: Path) -> None:
    store = CurveStore(tmp_path / "curves")
    first = CostedSession(VM_ONE_THREAD)
    shapes = shapes_for(first, busy_policy(0.0), store)
    assert set(shapes) == {1, 2} and shapes[1][8] == pytest.approx(3.5)
    assert set(first.threads_seen) == {1, 2}  # each curve on its own thread count
    restarted = CostedSession(VM_ONE_THREAD)
    assert shapes_for(restarted, busy_policy(0.0), store) == shapes
    assert restarted.appends == []  # nothing timed again


def test_with_a_core_busy_the_many_thread_curve_waits_for_a_quiet_start(tmp_path: Path) -> None:
    store = CurveStore(tmp_path)
    shapes = shapes_for(CostedSession(VM_ONE_THREAD), busy_policy(1.0), store)
    assert set(shapes) == {1}
    assert store.load(curve_key("model-a", 2)) is None


def test_a_corrupt_or_foreign_curve_file_is_measured_again(tmp_path: Path) -> None:
    store = CurveStore(tmp_path)
    shapes_for(CostedSession(VM_ONE_THREAD), busy_policy(0.0), store)
    files = sorted(tmp_path.glob("*.json"))
    files[0].write_bytes(b"\x00not json")
    files[1].write_text(files[1].read_text().replace("12.7", "99999"))  # implausible
    again = CostedSession(VM_ONE_THREAD)
    shapes = shapes_for(again, busy_policy(0.0), store)
    assert set(shapes) == {1, 2} and again.appends  # measured again, not crashed
    assert all(store.load(curve_key("model-a", t)) == shapes[t] for t in (1, 2))


def test_a_curve_of_an_older_format_is_measured_again(tmp_path: Path) -> None:
    store = CurveStore(tmp_path)
    shapes_for(CostedSession(VM_ONE_THREAD), busy_policy(1.0), store)
    (saved,) = tmp_path.glob("*.json")
    saved.write_text(saved.read_text().replace(f'"version":{FORMAT_VERSION}', '"version":1'))
    assert store.load(curve_key("model-a", 1)) is None
    again = CostedSession(VM_ONE_THREAD)
    shapes_for(again, busy_policy(1.0), store)
    assert again.appends and store.load(curve_key("model-a", 1)) is not None


def test_another_model_gets_its_own_curve(tmp_path: Path) -> None:
    assert curve_key("model-a", 1) != curve_key("model-b", 1) != curve_key("model-b", 2)


def test_other_cpu_kernels_get_their_own_curve(tmp_path: Path) -> None:
    """A patched ggml-cpu keeps llama.cpp's version and system info; its bytes differ."""
    lib = tmp_path / "libggml-cpu.so.0.25.3"
    lib.write_bytes(b"maddubs kernels")
    (tmp_path / "libggml-cpu.so").symlink_to(lib.name)
    (tmp_path / "libllama.so").write_bytes(b"not a CPU kernel")
    stock = cpu_kernels_fingerprint(tmp_path)
    (tmp_path / "libllama.so").write_bytes(b"rebuilt, same kernels")
    assert cpu_kernels_fingerprint(tmp_path) == stock
    lib.write_bytes(b"vnni kernels")
    assert cpu_kernels_fingerprint(tmp_path) != stock


def test_an_unwritable_folder_only_costs_a_measurement_next_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = CurveStore(blocker / "curves")  # a folder inside a file cannot be made
    shapes = shapes_for(CostedSession(VM_ONE_THREAD), busy_policy(0.0), store)
    assert set(shapes) == {1, 2}
