"""A change that breaks the code's syntax where it parsed is never proposed
(speculator/next_edit/parses.py), through the whole request on the fake engine."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import NextEditRequest, Rewrite, finish, prepare
from speculator.next_edit.parses import breaks_syntax
from speculator.next_edit.proposal import TextEdit
from speculator.types import Stats

CODE = """def serializer(app):
    if not app.secret_key:
        return None
    keys = [app.secret_key]
    return Serializer(keys)
"""


def edited(text: str, old: str, new: str) -> TextEdit:
    at = text.index(old)
    return TextEdit(at, at + len(old), new)


def emptied(code: str, piece: str) -> NextEditRequest:
    """The user deleted `piece` from between the brackets of `[piece]`."""
    at = code.index(f"[{piece}]") + 1
    history = EditHistory()
    history.record("u", at, piece, "")
    text = code[:at] + code[at + len(piece) :]
    return NextEditRequest(
        text=text, cursor=at, edits=history.edits("u"), path="m.py", min_confidence=0.0
    )


def test_an_edit_that_leaves_a_hole_in_the_code_breaks_it() -> None:
    assert breaks_syntax("python", CODE, edited(CODE, "app.secret_key:", ":"))
    assert breaks_syntax("python", CODE, edited(CODE, "(keys)", "(keys"))
    assert not breaks_syntax("python", CODE, edited(CODE, "app.secret_key:", "app.key:"))
    assert not breaks_syntax("python", CODE, edited(CODE, "    keys = ", "    keys: list = "))


def test_code_already_broken_there_may_stay_broken_and_other_languages_pass() -> None:
    broken = CODE.replace("if not app.secret_key:", "if not app.secret_key")
    assert not breaks_syntax("python", broken, edited(broken, "secret_key\n", "key\n"))
    # Where the grammar already gave up, it cannot tell: the change is let through.
    assert not breaks_syntax("python", broken, edited(broken, "return None", "return (None"))
    assert not breaks_syntax("plaintext", "a b c", TextEdit(0, 1, "("))
    js = "function f(a) {\n  return a;\n}\n"
    assert breaks_syntax("javascript", js, edited(js, "a;", "a +;"))


def test_a_piece_whose_removal_would_leave_a_hole_elsewhere_is_not_proposed() -> None:
    # The user emptied the list: carried on, `app.secret_key` removed from the
    # condition would leave `if not :`.
    request = emptied(CODE, "app.secret_key")
    plan = prepare(request)
    assert plan is not None and plan.draft_change is None
    # Undone in the draft too: the model never reads it (nor copies it, rewriting).
    assert "if not app.secret_key:" in plan.job.draft and "if not :" not in plan.job.draft
    assert FakeEngine().next_edit(request).edits == []


def test_a_change_that_breaks_is_undone_and_the_next_one_is_proposed() -> None:
    code = "def f(app):\n    g(app.key, app.y)\n    log()\n    h(app.key)\n    return [app.key]\n"
    request = emptied(code, "app.key")
    text = request.text
    plan = prepare(request)
    # `g(app.key, app.y)` -> `g(, app.y)` breaks and is undone; `h()` does not break.
    assert plan is not None and plan.draft_change is not None
    assert "g(app.key, app.y)" in plan.job.draft and "    h()\n" in plan.job.draft
    (edit,) = FakeEngine().next_edit(request).edits
    done = text[: edit.start] + edit.new_text + text[edit.end :]
    assert done == text.replace("h(app.key)", "h()")


def test_lines_after_wide_characters_are_read_at_their_bytes() -> None:
    # The edited tree is told where the change lies in bytes and byte columns.
    text = 'GREETING = "héllo wörld"  # ü\nif not GREETING: print("ça")\n'
    assert breaks_syntax("python", text, edited(text, "GREETING:", ":"))
    assert not breaks_syntax("python", text, edited(text, "GREETING:", "GREET:"))
    assert breaks_syntax("python", text, edited(text, 'print("ça")', 'print("ça"'))


def test_a_rewrite_that_breaks_the_code_is_not_proposed() -> None:
    # A model rewriting the window (zeta2, sweep, nextEditRewrite) wrote a hole.
    plan = prepare(emptied(CODE, "app.secret_key"))
    assert plan is not None
    holed = plan.window.text.replace("if not app.secret_key:", "if not :")
    assert finish(plan, Rewrite(holed, None, True, Stats()), 0.0).edits == []
    renamed = plan.window.text.replace("if not app.secret_key:", "if not app.key:")
    (edit,) = finish(plan, Rewrite(renamed, None, True, Stats()), 0.0).edits
    assert edit.apply(plan.text) == plan.text.replace("if not app.secret_key:", "if not app.key:")
