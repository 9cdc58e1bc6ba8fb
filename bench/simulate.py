"""Offline replay simulator: tune the speculation policy without model time.

Greedy output is fixed, so a policy can be replayed:
1. `groundspec bench --record-traces` saves each task's prompt, the tokens
   `off` generated, the lookup corpus and the measured verify cost curve
   (ms by batch rows, under the run's load) to a JSON trace file.
2. `groundspec bench --simulate` replays every task through the REAL
   `speculator.decode.Decoder`, `PromptLookupDrafter` and `Controller`
   against `FakeTarget`: a session whose logits' argmax is the recorded next
   token, and which charges the recorded cost of each batch to a virtual
   clock instead of computing anything.

A task's simulated speedup is its plain decode time (the same Decoder without
drafters) over its speculative decode time, both on the virtual clock. The
draft model is not simulated (its tokens are not in the trace): this is
`auto`'s lookup path, the one `auto` takes on this machine. Tune on dev only.
The traces themselves (recording, loading, cost curves): bench/sim_traces.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from speculator.config import EngineConfig
from speculator.controller import DEFAULT_COST_MS, MAX_VERIFY_ROWS, Controller, controllers_by_kind
from speculator.decode import Decoder, StopRule
from speculator.instructions import rename_pairs
from speculator.lookup import PromptLookupDrafter
from speculator.loss_guard import allowance_for
from speculator.prompt import REFACTOR_FENCE, fence_stop
from speculator.sampling import SamplingParams
from speculator.verify_curve import CURVE_ROWS

from .sim_traces import DEFAULT_TRACES, TaskTrace, Traces, curve_warnings, load_curve, load_traces
from .tasks import SPLITS, Task, refactor_tasks

# -- the fake target and its clock ------------------------------------------------------


class VirtualClock:
    """Seconds that pass only when the fake target charges them."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


class CostCurve:
    """Verify ms for a batch of n rows: the recorded curve, interpolated, scaled."""

    def __init__(
        self,
        table: dict[int, float],
        scale: float = 1.0,
        round_ms: float = 0.0,
        replay_saves_ms: float = 0.0,
        threads: int = 2,
    ):
        # The CPU threads the curve was measured on: a curve recorded under load
        # is a one-thread curve (adaptive threads), and the controller prices it so.
        self.threads = threads
        self.rows = np.array(sorted(table), dtype=np.float64)
        self.ms = np.array([table[r] for r in sorted(table)], dtype=np.float64)
        self.scale = scale
        self.round_ms = round_ms  # per-round overhead of the Python loop, if modelled
        # A GPU build replays a batch shaped like the two before it as a CUDA
        # graph (ggml-cuda), skipping most launch overhead: what that saves.
        self.replay_saves_ms = replay_saves_ms

    def __call__(self, rows: int, replayed: bool = False) -> float:
        ms = float(np.interp(rows, self.rows, self.ms)) * self.scale + self.round_ms
        return ms - self.replay_saves_ms if replayed else ms


class FakeTarget:
    """A target session that "evaluates" batches by looking up the recorded tokens.

    `sequence` is prompt + the tokens `off` generated: the row for the token at
    position i has its argmax at sequence[i + 1] (at `end` past the recording).
    Each `append` charges the cost curve for its row count to the clock."""

    def __init__(
        self,
        sequence: Sequence[int],
        prompt_len: int,
        vocab: int,
        end: int,
        cost: CostCurve,
        clock: VirtualClock,
    ):
        self.sequence = list(sequence)
        self.cells = list(sequence[:prompt_len])
        self.vocab = vocab
        self.end = end
        self.cost = cost
        self.clock = clock
        self.threads = cost.threads  # what Session.threads says: the decoder reads it
        self.batches: list[int] = []  # rows of every append, for tests and reports

    def next_logits(self, position: int) -> np.ndarray:
        """The distribution after the token at `position`: one-hot at the recorded next."""
        row = np.zeros(self.vocab, dtype=np.float32)
        nxt = position + 1
        row[self.sequence[nxt] if nxt < len(self.sequence) else self.end] = 1.0
        return row

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        n0 = len(self.cells)
        rows = np.zeros((len(tokens), self.vocab), dtype=np.float32)
        for i in range(len(tokens)):
            nxt = n0 + i + 1
            rows[i, self.sequence[nxt] if nxt < len(self.sequence) else self.end] = 1.0
        self.cells.extend(tokens)
        replayed = self.batches[-2:] == [len(tokens)] * 2
        self.batches.append(len(tokens))
        self.clock.advance_ms(self.cost(len(tokens), replayed))
        return rows

    def room(self) -> int:
        return 1 << 30  # the recording already fit its context

    def trim(self, n: int) -> None:
        del self.cells[n:]


# -- replay -----------------------------------------------------------------------------


@dataclass
class SimResult:
    task: str
    kind: str
    split: str
    language: str
    plain_ms: float
    spec_ms: float
    drafted: int
    accepted: int
    exact: bool  # the speculative tokens equal the recording (they must)
    ceiling: float = 0.0  # copy_ceiling: the most any lookup drafter could gain

    @property
    def speedup(self) -> float:
        return self.plain_ms / self.spec_ms if self.spec_ms > 0 else 0.0


Tokenizer = Callable[[str], list[int]]
TokenBytes = Callable[[int], bytes]


def decode_on_fake(
    trace: TaskTrace,
    controller: Controller,
    drafters: list[PromptLookupDrafter],
    token_bytes: TokenBytes,
    cost: CostCurve,
    stop: StopRule | None = None,
) -> tuple[list[int], float, int, int]:
    """(tokens, decode ms on the virtual clock, drafted, accepted) of one replay;
    `stop`: the request's stop rule (default: a refactor's fence, as the engine's)."""
    vocab = max([*trace.prompt, *trace.tokens, 0]) + 2
    end = vocab - 1
    clock = VirtualClock()
    target = FakeTarget(trace.prompt + trace.tokens, len(trace.prompt), vocab, end, cost, clock)
    decoder = Decoder(
        target,  # type: ignore[arg-type]  # the session's decode-time interface
        token_bytes,
        lambda token: token == end,
        controller,
        drafters,
        SamplingParams(),
        clock=clock.perf_counter,
        allowance=allowance_for(trace.kind),
    )
    outcome = decoder.run(
        target.next_logits(len(trace.prompt) - 1),
        trace.max_tokens,
        # As the engine does: a refactor ends where its code fence closes,
        # without a step to evaluate the fence.
        stop=stop or (fence_stop(REFACTOR_FENCE) if trace.kind == "refactor" else None),
        expected_tokens=trace.expected_tokens,
    )
    return outcome.tokens, outcome.decode_ms, outcome.drafted, outcome.accepted


def copy_ceiling(trace: TaskTrace, cost: CostCurve, max_rows: int = MAX_VERIFY_ROWS) -> float:
    """The most any lookup drafter could gain on this task and this cost curve.

    An oracle with perfect foresight: each round drafts the longest run of the
    coming tokens that already occurs in the prompt, the lookup corpus or the
    output so far (text a prompt-lookup drafter could copy), and verifies as
    many of them as give the best tokens per ms. Text that occurs nowhere
    costs a plain step per token, as it must. A bound for verbatim copies: the
    lookup drafter's renamed copies of the source can, on a rename, draft text
    that occurs nowhere yet."""
    tokens = trace.tokens[: trace.max_tokens]
    # One character per token id (ids are below 0x110000), so `in` does the search.
    corpus = [_as_text(source) for source in trace.corpus]
    done, spent = 0, 0.0
    while done < len(tokens):
        seen = [_as_text(trace.prompt + tokens[: done + 1]), *corpus]
        coming = tokens[done + 1 : done + max_rows]
        run = 0
        while run < len(coming) and any(_as_text(coming[: run + 1]) in s for s in seen):
            run += 1
        drafts = max(range(run + 1), key=lambda k: (k + 1) / cost(k + 1))
        spent += cost(drafts + 1)
        done += drafts + 1
    return len(tokens) * cost(1) / spent if spent else 1.0


def _instruction_renames(task: Task | None) -> dict[str, str]:
    """The renames engine.refactor reads from this task's instruction."""
    if task is None:
        return {}
    return rename_pairs(task.instruction, task.text[task.start : task.end])


def _as_text(tokens: Sequence[int]) -> str:
    return "".join(map(chr, tokens))


def machine_shape(curve: dict[int, float]) -> dict[int, float]:
    """What an engine keeps of a measured curve: the timed sizes, x one row."""
    table = CostCurve(curve)
    return {rows: table(rows) / table(1) for rows in (1, *CURVE_ROWS)}


def simulate(
    traces: Traces,
    token_bytes: TokenBytes,
    tokenize: Tokenizer | None,
    split: str = "dev",
    cost_scale: float = 1.0,
    cost: CostCurve | None = None,
    fresh_policy: bool = False,
    machine_curve: dict[int, float] | None = None,
) -> list[SimResult]:
    """Replay every trace of the split, in recorded order, plain and with lookup
    drafting, on `cost` (default: the traces' own curve, scaled). The controllers
    learn across tasks, as a running engine's do; `fresh_policy`: each task starts
    from the priors, as a new process with nothing learned does. `machine_curve`
    (bench.verify_cost's {rows: ms}): the target's cost, and the curve the
    controllers price drafts by, as a CPU engine prices by the curve it measured
    (speculator/verify_curve.py), in place of the traces' own."""
    threads = 1 if traces.load else 2
    table = machine_curve or traces.cost_ms or DEFAULT_COST_MS
    cost = cost or CostCurve(table, cost_scale, threads=threads)
    cpu_only = cost.replay_saves_ms == 0  # a curve without graph replay is a CPU's
    shape = machine_shape(machine_curve) if machine_curve else None

    def new_controllers() -> dict[str, Controller]:
        made = controllers_by_kind(cpu_only)
        if shape is not None:
            for controller in made.values():
                controller.price_by_measured({1: shape, 2: shape}, max_threads=2)
        return made

    controllers = new_controllers()
    plain_controllers = new_controllers()
    refactors = {task.name: task for task in refactor_tasks()}
    results = []
    for trace in traces.tasks:
        if split != "all" and trace.split != split:
            continue
        if fresh_policy:
            controllers = new_controllers()
        _, plain_ms, _, _ = decode_on_fake(
            trace, plain_controllers[trace.kind], [], token_bytes, cost
        )
        lookup = PromptLookupDrafter.for_request(
            trace.kind,
            trace.corpus,
            token_bytes,
            tokenize,
            _instruction_renames(refactors.get(trace.name)),
        )
        tokens, spec_ms, drafted, accepted = decode_on_fake(
            trace, controllers[trace.kind], [lookup], token_bytes, cost
        )
        results.append(
            SimResult(
                trace.name,
                trace.kind,
                trace.split,
                trace.language,
                plain_ms,
                spec_ms,
                drafted,
                accepted,
                tokens == trace.tokens[: trace.max_tokens],
                copy_ceiling(trace, cost),
            )
        )
    return results


def summarize(results: list[SimResult]) -> dict[str, dict[str, dict[str, object]]]:
    """Per kind and split: median and worst simulated speedup (with the worst task)."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    for kind in ("completion", "refactor"):
        for split in SPLITS:
            mine = [r for r in results if r.kind == kind and r.split == split]
            if not mine:
                continue
            worst = min(mine, key=lambda r: r.speedup)
            drafted = sum(r.drafted for r in mine)
            out.setdefault(kind, {})[split] = {
                "tasks": len(mine),
                "median_speedup": round(statistics.median(r.speedup for r in mine), 2),
                "min_speedup": round(worst.speedup, 2),
                "median_ceiling": round(statistics.median(r.ceiling for r in mine), 2),
                "worst_task": worst.task,
                "acceptance": round(sum(r.accepted for r in mine) / drafted, 3)
                if drafted
                else None,
                "exact": f"{sum(r.exact for r in mine)}/{len(mine)}",
            }
    return out


def markdown(
    results: list[SimResult], traces: Traces, cost_scale: float, curve: str | None = None
) -> str:
    source = f"the verify curve {curve}" if curve else "their cost curve"
    lines = [
        "# Simulated speedups (replay of recorded `off` tokens)",
        "",
        f"Traces recorded {traces.recorded_at}{' under load' if traces.load else ''}; "
        f"{source} scaled by {cost_scale}. The real Decoder, lookup drafter and controller "
        "against a fake target; the draft model is not simulated. The ceiling is "
        "`copy_ceiling`: an oracle that drafts, with perfect foresight, every coming token "
        "a lookup could copy, at the best batch size.",
        "",
    ]
    noisy = [] if curve else curve_warnings(traces.cost_ms)
    if noisy:
        lines += [
            f"**The recorded cost curve looks noisy** ({len(noisy)} inversions, e.g. "
            f"{noisy[0]}): re-record on a quieter machine before trusting these ratios.",
            "",
        ]
    lines += [
        "| kind | split | tasks | median speedup | worst | worst task | acceptance | exact "
        "| median ceiling |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, splits in summarize(results).items():
        for split, row in splits.items():
            lines.append(
                f"| {kind} | {split} | {row['tasks']} | {row['median_speedup']} | "
                f"{row['min_speedup']} | {row['worst_task']} | {row['acceptance']} | "
                f"{row['exact']} | {row['median_ceiling']} |"
            )
    lines += [
        "",
        "| task | kind | split | language | speedup | ceiling | drafted | accepted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.task} | {r.kind} | {r.split} | {r.language} | {r.speedup:.2f} | "
            f"{r.ceiling:.2f} | {r.drafted} | {r.accepted} |"
        )
    return "\n".join(lines) + "\n"


def run_simulate(args: argparse.Namespace, config: EngineConfig) -> int:
    """`groundspec bench --simulate`: replay the traces with the target's tokenizer."""
    from speculator import provision
    from speculator.models import Model, resolve_path

    traces = load_traces(Path(args.traces) if args.traces else DEFAULT_TRACES)
    # Only the vocabulary is used (token texts, re-tokenizing a renamed source).
    model = Model(resolve_path(config.target_model, provision.TARGET), 0)
    try:
        results = simulate(
            traces,
            model.token_bytes,
            model.tokenize,
            args.split,
            args.cost_scale or 1.0,
            fresh_policy=args.fresh_policy,
            machine_curve=load_curve(Path(args.curve)) if getattr(args, "curve", None) else None,
        )
    finally:
        model.close()
    if args.json:
        print(
            json.dumps(
                {
                    "summary": summarize(results),
                    "tasks": [{**r.__dict__, "speedup": round(r.speedup, 3)} for r in results],
                }
            )
        )
    else:
        text = markdown(results, traces, args.cost_scale or 1.0, getattr(args, "curve", None))
        if args.output:
            Path(args.output).write_text(text)
        print(text)
    return 0
