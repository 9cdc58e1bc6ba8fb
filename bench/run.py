"""`groundspec bench`: speculation modes on a fixed corpus of real code.

Every mode runs on the same task with the same warm prompt, one after the
other, so ratios come from one run on one machine. Speedup is decode tokens/s
against `off`; "identical" compares the text with `off`'s.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import msgspec

from speculator.config import EngineConfig
from speculator.languages import language_id_for_path
from speculator.types import CompletionRequest, Engine, RefactorRequest, Speculation

from .report import Report, Run, explain_divergences, markdown, summarize
from .tasks import Task, completion_tasks, refactor_tasks

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
    prompt, tokens = getattr(engine, "last_trace", ([], []))
    return Run(task.name, task.kind, mode, text, stats, seconds, list(prompt), list(tokens))


def run_peer(config: EngineConfig, tasks: list[Task]) -> list[dict[str, object]]:
    """llama-cpp-python's LlamaPromptLookupDecoding vs its own plain decoding, end to end."""
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from speculator import provision
    from speculator.models import resolve_path
    from speculator.prompt import build_refactor

    path = str(resolve_path(config.target_model, provision.TARGET))
    rows = []
    plain = Llama(model_path=path, n_ctx=4096, n_threads=config.threads, verbose=False)
    # logits_all=True: without it llama-cpp-python sizes its score buffer to
    # n_batch rows and prompt lookup overflows it past 512 tokens.
    lookup = Llama(
        model_path=path,
        n_ctx=4096,
        n_threads=config.threads,
        verbose=False,
        logits_all=True,
        draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10),
    )
    for task in tasks:
        prompt, fence = build_refactor(
            task.text[task.start : task.end], task.instruction, language_id_for_path(task.path)
        )
        row: dict[str, object] = {"task": task.name}
        for name, llm in (("plain", plain), ("lookup", lookup)):
            llm.reset()
            t0 = time.perf_counter()
            out = llm.create_completion(prompt, max_tokens=768, temperature=0.0, stop=[fence])
            row[f"{name}_s"] = round(time.perf_counter() - t0, 2)
            row[f"{name}_tokens"] = out["usage"]["completion_tokens"]  # type: ignore[index]
            row[f"{name}_text"] = out["choices"][0]["text"]  # type: ignore[index]
        rows.append(row)
    return rows


def main(args: argparse.Namespace, config: EngineConfig) -> int:
    if args.replay:
        from .replay import run_replay

        return run_replay(args, config)
    if args.workspace:
        from .workspace import run_workspace

        return run_workspace(args, config)
    from speculator.factory import load_engine

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    tasks = []
    if args.kind in ("all", "completion"):
        tasks += completion_tasks()[: args.limit or None]
    if args.kind in ("all", "refactor"):
        tasks += refactor_tasks()[: args.limit or None]
    engine = load_engine(config)
    report = Report()
    for task in tasks:
        if task.kind == "completion":
            engine.warm(CompletionRequest(text=task.text, cursor=task.start, path=task.path))
        for mode in [m for m in modes if m != "peer"]:
            run = run_task(engine, task, mode)  # type: ignore[arg-type]
            report.runs.append(run)
            log.warning("%s %-8s %s", task.name, mode, msgspec.json.encode(run.stats).decode())
    explain_divergences(engine, report)
    if "peer" in modes:
        getattr(engine, "close", lambda: None)()  # free the models before the peer loads its own
        try:
            report.peer = run_peer(config, [t for t in tasks if t.kind == "refactor"])
        except Exception as exc:  # a peer failure must not lose our own results
            log.error("peer benchmark failed: %s", exc)
            report.peer = [{"task": "peer failed", "error": str(exc)}]
    summary = summarize(report)
    text = markdown(report, summary, config)
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        runs = [
            {**r.__dict__, "stats": msgspec.to_builtins(r.stats), "prompt": len(r.prompt)}
            for r in report.runs
        ]
        print(json.dumps({"summary": summary, "runs": runs, "peer": report.peer}))
    else:
        print(text)
    return 0
