"""What the model could propose: is the right next edit among its top candidates?

    python -m bench.next_edit_reach [--tasks FILE] [--limit N] [--ids I,J] [--top 1,3,10]

For each edit task, the prompt the server would send (speculator.next_edit.prepare)
is evaluated, then the right answer (the window with the expected next edit, then
the format's end) is evaluated after it in one batch: each of its tokens' rank in
the model's distribution at its place. The edit is "in the top k" when every token
of the right answer ranks below k: a search over the model's k best tokens at each
step would find it. Tasks whose next edit lies outside the window are counted apart:
no model could propose them through this window. Each right edit's confidence
is also given, as the server computes it (the least probability of a token that
writes the change): what a bar must be under to let it through.

Separates what bounds recall: the window (out of reach), the model (right answer
not in its top candidates), or the system (in reach, not chosen).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speculator import provision
from speculator.edits import EditHistory
from speculator.generators.local import token_ends
from speculator.models import Model, resolve_path
from speculator.next_edit import core, occurrences, prompts
from speculator.next_edit import window as window_module
from speculator.next_edit.core import NextEditRequest, Plan, prepare
from speculator.next_edit.prompts import CURSOR_MARKER
from speculator.next_edit.proposal import TokenTrace, candidates
from speculator.sampling import token_prob
from speculator.session import Session

from .next_edit import DEV_TASKS, load_tasks

# (tokens evaluated, ms) of each prompt: its cost on this machine, now.
PROMPT_MS: list[tuple[int, float]] = []
SHORT_SYSTEM = (
    "Rewrite the code with the programmer's next edit, if any, else unchanged. "
    "Reply with the code only, in one fenced code block."
)


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


def scored(
    session: Session, model: Model, prompt: str, answer: str
) -> tuple[list[int], list[int], list[float]]:
    """(rank, end in `answer`, probability) of each token of `answer` after `prompt`:
    the prompt evaluated, then the answer in one batch."""
    prompt_tokens = model.tokenize(prompt, special=True)
    answer_tokens = model.tokenize(answer, special=True)[: session.n_batch]
    synced, first = session.sync([prompt_tokens])
    if synced.evaluated > 1:  # the prompt itself, not the same prompt again
        PROMPT_MS.append((synced.evaluated, synced.ms))
    rows = [np.array(first)]
    if len(answer_tokens) > 1:
        rows += list(np.array(session.append(answer_tokens[:-1])))
    ranks = [int(np.sum(row > row[token])) for row, token in zip(rows, answer_tokens, strict=True)]
    probs = [token_prob(row, token) for row, token in zip(rows, answer_tokens, strict=True)]
    ends = token_ends(answer_tokens, model.token_bytes)
    return ranks, ends, probs


def right_confidence(plan: Plan, want: str, ends: list[int], probs: list[float]) -> float:
    """The confidence the server would give the right edit (proposal.candidates):
    the least probability of a token writing it, the least over its changes."""
    found = candidates(plan.window, want, TokenTrace(ends, probs))
    return min((c.confidence for c in found), default=0.0)


def with_marker(plan: Plan, want: str) -> str | None:
    """The right answer with the cursor marker where the window has it (a model may
    copy the marker, which the server takes out), or None: no marker, or the right
    edit changes the text around it."""
    window, at = plan.window.text, plan.window.cursor
    if CURSOR_MARKER not in plan.prompt.text or at is None:
        return None
    if want.startswith(window[:at]):
        return want[:at] + CURSOR_MARKER + want[at:]
    if want.endswith(window[at:]):
        cut = len(want) - len(window) + at
        return want[:cut] + CURSOR_MARKER + want[cut:]
    return None


def set_variant(window: str | None, diff_context: int | None, short_system: bool) -> None:
    """Prompt variants to measure (not the server's settings): the window's lines
    above,below the cursor, the recent edits' context lines, a short system prompt."""
    if window:
        above, below = (int(n) for n in window.split(","))
        core.target_window = functools.partial(occurrences.target_window, above=above, below=below)
    if diff_context is not None:
        window_module.hunk_of.__defaults__ = (diff_context,)
    if short_system:
        prompts.QWEN_SYSTEM = SHORT_SYSTEM


@dataclass
class Reach:
    kind: str
    prompt_tokens: int
    worst: int | None = None  # the right answer's worst token rank (None: out of reach)
    confidence: float = 0.0  # the right edit's, as the server computes it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=str(DEV_TASKS))
    parser.add_argument("--limit", type=int, help="the first N edit tasks")
    parser.add_argument("--noop", type=int, default=0, help="and the first N no-op tasks")
    parser.add_argument("--ids", help="comma-separated indexes among the edit tasks")
    parser.add_argument("--top", default="1,3,10", help="comma-separated k")
    parser.add_argument("--window", help="variant: lines above,below the cursor")
    parser.add_argument("--diff-context", type=int, help="variant: context lines of edits")
    parser.add_argument("--short-system", action="store_true", help="variant: short system")
    args = parser.parse_args()
    set_variant(args.window, args.diff_context, args.short_system)
    every = load_tasks(Path(args.tasks), None)
    tasks = [t for t in every if t["kind"] == "edit"]
    tasks = [tasks[int(i)] for i in args.ids.split(",")] if args.ids else tasks[: args.limit]
    tasks += [t for t in every if t["kind"] == "noop"][: args.noop]
    model = Model(resolve_path(None, provision.TARGET), 0)
    session = Session(model.model, 4096, os.cpu_count() or 2)
    rows = [reach_of(session, model, task) for task in tasks]
    print("\n".join(summary(rows, [int(k) for k in args.top.split(",")])))


def reach_of(session: Session, model: Model, task: dict[str, Any]) -> Reach:
    """How far the right answer is from the model's choice, for one task (a no-op
    task's right answer is the window unchanged)."""
    plan = prepare(request_of(task))
    assert plan is not None
    row = Reach(task["kind"], len(model.tokenize(plan.prompt.text, special=True)))
    want = expected_window(task, plan) if task["kind"] == "edit" else plan.window.text
    if want is None:
        print(f"outside the window  {task['id']}", flush=True)
        return row
    end = plan.prompt.stop_text if plan.prompt.stop_text.startswith("`") else ""
    ranks, ends, probs = scored(session, model, plan.prompt.text, want + end)
    marked = with_marker(plan, want)
    if marked is not None:  # the better of: the marker copied, or not
        other = scored(session, model, plan.prompt.text, marked + end)
        if max(other[0]) < max(ranks):
            ranks, ends, probs = other
            want = marked
    row.worst = max(ranks)
    if task["kind"] == "edit":
        row.confidence = right_confidence(plan, want, ends, probs)
    print(
        f"{task['kind']:4} worst rank {row.worst:6d}, {sum(r > 0 for r in ranks):3d} off-top, "
        f"right edit's confidence {row.confidence:.3f}, prompt {row.prompt_tokens} tokens  "
        f"{task['id']}",
        flush=True,
    )
    return row


def summary(rows: list[Reach], tops: list[int]) -> list[str]:
    edits = [r for r in rows if r.kind == "edit"]
    noops = [r for r in rows if r.kind == "noop"]
    n = max(1, len(edits))
    tokens = statistics.median(r.prompt_tokens for r in rows) if rows else 0
    out = [
        f"{len(edits)} edit tasks: {sum(r.worst is None for r in edits)} outside the window; "
        f"prompt {tokens:.0f} tokens (median)"
    ]
    if PROMPT_MS:
        per_token = sum(ms for _, ms in PROMPT_MS) / sum(k for k, _ in PROMPT_MS)
        out.append(
            f"  prompt evaluation {statistics.median(ms for _, ms in PROMPT_MS) / 1000:.1f} s "
            f"median ({statistics.median(k for k, _ in PROMPT_MS):.0f} new tokens: the start "
            f"shared with the task before is reused), {per_token:.0f} ms per token, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
    for k in tops:
        within = sum(r.worst is not None and r.worst < k for r in edits)
        out.append(f"  right answer within the top {k} at every token: {within} ({within / n:.0%})")
    for bar in (0.1, 0.5, 0.8):
        over = sum(r.confidence >= bar for r in edits)
        out.append(f"  right edit's confidence >= {bar}: {over} ({over / n:.0%})")
    if noops:
        kept = sum(r.worst == 0 for r in noops)
        out.append(f"{len(noops)} no-op tasks: the window copied unchanged (greedy) on {kept}")
    return out


if __name__ == "__main__":
    main()
