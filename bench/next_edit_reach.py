"""What the model could propose: is the right next edit among its top candidates?

    python -m bench.next_edit_reach [--tasks FILE] [--limit N] [--top 3]

For each edit task, the prompt the server would send (speculator.next_edit.prepare)
is evaluated, then the right answer (the window with the expected next edit, then
the format's end) is evaluated after it in one batch: each of its tokens' rank in
the model's distribution at its place. The edit is "in the top k" when every token
of the right answer ranks below k: a search over the model's k best tokens at each
step would find it. Tasks whose next edit lies outside the window are counted apart:
no model could propose them through this window.

Separates what bounds recall: the window (out of reach), the model (right answer
not in its top candidates), or the system (in reach, not chosen).
"""

from __future__ import annotations

import argparse
import difflib
import os
from pathlib import Path
from typing import Any

import numpy as np

from speculator import provision
from speculator.edits import EditHistory
from speculator.models import Model, resolve_path
from speculator.next_edit.core import NextEditRequest, Plan, prepare
from speculator.session import Session

from .next_edit import DEV_TASKS, load_tasks


def offset(text: str, pos: dict[str, int]) -> int:
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: pos["line"]]) + pos["character"]


def request_of(task: dict[str, Any]) -> NextEditRequest:
    original, change = task["original"], task["change"]
    start, end = (
        offset(original, change["range"]["start"]),
        offset(original, change["range"]["end"]),
    )
    history = EditHistory()
    history.record("task", start, original[start:end], change["text"])
    text = task["after_change"]
    return NextEditRequest(
        text=text,
        cursor=offset(text, task["cursor"]),
        edits=history.edits("task"),
        path=task["path"],
    )


def expected_window(task: dict[str, Any], plan: Plan) -> str | None:
    """The window as it reads with the right next edit, or None when the edit
    lies outside it."""
    after = task["after_change"].split("\n")
    expected = task["expected"].split("\n")
    first, end = plan.window.first_line, plan.window.end_line
    matcher = difflib.SequenceMatcher(None, after, expected, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not changed or any(a1 < first or a2 > end for _, a1, a2, _, _ in changed):
        return None
    delta = sum((b2 - b1) - (a2 - a1) for _, a1, a2, b1, b2 in changed)
    return "".join(line + "\n" for line in expected[first : end + delta])


def ranks(session: Session, model: Model, prompt: str, answer: str) -> list[int]:
    prompt_tokens = model.tokenize(prompt, special=True)
    answer_tokens = model.tokenize(answer, special=True)
    _, first = session.sync([prompt_tokens])
    rows = [np.array(first)]
    if len(answer_tokens) > 1:
        rows += list(np.array(session.append(answer_tokens[:-1])))
    return [int(np.sum(row > row[token])) for row, token in zip(rows, answer_tokens, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=str(DEV_TASKS))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--top", type=int, default=3)
    args = parser.parse_args()
    tasks = [t for t in load_tasks(Path(args.tasks), args.limit) if t["kind"] == "edit"]
    model = Model(resolve_path(None, provision.TARGET), 0)
    session = Session(model.model, 4096, os.cpu_count() or 2)
    out_of_window = top1 = topk = 0
    for task in tasks:
        plan = prepare(request_of(task))
        assert plan is not None
        want = expected_window(task, plan)
        if want is None:
            out_of_window += 1
            print(f"outside the window  {task['id']}", flush=True)
            continue
        end = plan.prompt.stop_text if plan.prompt.stop_text.startswith("`") else ""
        got = ranks(session, model, plan.prompt.text, want + end)
        worst = max(got)
        top1 += worst == 0
        topk += worst < args.top
        print(f"worst rank {worst:6d}, {sum(r > 0 for r in got):3d} off-top  {task['id']}")
    n = len(tasks)
    print(
        f"{n} edit tasks: {out_of_window} outside the window; right answer greedy (top 1) "
        f"{top1} ({top1 / n:.0%}); in the top {args.top} at every token {topk} ({topk / n:.0%})"
    )


if __name__ == "__main__":
    main()
