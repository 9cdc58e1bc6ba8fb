"""Lines inserted after a line are carried after the other lines equal to it
(speculator/next_edit/line_edits.py), through the whole request on the fake engine."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.line_edits import carry_insertion, insertion
from speculator.next_edit.window import Hunk

CODE = """def check(hookimpl):
    if hookimpl.historic:
        raise PluginValidationError(
            "historic incompatible to hookwrapper",
        )
    if hookimpl.argnames:
        raise PluginValidationError(
            "unknown arguments",
        )
"""
ANCHOR = "raise PluginValidationError("


def inserted(text: str, at: int, new: str) -> NextEditRequest:
    history = EditHistory()
    history.record("u", at, "", new)
    after = text[:at] + new + text[at:]
    return NextEditRequest(
        text=after,
        cursor=at + len(new.rstrip("\n")),
        edits=history.edits("u"),
        path="m.py",
        min_confidence=0.0,
    )


def proposed(request: NextEditRequest) -> str:
    result = FakeEngine().next_edit(request)
    text = request.text
    for edit in result.edits:
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


def test_a_line_typed_after_a_line_is_typed_after_its_twin() -> None:
    # As an editor sends it: Enter at the end of the line, then the new line.
    at = CODE.index(ANCHOR) + len(ANCHOR)
    request = inserted(CODE, at, "\n            hookimpl.plugin,")
    assert proposed(request).count(f"{ANCHOR}\n            hookimpl.plugin,\n") == 2


def test_whole_lines_pasted_below_a_line_are_carried_too() -> None:
    at = CODE.index("\n", CODE.index(ANCHOR)) + 1
    request = inserted(CODE, at, "            hookimpl.plugin,\n            name,\n")
    after = proposed(request)
    assert after.count(f"{ANCHOR}\n            hookimpl.plugin,\n            name,\n") == 2


def test_the_twin_indented_elsewhere_gets_the_lines_indented_as_it_is() -> None:
    hunk = Hunk("m.py", 3, [], ["        extra,"], ["x", "    register_hook("], [")"])
    ins = insertion(hunk)
    assert ins is not None and ins.anchor == "register_hook(" and ins.indent == "    "
    lines = ["register_hook(", "    a,", ")", "        register_hook(", "            b,"]
    carried = carry_insertion(lines, ins, None)
    assert carried == [
        "register_hook(",
        "    extra,",
        "    a,",
        ")",
        "        register_hook(",
        "            extra,",
        "            b,",
    ]


def test_short_or_common_anchors_and_replaced_lines_are_not_followed() -> None:
    short = Hunk("m.py", 2, [], ["    log()"], ["", "try:"], ["    run()"])
    assert insertion(short) is None
    replaced = Hunk("m.py", 2, ["    old()"], ["    new()", "    more()"], ["", ANCHOR], [])
    assert insertion(replaced) is None
    block = Hunk("m.py", 2, [], [f"    step{i}()" for i in range(9)], ["", ANCHOR], [])
    assert insertion(block) is None  # nine lines: a new block, not a change to repeat
    common = Hunk("m.py", 1, [], ["    a,"], [ANCHOR], [")"])
    ins = insertion(common)
    assert ins is not None
    lines = [ANCHOR, "    a,"] + [ANCHOR, ")"] * 5
    assert carry_insertion(lines, ins, None) == lines  # six twins: points nowhere


def test_the_window_reaches_a_twin_below_it() -> None:
    far = (
        CODE[: CODE.index("    if hookimpl.argnames")]
        + "    log()\n" * 10
        + CODE[CODE.index("    if hookimpl.argnames") :]
    )
    at = far.index(ANCHOR) + len(ANCHOR)
    request = inserted(far, at, "\n            hookimpl.plugin,")
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text.strip() == "hookimpl.plugin,"
    assert plan.draft_change.edit.start > far.rindex(ANCHOR)
