"""The next-edit benchmark without a server: the order modes are asked in, and how
an answer is judged (bench/next_edit.py), and the report's summary and held-out
tasks (bench/next_edit_results.py)."""

from __future__ import annotations

import json
import queue
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.next_edit import Answer, Played, figures, load_tasks, mode_order, play, report
from bench.next_edit_results import (
    CHECKOUT,
    HELD_OUT_COMMIT,
    IMPORTS_HEADING,
    MINER,
    REWRITE_TASKS,
    Run,
    held_out_tasks,
    replace_imports_section,
    run_tasks,
    speedup_line,
    summary_row,
)

TASK = {
    "id": "demo:1:a.py",
    "path": "a.py",
    "kind": "edit",
    "original": "a = 1\nb = a\n",
    "change": {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
        "text": "x = 1\n",
    },
    "after_change": "x = 1\nb = a\n",
    "cursor": {"line": 0, "character": 1},
    "expected": "x = 1\nb = x\n",
}


class FakeServer:
    """Answers groundspec/nextEdit with the right edit, and records the modes asked."""

    def __init__(self) -> None:
        self.log: queue.Queue[str] = queue.Queue()
        self.asked: list[str] = []

    def notify(self, method: str, params: Any) -> None:
        pass

    def call(self, method: str, params: Any, timeout: float = 0) -> dict[str, Any]:
        assert method == "groundspec/nextEdit"
        self.asked.append(params["speculation"])
        rng = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}}
        return {"edits": [{"range": rng, "newText": "x"}], "stats": {"decodeMs": 1.0}}


def test_modes_turn_from_task_to_task() -> None:
    assert mode_order(["off", "auto"], 0) == ["off", "auto"]
    assert mode_order(["off", "auto"], 1) == ["auto", "off"]
    assert mode_order(["off", "auto"], 2) == ["off", "auto"]
    assert mode_order(["off", "auto", "lookup"], 4) == ["auto", "lookup", "off"]
    assert mode_order(["auto"], 7) == ["auto"]
    assert mode_order([], 3) == []


def test_play_asks_in_the_task_s_order_and_judges_the_result() -> None:
    server = FakeServer()
    first = play(server, TASK, ["off", "auto"], sweep=False, index=0)  # type: ignore[arg-type]
    second = play(server, TASK, ["off", "auto"], sweep=False, index=1)  # type: ignore[arg-type]
    assert server.asked == ["off", "auto", "auto", "off"]
    assert first.order == ["off", "auto"] and second.order == ["auto", "off"]
    assert all(a.right for p in (first, second) for a in p.answers.values())


def test_report_gives_the_first_ask_latency_apart() -> None:
    def played(order: list[str], first_ms: float) -> Played:
        stats = {"decodeMs": 1.0}
        answers = {order[0]: Answer([], stats, first_ms, False)}
        answers[order[1]] = Answer([], stats, 100.0, False)
        return Played("t", "noop", answers, order)

    runs = [played(["off", "auto"], 9000.0), played(["auto", "off"], 7000.0)]
    lines = report(runs, ["off", "auto"], sweep=False, bar=0.8)
    assert "first ask of each task (its prompt not yet cached): p50 7.0 s, p95 9.0 s" in lines


def test_the_sweep_holds_a_rename_to_its_own_bar() -> None:
    """A proposal logged with a bar power under 1 (a rename carried on) counts at a
    bar only where it clears the bar raised to that power, as the server decides."""
    edit = [{"range": {}, "newText": "x"}]
    rename = Answer(edit, {}, 1.0, True, confidence=0.008, bar_power=0.8)
    other = Answer(edit, {}, 1.0, True, confidence=0.008)
    runs = [Played("r", "edit", {"auto": rename}), Played("o", "edit", {"auto": other})]
    assert figures(runs, "auto", 0.003)["recall"] == 0.5  # 0.008 < 0.003**0.8 = 0.0096
    assert figures(runs, "auto", 0.001)["recall"] == 1.0  # 0.008 > 0.001**0.8 = 0.004


def test_the_results_summary_row_reads_auto_at_the_default_bar() -> None:
    server = FakeServer()
    played = [play(server, TASK, ["off", "auto"], sweep=False, index=i) for i in range(2)]  # type: ignore[arg-type]
    row = summary_row(Run("dev, quiet", "dev", False), played)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "dev, quiet"
    assert cells[1] == "100% (2)" and cells[2].startswith("100% (2 proposed)")
    assert cells[-1] == "2/2"  # off and auto proposed the same edits
    p50, p95, worst = (float(x) for x in cells[-2].removesuffix(" s").split(" / "))
    assert p50 <= p95 <= worst  # the slowest first ask beside the median


def test_the_rewriting_run_plays_a_share_of_each_kind_and_reports_its_speedup(
    tmp_path: Path,
) -> None:
    noop = dict(TASK, kind="noop", expected=TASK["after_change"])
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in [TASK] * 30 + [noop] * 10))
    every = run_tasks(Run("all", "dev", False), path, None)
    share = run_tasks(Run("rewriting", "dev", False, rewrite=True), path, None)
    assert len(every) == 40
    assert [t["kind"] for t in share] == ["edit"] * REWRITE_TASKS[0] + ["noop"] * REWRITE_TASKS[1]
    smoke = run_tasks(Run("rewriting", "dev", False, rewrite=True), path, 2)
    assert [t["kind"] for t in smoke] == ["edit", "edit", "noop", "noop"]

    def played(off_ms: float, auto_ms: float, auto_tokens: int = 50) -> Played:
        answers = {
            "off": Answer([], {"decodeMs": off_ms, "generatedTokens": 50}, off_ms, False),
            "auto": Answer(
                [], {"decodeMs": auto_ms, "generatedTokens": auto_tokens}, auto_ms, False
            ),
        }
        return Played("t", "edit", answers, ["off", "auto"])

    rewriting = Run("dev, busy", "dev", True, rewrite=True)
    line = speedup_line(
        rewriting, [played(3000.0, 1000.0), played(1000.0, 1000.0), played(4000.0, 1000.0)]
    )
    assert line.startswith("dev, busy (`nextEditRewrite`, 3 tasks)")
    assert "median 3.00x, worst 1.00x (3 tasks decoded under both)" in line
    assert "same edits on 3 of 3" in line
    assert "same length" not in line  # every task decoded alike: nothing to set apart
    # A near-tie made `auto` write four times as much on one task (docs/exactness.md):
    # its ratio compares different work, and the figures without it are given too.
    tasks = [played(3000.0, 1000.0), played(2000.0, 1000.0), played(1000.0, 2000.0, 200)]
    line = speedup_line(rewriting, tasks)
    assert "median 2.00x, worst 0.50x (3 tasks decoded under both)" in line
    assert "on the 2 tasks decoded to the same length under both: median 2.50x, worst 2.00x" in line


def test_held_out_tasks_are_mined_from_this_history(tmp_path: Path) -> None:
    if not MINER.exists():
        pytest.skip("shared/nes/mine.py is not beside this checkout")
    probe = ["git", "-C", str(CHECKOUT), "rev-parse", "--verify", "-q", HELD_OUT_COMMIT]
    if subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip(f"this checkout's history does not reach {HELD_OUT_COMMIT} (a shallow clone)")
    tasks = load_tasks(held_out_tasks(tmp_path), None)
    kinds = {t["kind"] for t in tasks}
    assert kinds == {"edit", "noop"} and len(tasks) > 20
    for task in tasks:
        assert task["repo"] == "groundspec" and task["path"].endswith(".py")
        assert task["after_change"] != task["original"]


def test_the_imports_section_alone_is_replaced_and_the_rest_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bench.next_edit_imports as imports

    def run(limit: int, releases: str | None = None) -> list[str]:
        return [f"imports: {limit} replays of {releases or 'this history'}, new"]

    monkeypatch.setattr(imports, "run", run)
    report_file = tmp_path / "report.md"
    head = "# Report\n\n| row |\n\n## dev, quiet\n\n```\nfigures\n```\n\n"
    report_file.write_text(f"{head}{IMPORTS_HEADING}\n\nold\n```\nimports: old\n```\n\n")
    replace_imports_section(report_file, 7)
    text = report_file.read_text()
    assert text.startswith(head) and text.count(IMPORTS_HEADING) == 1
    assert "this repository, imports: 7 replays of this history, new" in text
    assert "other projects' releases (test split), imports: 7 replays of test, new" in text
    assert "old" not in text
    assert text.endswith("```\n\n")
