"""`groundspec bench --replay`: re-type a deleted region of a real file, one
inline completion request per keystroke, and measure what a keystroke costs.

Variants, all on the same keystrokes in one run:
- shift: the default (common prefix + the FIM suffix moved in the KV cache);
- refresh: shift, plus an exact re-sync every REFRESH_EVERY keystrokes, as the
  server's idle warm-up does when the user pauses (not timed: it runs idle);
- prefix: only the common prefix is reused (exact, what a fresh prompt gives);
- cold: no reuse at all (the cache is cleared before each request), on a few keystrokes.
Completions of `shift` and `refresh` are compared with `prefix` to measure what
the approximate suffix reuse does to quality, and all with the original text.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from pathlib import Path

from lsp_server.options import ServerOptions
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.totals import percentile
from speculator.types import CompletionRequest

from .load import CpuLoad
from .tasks import CORPUS, peak_rss_mb

log = logging.getLogger(__name__)

# (file, first line of the region to re-type, number of lines), 1-based
REGIONS = [("graphlib.py", 163, 4), ("reprlib.py", 112, 6)]
PREFIX_KEYSTROKES = 25  # exact reuse re-evaluates the suffix: slow, so fewer
COLD_KEYSTROKES = 2
# As the LSP server's typing completions: stop at a new line after this long.
TYPING_MAX_PREDICT_MS = ServerOptions().max_predict_ms
TYPING_DEADLINE_MS = ServerOptions().typing_deadline_ms
REFRESH_EVERY = 8  # keystrokes between idle re-syncs in the `refresh` variant
VARIANTS = ("shift", "refresh", "prefix", "cold")


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
    engine.shift_reuse = variant in ("shift", "refresh")
    engine.warm(CompletionRequest(text=base, cursor=at, path="replay"))  # didOpen pre-warm
    rows = []
    for i in range(1, min(len(region), limit) + 1):
        text = base[:at] + region[:i] + base[at:]
        if variant == "cold":
            engine.session.trim(0)
        if variant == "refresh" and i % REFRESH_EVERY == 0:
            engine.warm(CompletionRequest(text=text, cursor=at + i, path="replay"))
        req = CompletionRequest(
            text=text,
            cursor=at + i,
            path="replay",
            max_tokens=24,
            speculation="auto",
            max_predict_ms=TYPING_MAX_PREDICT_MS,
            max_predict_from_start=True,
            deadline_ms=TYPING_DEADLINE_MS,
        )
        started = time.perf_counter()
        result = engine.complete(req)
        outcome = engine.last_outcome
        rows.append(
            {
                "keystroke": i,
                "ms": (time.perf_counter() - started) * 1000,
                "evaluated": result.stats.prompt_tokens - result.stats.reused_prompt_tokens,
                "prompt": result.stats.prompt_tokens,
                "prompt_ms": result.stats.prompt_ms,
                "decode_ms": result.stats.decode_ms,
                "draft_catch_up": outcome.draft_catch_up if outcome else 0,
                "cut_short": outcome.cut_short if outcome else False,
                "text": result.text,
                "original": _first_line_matches(result.text, region[i:] + base[at:]),
                "matched_chars": _matched_chars(result.text, region[i:] + base[at:]),
            }
        )
    engine.shift_reuse = True
    return rows


def _first_line_matches(completion: str, original: str) -> bool:
    """The completion's first line is what the file really says next."""
    line = completion.split("\n")[0].rstrip()
    return bool(line.strip()) and original.startswith(line)


def _matched_chars(completion: str, original: str) -> int:
    """How much of the completion is what the file really says next: the
    characters a user who accepts it keeps."""
    return len(os.path.commonprefix([completion, original]))


def summarize(rows: list[dict[str, object]]) -> dict[str, float]:
    ms = [float(r["ms"]) for r in rows]  # type: ignore[arg-type]
    evaluated = [int(r["evaluated"]) for r in rows]  # type: ignore[call-overload]
    return {
        "requests": len(rows),
        "prompt_tokens": statistics.median(int(r["prompt"]) for r in rows),  # type: ignore[call-overload]
        "p50_ms": round(percentile(ms, 50)),
        "p95_ms": round(percentile(ms, 95)),
        "max_ms": round(max(ms)),
        "p95_prompt_ms": round(percentile([float(r["prompt_ms"]) for r in rows], 95)),  # type: ignore[arg-type]
        "p95_decode_ms": round(percentile([float(r["decode_ms"]) for r in rows], 95)),  # type: ignore[arg-type]
        "median_evaluated": statistics.median(evaluated),
        "mean_evaluated": round(statistics.mean(evaluated), 1),
        "max_draft_catch_up": max(int(r["draft_catch_up"]) for r in rows),  # type: ignore[call-overload]
        "cut_short": sum(bool(r["cut_short"]) for r in rows),
        "first_line_matches_file": sum(bool(r["original"]) for r in rows),
        "mean_matched_chars": round(statistics.mean(int(r["matched_chars"]) for r in rows), 1),  # type: ignore[call-overload]
    }


def quality(results: dict[str, list[dict[str, object]]]) -> dict[str, dict[str, int]]:
    """Per variant, on the keystrokes `prefix` (exact) also ran: how many
    completions equal the exact one, and how many first lines match the file."""
    exact = {(r["region"], r["keystroke"]): r["text"] for r in results["prefix"]}
    out = {}
    for variant, rows in results.items():
        mine = [r for r in rows if (r["region"], r["keystroke"]) in exact]
        if mine:
            out[variant] = {
                "keystrokes": len(mine),
                "same_as_exact": sum(
                    r["text"] == exact[(r["region"], r["keystroke"])] for r in mine
                ),
                "first_line_matches_file": sum(bool(r["original"]) for r in mine),
            }
    return out


def run_replay(args: argparse.Namespace, config: EngineConfig) -> int:
    engine = SpeculativeEngine.load(config)
    limit = args.limit or 10_000
    # Under load only the user-facing variant: the others are references.
    variants = ("shift",) if args.load else VARIANTS
    results: dict[str, list[dict[str, object]]] = {v: [] for v in variants}
    with CpuLoad(args.load):
        for file, line, n in REGIONS:
            base, at, region = keystrokes(CORPUS / file, line, n)
            for variant in variants:
                short = min(limit, PREFIX_KEYSTROKES)
                cap = {"cold": COLD_KEYSTROKES, "prefix": short, "refresh": short}.get(
                    variant, limit
                )
                rows = replay(engine, variant, base, at, region, cap)
                results[variant] += [{**r, "region": file} for r in rows]
    summary = {v: summarize(rows) for v, rows in results.items() if rows}
    agreement = quality(results) if "prefix" in results else {}  # --load runs `shift` only
    text = report(summary, agreement)
    if args.load:
        text = "Run with one CPU-bound process busy on one core throughout (`--load`).\n\n" + text
    if args.output:
        Path(args.output).write_text(text)
    print(json.dumps({"latency": summary, "quality": agreement}) if args.json else text)
    return 0


def report(summary: dict[str, dict[str, float]], agreement: dict[str, dict[str, int]]) -> str:
    lines = [
        "# Keystroke replay",
        "",
        f"`groundspec bench --replay`: regions of {', '.join(f'{f}:{line} ({n} lines)' for f, line, n in REGIONS)} "
        "are deleted and re-typed one character at a time; each keystroke sends one completion "
        "(up to 24 tokens, `auto`, stopping at a new line after "
        f"{TYPING_MAX_PREDICT_MS} ms and mid-line at the {TYPING_DEADLINE_MS} ms deadline, "
        "prompt included, as the LSP server's typing completions do), "
        "straight to the engine, with no debounce or typed-ahead cache.",
        "",
        "| KV reuse | requests | prompt tokens (median) | evaluated per keystroke (median / mean) "
        "| p50 ms | p95 ms | worst ms | p95 prompt ms / decode ms | draft-model prompt tokens in decode (max) "
        "| cut at the deadline | first line matches the file | characters as the file (mean) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "shift": "prefix + moved suffix (default)",
        "refresh": f"moved suffix, exact re-sync every {REFRESH_EVERY} keystrokes",
        "prefix": "common prefix only",
        "cold": "none (cold)",
    }
    for variant, row in summary.items():
        lines.append(
            f"| {names[variant]} | {row['requests']} | {row['prompt_tokens']} | "
            f"{row['median_evaluated']} / {row['mean_evaluated']} | {row['p50_ms']} | "
            f"{row['p95_ms']} | {row['max_ms']} | {row['p95_prompt_ms']} / {row['p95_decode_ms']} | "
            f"{row['max_draft_catch_up']} | {row['cut_short']} | {row['first_line_matches_file']} | "
            f"{row['mean_matched_chars']} |"
        )
    lines += [
        "",
        "Quality, on the keystrokes where the exact variant also ran:",
        "",
        "| KV reuse | keystrokes | completion identical to exact | first line matches the file |",
        "|---|---|---|---|",
    ]
    for variant, q in agreement.items():
        lines.append(
            f"| {names[variant]} | {q['keystrokes']} | {q['same_as_exact']} | "
            f"{q['first_line_matches_file']} |"
        )
    lines += ["", f"Peak RSS: {peak_rss_mb():.0f} MB.", ""]
    return "\n".join(lines)
