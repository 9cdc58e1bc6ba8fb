import pytest

from speculator.controller import (
    DEFAULT_COST_MS,
    MAX_VERIFY_ROWS,
    REFACTOR_PRIORS,
    Controller,
    controllers_by_kind,
)


def test_no_draft_when_acceptance_is_poor() -> None:
    c = Controller()
    for _ in range(50):
        c.observe_acceptance("lookup:1", drafted=4, accepted=0)
    assert c.draft_length("lookup:1", 32) == 0


def test_long_drafts_when_everything_is_accepted() -> None:
    c = Controller()
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=16, accepted=16)
    assert c.draft_length("lookup:aligned", 32) >= 16


def test_cheap_verification_favours_longer_drafts() -> None:
    flat = Controller(cost_ms={1: 10.0, 2: 10.5, 4: 11.0, 8: 12.0, 16: 14.0, 32: 18.0})
    steep = Controller()
    assert flat.draft_length("lookup:2", 32) > steep.draft_length("lookup:2", 32)


def test_measured_costs_rescale_every_batch_size() -> None:
    c = Controller()
    before = c.cost(33)
    for _ in range(40):
        c.observe_cost(1, c.cost_ms[1] / 2)
    assert c.cost(1) < 0.6 * 71
    assert c.cost(33) < 0.7 * before


def test_the_first_timed_step_rescales_the_whole_table_at_once() -> None:
    """The table is another machine's: a GPU's first 1-row step of 3.9 ms,
    against a tabled CPU step, must price untimed batch sizes on the GPU's
    scale at once. Scaled a tenth of the way per round, the step fell to the
    GPU's price long before the batches did, and a new session's first request
    found every draft too dear for its first 24 rounds."""
    c = Controller()
    scale = 3.9 / c.cost(1)
    c.observe_cost(1, 3.9)
    assert c.cost(1) == pytest.approx(3.9)
    assert c.cost(17) == pytest.approx(scale * Controller().cost(17))


def test_a_size_counts_as_measured_only_once_timed() -> None:
    c = Controller()
    assert not c.measured(1)
    c.observe_cost(16, 300.0)
    assert c.measured(16) and not c.measured(1)
    c.observe_cost(1, 40.0)
    assert c.measured(1)


def test_each_kind_has_its_own_controller_and_a_cpu_knows_its_steady_ratio() -> None:
    cpu, gpu = controllers_by_kind(cpu_only=True), controllers_by_kind(cpu_only=False)
    assert set(cpu) == {"completion", "refactor"}
    assert cpu["completion"] is not cpu["refactor"]
    assert cpu["refactor"].max_draft == MAX_VERIFY_ROWS
    assert all(c.steady_samples is None for c in cpu.values())
    assert all(c.steady_samples == [] for c in gpu.values())


def test_draft_never_longer_than_available() -> None:
    c = Controller()
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=8, accepted=8)
    assert c.draft_length("lookup:aligned", 3) <= 3


def test_first_token_and_continuation_are_learned_apart() -> None:
    # Half the drafts fail at once, the other half run to the end: long drafts
    # pay, though a single per-token rate (0.5 on the first) would say no.
    c = Controller()
    for _ in range(20):
        c.observe_acceptance("lookup:3", drafted=15, accepted=0)
        c.observe_acceptance("lookup:3", drafted=15, accepted=15)
    first, after = c.rates("lookup:3")
    assert 0.4 < first < 0.6 and after > 0.95
    assert c.draft_length("lookup:3", 63) >= 15


def test_a_declined_bucket_is_tried_again_after_a_while() -> None:
    c = Controller(priors=REFACTOR_PRIORS)
    assert c.draft_length("lookup:3", 63) > 0
    for _ in range(10):
        c.observe_acceptance("lookup:3", drafted=15, accepted=0)
    assert c.draft_length("lookup:3", 63) == 0
    for _ in range(200):  # rounds where it was not worth verifying
        c.declined("lookup:3")
    assert c.draft_length("lookup:3", 63) > 0


def test_draft_lengths_fill_batches_of_eight_rows() -> None:
    c = Controller(max_draft=64)
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=63, accepted=63)
    assert (c.draft_length("lookup:aligned", 100) + 1) % 8 == 0


def test_verify_batches_stop_at_the_cap_however_cheap_longer_ones_are() -> None:
    # Even where a 128-row batch is nearly free, no batch exceeds the cap.
    cheap_long = {1: 33.0, 2: 60.0, 64: 90.0, 65: 91.0, 128: 92.0}
    c = Controller(cost_ms=cheap_long, max_draft=200)
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=63, accepted=63)
    assert c.draft_length("lookup:aligned", 200) + 1 == MAX_VERIFY_ROWS == 64


def test_a_64_row_batch_cheaper_than_56_rows_is_taken() -> None:
    # The tiled attention kernel makes 64 rows cheaper than 56 on a CPU.
    tiled = {1: 32.0, 2: 65.0, 48: 842.0, 56: 1013.0, 63: 1144.0, 64: 938.0}
    c = Controller(cost_ms=tiled, max_draft=64)
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=63, accepted=63)
    assert c.draft_length("lookup:aligned", 100) == 63


def test_on_one_cpu_thread_short_batches_cost_a_step_per_row() -> None:
    cpu = controllers_by_kind(cpu_only=True)["refactor"]
    for _ in range(30):
        cpu.observe_acceptance("lookup:3", drafted=3, accepted=2)
    two_threads = cpu.draft_length("lookup:3", 3)
    cpu.use_threads(1)
    # 4 rows: 3.9 steps against the two-thread table's 3.0; 3 drafts at this
    # acceptance cannot pay there, and the controller declines them.
    assert cpu.cost(4) / cpu.cost(1) > 3.5 > DEFAULT_COST_MS[4] / DEFAULT_COST_MS[1]
    assert two_threads > 0 and cpu.draft_length("lookup:3", 3) == 0
    cpu.use_threads(2)
    assert cpu.draft_length("lookup:3", 3) == two_threads


def test_each_thread_count_learns_its_own_costs() -> None:
    cpu = controllers_by_kind(cpu_only=True)["completion"]
    cpu.use_threads(1)
    for _ in range(20):
        cpu.observe_cost(1, 90.0)
    assert cpu.measured(1) and cpu.cost(1) > 80
    cpu.use_threads(2)
    assert not cpu.measured(1) and cpu.cost(1) == DEFAULT_COST_MS[1]


def test_a_gpu_build_has_one_curve_whatever_the_threads() -> None:
    gpu = controllers_by_kind(cpu_only=False)["refactor"]
    before = gpu.cost(16)
    gpu.use_threads(1)
    assert gpu.cost(16) == before


def test_a_measured_curve_replaces_the_table_for_its_thread_count() -> None:
    """An Intel VM's one-thread curve: 4 rows cost 1.8 steps, not the table's 3.8,
    so 3 drafts at 2-in-3 acceptance pay there and are taken."""
    cpu = controllers_by_kind(cpu_only=True)["completion"]
    for _ in range(30):
        cpu.observe_acceptance("lookup:3", drafted=3, accepted=2)
    cpu.use_threads(1)
    assert cpu.draft_length("lookup:3", 3) == 0  # priced by the table
    measured_one_thread = {1: 1.0, 2: 1.7, 3: 2.1, 4: 1.8, 8: 3.5, 16: 4.4, 64: 12.7}
    cpu.price_by_measured({1: measured_one_thread}, max_threads=2)
    cpu.use_threads(1)
    assert cpu.cost(4) / cpu.cost(1) == pytest.approx(1.8)
    assert cpu.draft_length("lookup:3", 3) == 3
    cpu.use_threads(2)  # no two-thread curve measured: the table's stays
    assert cpu.cost(4) == DEFAULT_COST_MS[4]


def test_with_one_thread_in_all_its_curve_prices_every_round() -> None:
    cpu = controllers_by_kind(cpu_only=True)["refactor"]
    cpu.price_by_measured({1: {1: 1.0, 8: 2.0}}, max_threads=1)
    for threads in (1, 2):
        cpu.use_threads(threads)
        assert cpu.cost(8) / cpu.cost(1) == pytest.approx(2.0)


def _one_thread_refactor_controller(shape: dict[int, float]) -> Controller:
    controller = controllers_by_kind(cpu_only=True)["refactor"]
    controller.price_by_measured({1: shape}, max_threads=1)
    controller.use_threads(1)
    return controller


def test_a_draft_off_the_grid_is_verified_in_the_cheaper_batch_above_it(
    epyc_one_thread: dict[int, float],
) -> None:
    c = _one_thread_refactor_controller(epyc_one_thread)
    assert c.verify_rows(13) == 16  # 14 rows priced about 10 steps, 16 rows 8.5
    assert c.verify_rows(62) == 64
    assert c.verify_rows(15) == 16  # on the grid already
    assert c.verify_rows(9) == 10  # 10 rows cost less than 16
    assert c.verify_rows(62, max_rows=63) == 63  # no room in the context for 64
    assert c.verify_cost(13) == c.cost(16)


def test_a_draft_is_never_padded_where_bigger_batches_cost_more() -> None:
    rising = {rows: 1.0 + 0.2 * rows for rows in (1, 2, 4, 8, 15, 16, 31, 32, 63, 64)}
    c = _one_thread_refactor_controller(rising)
    assert [c.verify_rows(k) for k in (1, 5, 13, 30, 62)] == [2, 6, 14, 31, 63]


def test_a_draft_that_runs_out_is_priced_by_its_padded_batch(
    epyc_one_thread: dict[int, float],
) -> None:
    """13 right tokens: as 14 rows (about 10 steps) not worth more than a 7-token
    draft in 8 rows; padded to 16 rows (8.5 steps) they are."""
    c = _one_thread_refactor_controller(epyc_one_thread)
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=15, accepted=15)
    assert c.draft_length("lookup:aligned", 13) == 13


@pytest.mark.parametrize("kind", ["refactor", "completion"])
def test_the_guards_prices_of_every_length_are_verify_costs(
    epyc_one_thread: dict[int, float], kind: str
) -> None:
    """verify_costs, priced in one pass for the loss guard, is verify_cost of each length."""
    c = controllers_by_kind(cpu_only=True)[kind]
    c.price_by_measured({1: epyc_one_thread}, max_threads=1)
    c.use_threads(1)
    for drafts in (3, 13, 40, MAX_VERIFY_ROWS - 1):
        assert c.verify_costs(drafts) == [c.verify_cost(k) for k in range(drafts + 1)]
