from speculator.grounding import Grounding
from speculator.prompt import (
    FIM_MIDDLE,
    FIM_PREFIX,
    FIM_SUFFIX,
    SNIPPET_BUDGET_CHARS,
    build_fim,
    prefix_window_start,
)
from speculator.types import Snippet

CODE = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(400))


def test_fim_layout_and_windows() -> None:
    cursor = CODE.index("return x + 200") + len("return x + ")
    fim = build_fim(CODE, cursor, Grounding(CODE, "python"), [], "a.py")
    specials = [special for special, _ in fim.segments]
    assert specials == [FIM_PREFIX, FIM_SUFFIX, "", FIM_MIDDLE]
    assert CODE[:cursor].endswith(fim.prefix) and CODE[cursor:].startswith(fim.suffix)
    assert fim.prefix.startswith("def f")  # window starts at a definition


def test_window_start_is_stable_while_typing() -> None:
    g = Grounding(CODE, "python")
    cursor = CODE.index("return x + 200")
    start = prefix_window_start(CODE, cursor, g, 4000)
    typed = CODE[:cursor] + "abc" + CODE[cursor:]
    assert prefix_window_start(typed, cursor + 3, Grounding(typed, "python"), 4000) == start


def test_snippets_come_first_as_repo_files() -> None:
    fim = build_fim(CODE, 10, Grounding(CODE, "python"), [Snippet("b.py", "def g(): pass")], "a.py")
    assert fim.segments[0][0] == "<|repo_name|>" and "b.py" in fim.segments[0][1]


def test_a_large_snippet_is_cut_to_the_budget_not_dropped() -> None:
    big = Snippet("big.py", "".join(f"line_{i} = {i}\n" for i in range(500)))
    fim = build_fim(CODE, 10, Grounding(CODE, "python"), [big], "a.py")
    header = fim.segments[0][1]
    assert "big.py" in header and "line_0 = 0" in header
    assert len(header) < SNIPPET_BUDGET_CHARS + 100  # the path and separators


def test_the_quick_window_is_a_short_prompt_around_the_cursor() -> None:
    """Issue 12: the first suggestion on an unseen file comes from ~300 tokens."""
    from speculator.grounding import Grounding
    from speculator.prompt import QUICK_PREFIX_CHARS, QUICK_SUFFIX_CHARS, build_fim

    text = "".join(f"line_{i} = {i}\n" for i in range(2000))
    cursor = len(text) // 2
    grounding = Grounding(text, "python", None)
    full = build_fim(text, cursor, grounding, [], "a.py")
    quick = build_fim(
        text, cursor, grounding, [], "a.py",
        prefix_budget=QUICK_PREFIX_CHARS, suffix_budget=QUICK_SUFFIX_CHARS,
    )  # fmt: skip
    assert len(quick.prefix) <= QUICK_PREFIX_CHARS < len(full.prefix)
    assert len(quick.suffix) <= QUICK_SUFFIX_CHARS < len(full.suffix)
    assert full.prefix.endswith(quick.prefix) and full.suffix.startswith(quick.suffix)
