"""The rewrite stops once it holds a change that could be proposed and copies the
window again after it (speculator/next_edit/rejoin.py): on the fake engine, on the
scripted model through the local generator under each mode, and in finish."""

from __future__ import annotations

import pytest
from next_edit_sample import CARRIED, PLUGINS, RENAMED
from scripted_model import scripted_generator

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import (
    NextEditRequest,
    NextEditResult,
    Plan,
    Rewrite,
    finish,
    prepare,
)
from speculator.outcome import PureStop
from speculator.pipeline import Pipeline
from speculator.types import Stats

# The sample, with lines after the user's: the rewrite has more to copy.
TAIL = "        hook(method)\n        count += 1\n    return count\n"
BEFORE = PLUGINS + TAIL
TEXT = RENAMED + TAIL


def renamed(speculation: str = "auto", text: str = TEXT, **kw: object) -> NextEditRequest:
    """The user renamed `name` to `attr_name` on the getattr line."""
    history = EditHistory()
    at = BEFORE.index("getattr(plugin, name)") + len("getattr(plugin, ")
    history.record("u", at, "name", "attr_name")
    return NextEditRequest(
        text=text,
        cursor=at + len("attr_name"),
        edits=history.edits("u"),
        path="/p.py",
        speculation=speculation,  # type: ignore[arg-type]
        draft_only=False,  # the rewrite, where the rule stops it
        **kw,  # type: ignore[arg-type]
    )


def plan_of(request: NextEditRequest) -> Plan:
    plan = prepare(request)
    assert plan is not None
    return plan


def upto(text: str, line: str) -> str:
    """`text` up to the end of its line `line`."""
    return text[: text.index(line) + len(line) + 1]


def applied(text: str, result: NextEditResult) -> str:
    for edit in result.edits:
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


def test_the_fake_engine_stops_once_the_rewrite_copies_the_window_after_its_change() -> None:
    plan = plan_of(renamed())
    assert plan.job.draft == CARRIED + TAIL  # the rename carried to the two lines above
    result = FakeEngine().next_edit(renamed())
    # Written: the change (two lines) and the line after it, which occurs once.
    assert result.stats.generated_tokens == len(upto(plan.job.draft, "if opts is None:"))
    assert applied(TEXT, result) == CARRIED + TAIL


def test_a_change_that_cannot_be_proposed_does_not_stop_it() -> None:
    """The user's own line undone, then copied lines: no stop; a change below that
    fits, then a copied line: the stop."""
    plan = plan_of(renamed())
    stop = plan.job.stop
    undone = TEXT.replace("getattr(plugin, attr_name)", "getattr(plugin, name)")
    assert stop(upto(undone, "hook(method)")) is None
    assert stop(upto(undone, "count += 1")) is None
    later = undone.replace("count += 1", "count += 2")
    assert stop(upto(later, "count += 2")) is None  # not yet copying the window again
    answer = upto(later, "return count")
    assert stop(answer) == len(answer)
    # Only whitespace changed: no stop either.
    spaced = TEXT.replace("continue\n", "continue  \n")
    assert stop(upto(spaced, "method = getattr")) is None


def test_a_blank_or_repeated_line_does_not_place_the_answer() -> None:
    """After the change, a blank line (it could be any blank line of the window) is
    not enough: the rule waits for a line that occurs once."""
    text = TEXT.replace("        hook(method)\n", "\n        hook(method)\n")
    plan = plan_of(renamed(text=text))
    changed = text.replace("hook(method)", "hook(method, attr_name)")
    start = changed.index("        count += 1")
    blank = changed[: changed.index("hook(method, attr_name)")]  # ends with the blank line
    assert plan.job.stop(blank) is None
    assert plan.job.stop(changed[: start + len("        count += 1\n")]) is not None


def test_a_line_rewritten_like_one_further_down_is_not_read_as_a_rejoin() -> None:
    """`pass` rewritten as the docstring below: the answer so far reads equally as
    five lines dropped and the docstring copied. The rule waits until the answer
    copies more lines than such a reading drops."""
    text = 'def a():\n    pass\n\ndef b():\n    """doc"""\n    return 2\n'
    history = EditHistory()
    history.record("u", text.index("2"), "1", "2")
    plan = plan_of(NextEditRequest(text=text, cursor=len(text) - 1, edits=history.edits("u")))
    assert plan.window.text == text
    answer = text.replace("pass", '"""doc"""')
    assert plan.job.stop(upto(answer, '"""doc"""')) is None
    placed = upto(answer, "def b():")
    assert plan.job.stop(placed) == len(placed)
    result = finish(plan, Rewrite(placed, None, True, Stats()), 0.0)
    assert applied(text, result) == answer


def test_a_rewrite_that_changes_nothing_runs_to_the_end() -> None:
    plan = plan_of(renamed())
    window = plan.window.text
    assert all(plan.job.stop(window[:i]) is None for i in range(len(window) + 1))
    generator, _ = scripted_generator(window + "```\n")
    result = Pipeline(generator).next_edit(renamed("off", min_confidence=0.5))
    assert result.edits == [] and result.stats.generated_tokens == len(window + "```")


def test_finish_takes_the_unwritten_rest_as_unchanged() -> None:
    """An answer cut after the change, in a window at the end of the file: its missing
    lines would read as deletions that pass every rule; they are the window's own."""
    plan = plan_of(renamed())
    assert plan.window.at_end_of_file and plan.window.text == TEXT
    cut = upto(plan.job.draft, "if opts is None:")
    assert plan.job.stop(cut) == len(cut)
    result = finish(plan, Rewrite(cut, None, True, Stats()), 0.0)
    assert applied(TEXT, result) == CARRIED + TAIL


@pytest.mark.parametrize("speculation", ["off", "auto"])
def test_off_and_auto_stop_at_the_same_place_and_propose_the_same_edit(speculation: str) -> None:
    plan = plan_of(renamed(speculation))
    generator, _ = scripted_generator(plan.job.draft + "```\n")
    result = Pipeline(generator).next_edit(renamed(speculation, min_confidence=0.3))
    assert result.stats.generated_tokens == len(upto(plan.job.draft, "if opts is None:"))
    assert applied(TEXT, result) == CARRIED + TAIL


def test_the_rule_can_be_asked_about_a_draft() -> None:
    """The decoder asks the rule (a PureStop) about the text a draft would make, to
    verify none of the draft past where the answer would stop: asking changes
    nothing it says of the answer after."""
    plan = plan_of(renamed())
    stop = plan.job.stop
    assert isinstance(stop, PureStop)
    answer = upto(plan.job.draft, "if opts is None:")
    assert stop(plan.job.draft) is not None  # a draft the rule reads past the cut
    assert stop(answer[:-1]) is None
    assert stop(answer) == len(answer)
