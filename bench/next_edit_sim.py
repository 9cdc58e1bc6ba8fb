"""Replay next-edit rewrites offline: the decode policy of `nextEditRewrite`, tuned
without model time and without this machine's noisy clock.

    python -m bench.next_edit_sim record TASKS TRACES [--ids 0,3,...]
    python -m bench.next_edit_sim replay TASKS TRACES [--curve FILE]

`record` plays each task's rewrite under `off` on the real models, in process, and
saves what the model wrote, the draft it drafts from and this machine's verify
curve, as bench/sim_traces.py traces. `replay` runs each trace through the real
Decoder and lookup drafter against bench/simulate.py's fake target, which charges
each batch the recorded curve, twice: with the rewrite's stop rule as the engine
passes it (a PureStop: a draft ends where the answer would) and as a plain rule.
The rule is rebuilt from TASKS (prepare() is deterministic). Greedy output is
fixed, so every replay must write the recorded tokens ("exact"). Tune on dev
task files only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec

from speculator.controller import Controller, controllers_by_kind
from speculator.decode import StopRule
from speculator.lookup import PromptLookupDrafter
from speculator.next_edit.core import NextEditRequest
from speculator.outcome import PureStop
from speculator.pipeline_next_edit import prepare_next_edit

from .next_edit import load_tasks
from .next_edit_reach import request_of
from .sim_traces import TRACE_VERSION, TaskTrace, Traces, load_curve, load_traces
from .simulate import CostCurve, TokenBytes, Tokenizer, decode_on_fake, machine_shape


def rewrite_request(task: dict[str, Any]) -> NextEditRequest:
    """The task's nextEdit request under `off`, asking for the model's rewrite."""
    return replace(request_of(task), draft_only=False, speculation="off")


def stop_rules(tasks: list[dict[str, Any]]) -> dict[str, PureStop]:
    """Each task's rewrite stop rule, as prepare() makes it."""
    rules = {}
    for task in tasks:
        prepared = prepare_next_edit(rewrite_request(task), time.perf_counter())
        if prepared is not None and isinstance(prepared[0].job.stop, PureStop):
            rules[task["id"]] = prepared[0].job.stop
    return rules


def record(tasks: list[dict[str, Any]], out: Path) -> Traces:
    """Play each task's rewrite under `off` on the real models; save the traces."""
    from speculator.config import EngineConfig
    from speculator.factory import load_engine

    from .sim_traces import measure_cost_curve

    engine: Any = load_engine(EngineConfig())
    traced = []
    for task in tasks:
        request = rewrite_request(task)
        prepared = prepare_next_edit(request, time.perf_counter())
        if prepared is None or not prepared[0].asks_model:
            continue
        plan, job = prepared
        engine.next_edit(request)
        outcome = engine.last_outcome
        corpus = [engine.local.target.tokenize(job.expected)]
        traced.append(
            TaskTrace(
                name=task["id"],
                kind="refactor",  # the engine decodes a rewrite as a refactor
                split="dev",
                language=plan.language_id,
                prompt=list(outcome.prompt),
                tokens=list(outcome.tokens),
                max_tokens=plan.job.max_tokens,
                corpus=corpus,
                expected_tokens=len(corpus[0]),
            )
        )
    curve = measure_cost_curve(engine.session, traced[-1].prompt) if traced else {}
    traces = Traces(TRACE_VERSION, time.strftime("%Y-%m-%d %H:%M"), False, curve, traced)
    out.write_bytes(msgspec.json.encode(traces))
    return traces


def replay(
    traces: Traces,
    rules: dict[str, PureStop],
    token_bytes: TokenBytes,
    tokenize: Tokenizer | None,
    pure: bool,
    curve: dict[int, float] | None = None,
) -> list[tuple[str, float, bool]]:
    """(task, decode speedup of lookup drafting over plain, exact) of each trace
    with a stop rule, replayed in order: the controllers learn across tasks, as a
    running engine's do. `pure` False: the rule as a plain one (drafts not cut)."""
    table = curve or traces.cost_ms
    cost = CostCurve(table, threads=2)
    shape = machine_shape(table)

    def controller() -> Controller:
        made = controllers_by_kind(cpu_only=True)["refactor"]
        made.price_by_measured({1: shape, 2: shape}, max_threads=2)
        return made

    plain_policy, spec_policy = controller(), controller()
    results = []
    for trace in traces.tasks:
        rule = rules.get(trace.name)
        if rule is None:
            continue
        stop: StopRule = rule if pure else rule.rule
        plain_tokens, plain_ms, _, _ = decode_on_fake(
            trace, plain_policy, [], token_bytes, cost, stop
        )
        lookup = PromptLookupDrafter.for_request("refactor", trace.corpus, token_bytes, tokenize)
        tokens, spec_ms, _, _ = decode_on_fake(
            trace, spec_policy, [lookup], token_bytes, cost, stop
        )
        exact = tokens == plain_tokens == trace.tokens
        results.append((trace.name, plain_ms / spec_ms if spec_ms else 0.0, exact))
    return results


def summary(results: list[tuple[str, float, bool]]) -> str:
    speedups = [s for _, s, _ in results]
    exact = sum(e for _, _, e in results)
    return (
        f"{len(results)} tasks: median {statistics.median(speedups):.2f}x, "
        f"worst {min(speedups):.2f}x, mean {statistics.mean(speedups):.2f}x; "
        f"exact {exact}/{len(results)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "replay"))
    parser.add_argument("tasks", type=Path, help="next-edit tasks (JSON lines)")
    parser.add_argument("traces", type=Path)
    parser.add_argument("--ids", help="comma-separated task indexes (record)")
    parser.add_argument("--curve", type=Path, help="a verify curve (python -m bench.verify_cost)")
    args = parser.parse_args()
    tasks = load_tasks(args.tasks, None)
    if args.action == "record":
        if args.ids:
            tasks = [tasks[int(i)] for i in args.ids.split(",")]
        print(f"recorded {len(record(tasks, args.traces).tasks)} rewrites to {args.traces}")
        return
    from speculator import provision
    from speculator.config import EngineConfig
    from speculator.models import Model, resolve_path

    traces, rules = load_traces(args.traces), stop_rules(tasks)
    curve = load_curve(args.curve) if args.curve else None
    # Only the vocabulary is read (token texts, re-tokenizing a renamed source).
    model = Model(resolve_path(EngineConfig().target_model, provision.TARGET), 0)
    try:
        for pure in (False, True):
            results = replay(traces, rules, model.token_bytes, model.tokenize, pure, curve)
            label = "drafts cut at the stop (PureStop)" if pure else "drafts not cut"
            print(f"{label}: {summary(results)}")
    finally:
        model.close()


if __name__ == "__main__":
    main()
