"""An argument added to one call, or a parameter added with a constant as its
default, carried on by the draft (speculator/next_edit/call_edits.py, no model)."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.next_edit.call_edits import (
    MAX_SCAN_CHARS,
    ArgumentInsertion,
    NewParameter,
    argument_insertion,
    body_lines,
    carried_lines,
    new_parameter,
)
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.window import Hunk

SCRIPT = """\
import shlex


def run(line):
    return shlex.split(line, comments=True)


def check(commands):
    for command in commands:
        parse(shlex.split(command)[1:])
    words = shlex.split(
        commands[0],
        posix=True,
    )
    empty = shlex.split()
    other = split(command)
    return words, empty, other
"""

TIMEOUT = """\
WAIT_S = 5.0


def wait(server, wait_s: float = WAIT_S):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        sleep(WAIT_S / 10)
    return server


def later():
    return WAIT_S
"""


def hunk(before: str, after: str, above: list[str] | None = None) -> Hunk:
    return Hunk("m.py", 3, [before], [after], above or [], [])


def test_an_argument_added_before_the_closing_parenthesis_is_read_with_its_function() -> None:
    found = argument_insertion(
        hunk("    x = shlex.split(line)", "    x = shlex.split(line, comments=True)")
    )
    assert found == ArgumentInsertion("shlex.split", ", comments=True", first=False, arguments=1)
    first = argument_insertion(hunk("raise Error(text)", "raise Error(name, text)"))
    assert first == ArgumentInsertion("Error", "name, ", first=True)


def test_other_changes_are_not_argument_insertions() -> None:
    # A signature's new parameter is not an argument for its calls.
    assert argument_insertion(hunk("def run(line):", "def run(line, posix):")) is None
    # Signatures in the other languages: `func`, a Go method, `function`, `fn`.
    go = hunk("func Load(path string) {", "func Load(ctx context.Context, path string) {")
    assert argument_insertion(go) is None
    method = hunk(
        "func (s *Store) Save(items []Item) {", "func (s *Store) Save(ctx Ctx, items []Item) {"
    )
    assert argument_insertion(method) is None
    assert argument_insertion(hunk("function load(path) {", "function load(path, ctx) {")) is None
    assert argument_insertion(hunk("fn load(path: &str) {", "fn load(path: &str, n: u8) {")) is None
    assert argument_insertion(hunk("x = f(a)", "x = f(a) + 1")) is None  # not in a call
    assert argument_insertion(hunk("x = f(a)", "x = g(a, b)")) is None  # not an insertion alone
    assert argument_insertion(hunk("if (a)", "if (a, b)")) is None  # a keyword, not a call


def test_the_other_calls_of_the_function_get_the_argument_where_they_lack_it() -> None:
    edit = hunk("    return shlex.split(line)", "    return shlex.split(line, comments=True)")
    rewrites = carried_lines(SCRIPT, edit, (4, 5), "python")
    assert rewrites == {
        9: "        parse(shlex.split(command, comments=True)[1:])",
        14: "    empty = shlex.split(comments=True)",  # no `, ` in an empty call
    }
    # The call over three lines ends in a comma: where the argument goes is a
    # matter of style, so it is left alone; so is `split(command)`, another function.


def test_a_document_too_large_to_search_gets_nothing_carried() -> None:
    edit = hunk("f(a)", "f(a, comments=True)")
    text = "f(a)\nf(c)\n" + "x = 1\n" * (MAX_SCAN_CHARS // 6)
    assert carried_lines(text[: MAX_SCAN_CHARS - 1], edit, (0, 1), "python") == {
        1: "f(c, comments=True)"
    }
    assert carried_lines(text, edit, (0, 1), "python") == {}


def test_an_argument_added_last_without_a_name_fills_its_slot_only() -> None:
    text = (
        "cmd_output('git', 'ls-files', '-z')\n"
        "cmd_output('git', 'ls-tree', '-r')\n"
        "cmd_output('git', 'status')\n"
        "cmd_output(*diff_cmd, ref)\n"
        "cmd_output('git', 'diff', key=(1, 2))\n"
    )
    edit = hunk("cmd_output('git', 'ls-files', '-z')", "cmd_output('git', 'ls-files', '-z', '-t')")
    # Only where it is the fourth argument, as in the call the user changed (after
    # a named one it would not even parse).
    assert carried_lines(text, edit, (0, 1), "python") == {
        1: "cmd_output('git', 'ls-tree', '-r', '-t')"
    }


def test_calls_far_from_the_edit_are_left_for_later() -> None:
    text = "f(a)\n" + "x = 1\n" * 40 + "f(c)\nf(d)\n"
    edit = hunk("f(a)", "f(a, comments=True)")
    assert carried_lines(text, edit, (0, 1), "python") == {}
    near = "x = 1\n" * 10 + text
    assert carried_lines(near, edit, (10, 11), "python") == {}
    # 30 lines on each side count: `f(d)` below the edit, not `f(a)` 41 lines above.
    assert carried_lines(text, edit, (41, 42), "python") == {42: "f(d, comments=True)"}


def test_a_call_that_has_the_keyword_already_keeps_its_own_value() -> None:
    text = "f(a)\nf(b, comments=False)\nf(c)\n"
    rewrites = carried_lines(text, hunk("f(a)", "f(a, comments=True)"), (0, 1), "python")
    assert rewrites == {2: "f(c, comments=True)"}


def test_a_parameter_with_a_constant_default_takes_its_place_in_the_body() -> None:
    edit = hunk("def wait(server):", "def wait(server, wait_s: float = WAIT_S):")
    assert new_parameter(edit) == NewParameter("wait_s", "WAIT_S")
    rewrites = carried_lines(TIMEOUT, edit, (3, 4), "python")
    assert rewrites == {
        4: "    deadline = time.monotonic() + wait_s",
        6: "        sleep(wait_s / 10)",
    }  # `later` is another function: its WAIT_S stays


def test_a_parameter_in_a_signature_over_several_lines_finds_its_body() -> None:
    lines = [
        "def f(",
        "    a,",
        "    b=LIMIT,",
        ") -> int:",
        "    return a + LIMIT",
        "",
        "x = LIMIT",
    ]
    assert body_lines(lines, (2, 3)) == [4, 5]
    edit = Hunk("m.py", 2, ["    a,"], ["    a, b=LIMIT,"], ["def f("], [])
    assert carried_lines("\n".join(lines), edit, (1, 2), "python") == {4: "    return a + b"}


def test_defaults_that_are_no_constant_or_outside_a_signature_are_not_carried() -> None:
    assert new_parameter(hunk("def f(a):", "def f(a, b=None):")) is None
    assert new_parameter(hunk("def f(a):", "def f(a, b=1):")) is None
    # A keyword argument added to a call in a body is an argument, not a parameter.
    text = "def f(a):\n    g(a)\n    return LIMIT\n"
    assert carried_lines(text, hunk("    g(a)", "    g(a, b=LIMIT)"), (1, 2), "python") == {}


def test_the_draft_carries_the_argument_and_the_window_follows_it() -> None:
    lines = ["import shlex", *[f"x{i} = {i}" for i in range(25)], "y = shlex.split(b)", ""]
    text = "\n".join(["import shlex", "a = shlex.split(a)", *lines[1:]])
    at = text.index("shlex.split(a)") + len("shlex.split(a")
    history = EditHistory()
    history.record("u", at, "", ", posix=False")
    after = text[:at] + ", posix=False" + text[at:]
    plan = prepare(NextEditRequest(text=after, cursor=at, edits=history.edits("u"), path="m.py"))
    assert plan is not None and plan.draft_change is not None
    assert "y = shlex.split(b)" in plan.window.text  # the window moved to the other call
    assert plan.draft_change.edit.new_text == ", posix=False"
    assert "y = shlex.split(b, posix=False)" in plan.job.draft
