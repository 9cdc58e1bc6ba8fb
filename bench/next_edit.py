"""Next-edit benchmark: shared/nes tasks played through `groundspec/nextEdit` on
`groundspec serve` (stdio, the real models), exactly as shared/nes/README.md says:
didOpen with `original`, didChange with `change`, nextEdit at `cursor`, the edits
applied to `after_change` and compared with `expected` line by line (trailing
whitespace removed).

    python -m bench.next_edit [--tasks FILE] [--limit N] [--modes off,auto]
                              [--sweep] [--load] [--rewrite] [--output FILE]
    groundspec bench --next-edit [--limit N] [--load] [--output FILE]

Each task is asked once per mode, one mode right after the other, so `off` and
`auto` see the same machine; the order turns from task to task (off, auto; then
auto, off), so the prompt left in the KV cache by the first ask, and drifts of the
machine's load, favour neither mode. Reports, per mode: recall (edit tasks proposed
exactly right), precision (right proposals among all), quiet rate (no-op tasks
with no proposal), latency p50/p95 (request to answer); and across modes: the
rewrite's decode speedup of `auto` over `off` (median of per-task decode time
ratios) and identity (tasks where both proposed the same edits).

--rewrite turns on `nextEditRewrite`: the shipped model writes the window anew
(decoded as a refactor is, so `auto`'s decode speedup over `off` is measured)
besides scoring the draft.

--sweep asks the server for every proposal (nextEditMinConfidence 0), reads each
one's confidence from the server's log and reports the figures the server would
give at each bar: the bar is the most confident candidate's, so this is exact.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_server.convert import LineIndex
from speculator.next_edit.proposal import MIN_CONFIDENCE
from speculator.totals import percentile

from .cold import Server
from .load import CpuLoad

DEV_TASKS = Path(__file__).resolve().parents[2] / "shared" / "nes" / "dev.jsonl"
BARS = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
# The workspace the tasks' files are opened in (never written: documents are sent).
WORKSPACE = Path(tempfile.gettempdir()) / "groundspec-nes"
CONFIDENCE = re.compile(r"next edit proposed, confidence ([0-9.]+), bar power ([0-9.]+)")


@dataclass
class Answer:
    edits: list[dict[str, Any]]
    stats: dict[str, Any]
    ms: float
    right: bool
    confidence: float | None = None
    bar_power: float = 1.0  # the proposal's bar is the sweep's raised to this power


@dataclass
class Played:
    task_id: str
    kind: str
    answers: dict[str, Answer] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the modes as they were asked


def load_tasks(path: Path, limit: int | None) -> list[dict[str, Any]]:
    tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return tasks[:limit] if limit else tasks


def applied(text: str, edits: list[dict[str, Any]]) -> str:
    """`edits` (LSP ranges into `text`, UTF-16) applied, the last first."""
    index = LineIndex(text)
    spans = []
    for edit in edits:
        start, end = index.offsets(_range(edit["range"]))
        spans.append((start, end, edit["newText"]))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _range(data: dict[str, Any]) -> Any:
    from lsprotocol import types

    def pos(p: dict[str, int]) -> types.Position:
        return types.Position(line=p["line"], character=p["character"])

    return types.Range(start=pos(data["start"]), end=pos(data["end"]))


def same_lines(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.split("\n")] == [line.rstrip() for line in b.split("\n")]


def mode_order(modes: list[str], index: int) -> list[str]:
    """The modes in the order task `index` asks them: turned by one each task."""
    turn = index % len(modes) if modes else 0
    return modes[turn:] + modes[:turn]


def play(
    server: Server, task: dict[str, Any], modes: list[str], sweep: bool, index: int = 0
) -> Played:
    # The task's own path under the workspace root, as a user's file would be (one
    # task at a time holds it: each is opened, asked and closed in turn).
    uri = (WORKSPACE / task["path"]).as_uri()
    item = {"uri": uri, "languageId": "python", "version": 1, "text": task["original"]}
    server.notify("textDocument/didOpen", {"textDocument": item})
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [task["change"]]}
    server.notify("textDocument/didChange", change)
    played = Played(task["id"], task["kind"])
    played.order = mode_order(modes, index)
    for mode in played.order:
        _drain(server)
        params = {"textDocument": {"uri": uri}, "position": task["cursor"], "speculation": mode}
        started = time.perf_counter()
        result = server.call("groundspec/nextEdit", params, timeout=600)
        ms = (time.perf_counter() - started) * 1000
        edits = result["edits"]
        right = bool(edits) and same_lines(applied(task["after_change"], edits), task["expected"])
        answer = Answer(edits, result["stats"], ms, right)
        if sweep and edits:
            answer.confidence, answer.bar_power = _confidence(server)
        played.answers[mode] = answer
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return played


def _drain(server: Server) -> None:
    while not server.log.empty():
        server.log.get_nowait()


def _confidence(server: Server) -> tuple[float | None, float]:
    """The last proposal's confidence and its bar's power, from the server's log."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            line = server.log.get(timeout=0.1)
        except Exception:
            continue
        if (match := CONFIDENCE.search(line)) is not None:
            return float(match.group(1)), float(match.group(2))
    return None, 1.0


def figures(runs: list[Played], mode: str, bar: float = 0.0) -> dict[str, float]:
    """Recall, precision, quiet rate and latency of one mode, with proposals under
    `bar` (known only with --sweep) taken as no proposal."""

    def proposed(a: Answer) -> bool:
        return bool(a.edits) and (a.confidence is None or a.confidence >= bar**a.bar_power)

    answers = [(p.kind, p.answers[mode]) for p in runs if mode in p.answers]
    edit_tasks = [a for kind, a in answers if kind == "edit"]
    noop_tasks = [a for kind, a in answers if kind == "noop"]
    proposals = [a for _, a in answers if proposed(a)]
    right = [a for a in edit_tasks if proposed(a) and a.right]
    latencies = sorted(a.ms for _, a in answers)
    return {
        "recall": len(right) / max(1, len(edit_tasks)),
        "precision": len(right) / max(1, len(proposals)),
        "quiet": sum(not proposed(a) for a in noop_tasks) / max(1, len(noop_tasks)),
        "proposals": len(proposals),
        "right": len(right),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
    }


def first_asks(runs: list[Played]) -> list[float]:
    """Each task's first ask's latency (its prompt not yet cached), sorted, in ms."""
    return sorted(p.answers[p.order[0]].ms for p in runs if p.order)


def compare(runs: list[Played], base: str = "off", fast: str = "auto") -> dict[str, float]:
    """Decode speedup of `fast` over `base` (median of per-task ratios) and identity.

    A near-tie that batch rounding decides (docs/exactness.md) can make the two
    modes write different texts, and a rewrite that stops at another place: that
    task's ratio compares different work. The figures over the tasks both modes
    decoded to the same number of tokens (`alike_*`) are the speedup proper."""
    pairs = [(p.answers[base], p.answers[fast]) for p in runs if {base, fast} <= set(p.answers)]
    decoded = [(b, f) for b, f in pairs if b.stats["decodeMs"] > 0 and f.stats["decodeMs"] > 0]
    ratios = [b.stats["decodeMs"] / f.stats["decodeMs"] for b, f in decoded]
    alike = [
        b.stats["decodeMs"] / f.stats["decodeMs"]
        for b, f in decoded
        if b.stats.get("generatedTokens") == f.stats.get("generatedTokens")
    ]
    same = sum(b.edits == f.edits for b, f in pairs)
    return {
        "speedup_median": statistics.median(ratios) if ratios else 0.0,
        "speedup_worst": min(ratios, default=0.0),
        "alike": len(alike),  # decoded to the same number of tokens under both
        "alike_median": statistics.median(alike) if alike else 0.0,
        "alike_worst": min(alike, default=0.0),
        "speedup_total": sum(b.stats["decodeMs"] for b, _ in pairs)
        / max(1e-9, sum(f.stats["decodeMs"] for _, f in pairs)),
        "identical": same,
        "tasks": len(pairs),
        "decoded": len(ratios),  # tasks where both modes decoded a rewrite
    }


def alike_note(c: dict[str, float]) -> str:
    """Where some tasks were decoded to different lengths: the figures without them."""
    if c["alike"] == c["decoded"]:
        return ""
    return (
        f" (on the {c['alike']:.0f} tasks decoded to the same length under both: "
        f"median {c['alike_median']:.2f}x, worst {c['alike_worst']:.2f}x)"
    )


def report(runs: list[Played], modes: list[str], sweep: bool, bar: float) -> list[str]:
    edit = sum(p.kind == "edit" for p in runs)
    lines = [f"{len(runs)} tasks ({edit} edit, {len(runs) - edit} no-op)"]
    lines.append("| mode | recall | precision | quiet on no-op | proposals | p50 | p95 |")
    lines.append("|---|---|---|---|---|---|---|")
    for mode in modes:
        f = figures(runs, mode, bar if sweep else 0.0)
        lines.append(
            f"| {mode} | {f['recall']:.0%} ({f['right']:.0f}) | {f['precision']:.0%} | "
            f"{f['quiet']:.0%} | {f['proposals']:.0f} | {f['p50_ms'] / 1000:.1f} s | "
            f"{f['p95_ms'] / 1000:.1f} s |"
        )
    if {"off", "auto"} <= set(modes):
        c = compare(runs)
        speed = (
            f"decode speedup auto/off: median {c['speedup_median']:.2f}x, "
            f"worst {c['speedup_worst']:.2f}x, total {c['speedup_total']:.2f}x{alike_note(c)}"
            if c["decoded"]
            else "nothing decoded (the model only scored drafts: no rewrite to speed up)"
        )
        lines.append(f"{speed}; same edits on {c['identical']:.0f} of {c['tasks']:.0f} tasks")
    first = first_asks(runs)
    if len(modes) > 1 and first:
        lines.append(
            f"first ask of each task (its prompt not yet cached): p50 "
            f"{percentile(first, 50) / 1000:.1f} s, p95 {percentile(first, 95) / 1000:.1f} s"
        )
    if sweep:
        mode = modes[-1]
        lines.append(f"confidence bar sweep ({mode}): bar: recall / precision / quiet")
        for b in BARS:
            f = figures(runs, mode, b)
            lines.append(f"  {b:g}: {f['recall']:.0%} / {f['precision']:.0%} / {f['quiet']:.0%}")
    return lines


def start(sweep: bool, min_confidence: float, kv_dir: str, rewrite: bool = False) -> Server:
    """The server, its KV slots kept in `kv_dir` (empty: no prompt of an earlier run
    is found on disk, so each task's first ask pays its prompt as a new edit does)."""
    env = dict(os.environ, GROUNDSPEC_LOG_LEVEL="INFO", GROUNDSPEC_KV_DIR=kv_dir)
    server = Server(env)
    options = {
        "cacheEntries": 0,
        "idleWarmMs": 0,
        "workspaceIndex": False,
        "nextEditMinConfidence": 0.0 if sweep else min_confidence,
        "nextEditRewrite": rewrite,
    }
    server.call(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": WORKSPACE.as_uri(),
            "capabilities": {},
            "initializationOptions": options,
        },
    )
    server.notify("initialized", {})
    deadline = time.monotonic() + 300
    while server.call("groundspec/stats", {})["server"]["engineState"] != "ready":
        if time.monotonic() > deadline:
            raise RuntimeError("the models did not load")
        time.sleep(0.5)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=DEV_TASKS)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--ids", help="comma-separated task indexes to play")
    parser.add_argument("--modes", default="off,auto")
    parser.add_argument("--sweep", action="store_true", help="report every confidence bar")
    parser.add_argument("--min-confidence", type=float, default=MIN_CONFIDENCE)
    parser.add_argument("--output", type=Path, help="the report, as Markdown")
    parser.add_argument("--save", type=Path, help="every answer, as JSON lines")
    parser.add_argument("--load", action="store_true", help="keep one core busy all run long")
    parser.add_argument(
        "--rewrite", action="store_true", help="the model writes the window too (nextEditRewrite)"
    )
    args = parser.parse_args()
    run_bench(args)


def run_bench(args: argparse.Namespace) -> int:
    """The benchmark as `main` parses it (also `groundspec bench --next-edit`)."""
    tasks = load_tasks(args.tasks, args.limit)
    if args.ids:
        tasks = [tasks[int(i)] for i in args.ids.split(",")]
    modes = args.modes.split(",")
    with CpuLoad(args.load):
        runs = play_all(tasks, modes, args.sweep, args.min_confidence, args.rewrite)
    load = " with one core busy" if args.load else ""
    rewrite = ", the model rewriting" if args.rewrite else ""
    head = f"bench.next_edit{load}{rewrite}, {time.ctime()}, load average {os.getloadavg()[0]:.1f}"
    out = [head, *report(runs, modes, args.sweep, args.min_confidence)]
    print("\n".join(out))
    if args.output:
        Path(args.output).write_text("\n".join(out) + "\n")
    if args.save:
        with Path(args.save).open("w") as fh:
            for p in runs:
                for mode, a in p.answers.items():
                    row = {"id": p.task_id, "kind": p.kind, "mode": mode, **a.__dict__}
                    fh.write(json.dumps(row) + "\n")
    return 0


def play_all(
    tasks: list[dict[str, Any]],
    modes: list[str],
    sweep: bool,
    min_confidence: float,
    rewrite: bool = False,
) -> list[Played]:
    with tempfile.TemporaryDirectory(prefix="groundspec-nes-kv-") as kv_dir:
        server = start(sweep, min_confidence, kv_dir, rewrite)
        return _play_all(server, tasks, modes, sweep)


def _play_all(
    server: Server, tasks: list[dict[str, Any]], modes: list[str], sweep: bool
) -> list[Played]:
    runs: list[Played] = []
    try:
        for index, task in enumerate(tasks):
            runs.append(play(server, task, modes, sweep, index))
            a = runs[-1].answers[modes[-1]]
            print(
                f"{task['kind']:5} {'RIGHT' if a.right else ('wrong' if a.edits else '-'):5} "
                f"{a.ms / 1000:5.1f} s conf={a.confidence} {task['id']}",
                flush=True,
            )
    finally:
        server.call("shutdown", None)
        server.notify("exit", None)
        server.proc.wait(30)
    return runs


def args_from(bench: argparse.Namespace) -> argparse.Namespace:
    """`groundspec bench --next-edit`'s flags as this module's own."""
    modes = [m for m in bench.modes.split(",") if m != "peer"]
    return argparse.Namespace(
        tasks=DEV_TASKS,
        limit=bench.limit or None,
        ids=None,
        modes=",".join(modes),
        sweep=False,
        min_confidence=MIN_CONFIDENCE,
        output=bench.output,
        save=None,
        load=bench.load,
        rewrite=False,
    )


if __name__ == "__main__":
    main()
