"""`groundspec bench`: speculation modes on a fixed corpus of real code.

Every mode runs on the same task with the same warm prompt, one after the
other, so ratios come from one run on one machine. Speedup is decode tokens/s
against `off`; "identical" compares the text with `off`'s. Results are
reported per split (dev, test); `--load` keeps one core busy for the whole
run; `peer` in `--modes` adds llama-server on the same prompts.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from contextlib import ExitStack
from pathlib import Path

import msgspec

from lsp_server import progress
from speculator.config import EngineConfig
from speculator.languages import language_id_for_path
from speculator.types import (
    SPECULATION_MODES,
    CompletionRequest,
    Engine,
    RefactorRequest,
    Speculation,
)

from .load import CpuLoad
from .peer import Peer, find_binary
from .report import Report, Run, explain_divergences, markdown, summarize
from .tasks import Task, completion_tasks, refactor_tasks, select

log = logging.getLogger(__name__)


def run_task(engine: Engine, task: Task, mode: Speculation) -> Run:
    started = time.perf_counter()
    if task.kind == "completion":
        req = CompletionRequest(
            text=task.text,
            cursor=task.start,
            language_id=language_id_for_path(task.path),
            path=task.path,
            max_tokens=64 if task.multiline else 32,
            speculation=mode,
        )
        result = engine.complete(req)
        text, stats = result.text, result.stats
    else:
        rreq = RefactorRequest(
            text=task.text,
            start=task.start,
            end=task.end,
            instruction=task.instruction,
            language_id=language_id_for_path(task.path),
            path=task.path,
            max_tokens=768,
            speculation=mode,
        )
        refactored = engine.refactor(rreq)
        text, stats = refactored.new_text, refactored.stats
    seconds = time.perf_counter() - started
    outcome = getattr(engine, "last_outcome", None)  # a local engine's (remote: none)
    prompt, tokens = (outcome.prompt, outcome.tokens) if outcome is not None else ([], [])
    return Run(
        task.name, task.kind, mode, text, stats, seconds, list(prompt), list(tokens), task.split
    )


def bench_tasks(kind: str, split: str, limit: int) -> list[Task]:
    """The tasks of the chosen kinds and split, the first `limit` of each kind."""
    tasks = []
    if kind in ("all", "completion"):
        tasks += select(completion_tasks(), split)[: limit or None]
    if kind in ("all", "refactor"):
        tasks += select(refactor_tasks(), split)[: limit or None]
    return tasks


def main(args: argparse.Namespace, config: EngineConfig) -> int:
    chosen = [flag for flag in ("replay", "workspace", "simulate") if getattr(args, flag)]
    if config.backend != "local" and chosen:
        raise SystemExit(
            f"--{chosen[0]} measures the in-process engine (its KV variants, its model time), "
            f"not the `{config.backend}` backend: the side-by-side keystroke replay against a "
            "llama-server is `python -m bench.remote`; `groundspec bench --backend ...` runs "
            "the completion and refactor tasks through the server"
        )
    if args.replay:
        from .replay import run_replay

        return run_replay(args, config)
    if args.workspace:
        from .workspace import run_workspace

        return run_workspace(args, config)
    if args.simulate:
        from .simulate import run_simulate

        return run_simulate(args, config)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in (*SPECULATION_MODES, "peer")]
    if unknown or not modes:
        raise SystemExit(
            f"unknown --modes {', '.join(unknown) or '(none)'}: choose from "
            f"{', '.join((*SPECULATION_MODES, 'peer'))}"
        )
    tasks = bench_tasks(args.kind, args.split, args.limit)
    remote_note = ""
    if config.backend != "local":
        # The server decides how it speculates: groundspec's modes would all send the
        # same request, and the peer (a local llama-server) measures another thing.
        remote_note = (
            f"Skipped: the engine is the `{config.backend}` backend, whose server chooses its "
            "own speculation (the `speculation` stat); one mode (`auto`) was run."
        )
        log.warning("%s", remote_note)
        modes = ["auto"]
    ours = [m for m in modes if m != "peer"]
    with CpuLoad(args.load) as load, ExitStack() as stack:
        peer, peer_note = start_peer(config, ours, stack) if "peer" in modes else (None, "")
        repeat = max(1, getattr(args, "repeat", 1))
        report = run_modes(config, tasks, ours, args.record_traces, load.enabled, repeat, peer)
        report.peer_note = remote_note or peer_note or report.peer_note
        if load.enabled and not load.running:
            log.error("the load process ended early: the run was not under load throughout")
    summary = summarize(report)
    text = markdown(report, summary, config)
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        runs = [
            {**r.__dict__, "stats": msgspec.to_builtins(r.stats), "prompt": len(r.prompt)}
            for r in report.runs
        ]
        peer_rows = [p.__dict__ for p in report.peer]
        extra = {"peer": peer_rows, "peer_note": report.peer_note, "load": report.load}
        print(json.dumps({"summary": summary, "runs": runs, **extra}))
    else:
        print(text)
    return 0


def median_run(runs: list[Run]) -> Run:
    """The run of median decode speed (the slower middle one of an even count)."""
    ranked = sorted(runs, key=lambda r: r.stats.generated_tokens / max(r.stats.decode_ms, 1e-6))
    return ranked[(len(ranked) - 1) // 2]


def run_modes(
    config: EngineConfig,
    tasks: list[Task],
    modes: list[str],
    traces: str | None,
    load: bool,
    repeat: int = 1,
    peer: Peer | None = None,
) -> Report:
    """Every mode on every task, back to back on one warm engine (`repeat` times,
    alternating), and the peer right after each task; then the logit gaps of the
    divergences, and the `off` traces when asked."""
    from speculator.factory import load_engine

    engine = load_engine(config)
    report = Report(load=load, repeat=repeat)
    for task in progress.tasks(tasks, "bench", len(tasks)):
        if task.kind == "completion":
            engine.warm(CompletionRequest(text=task.text, cursor=task.start, path=task.path))
        runs: dict[str, list[Run]] = {mode: [] for mode in modes}
        for _ in range(repeat):  # alternating, so a slow minute hurts every mode alike
            for mode in modes:
                run = run_task(engine, task, mode)  # type: ignore[arg-type]
                runs[mode].append(run)
                log.info("%s %-8s %s", task.name, mode, msgspec.json.encode(run.stats).decode())
        report.runs += [median_run(runs[mode]) for mode in modes]
        if peer is not None and not report.peer_note:
            report.peer_note = run_peer_task(peer, median_run(runs["off"]))
    if report.peer_note:
        report.peer = []  # a peer that failed partway compares no task
    elif peer is not None:
        report.peer = peer.rows()
    explain_divergences(engine, report)
    if traces is not None:  # "" (the flag alone): the default trace file
        from .sim_traces import DEFAULT_TRACES, record_traces

        record_traces(engine, tasks, report, Path(traces or DEFAULT_TRACES), load)
    getattr(engine, "close", lambda: None)()
    return report


def start_peer(config: EngineConfig, modes: list[str], stack: ExitStack) -> tuple[Peer | None, str]:
    """llama-server, started for the run on the prompts `off` evaluates, or a note why not."""
    from speculator import provision
    from speculator.models import resolve_path

    binary = find_binary()
    if binary is None:
        return None, (
            "Skipped: no llama-server binary (set GROUNDSPEC_LLAMA_SERVER or build it to "
            "~/.cache/groundspec/llama-server/0.3.36/llama-server)."
        )
    if "off" not in modes:
        return None, "Skipped: the peer needs `off` in `--modes` (its prompts and lengths)."
    model = resolve_path(config.target_model, provision.TARGET)
    threads = config.threads or os.cpu_count() or 2
    try:
        return Peer.start(binary, model, threads, stack), ""
    except Exception as exc:  # a peer failure must not stop our own runs
        return None, peer_failed(exc)


def run_peer_task(peer: Peer, off: Run) -> str:
    """The peer on one task; a note if it failed (our own results are kept)."""
    try:
        peer.run(off)
    except Exception as exc:
        return peer_failed(exc)
    return ""


def peer_failed(exc: Exception) -> str:
    log.error("peer benchmark failed: %s", exc)
    return f"The peer failed: {exc}"
