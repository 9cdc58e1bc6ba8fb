"""What the quick window costs in quality (issue 12): the same corpus
completions from the full prompt and from the short window, first lines compared
with the original text and with each other.

    python -m bench.quick [--split dev|test|all] [--budgets full,128,192] [--per-file]
                          [--small] [--full-cache FILE] [--output FILE]

A budget may end in `-noscope` (the lines before the cursor alone, without the
enclosing scopes' first lines) or `-defs` (plus the lines that define the names
used before the cursor). The full prompt's results do not depend on the
window, so `--full-cache` keeps them between runs (tuning several windows on dev).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import msgspec

from speculator import prompt, provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest

from .replay import _first_line_matches
from .tasks import SPLITS, Task, completion_tasks, select

Result = tuple[str, int, float]  # (text, prompt tokens, total ms)
HEADER_SHARE = prompt.QUICK_HEADER_SHARE
DEFINITION_SHARE = prompt.QUICK_DEFINITION_SHARE or 0.15


def complete(engine: SpeculativeEngine, task: Task, variant: str) -> Result:
    """One completion from a cold cache, as on an unseen file."""
    budget = 0 if variant == "full" else int(variant.split("-")[0])
    engine.config = msgspec.structs.replace(engine.config, quick_window_tokens=budget)
    prompt.QUICK_HEADER_SHARE = 0.0 if "-noscope" in variant else HEADER_SHARE
    prompt.QUICK_DEFINITION_SHARE = DEFINITION_SHARE if "-defs" in variant else 0.0
    request = CompletionRequest(
        text=task.text,
        cursor=task.start,
        path=f"/{variant}/{task.path}",
        language_id=task.language,
        max_tokens=24,
        speculation="off",
        multiline=False,
        quick_window=budget > 0,
    )
    engine.session.trim(0)
    result = engine.complete(request)
    return result.text, result.stats.prompt_tokens, result.stats.total_ms


def first_line(text: str) -> str:
    return text.split("\n")[0]


def run(
    engine: SpeculativeEngine,
    tasks: list[Task],
    variants: list[str],
    cache: Path | None,
    out: list[str],
) -> None:
    full: dict[str, Result] = {}
    if cache and cache.exists():
        full = {k: (v[0], v[1], v[2]) for k, v in json.loads(cache.read_text()).items()}
    with_full = "full" in variants
    results: dict[str, dict[str, Result]] = {v: {} for v in variants}
    for task in tasks:
        if with_full and task.name not in full:
            full[task.name] = complete(engine, task, "full")
            if cache:
                cache.write_text(json.dumps(full, indent=1))
        if with_full:
            results["full"][task.name] = full[task.name]
        for variant in variants:
            if variant != "full":
                results[variant][task.name] = complete(engine, task, variant)
        for variant, by_task in results.items():
            text, tokens, ms = by_task[task.name]
            line = (
                f"{task.name} {variant}: {tokens} prompt tokens, {ms:.0f} ms, {first_line(text)!r}"
            )
            out.append(line)
            print(line, flush=True)
    for variant, by_task in results.items():
        right = sum(_first_line_matches(by_task[t.name][0], t.expected) for t in tasks)
        same = (
            sum(first_line(by_task[t.name][0]) == first_line(full[t.name][0]) for t in tasks)
            if with_full
            else -1
        )
        sizes = [by_task[t.name][1] for t in tasks]
        times = [by_task[t.name][2] for t in tasks]
        out.append(
            f"{variant}: first line equals the file {right}/{len(tasks)}, equals full's "
            f"{same}/{len(tasks)}; prompt tokens median {statistics.median(sizes):.0f} "
            f"max {max(sizes)}; ms median {statistics.median(times):.0f} max {max(times):.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="dev")
    parser.add_argument(
        "--budgets",
        default="full,192",
        help="quick windows in tokens, and `full` (the full prompt)",
    )
    parser.add_argument("--per-file", action="store_true", help="one task per file")
    parser.add_argument("--small", action="store_true", help="the draft model as target")
    parser.add_argument("--full-cache", type=Path, help="keep the full prompt's results here")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    model = str(provision.model_path(provision.DRAFT)) if args.small else None
    tasks = select([t for t in completion_tasks() if not t.multiline], args.split)
    if args.per_file:
        tasks = list({t.path: t for t in reversed(tasks)}.values())[::-1]
    variants = args.budgets.split(",")
    name = Path(model).name if model else "default target"
    out = [f"model: {name}; {args.split} split, {len(tasks)} tasks; {time.ctime()}"]
    config = EngineConfig(target_model=model, use_draft=False, kv_ram_mb=0, kv_disk_mb=0)
    engine = SpeculativeEngine.load(config)
    try:
        run(engine, tasks, variants, args.full_cache, out)
    finally:
        engine.close()
        print("\n".join(line for line in out if ": first line" in line))
        if args.output:
            args.output.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
