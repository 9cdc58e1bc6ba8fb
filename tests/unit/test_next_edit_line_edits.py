"""Lines inserted after a line are carried after the other lines equal to it, and
text appended to a line to the lines built as it was
(speculator/next_edit/line_edits.py), through the whole request on the fake engine."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.line_edits import added, carry_added, carry_insertion, insertion
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


def inserted(
    text: str, at: int, new: str, path: str = "m.py", language_id: str = "python"
) -> NextEditRequest:
    """The request after `new` was typed at `at` into `text`, at a bar of 0."""
    history = EditHistory()
    history.record("u", at, "", new)
    after = text[:at] + new + text[at:]
    return NextEditRequest(
        text=after,
        cursor=at + len(new.rstrip("\n")),
        edits=history.edits("u"),
        path=path,
        language_id=language_id,
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


TRY = """def signature(func):
    try:
        func = func.__init__
    except AttributeError:
        return (), ()
    try:
        func = getattr(func, "__call__", func)
    except Exception:
        return (), ()
    return inspect.signature(func)
"""
PRAGMA = "  # pragma: no cover"


def test_a_comment_appended_to_a_line_is_appended_to_its_sibling() -> None:
    at = TRY.index("except AttributeError:") + len("except AttributeError:")
    after = proposed(inserted(TRY, at, PRAGMA))
    assert f"except AttributeError:{PRAGMA}\n" in after
    assert f"except Exception:{PRAGMA}\n" in after
    assert after.count(PRAGMA) == 2  # `try:` and the rest: other first or last words


def test_the_window_reaches_a_sibling_below_it() -> None:
    far = TRY.replace(
        "    try:\n        func = getattr", "    log()\n" * 14 + "    try:\n        func = getattr"
    )
    at = far.index("except AttributeError:") + len("except AttributeError:")
    request = inserted(far, at, PRAGMA)
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text == PRAGMA
    sibling = request.text.index("except Exception:") + len("except Exception:")
    assert plan.draft_change.edit.start == sibling


def test_finishing_a_line_or_a_word_or_changing_it_is_not_adding() -> None:
    assert added(Hunk("m.py", 0, ["    f(a"], ["    f(a)"], [], [])) is None
    assert added(Hunk("m.py", 0, ["    f(a)"], ["    g(a)  # x"], [], [])) is None
    assert added(Hunk("m.py", 0, ["    f(a)"], ["    f(a)", "    g()"], [], [])) is None
    assert added(Hunk("m.py", 0, ["    count = 1"], ["    count = 10"], [], [])) is None
    assert added(Hunk("m.py", 0, ["    x = f(a)"], ["    max_x = f(a)"], [], [])) is None
    app = added(Hunk("m.py", 0, ["    f(a)  "], ["    f(a)  # type: ignore"], [], []))
    assert app is not None and (app.first, app.last, app.text) == ("f", ")", "  # type: ignore")


def test_a_line_shape_that_recurs_too_often_is_not_followed() -> None:
    app = added(Hunk("m.py", 0, ["x = f(a)"], ["x = f(a)  # why"], [], []))
    assert app is not None
    few = ["x = f(b)", "y = f(c)", "x = g(d)"]
    assert carry_added(few, app, None) == ["x = f(b)  # why", "y = f(c)", "x = g(d)  # why"]
    many = [f"x = f({i})" for i in range(5)]
    assert carry_added(many, app, None) == many


def test_a_line_commented_out_is_carried_to_its_twins_indented_as_each_is() -> None:
    code = "def f():\n    print(a)\n    run()\n    if a:\n        print(b)\n"
    at = code.index("print(a)")
    after = proposed(inserted(code, at, "# "))
    assert after == "def f():\n    # print(a)\n    run()\n    if a:\n        # print(b)\n"


def test_an_f_prefix_is_carried_only_to_strings_with_a_placeholder() -> None:
    code = 'url = other = ""\nraise E(\n    "the scheme must be http,"\n    " but got {url}."\n'
    code += '    " or {other}"\n)\n'
    at = code.index('" but got')
    after = proposed(inserted(code, at, "f"))
    assert after == code.replace('" but', 'f" but').replace('" or', 'f" or')


def test_a_comment_for_people_stays_on_its_line_where_a_directive_is_carried() -> None:
    at = TRY.index("except AttributeError:") + len("except AttributeError:")
    remark = "  # Defensive: old classes have no __init__"
    assert proposed(inserted(TRY, at, remark)).count(remark) == 1
    code = "if a:\n    f()\nelse:\n    g()\nif b:\n    h()\nelse:\n    k()\n"
    at = code.index("else:") + len("else:")
    why = "  # Defensive: see the issue about b"
    assert proposed(inserted(code, at, why)).count(why) == 1  # no whole-line twin either
    pragma = "  # pragma: no cover"
    assert proposed(inserted(code, at, pragma)).count(pragma) == 2


def test_no_cover_is_not_carried_into_a_block_it_already_excludes() -> None:
    code = (
        "if sys.version_info >= (3, 13):\n    from warnings import deprecated\n"
        "else:\n    if TYPE_CHECKING:\n        from typing_extensions import deprecated\n"
        "    else:\n        deprecated = fallback\n"
    )
    at = code.index("else:") + len("else:")
    # The outer `else:` excluded excludes the inner one: nothing to carry.
    assert proposed(inserted(code, at, PRAGMA)).count(PRAGMA) == 1
    # A directive that holds for its line alone is carried there as before.
    ignore = "  # type: ignore[misc]"
    assert proposed(inserted(code, at, ignore)).count(ignore) == 2
    # An `else:` beside the excluded block, not in it, is its twin as before.
    beside = code.replace("    else:\n        deprecated", "else:\n    deprecated")
    assert proposed(inserted(beside, at, PRAGMA)).count(PRAGMA) == 2


def test_a_tool_directive_appended_is_an_addition_and_prose_is_not() -> None:
    def appended(text: str) -> bool:
        return added(Hunk("m.py", 0, ["    f(a)"], [f"    f(a){text}"], [], [])) is not None

    for directive in ("  # noqa: E501", "  # type:ignore[x]", "  # nosec", "  // @ts-ignore"):
        assert appended(directive), directive
    assert appended("  // eslint-disable-line no-console")
    for remark in ("  # Falls back to g", "  # see issue 12 for why", "  // Keep in sync"):
        assert not appended(remark), remark


def test_an_appended_directive_goes_only_to_lines_built_alike() -> None:
    old = "    assert isinstance(claims, dict)"
    app = added(Hunk("m.py", 0, [old], [old + "  # noqa: S101"], [], []))
    assert app is not None
    lines = [
        "    for e in ends:",
        "        assert isinstance(e, End)",
        "    assert not isinstance(e, A)",
    ]
    carried = carry_added(lines, app, None)
    assert carried == [lines[0], lines[1] + "  # noqa: S101", lines[2]]  # other names alone
    # An outdated version check silenced: a longer check is not outdated for it.
    code = 'if sys.version_info < (3, 10):\n    raise ImportError("3.10")\n\n'
    code += 'if sys.version_info < (3, 13) and sys.platform not in ("a", "b"):\n    f()\n'
    at = code.index("):") + 2
    noqa = "  # noqa: UP036"
    assert proposed(inserted(code, at, noqa)).count(noqa) == 1


def test_items_added_to_a_lists_last_line_are_not_added_to_its_others() -> None:
    code = "shapes = (\n    'use', 'byte', 'short',\n    'blob', 'string',\n    'timestamp',\n)\n"
    at = code.index("'timestamp',") + len("'timestamp',")
    items = " 'enum', 'intEnum',  # IDL 2.0 shapes"
    assert proposed(inserted(code, at, items)).count("'enum'") == 1
