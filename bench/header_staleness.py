"""A document's frozen prompt header (issue 63): what a stale one costs in
suggestion quality against what a fresh one costs in time.

    python -m bench.header_staleness [--split test] [--lines 20] [--budget-s 480]

The workspace is bench's corpus with the workspace index on it. For each
completion task of the split, two headers of other files' snippets: the one the
index gives for the text before a cursor `--lines` lines above the task's (the
header chosen at the last idle warm-up, the user having moved down since; within
speculator/headers.py's MOVE_LINES, so no warm-up replaced it), and the one it
gives for the task's cursor (rebuilt for the request). Where they differ, the
completion is made with each, the stale one first: the fresh one's prompt then
reuses the KV up to its first changed snippet and evaluates the rest, which is
what rebuilding the header inside a request costs. First lines are compared
with the removed text. Tasks stop starting after `--budget-s` seconds.
"""

from __future__ import annotations

import argparse
import time

from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.headers import Header, cursor_line
from speculator.pipeline import CONTEXT_QUERY_CHARS, CONTEXT_SNIPPETS
from speculator.types import CompletionRequest, Snippet
from speculator.workspace import WorkspaceIndex

from .quick import first_line
from .tasks import CORPUS, SPLITS, Task, completion_tasks, select


def line_start(text: str, line: int) -> int:
    """Offset of the start of 0-based `line`."""
    at = 0
    for _ in range(line):
        at = text.index("\n", at) + 1
    return at


def snippets_for(index: WorkspaceIndex, path: str, text: str, cursor: int) -> list[Snippet]:
    query = text[max(0, cursor - CONTEXT_QUERY_CHARS) : cursor]
    return index.related(path, query, CONTEXT_SNIPPETS)


def complete(
    engine: SpeculativeEngine, task: Task, path: str, header: Header
) -> tuple[str, int, int, float]:
    """(text, prompt tokens, tokens evaluated, prompt ms) with `header` frozen."""
    engine.local.prompts.headers.adopt(path, header)
    request = CompletionRequest(
        text=task.text,
        cursor=task.start,
        path=path,
        language_id=task.language,
        max_tokens=24,
        speculation="off",
        multiline=False,
    )
    result = engine.complete(request)
    stats = result.stats
    evaluated = stats.prompt_tokens - stats.reused_prompt_tokens
    return result.text, stats.prompt_tokens, evaluated, stats.prompt_ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="test")
    parser.add_argument(
        "--lines", type=int, default=20, help="how far above the stale header was chosen"
    )
    parser.add_argument("--budget-s", type=float, default=480.0)
    args = parser.parse_args(argv)
    started = time.monotonic()
    engine = SpeculativeEngine.load(EngineConfig(kv_disk_mb=0, use_draft=False))
    index = WorkspaceIndex(str(CORPUS), watch=False).start()
    index.wait_ready(120)
    engine.set_context_provider(index)
    try:
        run(engine, index, args, started)
    finally:
        index.stop()
        engine.close()


def run(
    engine: SpeculativeEngine, index: WorkspaceIndex, args: argparse.Namespace, started: float
) -> None:
    tasks = [t for t in select(completion_tasks(), args.split) if not t.multiline]
    same = tried = stale_right = fresh_right = 0
    costs: list[tuple[int, float]] = []
    for task in tasks:
        path = str(CORPUS / task.path)
        line = cursor_line(task.text, task.start)
        earlier = line_start(task.text, max(0, line - args.lines))
        stale = snippets_for(index, path, task.text, earlier)
        fresh = snippets_for(index, path, task.text, task.start)
        if stale == fresh:
            same += 1
            continue
        if time.monotonic() - started > args.budget_s:
            continue
        tried += 1
        expected = first_line(task.expected).strip()
        s_text, _, _, _ = complete(engine, task, path, Header(tuple(stale), line))
        f_text, prompt, evaluated, ms = complete(engine, task, path, Header(tuple(fresh), line))
        stale_right += first_line(s_text).strip() == expected
        fresh_right += first_line(f_text).strip() == expected
        costs.append((evaluated, ms))
        print(
            f"{task.name}: stale {first_line(s_text)!r}, fresh {first_line(f_text)!r}, "
            f"expected {expected!r}; fresh header: {evaluated} of {prompt} tokens in {ms:.0f} ms",
            flush=True,
        )
    untried = len(tasks) - same - tried
    print(
        f"{args.split} split, {len(tasks)} one-line tasks, header chosen {args.lines} lines "
        f"above: same snippets in {same}; differing in {tried + untried} ({untried} not run "
        f"within the budget); of the {tried} run, first line right with the stale header "
        f"{stale_right}, with the fresh one {fresh_right}"
    )
    if costs:
        tokens = sorted(c[0] for c in costs)
        times = sorted(c[1] for c in costs)
        mid = len(costs) // 2
        print(
            f"a fresh header inside the request: median {tokens[mid]} tokens, "
            f"{times[mid]:.0f} ms (worst {tokens[-1]} tokens, {times[-1]:.0f} ms)"
        )


if __name__ == "__main__":
    main()
