"""`groundspec bench`'s results: per-mode summaries, the markdown report, and
the logit gaps that explain each divergence from `off`."""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass, field

from speculator.config import EngineConfig
from speculator.drafters import common_prefix
from speculator.types import Engine, Stats

from .tasks import peak_rss_mb


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
    lines += ["", f"Peak RSS of the benchmark process: {peak_rss_mb():.0f} MB.", ""]
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
