"""`groundspec bench`'s results: per-split, per-mode summaries, the markdown
report, the llama-server peer rows, and the logit gaps that explain each
divergence from `off`."""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from speculator.config import EngineConfig
from speculator.models import ALL_LAYERS, gpu_layers
from speculator.tokens import common_prefix
from speculator.types import Engine, Stats

from .tasks import SPLITS, peak_rss_mb

if TYPE_CHECKING:
    from speculator.session import Session

KINDS = ("completion", "refactor")
PEER_VARIANTS = ("plain", "ngram-simple", "ngram-mod")


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
    split: str = "dev"

    @property
    def tokens_per_s(self) -> float:
        ms = self.stats.decode_ms
        return self.stats.generated_tokens / ms * 1000 if ms > 0 else 0.0


@dataclass
class PeerRow:
    """llama-server on one task's prompt: decode tokens/s per variant."""

    task: str
    kind: str
    split: str
    tokens_per_s: dict[str, float] = field(default_factory=dict)  # variant -> tok/s
    same_as_plain: dict[str, bool] = field(default_factory=dict)  # variant -> identical
    plain_same_as_off: bool = False


@dataclass
class Report:
    runs: list[Run] = field(default_factory=list)
    peer: list[PeerRow] = field(default_factory=list)
    peer_note: str = ""  # why the peer row is missing, when it is
    load: bool = False  # a CPU-bound process was busy on one core for the whole run
    repeat: int = 1  # each mode ran this many times per task, alternating; the median kept
    margins: dict[tuple[str, str], str] = field(default_factory=dict)  # (task, mode) -> note


Summary = dict[str, dict[str, dict[str, dict[str, object]]]]  # kind -> split -> mode -> row


def speedups(report: Report, kind: str, split: str, mode: str) -> dict[str, float]:
    """Task -> decode tokens/s of `mode` over `off`'s, for one kind and split."""
    base = {r.task: r for r in report.runs if r.mode == "off" and r.kind == kind}
    out = {}
    for r in report.runs:
        ref = base.get(r.task)
        if r.kind == kind and r.split == split and r.mode == mode and ref is not None:
            if ref.tokens_per_s > 0 and r.tokens_per_s > 0:
                out[r.task] = r.tokens_per_s / ref.tokens_per_s
    return out


def summarize(report: Report) -> Summary:
    """Per kind, split and mode: tok/s, median and worst speedup vs off (with
    the worst task's name), acceptance, identical count."""
    base = {(r.task, r.kind): r for r in report.runs if r.mode == "off"}
    out: Summary = {}
    for kind in KINDS:
        for split in SPLITS:
            mine = [r for r in report.runs if r.kind == kind and r.split == split]
            for mode in sorted({r.mode for r in mine}, key=_mode_order):
                runs = [r for r in mine if r.mode == mode]
                tokens = sum(r.stats.generated_tokens for r in runs)
                ms = sum(r.stats.decode_ms for r in runs)
                drafted = sum(r.stats.drafted_tokens for r in runs)
                accepted = sum(r.stats.accepted_tokens for r in runs)
                ratios = speedups(report, kind, split, mode)
                worst = min(ratios, key=lambda t: ratios[t]) if ratios else None
                same = sum(
                    1
                    for r in runs
                    if (r.task, kind) in base and base[(r.task, kind)].text == r.text
                )
                out.setdefault(kind, {}).setdefault(split, {})[mode] = {
                    "tasks": len(runs),
                    "tokens_per_s": round(tokens / ms * 1000, 2) if ms else 0.0,
                    "median_speedup": round(statistics.median(ratios.values()), 2)
                    if ratios
                    else None,
                    "min_speedup": round(ratios[worst], 2) if worst else None,
                    "worst_task": worst,
                    "acceptance": round(accepted / drafted, 3) if drafted else None,
                    "drafted": drafted,
                    "identical": f"{same}/{len(runs)}" if base else "n/a (no off)",
                }
    return out


def peer_summary(report: Report) -> dict[str, dict[str, dict[str, object]]]:
    """Per kind and split: llama-server's plain tok/s, each variant's median
    speedup over its own plain, and groundspec `off`'s tok/s on the same tasks."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    off = {(r.task, r.kind): r for r in report.runs if r.mode == "off"}
    for kind in KINDS:
        for split in SPLITS:
            rows = [p for p in report.peer if p.kind == kind and p.split == split]
            plain = [p for p in rows if p.tokens_per_s.get("plain", 0) > 0]
            if not plain:
                continue
            ours = [off[(p.task, kind)] for p in plain if (p.task, kind) in off]
            entry: dict[str, object] = {
                "tasks": len(plain),
                "plain_tokens_per_s": _pooled_rate(plain, "plain"),
                "off_tokens_per_s": round(
                    sum(r.stats.generated_tokens for r in ours)
                    / max(1e-9, sum(r.stats.decode_ms for r in ours))
                    * 1000,
                    2,
                )
                if ours
                else None,
            }
            for variant in PEER_VARIANTS[1:]:
                ratios = [
                    p.tokens_per_s[variant] / p.tokens_per_s["plain"]
                    for p in plain
                    if p.tokens_per_s.get(variant, 0) > 0
                ]
                entry[variant] = round(statistics.median(ratios), 2) if ratios else None
                entry[f"{variant}_worst"] = round(min(ratios), 2) if ratios else None
                same = sum(1 for p in plain if p.same_as_plain.get(variant))
                entry[f"{variant}_identical"] = f"{same}/{len(plain)}"
            out.setdefault(kind, {})[split] = entry
    return out


def _pooled_rate(rows: list[PeerRow], variant: str) -> float:
    """Mean of per-task tok/s (llama-server reports rates, not token counts)."""
    return round(statistics.mean(p.tokens_per_s[variant] for p in rows), 2)


def _mode_order(mode: str) -> int:
    order = ["off", "auto", "lookup", "draft", "both"]
    return order.index(mode) if mode in order else len(order)


def threads_used(config: EngineConfig) -> str:
    threads = config.threads or os.cpu_count()
    if config.adaptive_threads:
        return f"up to {threads} CPU threads used by llama.cpp (fewer while other processes keep cores busy)"
    return f"{threads} CPU threads used by llama.cpp (fixed)"


def config_note(config: EngineConfig) -> str:
    return (
        f"Engine: the `{config.backend}` backend at {config.backend_url or 'its default URL'} "
        "(the machine line above is the client's; the server's threads and GPU are its own)."
    )


def gpu_layers_note(config: EngineConfig) -> str:
    """The offload the run had: the default is all layers when the build can offload."""
    if config.backend != "local":
        return "the server's"
    layers = gpu_layers(config.n_gpu_layers)
    return "all" if layers >= ALL_LAYERS else str(layers)


def markdown(report: Report, summary: Summary, config: EngineConfig) -> str:
    load = (
        "**Under load:** a CPU-bound process spun on one core for the whole run, "
        "`off`, the other modes and the peer alike (`--load`)."
        if report.load
        else "No extra load (run with `--load` for a CPU-bound process on one core)."
    )
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {platform.machine()}, {threads_used(config)}, "
        f"{platform.system()} {platform.release()}; GPU layers: {gpu_layers_note(config)}. "
        f"Run at {time.strftime('%Y-%m-%d %H:%M')}, `groundspec bench`. {load}",
        "",
        *([config_note(config), ""] if config.backend != "local" else []),
        "Decode tokens/s are summed over tasks; speedup is each task's decode tokens/s over `off`'s "
        "in the same run (median, and the worst task); acceptance = accepted / drafted tokens; "
        "identical = text equal to `off`'s. Tasks sit in a fixed dev or test split "
        "(`bench/tasks.py`); tune on dev, judge on test.",
        "",
        *(
            [
                f"Each mode ran {report.repeat} times per task, the modes alternating "
                "(off, auto, off, auto, ...); each (task, mode) keeps its run of median decode "
                "speed (`--repeat`).",
                "",
            ]
            if report.repeat > 1
            else []
        ),
    ]
    for kind, splits in summary.items():
        for split, modes in splits.items():
            lines += [
                f"## {kind} tasks, {split} split",
                "",
                "| mode | tasks | decode tok/s | median speedup | worst | worst task | acceptance "
                "| drafted | identical to off |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for mode, row in modes.items():
                lines.append(
                    f"| {mode} | {row['tasks']} | {row['tokens_per_s']} | {row['median_speedup']} "
                    f"| {row['min_speedup']} | {row['worst_task'] or ''} | {row['acceptance']} "
                    f"| {row['drafted']} | {row['identical']} |"
                )
            lines.append("")
    lines += _peer_markdown(report)
    lines += _per_task_markdown(report)
    lines += [
        "## Divergences from `off`",
        "",
        "Greedy speculation returns the target's argmax at every position; where a text "
        "differs, the gap between the two competing tokens' logits is measured on a fresh "
        "evaluation of the agreed prefix.",
        "",
    ]
    lines += _divergences(report) or [
        "None: every speculative output equals plain greedy decoding."
    ]
    lines += ["", f"Peak RSS of the benchmark process: {peak_rss_mb():.0f} MB.", ""]
    return "\n".join(lines)


def _peer_markdown(report: Report) -> list[str]:
    title = "## Peer: llama-server (same model, same prompt tokens, decode tok/s from its timings)"
    if not report.peer:
        return [title, "", report.peer_note or "Not run (add `peer` to `--modes`).", ""]
    lines = [
        title,
        "",
        "Speedups are over llama-server's own plain decoding on the same task; identical = "
        "its output tokens equal its plain output's.",
        "",
        "| kind | split | tasks | llama-server plain tok/s | groundspec off tok/s | off / plain "
        "| ngram-simple median | worst | identical | ngram-mod median | worst | identical "
        "| groundspec auto median |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ours = summarize(report)
    for kind, splits in peer_summary(report).items():
        for split, row in splits.items():
            off, plain = row["off_tokens_per_s"], row["plain_tokens_per_s"]
            ratio = (
                f"{off / plain:.2f}" if isinstance(off, float) and isinstance(plain, float) else ""
            )
            auto = ours.get(kind, {}).get(split, {}).get("auto", {}).get("median_speedup")
            lines.append(
                f"| {kind} | {split} | {row['tasks']} | {plain} | {off} | {ratio} | "
                f"{row['ngram-simple']} | {row['ngram-simple_worst']} | "
                f"{row['ngram-simple_identical']} | {row['ngram-mod']} | {row['ngram-mod_worst']} | "
                f"{row['ngram-mod_identical']} | {auto} |"
            )
    if report.peer_note:
        lines += ["", report.peer_note]
    return lines + [""]


def _per_task_markdown(report: Report) -> list[str]:
    """Every task's speedup per mode (and the peer's), so a regression has a name."""
    modes = sorted({r.mode for r in report.runs if r.mode != "off"}, key=_mode_order)
    if not modes:
        return []
    peer = {(p.task, p.kind): p for p in report.peer}
    with_peer = bool(peer)
    header = "| task | kind | split | " + " | ".join(modes)
    header += " | ngram-simple | ngram-mod |" if with_peer else " |"
    lines = ["## Per task (decode speedup over `off`)", "", header]
    lines.append("|" + "---|" * (3 + len(modes) + (2 if with_peer else 0)))
    tasks = sorted({(r.kind, r.split, r.task) for r in report.runs})
    ratios = {
        (kind, split, mode): speedups(report, kind, split, mode)
        for kind in KINDS
        for split in SPLITS
        for mode in modes
    }
    for kind, split, task in tasks:
        cells = [f"{ratios[(kind, split, m)].get(task, 0):.2f}" for m in modes]
        if with_peer:
            p = peer.get((task, kind))
            for variant in PEER_VARIANTS[1:]:
                plain = p.tokens_per_s.get("plain", 0) if p else 0
                cells.append(f"{p.tokens_per_s.get(variant, 0) / plain:.2f}" if p and plain else "")
        lines.append(f"| {task} | {kind} | {split} | " + " | ".join(cells) + " |")
    return lines + [""]


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
                f"- {r.kind} `{r.task}` ({r.split}) mode `{r.mode}`: differs at character {at} "
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
        divergence = first_divergence(session, ref, r)
        if divergence is None:
            i = common_prefix(ref.tokens, r.tokens)
            report.margins[(r.task, r.mode)] = f"the same first {i} tokens, cut differently"
            continue
        i, a, b = divergence
        report.margins[(r.task, r.mode)] = (
            f"at token {i} `off` chose {ref.tokens[i]} (logit {a:.3f}) and this mode "
            f"{r.tokens[i]} (logit {b:.3f}): a gap of {abs(a - b):.3f}"
        )


def first_divergence(session: Session, ref: Run, run: Run) -> tuple[int, float, float] | None:
    """(index, logit of ref's token, logit of run's token) where the two token
    sequences first differ, re-evaluated afresh; None if one is a prefix of the other."""
    i = common_prefix(ref.tokens, run.tokens)
    if i >= min(len(ref.tokens), len(run.tokens)):
        return None
    _, logits = session.sync([ref.prompt + ref.tokens[:i]])
    return i, float(logits[ref.tokens[i]]), float(logits[run.tokens[i]])
