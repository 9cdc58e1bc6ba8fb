"""Next edits without a model: window, draft, and the rewrite turned into at most
one confident edit (the fake engine's rewrite is the draft)."""

from __future__ import annotations

from dataclasses import replace

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import (
    NOTHING_TO_CARRY,
    NextEditRequest,
    Plan,
    Rewrite,
    RewriteJob,
    finish,
    next_edit,
    prepare,
)
from speculator.next_edit.draft import apply_substitutions, substitutions
from speculator.next_edit.proposal import TokenTrace, candidates, choose
from speculator.next_edit.window import Hunk, choose_window, recent_hunks
from speculator.types import Stats

CODE = """def register(plugin):
    for name in dir(plugin):
        opts = parse(plugin, name)
        if opts is None:
            continue
        method = getattr(plugin, name)
        hook(method)
"""


def renamed_request(**kw: object) -> NextEditRequest:
    """The user renamed `name` to `attr_name` on the getattr line."""
    history = EditHistory()
    at = CODE.index("getattr(plugin, name)") + len("getattr(plugin, ")
    history.record("u", at, "name", "attr_name")
    text = CODE[:at] + "attr_name" + CODE[at + 4 :]
    cursor = at + len("attr_name")
    return NextEditRequest(text=text, cursor=cursor, edits=history.edits("u"), path="p.py", **kw)  # type: ignore[arg-type]


def apply(text: str, request: NextEditRequest, engine: FakeEngine) -> str:
    result = engine.next_edit(request)
    for edit in sorted(result.edits, key=lambda e: -e.start):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


def test_window_spans_cursor_and_edit_in_whole_lines() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    cursor = text.index("line 50")
    window = choose_window(text, cursor, focus=(45, 47), above=3, below=4)
    assert (window.first_line, window.end_line) == (42, 55)
    assert window.text == text[window.start : window.end]
    assert window.text.startswith("line 42\n") and window.text.endswith("line 54\n")
    assert window.text[window.cursor :].startswith("line 50")
    end = choose_window(text, len(text) - 2, None, above=1, below=10)
    assert end.at_end_of_file and end.text.endswith("line 99\n")


def test_recent_hunk_of_a_rename_shows_the_whole_line() -> None:
    request = renamed_request()
    (hunk,) = recent_hunks(request.text, request.edits, "p.py")
    assert hunk.before == ["        method = getattr(plugin, name)"]
    assert hunk.after == ["        method = getattr(plugin, attr_name)"]
    assert hunk.first_line == 5
    assert "-        method = getattr(plugin, name)\n" in hunk.unified()


def test_a_hunk_shows_as_many_context_lines_as_asked() -> None:
    hunk = Hunk("p", 5, ["b = 1"], ["b = 2"], ["x", "a = 0"], ["c = 3", "y"])
    assert hunk.unified() == "@@ -4,5 +4,5 @@\n x\n a = 0\n-b = 1\n+b = 2\n c = 3\n y\n"
    one = hunk.unified(numbered=False, context=1)
    assert one == "@@\n a = 0\n-b = 1\n+b = 2\n c = 3\n"
    assert hunk.unified(context=0) == "@@ -6,1 +6,1 @@\n-b = 1\n+b = 2\n"
    assert hunk.unified(context=5) == hunk.unified()  # no more than it holds


def test_substitutions_carry_a_rename_and_a_changed_line() -> None:
    rename = Hunk("p", 0, ["x = f(name)"], ["x = f(attr_name)"], [], [])
    assert any(s.old == "name" and s.new == "attr_name" for s in substitutions(rename))
    window = "a = name\nb = names\nx = f(name)\n"
    drafted = apply_substitutions(window, substitutions(rename), skip_lines=(2, 3))
    assert drafted == "a = attr_name\nb = names\nx = f(name)\n"  # whole words only
    stub = Hunk("p", 0, ["        pass"], ["        ..."], [], [])
    assert apply_substitutions("    pass\n", substitutions(stub)) == "    ...\n"


def test_a_keyword_changed_is_no_rename_to_carry() -> None:
    window = "def f(a=True) -> None:\n    return None\nWriter = Callable[[str], None]\n"
    for old, new in (("None", "object"), ("None", "object()"), ("True", "False")):
        line = f"Writer = Callable[[str], {old}]"
        hunk = Hunk("p", 0, [line], [line.replace(old, new)], [], [])
        assert apply_substitutions(window, substitutions(hunk), skip_lines=(2, 3)) == window


def test_a_piece_that_puts_a_name_in_a_keywords_place_is_not_carried() -> None:
    old = "def split(a) -> tuple[Seq[str | None] | None, list[str]]:"
    hunk = Hunk("p", 0, [old], [old.replace("None", "T_UNSET")], [], [])
    window = "def split(a):\n    value: str | Seq[str | None] | None | T_UNSET,\n"
    assert apply_substitutions(window, substitutions(hunk)) == window
    # A piece with its keywords kept is carried (test_a_change_of_several_words...).
    call = Hunk("p", 0, ["  r = f(None, {'a': 1})"], ["  r = f(None, a=1)"], [], [])
    assert apply_substitutions("  s = f(None, {'a': 1})\n", substitutions(call)) == (
        "  s = f(None, a=1)\n"
    )


def test_an_operator_written_as_keywords_changed_is_not_carried() -> None:
    # `not in` -> `!=`: that test's logic changed, not a piece of text to repeat.
    hunk = Hunk(
        "p",
        0,
        ["    if isinstance(issuer, Sequence):", '        if payload["iss"] not in issuer:'],
        ["    if isinstance(issuer, str):", '        if payload["iss"] != issuer:'],
        [],
        [],
    )
    window = '    if "iss" not in payload:\n        raise MissingClaim("iss")\n'
    assert apply_substitutions(window, substitutions(hunk)) == window


def test_a_renamed_attribute_is_carried_to_attributes_only() -> None:
    rename = Hunk("p", 0, ["    self.result = result"], ["    self._result = result"], [], [])
    window = "def f(self, result):\n    self.result = result\n    return self.result\n"
    drafted = apply_substitutions(window, substitutions(rename), skip_lines=(1, 2))
    assert drafted == "def f(self, result):\n    self.result = result\n    return self._result\n"
    plain = Hunk("p", 0, ["    total = count"], ["    total = amount"], [], [])
    drafted = apply_substitutions("x = count + obj.count\n", substitutions(plain))
    assert drafted == "x = amount + obj.count\n"


def test_code_made_a_docstring_or_a_comment_is_carried_nowhere() -> None:
    window = "def a():\n    pass\n\n\ndef b():\n    pass\n"
    for new in ('    """Api2 hook"""', "    # nothing to do yet"):
        hunk = Hunk("p", 0, ["    pass"], [new], [], [])
        assert apply_substitutions(window, substitutions(hunk), skip_lines=(1, 2)) == window
    # Code made other code is carried, a docstring reworded too.
    stub = Hunk("p", 0, ["    pass"], ["    ..."], [], [])
    assert apply_substitutions(window, substitutions(stub), skip_lines=(1, 2)).count("...") == 1
    doc = Hunk("p", 0, ['    """Api hook"""'], ['    """An API hook"""'], [], [])
    drafted = apply_substitutions('    """Api hook"""\n', substitutions(doc))
    assert drafted == '    """An API hook"""\n'


def test_a_name_renamed_to_a_builtin_is_not_renamed_in_imports() -> None:
    line = "def f(a: List[int]) -> Tuple[int, ...]:"
    hunk = Hunk("p", 0, [line], ["def f(a: list[int]) -> tuple[int, ...]:"], [], [])
    window = (
        "from typing import List, Tuple\n"
        "from typing import (\n    List,\n    Tuple,\n)\n"
        "def g(b: List[str]) -> Tuple[str]:\n"
    )
    drafted = apply_substitutions(window, substitutions(hunk))
    assert drafted == window.replace("g(b: List[str]) -> Tuple", "g(b: list[str]) -> tuple")
    # A rename to a name that is no builtin may be the import's too.
    other = Hunk("p", 0, ["x = List(a)"], ["x = Seq(a)"], [], [])
    drafted = apply_substitutions("from m import List\ny = List(b)\n", substitutions(other))
    assert drafted == "from m import Seq\ny = Seq(b)\n"


def test_a_short_change_made_on_several_lines_is_carried_with_its_neighbours() -> None:
    before = ["A = 1  # type: ignore[assignment, misc]", "B = 2  # type: ignore[assignment, misc]"]
    after = [line.replace(", misc", ",misc") for line in before]
    window = "\n".join([*after, "C = 3  # type: ignore[assignment, misc]", "d = [1, 2, 3]"])
    drafted = apply_substitutions(window, substitutions(Hunk("p", 0, before, after, [], [])))
    assert drafted.split("\n")[2:] == ["C = 3  # type: ignore[assignment,misc]", "d = [1, 2, 3]"]
    # Made on one line only, a space dropped is too common a change to carry.
    once = Hunk("p", 0, before[:1], after[:1], [], [])
    assert apply_substitutions(window, substitutions(once)) == window
    # A short rename on several lines stays a rename, not a piece with its neighbours.
    rename = Hunk("p", 0, ["x = a[i]", "y = b[i]"], ["x = a[j]", "y = b[j]"], [], [])
    assert [sub.old for sub in substitutions(rename) if not sub.whole_line] == ["i"]
    # At a line's start there is no token before it: `# ` is no piece to put before
    # every `print` (line_edits carries it to the twins of the lines).
    commented = Hunk("p", 0, ["print(a)", "print(b)"], ["# print(a)", "# print(b)"], [], [])
    assert all(sub.whole_line for sub in substitutions(commented))


def test_a_change_of_several_words_or_a_removal_is_carried_as_one_piece() -> None:
    call = Hunk(
        "p", 0, ['  r = MC([a], {}, {"first": True})'], ["  r = MC([a], {}, first=True)"], [], []
    )
    drafted = apply_substitutions('  s = MC([b], {}, {"first": True})\n', substitutions(call))
    assert drafted == "  s = MC([b], {}, first=True)\n"
    cut = Hunk("p", 0, ["    params=[0, 1, 10, 100],"], ["    params=[10, 100],"], [], [])
    assert apply_substitutions("  p=[0, 1, 10, 100]\n", substitutions(cut)) == "  p=[10, 100]\n"
    # One word taken away is too common a piece to carry: `dict(x)` -> `(x)`.
    unwrap = Hunk("p", 0, ["    e = dict(extra)"], ["    e = (extra)"], [], [])
    assert (
        apply_substitutions("    d = dict(other)\n", substitutions(unwrap))
        == "    d = dict(other)\n"
    )


def test_a_changed_piece_of_words_is_carried_only_where_it_stands_as_words() -> None:
    piece = Hunk("p", 0, ["x = 1  # per window"], ["x = 1  # per 37"], [], [])
    assert any(s.old == "window" and s.new == "37" for s in substitutions(piece))
    code = "def choose_window(text):\n    # the window below\n"
    drafted = apply_substitutions(code, substitutions(piece))
    assert drafted.startswith("def choose_window(text):\n")  # not choose_37
    assert "# the 37 below" in drafted  # the same word elsewhere still is


def test_a_call_rewritten_with_words_removed_is_not_read_as_renames() -> None:
    """`H.wait(function() ... end, 10000, "client")` -> `H.client()` replaced a
    call; it did not rename `wait` to `client` nor delete `function(` everywhere."""
    old = 'H.wait(function() return #get_clients() > 0 end, 10000, "client")'
    rewritten = Hunk("t.lua", 0, [old], ["H.client()"], [], [])
    found = {(s.old, s.new) for s in substitutions(rewritten)}
    assert ("wait", "client") not in found
    code = "H.out.lines = H.wait(function()\n  return H.lines()\nend)\n"
    assert apply_substitutions(code, substitutions(rewritten)) == code
    # The same line again is still the same change.
    assert apply_substitutions(old + "\n", substitutions(rewritten)) == "H.client()\n"


def test_a_reworded_sentence_is_not_read_as_renames() -> None:
    reworded = Hunk(
        "p",
        0,
        ["# larger window finds a few more but is paid in prompt tokens."],
        ["# in 37 (docs/next-edit.md); each line more is paid in prompt tokens."],
        [],
        [],
    )
    found = {(s.old, s.new) for s in substitutions(reworded)}
    assert ("window", "37") not in found and ("a", "each") not in found
    code = "def choose_window(a):\n    return a\n"
    assert apply_substitutions(code, substitutions(reworded)) == code


def test_names_moved_to_other_values_are_not_renames() -> None:
    """`markup, tag = ...` -> `escaping, markup = ...`: `markup` now holds what `tag`
    held, so neither `markup -> escaping` nor `tag -> markup` is carried."""
    old = "    markup, tag = m.group(0), m.group(1)"
    moved = Hunk("p", 0, [old], ["    escaping, markup = m.group(1), m.group(2)"], [], [])
    code = "    if markup[0] == '\\\\':\n        emit(tag)\n"
    assert apply_substitutions(code, substitutions(moved)) == code
    renamed = Hunk("p", 0, [old], ["    text, tag = m.group(0), m.group(1)"], [], [])
    assert apply_substitutions(code, substitutions(renamed)) == code.replace("markup", "text")


def test_the_line_the_user_changed_is_followed_first_where_it_recurs() -> None:
    """A changed piece of text reaches a similar line first (row 2), but the same
    line as the one the user changed (row 4) is the likelier next edit."""
    text = (
        "RULES = [\n"
        "    (r'\\\\([\\s\\S])', Regex),\n"
        "    (r'.|\\n', Regex),\n"
        "    (r'x+', Name),\n"
        "    (r'\\\\(.|\\n)', Regex),\n"
        "]\n"
    )
    at = text.index("[\\s\\S]")
    history = EditHistory()
    history.record("u", at, ".|\\n", "[\\s\\S]")
    plan = prepare(NextEditRequest(text, at + 6, history.edits("u"), path="lex.py"))
    assert plan is not None and plan.draft_change is not None
    piece = Hunk("lex.py", 1, [text.split("\n")[4]], [text.split("\n")[1]], [], [])
    row_2 = "    (r'.|\\n', Regex),"
    assert apply_substitutions(row_2, substitutions(piece)) == "    (r'[\\s\\S]', Regex),"
    change = plan.draft_change.edit
    assert text.count("\n", 0, change.start) == 4
    assert change.new_text == "[\\s\\S]"


def test_fake_engine_carries_the_rename_to_the_lines_above() -> None:
    request = renamed_request()
    out = apply(request.text, request, FakeEngine())
    # One edit at a time: the most confident run of changed lines (here two lines).
    assert "for attr_name in dir(plugin):" in out
    assert "opts = parse(plugin, attr_name)" in out
    assert out.count("attr_name") == 3


def test_lines_are_counted_at_newlines_only_as_the_window_counts_them() -> None:
    """A form feed (a page break in old sources) or a lone CR is inside a line: the
    draft's change is numbered as the window's lines, so the model is shown the
    lines it scores, and the rename lands in place."""
    paged = "import os  # a lone \r here\n\x0c\n" + CODE
    history = EditHistory()
    at = paged.index("getattr(plugin, name)") + len("getattr(plugin, ")
    history.record("u", at, "name", "attr_name")
    text = paged[:at] + "attr_name" + paged[at + 4 :]
    request = NextEditRequest(
        text=text, cursor=at + len("attr_name"), edits=history.edits("u"), path="p.py"
    )
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    lines = plan.window.text.split("\n")
    first = plan.draft_change.first_line
    # The change and SCORE_CONTEXT_LINES (2) above it, the page break one of them.
    assert lines[first - 2 : first + 1] == ["\x0c", "def register(plugin):", lines[first]]
    assert lines[first] == "    for name in dir(plugin):"
    out = apply(text, request, FakeEngine())
    assert out == text.replace("name in dir", "attr_name in dir").replace(
        "plugin, name)", "plugin, attr_name)"
    )


def test_quiet_without_a_recent_edit_or_below_the_confidence_bar() -> None:
    request = renamed_request()
    bare = NextEditRequest(text=request.text, cursor=request.cursor, edits=[])
    assert FakeEngine().next_edit(bare).edits == []
    doubtful = FakeEngine()
    doubtful.rewrite_confidence = 0.001
    assert doubtful.next_edit(request).edits == []
    # The rename's bar is the request's raised to 0.8: 0.000005 ** 0.8 = 0.00006.
    assert doubtful.next_edit(renamed_request(min_confidence=0.000005)).edits != []


def test_a_carried_rename_must_clear_the_bar_raised_to_its_power() -> None:
    """0.008 clears the default bar (0.003) but not a rename's (0.003 ** 0.8 = 0.0096);
    an argument carried to the next call at 0.008 is proposed."""
    engine = FakeEngine()
    engine.rewrite_confidence = 0.008
    result = engine.next_edit(renamed_request())
    assert result.edits == []
    assert "a rename carried on, scored 0.00800, under the bar of 0.0096" in result.reason
    engine.rewrite_confidence = 0.05
    assert engine.next_edit(renamed_request()).edits != []
    engine.rewrite_confidence = 0.008
    code = "split(line)\nsplit(rest)\n"
    history = EditHistory()
    history.record("u", len("split(line"), "", ", comments=True")
    text = "split(line, comments=True)\nsplit(rest)\n"
    argued = NextEditRequest(text, len("split(line, comments=True)"), history.edits("u"))
    assert code.replace("line", "line, comments=True") == text
    (edit,) = engine.next_edit(argued).edits
    assert edit.new_text == ", comments=True"


def test_the_instruct_model_is_asked_only_where_the_draft_carries_the_edit() -> None:
    asked: list[str] = []

    def rewrite(job: RewriteJob, cancel: object = None) -> Rewrite:
        asked.append(job.prompt)
        return Rewrite(job.draft, None, True, Stats())

    # A comment added: nothing to carry, so no prompt reaches the model.
    history = EditHistory()
    at = CODE.index("\n") + 1
    history.record("u", at, "", "    # why\n")
    text = CODE[:at] + "    # why\n" + CODE[at:]
    comment = NextEditRequest(text=text, cursor=at + 9, edits=history.edits("u"), path="p.py")
    result = next_edit(rewrite, comment)
    assert (result.edits, result.reason, asked) == ([], NOTHING_TO_CARRY, [])
    # A model trained on next edits writes its own: it is always asked.
    next_edit(rewrite, replace(comment, prompt_format="zeta2"))
    assert len(asked) == 1
    # A rename the draft carries: the instruct model verifies and scores it.
    assert next_edit(rewrite, renamed_request()).edits != [] and len(asked) == 2


def plan_and_rewrite(answer: str, probs: list[float] | None = None) -> tuple[Plan, Rewrite]:
    plan = prepare(renamed_request())
    assert plan is not None
    trace = None if probs is None else TokenTrace(list(range(1, len(answer) + 1)), probs)
    return plan, Rewrite(answer, trace, True, Stats())


def numbered_plan() -> Plan:
    """Sixty lines `xI = I`; the user changed `x30 = 30` to `x30 = 31`, so the window
    holds the user's line."""
    text = "".join(f"x{i} = {i}\n" for i in range(60))
    history = EditHistory()
    at = text.index("x30 = 30") + len("x30 = ")
    history.record("u", at, "30", "31")
    text = text[:at] + "31" + text[at + 2 :]
    plan = prepare(NextEditRequest(text=text, cursor=at + 2, edits=history.edits("u")))
    assert plan is not None and "x30 = 31" in plan.window.text
    return plan


def test_an_unchanged_rewrite_or_one_undoing_the_users_edit_proposes_nothing() -> None:
    plan, rewrite = plan_and_rewrite(plan_window_text(None))
    assert finish(plan, rewrite, 0.0).edits == []
    plan = numbered_plan()
    undone = plan.window.text.replace("x30 = 31", "x30 = 30")
    assert finish(plan, Rewrite(undone, None, True, Stats()), 0.0).edits == []
    # The same rewrite also changing another line proposes that line alone.
    also = undone.replace("x26 = 26", "x26 = 31")
    (edit,) = finish(plan, Rewrite(also, None, True, Stats()), 0.0).edits
    assert edit.new_text == "31"


def test_a_cut_rewrite_or_one_running_past_the_window_is_not_an_edit() -> None:
    plan = numbered_plan()
    lines = plan.window.text.splitlines(keepends=True)
    cut = "".join(lines[:-3])  # the model stopped three lines early
    assert finish(plan, Rewrite(cut, None, True, Stats()), 0.0).edits == []
    unfinished = Rewrite(plan.window.text.replace("x29", "y29"), None, False, Stats())
    assert finish(plan, unfinished, 0.0).edits == []


def test_confidence_is_the_least_probability_of_the_changed_tokens() -> None:
    plan = prepare(renamed_request())
    assert plan is not None
    answer = plan.job.draft
    probs = [1.0] * len(answer)
    changed = answer.index("attr_name in dir")
    probs[changed] = 0.3  # one doubtful token where the change begins
    found = candidates(plan.window, answer, TokenTrace(list(range(1, len(answer) + 1)), probs))
    assert [round(c.confidence, 2) for c in found] == [0.3]
    assert choose(plan.window, found, plan.user_lines, 0.5) is None
    assert choose(plan.window, found, plan.user_lines, 0.25) is not None


def test_nothing_proposed_says_why_in_words_a_user_can_act_on() -> None:
    plan, rewrite = plan_and_rewrite(plan_window_text(None))
    assert finish(plan, rewrite, 0.0).reason == "no change to propose"
    plan = numbered_plan()
    undone = plan.window.text.replace("x30 = 31", "x30 = 30")
    assert finish(plan, Rewrite(undone, None, True, Stats()), 0.0).reason == (
        "each change touches the last edit's lines, is only whitespace or is cut off"
    )
    plan, _ = plan_and_rewrite("")
    answer = plan.job.draft
    probs = [1.0] * len(answer)
    probs[answer.index("attr_name in dir")] = 0.3
    plan, rewrite = plan_and_rewrite(answer, probs)
    doubtful = finish(plan, rewrite, 0.5)
    assert doubtful.edits == []
    # A rename carried on: its bar is 0.5 ** 0.8.
    assert doubtful.reason == (
        "the likeliest change, a rename carried on, scored 0.30000, under the bar of 0.57"
    )
    assert finish(plan, rewrite, 0.1).reason == ""  # 0.1 ** 0.8 = 0.16


def test_a_block_written_twice_is_scored_where_the_model_chose_to_repeat_it() -> None:
    # The window ends `] + [`, a comprehension, `]`. The model wrote the comprehension
    # twice: the diff calls the first copy new, but the first copy was copied at sure
    # tokens; the doubtful one is where it went on after the `]` with ` + [` again.
    block = '] + [\n    ("Language :: %s" % x)\n    for x in "3.6 3.7".split()\n'
    text = f"CLASSIFIERS = [\n    'Topic :: Utilities',\n{block}]\n\nsetup()\n"
    window = choose_window(text, text.index("Topic"), None, 0, 9)
    answer = window.text.replace(block, block + block, 1)
    probs = [1.0] * len(answer)
    probs[answer.index(block) + len(block) + 1] = 0.26  # the ` +` that repeats the block
    (found,) = candidates(window, answer, TokenTrace(list(range(1, len(answer) + 1)), probs))
    assert found.edit.new_text == block  # the first copy, as the diff places it
    assert round(found.confidence, 2) == 0.26
    assert choose(window, [found], None, 0.3) is None


def test_trace_maps_characters_to_tokens() -> None:
    trace = TokenTrace([3, 5, 9], [0.9, 0.5, 0.7])  # tokens "abc" "de" "fghi"
    assert trace.tokens_over(3, 5) == [0.5]
    assert trace.tokens_over(2, 6) == [0.9, 0.5, 0.7]
    assert trace.tokens_over(4, 4) == [0.5]  # an empty span: the token there


def plan_window_text(_: object) -> str:
    plan = prepare(renamed_request())
    assert plan is not None
    return plan.window.text
