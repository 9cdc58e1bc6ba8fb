"""A change that writes a name that nothing defines is never proposed
(speculator/next_edit/undefined.py): by itself, in the draft and in a rewrite."""

from __future__ import annotations

import pytest

from speculator.edits import EditHistory
from speculator.next_edit import lint_fixes
from speculator.next_edit.core import NextEditRequest, Rewrite, finish, prepare
from speculator.next_edit.proposal import TextEdit
from speculator.next_edit.undefined import leaves_undefined
from speculator.types import Stats

BITMAP = """class Bitmap:
    def __init__(self, windows):
        self.check()
        for window, bitmap in self.windows:
            if window > 255:
                raise ValueError(f"bad {self.type_name} window {window}")
"""


def edited(text: str, old: str, new: str) -> TextEdit:
    at = text.index(old)
    return TextEdit(at, at + len(old), new)


def line_changed(code: str, old: str, new: str, path: str) -> NextEditRequest:
    """The user rewrote the line `old` as `new` (whole lines, as an editor sends them)."""
    at = code.index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    text = code.replace(old, new)
    return NextEditRequest(
        text=text,
        cursor=at + len(new) - 1,
        edits=history.edits("u"),
        path=path,
        min_confidence=0.0,
    )


def test_a_name_left_undefined_is_found_by_name() -> None:
    assert leaves_undefined("python", "b.py", BITMAP, edited(BITMAP, "self.check()", "check()"))
    assert not leaves_undefined(
        "python", "b.py", BITMAP, edited(BITMAP, "self.check()", "self.validate()")
    )
    # A name the change only stops defining is left to the rename's later places.
    text = "def f(a):\n    total = a\n    return total\n"
    assert not leaves_undefined("python", "f.py", text, edited(text, "total = a", "count = a"))


def test_a_name_the_user_wrote_lately_may_be_written_undefined() -> None:
    # The user renamed `describe` where it is defined, in another file: its uses
    # here are renamed before its import is.
    text = "from shapes import describe\n\nprint(describe(1))\n"
    call = edited(text, "describe(1)", "describe_shape(1)")
    assert leaves_undefined("python", "m.py", text, call)
    assert not leaves_undefined("python", "m.py", text, call, written={"describe_shape"})


def test_a_name_the_user_left_undefined_may_stay_so() -> None:
    text = "def f():\n    return total + total\n"  # `total`: the user's own edit
    assert not leaves_undefined("python", "f.py", text, edited(text, "+ total", "+ total * 2"))
    assert leaves_undefined("python", "f.py", text, edited(text, "+ total", "+ count"))
    # Only the lines the change writes are read: `total` below is not its doing.
    text = "def f(count):\n    x = count\n    return total\n"
    assert not leaves_undefined("python", "f.py", text, edited(text, "x = count", "y = count"))


def test_a_name_in_all_respelled_is_left_undefined() -> None:
    text = '__all__ = ["easter"]\n\n\ndef easter(year):\n    return year\n'
    assert leaves_undefined("python", "e.py", text, edited(text, '"easter"', '"Easter"'))


def test_other_languages_and_no_ruff_let_every_change_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "function f() { return total; }\n"
    assert not leaves_undefined("javascript", "f.js", text, edited(text, "total", "count"))
    monkeypatch.setattr(lint_fixes, "_ruff", lambda: ["/nonexistent/ruff"])
    fresh = BITMAP + "\n"  # not in the cache of findings
    assert not leaves_undefined("python", "b.py", fresh, edited(fresh, "self.check()", "check()"))


def test_self_taken_off_a_method_is_not_drafted() -> None:
    # `self.` taken off an attribute, carried to a method call: neither it nor a
    # later place is proposed.
    old = "        for window, bitmap in self.windows:\n"
    plan = prepare(line_changed(BITMAP, old, old.replace("self.windows", "windows"), "b.py"))
    assert plan is not None and plan.draft_change is None


def test_a_rewrite_that_leaves_a_name_undefined_is_not_proposed() -> None:
    old = "        for window, bitmap in self.windows:\n"
    plan = prepare(line_changed(BITMAP, old, old.replace("self.windows", "windows"), "b.py"))
    assert plan is not None
    broken = plan.window.text.replace("{self.type_name}", "{type_name}")
    assert finish(plan, Rewrite(broken, None, True, Stats()), 0.0).edits == []
    fine = plan.window.text.replace("> 255", ">= 256")
    (edit,) = finish(plan, Rewrite(fine, None, True, Stats()), 0.0).edits
    assert edit.apply(plan.text) == plan.text.replace("> 255", ">= 256")
