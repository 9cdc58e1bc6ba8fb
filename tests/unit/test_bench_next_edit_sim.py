"""bench.next_edit_sim's replay: a next edit's rewrite, replayed with its own stop
rule. Tokens are characters (token = ord(c)), as in test_bench_simulate.py."""

from __future__ import annotations

from next_edit_sample import RENAMED
from test_next_edit_rejoin import plan_of, renamed, upto

from bench.next_edit_sim import replay
from bench.sim_traces import TaskTrace, Traces
from speculator.controller import DEFAULT_COST_MS
from speculator.outcome import PureStop


def chars(text: str) -> list[int]:
    return [ord(c) for c in text]


def char_bytes(token: int) -> bytes:
    return chr(token).encode()


def rewrite_traces(copies: int) -> tuple[Traces, dict[str, PureStop]]:
    """`copies` traces of the sample's rewrite: the model writes the draft (the
    rename carried) up to where the rule stops it, drafting from the whole draft."""
    plan = plan_of(renamed())
    assert isinstance(plan.job.stop, PureStop)
    written = upto(plan.job.draft, "if opts is None:")
    traces = [
        TaskTrace(
            name=f"t{i}",
            kind="refactor",
            split="dev",
            language="python",
            prompt=chars("Rewrite:\n" + RENAMED),
            tokens=chars(written),
            max_tokens=len(plan.job.draft) + 64,
            corpus=[chars(plan.job.draft)],
            expected_tokens=len(plan.job.draft),
        )
        for i in range(copies)
    ]
    rules = {t.name: plan.job.stop for t in traces}
    return Traces(1, "now", False, dict(DEFAULT_COST_MS), traces), rules


def test_a_replay_writes_what_was_recorded_and_stops_where_the_rule_does() -> None:
    traces, rules = rewrite_traces(6)
    for pure in (False, True):
        results = replay(traces, rules, char_bytes, chars, pure)
        assert [name for name, _, _ in results] == [t.name for t in traces.tasks]
        assert all(exact for _, _, exact in results)


def test_drafts_cut_at_the_stop_make_the_rewrite_no_slower() -> None:
    """The draft goes on past where the answer stops; verified, those rows are waste."""
    traces, rules = rewrite_traces(6)
    cut = replay(traces, rules, char_bytes, chars, pure=True)
    uncut = replay(traces, rules, char_bytes, chars, pure=False)
    assert sum(s for _, s, _ in cut) > sum(s for _, s, _ in uncut)


def test_a_task_without_a_rule_is_left_out() -> None:
    traces, rules = rewrite_traces(2)
    del rules["t0"]
    assert [name for name, _, _ in replay(traces, rules, char_bytes, chars, True)] == ["t1"]
