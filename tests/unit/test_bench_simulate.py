"""The replay simulator: the real Decoder against a fake, costed target.

Tokens are characters here (token = ord(c)), so the lookup drafter's word
logic sees real text without a model."""

import random
from pathlib import Path

import msgspec
import numpy as np
import pytest

from bench.report import Report, Run
from bench.sim_traces import (
    TaskTrace,
    Traces,
    curve_warnings,
    load_curve,
    load_traces,
    record_traces,
)
from bench.simulate import (
    CostCurve,
    FakeTarget,
    VirtualClock,
    copy_ceiling,
    decode_on_fake,
    simulate,
    summarize,
)
from bench.tasks import Task
from speculator.controller import DEFAULT_COST_MS, Controller
from speculator.types import Stats

SOURCE = """def rgb_to_hls(r, g, b):
    maxc = max(r, g, b)
    minc = min(r, g, b)
    sumc = (maxc+minc)
    rangec = (maxc-minc)
    l = sumc/2.0
    if minc == maxc:
        return 0.0, l, 0.0
    if l <= 0.5:
        s = rangec / sumc
    else:
        s = rangec / (2.0-maxc-minc)
    return h, l, s
"""


def tokenize(text: str) -> list[int]:
    return [ord(c) for c in text]


def token_bytes(token: int) -> bytes:
    return chr(token).encode()


def trace(name: str, prompt: str, output: str, split: str = "dev") -> TaskTrace:
    return TaskTrace(
        name=name,
        kind="refactor",
        split=split,
        language="python",
        prompt=tokenize(prompt),
        tokens=tokenize(output),
        max_tokens=len(output) + 8,
    )


def traces(*tasks: TaskTrace) -> Traces:
    return Traces(1, "now", False, dict(DEFAULT_COST_MS), list(tasks))


def test_a_gpu_like_curve_charges_a_shape_seen_twice_before_as_a_graph_replay() -> None:
    clock = VirtualClock()
    cost = CostCurve({1: 4.0, 8: 6.0}, replay_saves_ms=2.0)
    target = FakeTarget(list(range(1, 20)), 2, vocab=30, end=29, cost=cost, clock=clock)
    charged = []
    for batch in ([3], [4], [5], [6, 7], [8]):
        before = clock.now
        target.append(batch)
        charged.append(round((clock.now - before) * 1000, 6))
    # cold, capture, replay; a 2-row batch breaks the run, so the next step is cold
    assert charged == pytest.approx([4.0, 4.0, 2.0, cost(2), 4.0])


def test_the_fake_target_answers_the_recorded_next_token_and_charges_the_curve() -> None:
    clock = VirtualClock()
    cost = CostCurve({1: 30.0, 16: 200.0})
    target = FakeTarget([5, 6, 7, 8], 2, vocab=10, end=9, cost=cost, clock=clock)
    rows = target.append([7, 3])  # position 2 holds 7; the draft 3 is wrong
    assert int(np.argmax(rows[0])) == 8  # after 7 comes 8
    assert int(np.argmax(rows[1])) == 9  # past the recording: the end token
    assert clock.now == pytest.approx(cost(2) / 1000)
    assert cost(2) == pytest.approx(30 + 170 / 15)
    target.trim(3)
    assert target.cells == [5, 6, 7]


def test_a_copy_of_the_source_is_faster_than_plain_and_exact() -> None:
    prompt = f"Rewrite this:\n{SOURCE}\nRewritten:\n"
    (result,) = simulate(traces(trace("copy", prompt, SOURCE)), token_bytes, tokenize)
    assert result.exact
    assert result.accepted > len(SOURCE) // 2
    assert result.speedup > 2.0


def test_a_rename_still_pays_and_stays_exact() -> None:
    prompt = f"Rename maxc to high:\n{SOURCE}\nRewritten:\n"
    output = SOURCE.replace("maxc", "high")
    (result,) = simulate(traces(trace("rename", prompt, output)), token_bytes, tokenize)
    assert result.exact
    assert result.speedup > 1.1  # characters as tokens: renames are learned letter by letter


def test_a_refactor_ends_at_its_closing_fence_without_evaluating_it() -> None:
    """As the engine's stop rule does: the fence's last token is emitted from
    the row before it, and no step is spent after it."""
    output = SOURCE + "```"
    cost = CostCurve({1: 10.0, 16: 100.0})
    refactor = trace("plain", "Rewrite:\n", output)
    tokens, ms, _, _ = decode_on_fake(refactor, Controller(), [], token_bytes, cost)
    assert tokens == refactor.tokens
    # The first token comes from the prompt's row; every later one costs a step.
    assert ms == pytest.approx(10.0 * (len(output) - 1))
    completion = msgspec.structs.replace(refactor, kind="completion")
    _, completion_ms, _, _ = decode_on_fake(completion, Controller(), [], token_bytes, cost)
    assert completion_ms == pytest.approx(10.0 * len(output))  # and one to see the end


def test_new_text_costs_about_plain_and_never_much_more() -> None:
    rng = random.Random(7)
    new = "".join(rng.choice("QXZJKVWqxzjkvw!?@#") for _ in range(200))
    (result,) = simulate(traces(trace("new", f"{SOURCE}\nWrite:\n", new)), token_bytes, tokenize)
    assert result.exact
    assert 0.9 <= result.speedup <= 1.05


def test_the_ceiling_of_a_copy_is_the_best_batch_and_of_new_text_plain_steps() -> None:
    cost = CostCurve({1: 30.0, 8: 120.0, 16: 200.0})  # 16 rows: 2.4x the tokens per ms
    copy = trace("copy", f"Rewrite this:\n{SOURCE}\n", SOURCE)
    # Each round emits one token and copies the next 15: 16 tokens per 200 ms.
    assert copy_ceiling(copy, cost, max_rows=16) == pytest.approx(2.4, rel=0.05)
    new = trace("new", "abc", "QXZJKVW")  # no character of it occurs before it
    assert copy_ceiling(new, cost) == pytest.approx(1.0)


def test_the_simulated_policy_stays_under_the_ceiling_of_verbatim_copies() -> None:
    prompt = f"Rewrite this:\n{SOURCE}\nRewritten:\n"
    recorded = traces(trace("copy", prompt, SOURCE), trace("new", prompt, "QXZJ" * 30))
    for result in simulate(recorded, token_bytes, tokenize):
        assert result.speedup <= result.ceiling + 1e-9, result.task
    assert (
        summarize(simulate(recorded, token_bytes, tokenize))["refactor"]["dev"]["median_ceiling"]
        > 1.5
    )


def test_splits_are_replayed_apart_and_summarized_with_their_worst_task() -> None:
    prompt = f"Rewrite this:\n{SOURCE}\nRewritten:\n"
    recorded = traces(
        trace("copy-dev", prompt, SOURCE, "dev"),
        trace("copy-test", prompt, SOURCE, "test"),
        trace("new-test", prompt, "QXZJ" * 30, "test"),
    )
    dev = simulate(recorded, token_bytes, tokenize, split="dev")
    assert [r.task for r in dev] == ["copy-dev"]
    both = simulate(recorded, token_bytes, tokenize, split="all")
    summary = summarize(both)["refactor"]
    assert summary["test"]["tasks"] == 2
    assert summary["test"]["worst_task"] == "new-test"
    assert summary["dev"]["exact"] == "1/1"


def test_traces_round_trip_through_the_file(tmp_path: Path) -> None:
    task = Task("a.py:f", "refactor", "a.py", "x = 1\n", 0, 6, instruction="Rename x.")
    report = Report(
        runs=[
            Run("a.py:f", "refactor", "off", "y = 1\n", Stats(), prompt=[1, 2], tokens=[3, 4]),
            Run("a.py:f", "refactor", "auto", "y = 1\n", Stats(), prompt=[1, 2], tokens=[3, 4]),
        ]
    )
    path = tmp_path / "traces" / "off.json"
    record_traces(object(), [task], report, path, load=True)  # type: ignore[arg-type]
    loaded = load_traces(path)
    assert loaded.load and not loaded.cost_ms  # no session: no measured curve
    (only,) = loaded.tasks
    # No engine to count the selection: the runaway bound of an empty selection.
    assert (only.prompt, only.tokens, only.split, only.max_tokens) == ([1, 2], [3, 4], "dev", 256)


def test_missing_traces_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--record-traces"):
        load_traces(tmp_path / "none.json")


def test_a_curve_measured_through_contention_is_flagged_and_the_quiet_one_is_not() -> None:
    assert curve_warnings(dict(DEFAULT_COST_MS)) == []
    noisy = curve_warnings({1: 914.8, 2: 493.5, 16: 4714.0, 24: 2204.6})
    assert "2 rows cost 493.5 ms, less than 1 rows (914.8 ms)" in noisy
    assert len(noisy) == 2


def test_a_fresh_policy_replays_each_task_as_a_new_process_would() -> None:
    prompt = f"Rename maxc to high:\n{SOURCE}\nRewritten:\n"
    rename = trace("rename", prompt, SOURCE.replace("maxc", "high"))
    recorded = traces(rename, rename, rename)
    learning = simulate(recorded, token_bytes, tokenize)
    fresh = simulate(recorded, token_bytes, tokenize, fresh_policy=True)
    # Learning across tasks: the same task again drafts longer, sooner (and then
    # as long as the loss guard allows).
    assert learning[2].spec_ms <= learning[1].spec_ms < learning[0].spec_ms
    # A fresh policy: the same task costs the same, whatever ran before it.
    assert fresh[2].spec_ms == fresh[1].spec_ms == fresh[0].spec_ms == learning[0].spec_ms


def test_a_measured_verify_curve_prices_the_target_and_the_drafts(tmp_path: Path) -> None:
    """`--curve`: bench.verify_cost's report as the target's cost and as the curve the
    controllers price drafts by (in place of the traces' own)."""
    report = tmp_path / "curve.md"
    report.write_text(
        "| rows | ms | x one row |\n|---|---|---|\n| 1 | 50 | 1.0 |\n| 16 | 1,000 | 20.0 |\n"
        "| 64 | 4,000 | 80.0 |\n"
    )
    steep = load_curve(report)
    assert steep == {1: 50.0, 16: 1000.0, 64: 4000.0}
    flat_json = tmp_path / "flat.json"
    flat_json.write_text('{"1": 50, "16": 60, "64": 80}')
    flat = load_curve(flat_json)
    recorded = traces(trace("copy", f"Rewrite this:\n{SOURCE}\nRewritten:\n", SOURCE))
    (dear,) = simulate(recorded, token_bytes, tokenize, machine_curve=steep)
    (cheap,) = simulate(recorded, token_bytes, tokenize, machine_curve=flat)
    assert dear.plain_ms == pytest.approx(cheap.plain_ms)  # the same 50 ms steps
    assert dear.plain_ms == pytest.approx(50.0 * len(SOURCE), rel=0.05)
    assert dear.drafted == 0  # a row dearer than a step: no draft pays
    assert cheap.drafted > 0 and cheap.speedup > 3 and cheap.exact


def test_a_file_that_is_not_a_verify_curve_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="cannot read"):
        load_curve(tmp_path / "missing.md")
    no_step = tmp_path / "no-step.md"
    no_step.write_text("| rows | ms |\n|---|---|\n| 16 | 300 |\n")
    with pytest.raises(SystemExit, match="1-row step"):
        load_curve(no_step)
    broken = tmp_path / "broken.json"
    broken.write_text('{"1": "fast"}')
    with pytest.raises(SystemExit, match="not a verify curve"):
        load_curve(broken)
