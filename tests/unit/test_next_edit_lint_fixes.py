"""A lint rule the user applied by hand, carried on with ruff's own fix
(speculator/next_edit/lint_fixes.py; runs the real ruff, no model)."""

from __future__ import annotations

import pytest

from speculator.edits import Edit, EditHistory, common_ends
from speculator.next_edit import lint_fixes
from speculator.next_edit.core import NextEditRequest, Plan, prepare
from speculator.next_edit.draft import draft_window
from speculator.next_edit.lint_fixes import line_rewrites, lint_fix_lines
from speculator.next_edit.window import Hunk

FIELDS = """\
import typing


class Parts:
    scheme: typing.Optional[str]
    host: typing.Optional[str]
    port: typing.Optional[int]
    path: str
"""

CLASSES = """\
class First(object):
    pass


def helper():
    return 1


class Second(object):
    pass
"""

USES_OS = """\
import os
import sys


def here():
    return os.getcwd(), sys.argv
"""


def edited(text: str, old: str, new: str, path: str = "m.py") -> tuple[str, NextEditRequest]:
    """`text` with its first `old` replaced by `new`, and the request that follows."""
    at = text.index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    after = text[:at] + new + text[at + len(old) :]
    request = NextEditRequest(text=after, cursor=at + len(new), edits=history.edits("u"), path=path)
    return after, request


def edit_between(before: str, after: str) -> Edit:
    """The one edit that makes `after` of `before`."""
    head, tail = common_ends(before, after)
    return Edit(head, before[head : len(before) - tail], after[head : len(after) - tail])


def planned(request: NextEditRequest) -> Plan:
    plan = prepare(request)
    assert plan is not None
    return plan


def test_a_pyupgrade_fix_made_by_hand_is_made_on_the_next_lines() -> None:
    after, request = edited(FIELDS, "typing.Optional[str]", "str | None")
    plan = planned(request)
    assert plan.draft_change is not None
    # The run of fields below is one edit: both made, as ruff makes them.
    assert plan.draft_change.edit.new_text.endswith("str | None\n    port: int | None")
    assert "    port: int | None\n    path: str" in plan.job.draft


def test_a_fix_further_down_is_found_past_other_code() -> None:
    _, request = edited(CLASSES, "class First(object):", "class First:")
    plan = planned(request)
    assert plan.draft_change is not None
    assert "class Second:" in plan.job.draft


def test_quotes_removed_from_an_annotation_by_hand_are_removed_from_the_next() -> None:
    # No `from __future__ import annotations`: ruff removes such quotes only for code
    # whose annotations are deferred (Python 3.14 on). The user removing one shows the
    # code is read so.
    text = 'class URL:\n    def copy(self) -> "URL":\n        return self\n\n'
    text += '    def join(self, other: str) -> "URL":\n        return self\n'
    after = text.replace('def copy(self) -> "URL":', "def copy(self) -> URL:")
    rewrites = lint_fix_lines(text, after, edit_between(text, after), "m.py", "python")
    assert rewrites == {4: "    def join(self, other: str) -> URL:"}


def test_an_edit_that_is_no_fix_follows_no_rule() -> None:
    # The user typed something else on a line that ruff would fix: not its rule.
    before = FIELDS
    after = FIELDS.replace("scheme: typing.Optional[str]", "scheme: typing.Optional[bytes]")
    assert lint_fix_lines(before, after, edit_between(before, after), "m.py", "python") == {}


def test_only_the_rule_the_user_applied_is_followed() -> None:
    text = CLASSES + "\nvalue: typing.Optional[int] = None\n"
    after = text.replace("class First(object):", "class First:")
    rewrites = lint_fix_lines(text, after, edit_between(text, after), "m.py", "python")
    assert rewrites == {8: "class Second:"}


ANNOTATED = """\
import typing as t


def words() -> t.Optional[t.List[str]]:
    found: t.List[str] = []
    return found
"""


def test_pyupgrade_by_hand_modernizes_the_next_line_whole() -> None:
    # The user wrote `list[str]` for `t.List[str]`: the line above, which has an
    # Optional too, is written as a person modernizing by hand writes it.
    after = ANNOTATED.replace("found: t.List[str]", "found: list[str]")
    rewrites = lint_fix_lines(ANNOTATED, after, edit_between(ANNOTATED, after), "m.py", "python")
    assert rewrites == {3: "def words() -> list[str] | None:"}


ROW = """\
import typing as t


class Row:
    names: t.Optional[t.List[str]]
    sizes: t.Optional[t.List[int]]
"""


@pytest.mark.parametrize(
    ("written", "next_line"),
    [
        # `t.Optional` kept on their own line: not made on the next one either.
        ("names: t.Optional[list[str]]", "    sizes: t.Optional[list[int]]"),
        # Neither `list[str]` (UP006) nor `X | None` (UP045) alone gives their line.
        ("names: list[str] | None", "    sizes: list[int] | None"),
    ],
)
def test_the_pyupgrade_rules_applied_by_hand_are_the_ones_followed(
    written: str, next_line: str
) -> None:
    after = ROW.replace("names: t.Optional[t.List[str]]", written)
    rewrites = lint_fix_lines(ROW, after, edit_between(ROW, after), "m.py", "python")
    assert rewrites == {5: next_line}


def test_an_import_the_edit_left_unused_is_removed() -> None:
    after, request = edited(USES_OS, "os.getcwd(), sys.argv", "sys.argv")
    rewrites = lint_fix_lines(USES_OS, after, edit_between(USES_OS, after), "m.py", "python")
    assert rewrites == {0: None}  # the line deleted
    plan = planned(request)
    assert plan.draft_change is not None
    assert plan.job.draft.startswith("import sys\n")


def test_an_import_left_unused_by_a_rename_is_renamed_unless_the_new_name_is_imported() -> None:
    text = "import asyncio\n\n\ndef check(f):\n    return asyncio.iscoroutinefunction(f)\n"
    _, request = edited(text, "asyncio.iscoroutinefunction", "inspect.iscoroutinefunction")
    plan = planned(request)
    assert plan.draft_change is not None and plan.job.draft.startswith("import inspect\n")
    # `inspect` imported already: the old import goes.
    _, request = edited(
        "import inspect\n" + text, "asyncio.iscoroutinefunction", "inspect.iscoroutinefunction"
    )
    plan = planned(request)
    assert plan.draft_change is not None and plan.draft_change.edit.new_text == ""
    assert "import asyncio" not in plan.job.draft


def test_two_names_left_unused_in_one_import_are_both_removed() -> None:
    text = "from os import getcwd, sep\n\n\ndef here():\n    return getcwd() + sep\n"
    after = text.replace("getcwd() + sep", '"."')
    assert lint_fix_lines(text, after, edit_between(text, after), "m.py", "python") == {0: None}


def test_an_import_unused_before_the_edit_is_not_the_users_business() -> None:
    text = "import json\n" + USES_OS
    after = text.replace("return os.getcwd(), sys.argv", "return os.getcwd(), sys.path")
    assert lint_fix_lines(text, after, edit_between(text, after), "m.py", "python") == {}


def test_a_package_init_keeps_its_imports() -> None:
    after = USES_OS.replace("os.getcwd(), sys.argv", "sys.argv")
    assert (
        lint_fix_lines(USES_OS, after, edit_between(USES_OS, after), "pkg/__init__.py", "python")
        == {}
    )


def test_a_fix_far_from_the_edit_is_not_followed() -> None:
    far = "class First(object):\n    pass\n" + "x = 1\n" * 40 + "class Second(object):\n    pass\n"
    after = far.replace("class First(object):", "class First:")
    assert lint_fix_lines(far, after, edit_between(far, after), "m.py", "python") == {}


def test_other_languages_and_a_missing_ruff_give_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    after = CLASSES.replace("class First(object):", "class First:")
    assert lint_fix_lines(CLASSES, after, edit_between(CLASSES, after), "m.js", "javascript") == {}
    monkeypatch.setattr(lint_fixes, "_ruff", lambda: ["/nonexistent/ruff"])
    assert lint_fix_lines(CLASSES, after, edit_between(CLASSES, after), "m.py", "python") == {}


def test_code_that_does_not_parse_gives_no_fix() -> None:
    broken = CLASSES.replace("def helper():", "def helper(:")
    after = broken.replace("class First(object):", "class First:")
    rewrites = lint_fix_lines(broken, after, edit_between(broken, after), "m.py", "python")
    assert all(line is None or "(:" not in line for line in rewrites.values())


def test_line_rewrites_say_which_lines_change_go_or_come() -> None:
    text = "a\nb\nc\nd"
    assert line_rewrites(text, "a\nB\nc\nd") == {1: "B"}
    assert line_rewrites(text, "a\nc\nd") == {1: None}
    assert line_rewrites(text, "a\nb\nnew\nc\nd") == {1: "b\nnew"}
    assert line_rewrites(text, "top\na\nb\nc\nd") == {0: "top\na"}


def test_a_deleted_line_leaves_the_other_rules_counting_lines_as_they_are() -> None:
    # The user renamed `old` on window line 1; a lint fix deletes line 0.
    window = "import os\nx = new\ny = old"
    hunk = Hunk("m.py", 1, ["x = old"], ["x = new"], [], [])
    draft = draft_window(window, hunk, (1, 2), {0: None})
    assert draft == "x = new\ny = new"


PERCENT = """\
def describe(name, pattern, count):
    title = "%s (pattern: %r)" % (name, pattern)
    total = "%s routes" % (count,)
    return title, total
"""


def test_a_percent_format_made_an_f_string_by_hand_is_made_one_on_the_next_line() -> None:
    # ruff calls UP031's fix unsafe; the user made it by hand, so it is followed, and
    # UP032 makes the `.format` it writes an f-string, as the user wrote.
    after = PERCENT.replace(
        '"%s (pattern: %r)" % (name, pattern)', 'f"{name} (pattern: {pattern!r})"'
    )
    rewrites = lint_fix_lines(PERCENT, after, edit_between(PERCENT, after), "m.py", "python")
    assert rewrites == {2: '    total = f"{count} routes"'}


def test_an_unsafe_fix_of_a_rule_the_user_did_not_apply_is_not_followed() -> None:
    text = (
        "import typing\n\n\n"
        + PERCENT
        + "\nvalue: typing.Optional[int] = None\nother: typing.Optional[str] = None\n"
    )
    after = text.replace("value: typing.Optional[int]", "value: int | None")
    rewrites = lint_fix_lines(text, after, edit_between(text, after), "m.py", "python")
    assert rewrites == {9: "other: str | None = None"}


JUMPS = """\
def parse(value):
    if value is None:
        return None
    elif isinstance(value, str):
        if not value:
            raise ValueError("empty")
        return value.strip()
    elif isinstance(value, bytes):
        raise TypeError("bytes")
    elif isinstance(value, int):
        return str(value)
"""


def test_an_elif_after_a_return_made_an_if_makes_the_next_one_after_a_raise_too() -> None:
    # RET505 (after a return) and RET506 (after a raise) are one fix, followed as one.
    after = JUMPS.replace("    elif isinstance(value, str):", "    if isinstance(value, str):")
    rewrites = lint_fix_lines(JUMPS, after, edit_between(JUMPS, after), "m.py", "python")
    assert rewrites == {7: "    if isinstance(value, bytes):"}


CALLS = """\
def report(path, config, filename):
    warn(
        f"The specified config file does not exist: {config}"
    )
    warn(
        f"The specified config file does not exist: {filename}"
    )
"""


def test_a_trailing_comma_added_by_hand_is_added_to_the_next_call() -> None:
    after = CALLS.replace('exist: {config}"', 'exist: {config}",')
    rewrites = lint_fix_lines(CALLS, after, edit_between(CALLS, after), "m.py", "python")
    assert rewrites == {5: '        f"The specified config file does not exist: {filename}",'}
