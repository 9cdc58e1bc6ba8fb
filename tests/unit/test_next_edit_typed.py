"""A next edit does not depend on how the user made the last edit: each dev task's
change typed key by key (the old text selected and deleted, or backspaced, then
the new text typed a character at a time, as editors send it) drafts the same
change as the task's change sent whole, as the benchmark plays it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.next_edit import DEV_TASKS
from bench.next_edit_reach import offset, request_of
from speculator.edits import EditHistory, common_ends
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.proposal import TextEdit


def typed(task: dict[str, Any], backspaced: bool) -> NextEditRequest:
    """The task's request with its change made key by key, all within one pause."""
    text, change = task["original"], task["change"]
    start, end = offset(text, change["range"]["start"]), offset(text, change["range"]["end"])
    old, new = text[start:end], change["text"]
    head, tail = common_ends(old, new)
    at, removed, added = start + head, old[head : len(old) - tail], new[head : len(new) - tail]
    history = EditHistory(clock=lambda: 0.0)
    keys = [(at + i, text[at + i], "") for i in reversed(range(len(removed)))]
    if not backspaced:
        keys = [(at, removed, "")] if removed else []
    keys += [(at + i, "", char) for i, char in enumerate(added)]
    for where, gone, put in keys:
        history.record("typed", where, gone, put)
        text = text[:where] + put + text[where + len(gone) :]
    assert text == task["after_change"]
    cursor = offset(text, task["cursor"])
    return NextEditRequest(text, cursor, history.edits("typed"), path=task["path"])


def drafted(request: NextEditRequest) -> TextEdit | None:
    plan = prepare(request)
    return plan.draft_change.edit if plan and plan.draft_change else None


def test_a_change_typed_key_by_key_drafts_what_it_drafts_sent_whole() -> None:
    if not DEV_TASKS.is_file():
        pytest.skip("shared/nes/dev.jsonl is not beside this checkout")
    tasks = [json.loads(line) for line in DEV_TASKS.read_text(encoding="utf-8").splitlines()]
    differ = []
    for task in tasks:
        whole = drafted(request_of(task))
        for backspaced in (False, True):
            if drafted(typed(task, backspaced)) != whole:
                differ.append((task["id"], "backspaced" if backspaced else "selected"))
    assert sum(drafted(request_of(t)) is not None for t in tasks) >= 10  # it drafts
    assert differ == []
