"""The next-edit benchmark without a server: the order modes are asked in, and how
an answer is judged (bench/next_edit.py)."""

from __future__ import annotations

import queue
from typing import Any

from bench.next_edit import Answer, Played, mode_order, play, report

TASK = {
    "id": "demo:1:a.py",
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
