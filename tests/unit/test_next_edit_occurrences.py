"""The other places of the last edit's names (tree-sitter, no model): the window
goes where a rename still has to be carried, never for a name in a string or a
comment (speculator/next_edit/occurrences.py)."""

from __future__ import annotations

from dataclasses import replace

from speculator.edits import Edit, EditHistory
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.occurrences import (
    MAX_PLACE_LINES,
    occurrence_lines,
    removed_names,
    target_window,
)
from speculator.next_edit.window import SCORE_CONTEXT_LINES, Hunk, choose_window


def document(lines: dict[int, str], total: int = 100) -> str:
    """`total` filler lines, with the given ones (0-based) in their places."""
    return "".join(lines.get(i, f"x{i} = {i}") + "\n" for i in range(total))


# File suffixes of the languages the rename helpers write.
SUFFIXES = {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}


def renamed(
    text: str,
    line: int,
    old: str,
    new: str,
    draft_only: bool | None = False,
    language_id: str = "python",
) -> NextEditRequest:
    """The request after the user renamed `old` to `new` on `line` of `text` (a file
    in `language_id`), for a model that rewrites the window (draft_only=None: as the
    default format says)."""
    at = sum(len(row) + 1 for row in text.split("\n")[:line]) + text.split("\n")[line].index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    after = text[:at] + new + text[at + len(old) :]
    return NextEditRequest(
        text=after,
        cursor=at + len(new),
        edits=history.edits("u"),
        path=f"m.{SUFFIXES[language_id]}",
        language_id=language_id,
        draft_only=draft_only,
    )


def hunk(before: str, after: str) -> Hunk:
    return Hunk("m.py", 0, [before], [after], [], [])


def names_removed(before: str, after: str) -> list[str]:
    """removed_names of an edit that turned the line `before` into `after`."""
    text = f"x = 0\n{before}\ny = 1\n"
    edit = Edit(6, before, after)
    return removed_names(text, edit.apply(text), edit, "python")


def test_removed_names_are_the_identifiers_the_edit_took_away() -> None:
    assert names_removed("total = count + 1", "total = amount + 1") == ["count"]
    # The attribute `result` went away (the plain name is still there), dot and all.
    assert names_removed("self.result = result", "self._result = result") == [".result"]
    assert names_removed("x = 1", "x = 1  # why") == []
    # Words in a string are not names.
    assert names_removed('raise E("no tox.git")', 'raise E("no pluggy")') == []


def test_a_rename_at_line_10_with_another_use_at_line_36_moves_the_window_there() -> None:
    text = document({10: "count = start()", 36: "report(count)"})
    request = renamed(text, 10, "count", "amount")
    plan = prepare(request)
    assert plan is not None
    assert plan.window.first_line <= 36 < plan.window.end_line
    assert "report(count)" in plan.window.text
    # The window is the usual size: the request costs what it did.
    usual = choose_window(request.text, request.cursor, (10, 11))
    assert plan.window.end_line - plan.window.first_line == usual.end_line - usual.first_line
    # The user's edit is outside the window: nothing to protect, and the draft
    # carries the rename to the place.
    assert plan.user_lines is None
    assert "report(amount)" in plan.job.draft


def test_a_use_more_than_max_place_lines_from_the_edit_is_not_followed() -> None:
    last = 11 + MAX_PLACE_LINES - 1
    reach = renamed(document({10: "count = start()", last: "report(count)"}), 10, "count", "n")
    assert occurrence_lines(reach.text, "python", ["count"], None, (10, 11)) == [last]
    text = document({10: "count = start()", last + 1: "report(count)", 80: "log(count)"})
    request = renamed(text, 10, "count", "amount")
    assert occurrence_lines(request.text, "python", ["count"], None, (10, 11)) == []
    plan = prepare(request)
    # The window stays at the edit, and its draft changes nothing: no proposal.
    assert plan is not None and plan.window == choose_window(request.text, request.cursor, (10, 11))
    assert plan.draft_change is None


def test_a_name_renamed_in_an_import_is_followed_to_its_first_use_however_far() -> None:
    # Imports stand at the top, their uses far below: the rename is not done until
    # the code uses the new name.
    text = document({2: "from util import safe_delete", 60: "safe_delete(path)", 80: "x"})
    request = renamed(text, 2, "safe_delete", "safe_delete_read_only")
    plan = prepare(request)
    assert plan is not None and plan.window.first_line <= 60 < plan.window.end_line
    assert plan.draft_change is not None
    assert plan.draft_change.edit.new_text == "_read_only"


def test_places_in_the_window_that_the_draft_leaves_alone_do_not_hold_it() -> None:
    # `_click` is also used on the line above, where nothing is to change: the
    # window goes on to the next `_click.exceptions.` below.
    lines = {10: '_click.echo("no profile")', 11: "raise _click.exceptions.Exit(1)"}
    text = document({**lines, 30: "raise _click.exceptions.Exit(2)"})
    plan = prepare(renamed(text, 11, "_click.exceptions.Exit", "Exit"))
    assert plan is not None and plan.window.first_line <= 30 < plan.window.end_line
    assert plan.draft_change is not None and "raise Exit(2)" in plan.job.draft


def test_a_model_that_scores_the_draft_reads_only_the_lines_around_its_change() -> None:
    text = document({10: "count = start()", 36: "report(count)"})
    request = renamed(text, 10, "count", "amount", draft_only=None)
    scored, rewritten = prepare(request), prepare(replace(request, draft_only=False))
    assert scored is not None and rewritten is not None and scored.draft_only
    lines = range(36 - SCORE_CONTEXT_LINES, 36 + SCORE_CONTEXT_LINES + 1)
    assert (scored.window.first_line, scored.window.end_line) == (lines.start, lines.stop)
    assert scored.draft_change is not None and rewritten.draft_change is not None
    assert scored.draft_change.edit == rewritten.draft_change.edit  # the same change
    assert len(scored.prompt.text) < len(rewritten.prompt.text)


def test_names_in_strings_and_comments_are_not_places() -> None:
    text = document(
        {
            10: "count = start()",
            20: "# count them again",
            25: 'label = "count"',
            30: 'doc = """the count"""',
            36: "report(count)",
        }
    )
    request = renamed(text, 10, "count", "amount")
    own = prepare(request)
    assert own is not None
    places = occurrence_lines(request.text, "python", ["count"], None)
    assert places == [36]
    assert own.window.first_line <= 36 < own.window.end_line
    # Only in strings and comments: the window stays at the cursor.
    quiet = document({10: "count = start()", 25: "# count", 30: 'label = "count"'})
    plan = prepare(renamed(quiet, 10, "count", "amount"))
    assert plan is not None and plan.window.first_line <= 10 < plan.window.end_line


def test_a_place_inside_the_window_keeps_it_and_one_just_past_it_widens_it() -> None:
    near = document({10: "count = start()", 14: "report(count)", 80: "report(count)"})
    request = renamed(near, 10, "count", "amount")
    usual = choose_window(request.text, request.cursor, (10, 11))
    plan = prepare(request)
    assert plan is not None and plan.window == usual
    past = document({10: "count = start()", usual.end_line + 2: "report(count)"})
    plan = prepare(renamed(past, 10, "count", "amount"))
    assert plan is not None
    # Two lines past the place: a change on a window's last line is never proposed.
    assert (plan.window.first_line, plan.window.end_line) == (usual.first_line, usual.end_line + 5)
    assert plan.user_lines == (10 - usual.first_line, 11 - usual.first_line)


def test_the_nearest_place_wins_and_the_edit_s_own_line_is_not_one() -> None:
    text = document({10: "count = start()", 30: "report(count)", 38: "log(count)"})
    request = renamed(text, 10, "count", "amount")
    places = occurrence_lines(request.text, "python", ["count"], None, (10, 11))
    assert places == [30, 38]
    window = target_window(request.text, request.cursor, (10, 11), places)
    assert window.first_line <= 30 < window.end_line
    assert window.text[window.cursor :].startswith("report(count)")


def test_a_line_changed_the_same_way_is_found_as_code_not_in_strings() -> None:
    body = {10: "def a():", 11: "    ...", 20: "def b():", 21: '    """', 22: "    pass"}
    body |= {23: '    """', 30: "def c():", 31: "    pass"}
    places = occurrence_lines(document(body), "python", [], hunk("    pass", "    ..."), (11, 12))
    assert places == [31]
    # A line that recurs all around the edit points nowhere in particular.
    common = {5 * i: "def a():" for i in range(1, 9)} | {5 * i + 1: "    pass" for i in range(1, 9)}
    edit = hunk("    pass", "    ...")
    assert occurrence_lines(document(common), "python", [], edit, (11, 12)) == []
    # Counted near the edit: far ones (a long file's other stubs) do not hide the near.
    spread = {25 * i: "def a():" for i in range(1, 9)} | {
        25 * i + 1: "    pass" for i in range(1, 9)
    }
    places = occurrence_lines(document(spread, total=250), "python", [], edit, (51, 52))
    assert places == [26, 76]


def test_no_grammar_no_places() -> None:
    text = document({10: "count = start()", 80: "report(count)"})
    assert occurrence_lines(text, "plaintext", ["count"], None) == []


def test_a_moved_window_below_an_edit_that_added_lines_shows_its_own_original() -> None:
    text = document({10: "count = start()", 36: "report(count)"})
    at = text.index("count = start()")
    history = EditHistory()
    history.record("u", at, "count = start()", "amount = start()\nextra = 1")
    after = text[:at] + "amount = start()\nextra = 1" + text[at + len("count = start()") :]
    request = NextEditRequest(
        text=after, cursor=at + 5, edits=history.edits("u"), path="m.py", prompt_format="sweep"
    )
    plan = prepare(request)
    assert plan is not None and plan.window.first_line <= 37 < plan.window.end_line
    # Below the edit nothing changed: the window before the edit is the window now.
    assert f"<|file_sep|>original/m.py\n{plan.window.text}<|file_sep|>current" in plan.prompt.text


def test_a_renamed_attribute_is_found_as_attributes_and_a_plain_name_as_plain_names() -> None:
    body = {10: "self.result = result", 20: "return self.result", 30: "print(result)"}
    text = document(body)
    assert occurrence_lines(text, "python", [".result"], None, (10, 11)) == [20]
    assert occurrence_lines(text, "python", ["result"], None, (10, 11)) == [30]


def test_a_place_on_the_window_s_last_line_widens_it_where_a_change_can_be_proposed() -> None:
    probe = document({10: "count = start()"})
    usual = choose_window(probe, probe.index("count"), (10, 11))
    text = document({10: "count = start()", usual.end_line - 1: "report(count)"})
    plan = prepare(renamed(text, 10, "count", "amount"))
    assert plan is not None
    assert plan.window.first_line == usual.first_line
    assert plan.window.end_line == usual.end_line + 2
    assert "report(amount)" in plan.job.draft and plan.asks_model


def test_a_docstring_line_edit_is_carried_to_its_twin_in_another_docstring() -> None:
    raises = "    :raises TypeError: if *timeout* is not a number"
    body = {10: "def a():", 11: '    """A.', 12: raises, 13: '    """'}
    body |= {20: "def b():", 21: '    """B.', 22: raises, 23: '    """'}
    text = document(body)
    edited = Hunk("m.py", 12, [raises], [raises + ", or *blocking* is not a bool"], [], [])
    assert occurrence_lines(text, "python", [], edited, (12, 13)) == [22]
    # Made in code, the same text is carried to code only.
    code = {10: "x = f(a)", 20: "y = f(a)", 22: '"""', 23: "x = f(a)", 24: '"""'}
    edited = Hunk("m.py", 10, ["x = f(a)"], ["x = f(a) or default"], [], [])
    assert occurrence_lines(document(code), "python", [], edited, (10, 11)) == []


def test_a_piece_changed_in_a_string_is_not_carried_to_other_strings() -> None:
    body = {10: 's = "wait(f, 10000)"', 14: 't = "wait(g, 10000)"'}
    edited = Hunk("m.py", 10, [body[10]], [body[10].replace("10000", "20000")], [], [])
    assert occurrence_lines(document(body), "python", [], edited, (10, 11)) == []
    # A whole line that recurs in a string is one place.
    lines = {10: 'doc = """', 11: "    wait(f, 10000)", 12: "    wait(f, 10000)", 13: '"""'}
    edited = Hunk("m.py", 11, [lines[11]], ["    wait(f, 20000)"], [], [])
    assert occurrence_lines(document(lines), "python", [], edited, (11, 12)) == [12]


def test_lines_inserted_in_a_docstring_follow_the_same_anchor_in_another_docstring() -> None:
    param = "    :param x: the value to check"
    raises = "    :raises ValueError: when x is negative"
    body = {10: "def a(x):", 11: '    """A.', 12: param, 13: raises, 14: '    """'}
    body |= {20: "def b(x):", 21: '    """B.', 22: param, 23: '    """'}
    edited = Hunk("m.py", 13, [], [raises], [param], ['    """'])
    places = occurrence_lines(document(body), "python", [], edited, (13, 14))
    assert places == [23]
    # Inserted below a line of code, the lines follow that line's twins in code only.
    code = {
        10: "    total = count(x)",
        11: "    log(total)",
        20: '    """',
        21: "    total = count(x)",
    }
    code |= {22: '    """', 30: "    total = count(x)"}
    edited = Hunk("m.py", 11, [], ["    log(total)"], ["    total = count(x)"], [])
    assert occurrence_lines(document(code), "python", [], edited, (11, 12)) == [31]
