"""How a prompt range is cut into llama_decode batches (speculator.session)."""

from __future__ import annotations

from speculator.session import LAST_TOKEN_ALONE, _prompt_batches


def test_a_long_prompt_ends_with_its_last_token_alone() -> None:
    assert _prompt_batches(0, 300, 128, last_alone=True) == [
        (0, 128),
        (128, 256),
        (256, 299),
        (299, 300),
    ]


def test_a_range_ending_on_the_batch_grid_still_splits_off_its_last_token() -> None:
    assert _prompt_batches(10, 139, 128, last_alone=True) == [(10, 138), (138, 139)]


def test_short_ranges_and_inner_ranges_stay_whole() -> None:
    short = LAST_TOKEN_ALONE - 1
    assert _prompt_batches(40, 40 + short, 128, last_alone=True) == [(40, 40 + short)]
    assert _prompt_batches(0, 300, 128) == [(0, 128), (128, 256), (256, 300)]
    assert _prompt_batches(5, 6, 128, last_alone=True) == [(5, 6)]


def test_the_batches_cover_the_range_once_in_order() -> None:
    for start, end, step in [(0, 1, 4), (0, 16, 4), (3, 17, 4), (0, 513, 512), (7, 200, 9)]:
        batches = _prompt_batches(start, end, step, last_alone=True)
        covered = [i for lo, hi in batches for i in range(lo, hi)]
        assert covered == list(range(start, end))
        assert all(0 < hi - lo <= step for lo, hi in batches)
