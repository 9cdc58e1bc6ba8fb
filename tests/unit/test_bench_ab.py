"""The side-by-side benchmark's arithmetic (bench/ab.py), on made-up runs."""

from __future__ import annotations

from typing import Any

import pytest

from bench.ab import limits, replay_table, task_table


def run(task: str, mode: str, text: str, decode_ms: float) -> dict[str, Any]:
    return {
        "task": task,
        "mode": mode,
        "text": text,
        "stats": {"generatedTokens": 10, "decodeMs": decode_ms},
    }


def entry(new_off_ms: float, new_auto_text: str) -> dict[str, Any]:
    old = [run("a", "off", "x", 1000), run("a", "auto", "x", 500)]
    new = [run("a", "off", "x", new_off_ms), run("a", "auto", new_auto_text, 500)]
    return {"old": {"runs": old}, "new": {"runs": new}}


def test_ratios_are_new_over_old_speed_with_the_median_over_rounds() -> None:
    table = task_table([entry(1000, "x"), entry(800, "y"), entry(500, "x")])
    off = table["modes"]["off"]
    assert off["median"] == pytest.approx(1.25)  # speeds 1.0, 1.25, 2.0 times old's
    assert off["spread"] == pytest.approx((1.0, 2.0))
    assert off["noise"] == pytest.approx((1.0, 1.0))  # old ran alike every round
    assert table["modes"]["auto"]["worst"] == pytest.approx(1.0)
    assert (table["same"], table["total"]) == (5, 6)  # one auto text differed


def test_replay_compares_latency_percentiles_and_texts_per_keystroke() -> None:
    def rows(ms: float, text: str) -> list[dict[str, Any]]:
        return [
            {"region": "f", "keystroke": i, "ms": ms, "text": text, "original": True}
            for i in range(1, 5)
        ]

    table = replay_table([{"old": rows(100, "a"), "new": rows(50, "a")}])
    assert table["p50"] == [2.0] and table["p95"] == [2.0]  # old/new: new twice as fast
    assert (table["same"], table["total"], table["old"], table["new"]) == (4, 4, 4, 4)


def test_limits_take_one_number_or_one_per_kind() -> None:
    assert limits("2") == {"refactor": 2, "completion": 2, "replay": 2}
    assert limits("refactor=1,replay=6") == {"refactor": 1, "completion": 3, "replay": 6}
