"""`groundspec bench`: speculation modes on a fixed corpus of real code.

Every mode runs on the same task with the same warm prompt, one after the
other, so ratios come from one run on one machine. Speedup is decode tokens/s
against `off`; "identical" compares the text with `off`'s.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from .config import EngineConfig
from .drafters import common_prefix
from .grounding import Grounding
from .languages import language_id_for_path
from .types import CompletionRequest, Engine, RefactorRequest, Speculation, Stats

log = logging.getLogger(__name__)

CORPUS = Path(__file__).parent / "bench_corpus"

REFACTORS: list[tuple[str, str, str]] = [  # (file, definition name, instruction)
    ("colorsys.py", "rgb_to_hls", "Rename the parameters r, g, b to red, green, blue."),
    ("bisect.py", "insort_right", "Add type hints to the parameters and the return value."),
    ("graphlib.py", "static_order", "Add a docstring that explains what the method yields."),
    ("fnmatch.py", "filter", "Rename the local variable `result` to `matches`."),
    ("reprlib.py", "repr_dict", "Rename the parameter `level` to `depth`."),
    (
        "colorsys.py",
        "hsv_to_rgb",
        "Add type hints: all parameters are floats and it returns a tuple of three floats.",
    ),
    ("graphlib.py", "done", "Rename the local variable `nodeinfo` to `info`."),
    ("explain-dep.js", "explainDependents", "Rename the parameter `depth` to `level`."),
    (
        "format-bytes.js",
        "formatBytes",
        "Add a JSDoc comment describing the parameters and the return value.",
    ),
    (
        "explain-dep.js",
        "explainEdge",
        "Convert the string concatenations to template literals where they exist, keep the rest unchanged.",
    ),
]


@dataclass
class Task:
    name: str
    kind: str  # "completion" or "refactor"
    path: str
    text: str
    start: int  # cursor (completion) or selection start (refactor)
    end: int = 0
    expected: str = ""  # the removed original text (completion)
    instruction: str = ""
    multiline: bool = False


@dataclass
class Run:
    task: str
    kind: str
    mode: str
    text: str
    stats: Stats
    seconds: float = 0.0
    prompt: list[int] = field(default_factory=list)  # tokens, for explaining a divergence
    tokens: list[int] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        ms = self.stats.decode_ms
        return self.stats.generated_tokens / ms * 1000 if ms > 0 else 0.0


@dataclass
class Report:
    runs: list[Run] = field(default_factory=list)
    peer: list[dict[str, object]] = field(default_factory=list)
    margins: dict[tuple[str, str], str] = field(default_factory=dict)  # (task, mode) -> note


def _definition_span(text: str, path: str, name: str) -> tuple[int, int]:
    grounding = Grounding(text, language_id_for_path(path))
    for pattern in (f"def {name}(", f"const {name} = ", f"function {name}("):
        at = text.find(pattern)
        if at >= 0:
            scope = grounding.enclosing_scope(at + len(pattern) - 1)
            if pattern.startswith("const"):  # take the whole declaration line to its end
                end = text.find("\n}\n", at)
                return text.rfind("\n", 0, at) + 1, end + 3
            if scope:
                start = text.rfind("\n", 0, scope[0]) + 1
                end = text.find("\n", scope[1])
                return start, (end + 1 if end >= 0 else len(text))
    raise ValueError(f"{name} not found in {path}")


def completion_tasks(per_file: int = 3) -> list[Task]:
    """Remove a line's code (or a block of 4 lines) and ask for it back."""
    tasks: list[Task] = []
    for path in sorted(CORPUS.glob("*.py")) + sorted(CORPUS.glob("*.js")):
        text = path.read_text()
        lines = text.split("\n")
        candidates = [
            i
            for i, ln in enumerate(lines)
            if ln.startswith("    ")
            and len(ln.strip()) >= 16
            and not ln.strip().startswith(("#", "//", '"', "'", "*"))
        ]
        picks = [candidates[(k + 1) * len(candidates) // (per_file + 1)] for k in range(per_file)]
        for k, i in enumerate(picks):
            multiline = k == per_file - 1
            indent = len(lines[i]) - len(lines[i].lstrip())
            start = sum(len(s) + 1 for s in lines[:i]) + indent
            n_lines = 4 if multiline else 1
            end = sum(len(s) + 1 for s in lines[: i + n_lines]) - 1
            expected = text[start:end]
            edited = text[:start] + text[end:]
            tasks.append(
                Task(
                    f"{path.name}:{i + 1}{'+' if multiline else ''}",
                    "completion",
                    path.name,
                    edited,
                    start,
                    expected=expected,
                    multiline=multiline,
                )
            )
    return tasks


def refactor_tasks() -> list[Task]:
    tasks = []
    for file, name, instruction in REFACTORS:
        text = (CORPUS / file).read_text()
        start, end = _definition_span(text, file, name)
        tasks.append(
            Task(f"{file}:{name}", "refactor", file, text, start, end, instruction=instruction)
        )
    return tasks


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

    from . import provision
    from .models import resolve_path
    from .prompt import build_refactor

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


def summarize(report: Report) -> dict[str, dict[str, dict[str, object]]]:
    """Per kind and mode: tok/s, median speedup vs off, acceptance, identical count."""
    base = {(r.task, r.kind): r for r in report.runs if r.mode == "off"}
    out: dict[str, dict[str, dict[str, object]]] = {}
    for kind in ("completion", "refactor"):
        modes = sorted({r.mode for r in report.runs if r.kind == kind}, key=_mode_order)
        for mode in modes:
            runs = [r for r in report.runs if r.kind == kind and r.mode == mode]
            tokens = sum(r.stats.generated_tokens for r in runs)
            ms = sum(r.stats.decode_ms for r in runs)
            drafted = sum(r.stats.drafted_tokens for r in runs)
            accepted = sum(r.stats.accepted_tokens for r in runs)
            speedups = [
                r.tokens_per_s / base[(r.task, kind)].tokens_per_s
                for r in runs
                if (r.task, kind) in base
                and base[(r.task, kind)].tokens_per_s > 0
                and r.tokens_per_s > 0
            ]
            same = sum(
                1 for r in runs if (r.task, kind) in base and base[(r.task, kind)].text == r.text
            )
            out.setdefault(kind, {})[mode] = {
                "tasks": len(runs),
                "tokens_per_s": round(tokens / ms * 1000, 2) if ms else 0.0,
                "median_speedup": round(statistics.median(speedups), 2) if speedups else None,
                "min_speedup": round(min(speedups), 2) if speedups else None,
                "acceptance": round(accepted / drafted, 3) if drafted else None,
                "drafted": drafted,
                "identical": f"{same}/{len(runs)}",
            }
    return out


def _mode_order(mode: str) -> int:
    order = ["off", "auto", "lookup", "draft", "both"]
    return order.index(mode) if mode in order else len(order)


def markdown(
    report: Report, summary: dict[str, dict[str, dict[str, object]]], config: EngineConfig
) -> str:
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU threads used by llama.cpp, "
        f"{platform.system()} {platform.release()}; GPU layers: {config.n_gpu_layers or 0}. "
        f"Run at {time.strftime('%Y-%m-%d %H:%M')}, `groundspec bench`.",
        "",
        "Decode tokens/s are summed over tasks; speedup is each task's decode tokens/s over `off`'s "
        "in the same run (median and worst); acceptance = accepted / drafted tokens; identical = "
        "text equal to `off`'s.",
        "",
    ]
    for kind, modes in summary.items():
        lines += [
            f"## {kind} tasks",
            "",
            "| mode | tasks | decode tok/s | median speedup | worst | acceptance | drafted | identical to off |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for mode, row in modes.items():
            lines.append(
                f"| {mode} | {row['tasks']} | {row['tokens_per_s']} | {row['median_speedup']} | "
                f"{row['min_speedup']} | {row['acceptance']} | {row['drafted']} | {row['identical']} |"
            )
        lines.append("")
    if report.peer:
        lines += [
            "## Peer: llama-cpp-python `LlamaPromptLookupDecoding` (refactor tasks, end to end)",
            "",
            "| task | plain s | lookup s | speedup | same text |",
            "|---|---|---|---|---|",
        ]
        for row in report.peer:
            if "error" in row:
                lines.append(f"| peer failed: {row['error']} | | | | |")
                continue
            ratio = float(row["plain_s"]) / float(row["lookup_s"])  # type: ignore[arg-type]
            lines.append(
                f"| {row['task']} | {row['plain_s']} | {row['lookup_s']} | {ratio:.2f} | "
                f"{row['plain_text'] == row['lookup_text']} |"
            )
        lines.append("")
    divergent = _divergences(report)
    lines += [
        "## Divergences from `off`",
        "",
        "Greedy speculation returns the target's argmax at every position, but llama.cpp's CPU "
        "kernels sum in a different order for a batch of k rows than for one row, so where the "
        "top two logits are within a few thousandths the argmax can flip and the texts part "
        "ways from there on.",
        "",
    ]
    lines += divergent or ["None: every speculative output equals plain greedy decoding."]
    lines += ["", f"Peak RSS of the benchmark process: {_peak_rss_mb():.0f} MB.", ""]
    return "\n".join(lines)


def _divergences(report: Report) -> list[str]:
    base = {(r.task, r.kind): r.text for r in report.runs if r.mode == "off"}
    out = []
    for r in report.runs:
        ref = base.get((r.task, r.kind))
        if r.mode != "off" and ref is not None and ref != r.text:
            at = next(
                (i for i, (a, b) in enumerate(zip(ref, r.text, strict=False)) if a != b),
                min(len(ref), len(r.text)),
            )
            out.append(
                f"- {r.kind} `{r.task}` mode `{r.mode}`: differs at character {at} "
                f"({ref[max(0, at - 20) : at + 20]!r} vs {r.text[max(0, at - 20) : at + 20]!r})"
                + (
                    f"; {report.margins[(r.task, r.mode)]}"
                    if (r.task, r.mode) in report.margins
                    else ""
                )
            )
    return out


def explain_divergences(engine: Engine, report: Report) -> None:
    """Re-evaluate the target where each divergent run first chose another token.

    The prefix (prompt + the tokens both runs agree on) is evaluated afresh in
    one batch; the logits of the two competing tokens show whether it is a
    floating-point near-tie (a gap of a few hundredths) or a real difference."""
    session = getattr(engine, "session", None)
    if session is None:
        return
    base = {(r.task, r.kind): r for r in report.runs if r.mode == "off"}
    for r in report.runs:
        ref = base.get((r.task, r.kind))
        if r.mode == "off" or ref is None or ref.text == r.text or ref.prompt != r.prompt:
            continue
        i = common_prefix(ref.tokens, r.tokens)
        if i >= min(len(ref.tokens), len(r.tokens)):
            report.margins[(r.task, r.mode)] = f"the same first {i} tokens, cut differently"
            continue
        _, logits = session.sync([ref.prompt + ref.tokens[:i]])
        a, b = float(logits[ref.tokens[i]]), float(logits[r.tokens[i]])
        report.margins[(r.task, r.mode)] = (
            f"at token {i} `off` chose {ref.tokens[i]} (logit {a:.3f}) and this mode "
            f"{r.tokens[i]} (logit {b:.3f}): a gap of {abs(a - b):.3f}"
        )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(args: argparse.Namespace, config: EngineConfig) -> int:
    if args.replay:
        from .bench_replay import run_replay

        return run_replay(args, config)
    if args.workspace:
        from .bench_workspace import run_workspace

        return run_workspace(args, config)
    from .factory import load_engine

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


DEMO_SOURCE = """def area_of_square(side: float) -> float:
    return side * side


def area_of_rectangle(width: float, height: float) -> float:
    return width * height


def perimeter_of_square(side: float) -> float:
    return 4 * side


def perimeter_of_rectangle(width: float, height: float) -> float:
"""


def demo(config: EngineConfig) -> int:
    """Complete a function, then refactor it, printing speeds."""
    from .factory import load_engine

    engine = load_engine(config)
    modes: tuple[Speculation, ...] = ("off", "auto")
    for mode in modes:
        result = engine.complete(
            CompletionRequest(text=DEMO_SOURCE, cursor=len(DEMO_SOURCE), speculation=mode)
        )
        print(
            f"completion ({mode}): {result.text!r}\n  {msgspec.json.encode(result.stats).decode()}"
        )
    for mode in modes:
        refactor = engine.refactor(
            RefactorRequest(
                text=DEMO_SOURCE,
                start=0,
                end=len(DEMO_SOURCE),
                instruction="Rename `side` to `length` everywhere.",
                speculation=mode,
            )
        )
        print(
            f"refactor ({mode}):\n{refactor.new_text}\n  {msgspec.json.encode(refactor.stats).decode()}"
        )
    return 0
