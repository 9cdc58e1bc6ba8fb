"""`groundspec bench --replay`: re-type a deleted region of a real file, one
inline completion request per keystroke, and measure what a keystroke costs.

Variants, all on the same keystrokes in one run:
- shift: the default (common prefix + the FIM suffix moved in the KV cache);
- prefix: only the common prefix is reused (exact, what a fresh prompt gives);
- cold: no reuse at all (the cache is cleared before each request), on a few keystrokes.
Completions of `shift` are compared with `prefix` to measure what the
approximate suffix reuse does to quality.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from pathlib import Path

from .bench import CORPUS, _peak_rss_mb
from .config import EngineConfig
from .engine import SpeculativeEngine
from .totals import percentile
from .types import CompletionRequest

log = logging.getLogger(__name__)

# (file, first line of the region to re-type, number of lines), 1-based
REGIONS = [("graphlib.py", 163, 4), ("reprlib.py", 112, 6)]
PREFIX_KEYSTROKES = 25  # exact reuse re-evaluates the suffix: slow, so fewer
COLD_KEYSTROKES = 2


def keystrokes(path: Path, first_line: int, n_lines: int) -> tuple[str, int, str]:
    """(text without the region, where it was, the region's text)."""
    text = path.read_text()
    lines = text.split("\n")
    start = sum(len(s) + 1 for s in lines[: first_line - 1])
    end = sum(len(s) + 1 for s in lines[: first_line - 1 + n_lines])
    return text[:start] + text[end:], start, text[start:end]


def replay(
    engine: SpeculativeEngine, variant: str, base: str, at: int, region: str, limit: int
) -> list[dict[str, object]]:
    engine.shift_reuse = variant == "shift"
    engine.warm(CompletionRequest(text=base, cursor=at, path="replay"))  # didOpen pre-warm
    rows = []
    for i in range(1, min(len(region), limit) + 1):
        text = base[:at] + region[:i] + base[at:]
        if variant == "cold":
            engine.session.trim(0)
        req = CompletionRequest(
            text=text, cursor=at + i, path="replay", max_tokens=24, speculation="auto"
        )
        started = time.perf_counter()
        result = engine.complete(req)
        rows.append(
            {
                "keystroke": i,
                "ms": (time.perf_counter() - started) * 1000,
                "evaluated": result.stats.prompt_tokens - result.stats.reused_prompt_tokens,
                "prompt": result.stats.prompt_tokens,
                "text": result.text,
            }
        )
    engine.shift_reuse = True
    return rows


def summarize(rows: list[dict[str, object]]) -> dict[str, float]:
    ms = [float(r["ms"]) for r in rows]  # type: ignore[arg-type]
    evaluated = [int(r["evaluated"]) for r in rows]  # type: ignore[call-overload]
    return {
        "requests": len(rows),
        "prompt_tokens": statistics.median(int(r["prompt"]) for r in rows),  # type: ignore[call-overload]
        "p50_ms": round(percentile(ms, 50)),
        "p95_ms": round(percentile(ms, 95)),
        "median_evaluated": statistics.median(evaluated),
        "mean_evaluated": round(statistics.mean(evaluated), 1),
    }


def run_replay(args: argparse.Namespace, config: EngineConfig) -> int:
    engine = SpeculativeEngine.load(config)
    limit = args.limit or 10_000
    results: dict[str, list[dict[str, object]]] = {"shift": [], "prefix": [], "cold": []}
    for file, line, n in REGIONS:
        base, at, region = keystrokes(CORPUS / file, line, n)
        for variant in results:
            cap = {"cold": COLD_KEYSTROKES, "prefix": min(limit, PREFIX_KEYSTROKES)}.get(
                variant, limit
            )
            results[variant] += replay(engine, variant, base, at, region, cap)
    summary = {v: summarize(rows) for v, rows in results.items() if rows}
    pairs = list(zip(results["shift"], results["prefix"], strict=False))
    same = sum(1 for a, b in pairs if a["text"] == b["text"])
    text = report(summary, same, len(pairs))
    if args.output:
        Path(args.output).write_text(text)
    print(json.dumps(summary) if args.json else text)
    return 0


def report(summary: dict[str, dict[str, float]], same: int, pairs: int) -> str:
    lines = [
        "# Keystroke replay",
        "",
        f"`groundspec bench --replay`: regions of {', '.join(f'{f}:{line} ({n} lines)' for f, line, n in REGIONS)} "
        "are deleted and re-typed one character at a time; each keystroke sends one completion "
        "(up to 24 tokens, `auto`), straight to the engine, with no debounce or typed-ahead cache.",
        "",
        "| KV reuse | requests | prompt tokens (median) | evaluated per keystroke (median / mean) | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|",
    ]
    names = {
        "shift": "prefix + moved suffix (default)",
        "prefix": "common prefix only",
        "cold": "none (cold)",
    }
    for variant, row in summary.items():
        lines.append(
            f"| {names[variant]} | {row['requests']} | {row['prompt_tokens']} | "
            f"{row['median_evaluated']} / {row['mean_evaluated']} | {row['p50_ms']} | {row['p95_ms']} |"
        )
    lines += [
        "",
        f"Completions identical between moved-suffix reuse and exact prefix reuse: {same}/{pairs}.",
        f"Peak RSS: {_peak_rss_mb():.0f} MB.",
        "",
    ]
    return "\n".join(lines)
