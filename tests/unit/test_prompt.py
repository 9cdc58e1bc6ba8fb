import re

import pytest

from speculator.grounding import Grounding
from speculator.prompt import (
    FIM_MIDDLE,
    FIM_PREFIX,
    FIM_SUFFIX,
    REFACTOR_FENCE,
    SNIPPET_BUDGET_CHARS,
    FimPrompt,
    QuickWindow,
    build_fim,
    build_quick_fim,
    build_refactor,
    fence_stop,
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


def words(text: str) -> int:
    """A stand-in tokenizer: one token per word or symbol run."""
    return len(re.findall(r"\w+|[^\w\s]+", text))


QUICK_CODE = (
    "import os\n\n\n"
    + "".join(f"def helper_{i}(x):\n    return x * {i}\n\n\n" for i in range(50))
    + "class Parser:\n"
    + "    def __init__(self, source):\n        self.source = source\n\n"
    + "    def parse(self, text,\n              strict=False):\n"
    + "".join(f"        value_{i} = text.split()[{i}]\n" for i in range(60))
    + "        return value_0\n"
    + "".join(f"\n\ndef tail_{i}():\n    pass\n" for i in range(50))
)


def quick(
    cursor: int, budget: int = 120, previous: QuickWindow | None = None
) -> tuple[FimPrompt, QuickWindow]:
    return build_quick_fim(
        QUICK_CODE, cursor, Grounding(QUICK_CODE, "python"), budget, words, previous
    )


def test_the_quick_window_holds_the_scope_headers_and_the_lines_before_the_cursor() -> None:
    """Issue 12: a short prompt that still says where the cursor is."""
    cursor = QUICK_CODE.index("value_50 = ") + len("value_50 = ")
    fim, window = quick(cursor)
    prefix = fim.segments[0][1]
    # The class and the method signature (two lines), then the nearest lines.
    assert prefix.startswith(
        "class Parser:\n    def parse(self, text,\n              strict=False):\n"
    )
    assert prefix.endswith("        value_49 = text.split()[49]\n        value_50 = ")
    assert "value_10 " not in prefix and "helper_" not in prefix and "__init__" not in prefix
    assert fim.suffix.startswith("text.split()[50]\n        value_51")
    total = sum(words(text) for _, text in fim.segments)
    assert 100 <= total <= 120  # the budget, nearly spent
    assert QUICK_CODE[window.start - 1] == "\n"


def test_the_quick_window_start_stays_put_while_typing() -> None:
    """Its first line is kept while it fits, so keystrokes reuse the KV."""
    cursor = QUICK_CODE.index("value_50 = ") + len("value_50 = ")
    first, window = quick(cursor)
    typed, kept = quick(cursor + 2, previous=window)
    assert kept == window
    assert typed.segments[0][1].startswith(first.segments[0][1])
    _, moved = quick(QUICK_CODE.index("value_59 = "), previous=window)
    assert moved.start != window.start  # ten lines on: a new window


def test_the_quick_window_near_the_top_or_on_a_huge_line() -> None:
    top, _ = quick(QUICK_CODE.index("def helper_1"))
    assert top.segments[0][1].startswith("import os")  # no scope: just the lines before
    line = "x = [" + ", ".join(str(i) for i in range(3000)) + "]"
    fim, _ = build_quick_fim(line, len(line) - 1, Grounding(line, "python"), 64, words)
    assert words(fim.segments[0][1]) <= 64 and line[: len(line) - 1].endswith(fim.prefix)


def test_the_quick_window_can_bring_the_definitions_of_the_names_before_the_cursor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from speculator import prompt

    monkeypatch.setattr(prompt, "QUICK_DEFINITION_SHARE", 0.2)
    text = QUICK_CODE.replace("        return value_0\n", "        return self.source + value_0\n")
    cursor = text.index("return self.source")  # after `value_59 = ...`, before `return`
    fim, _ = build_quick_fim(text, cursor, Grounding(text, "python"), 120, words)
    prefix = fim.segments[0][1]
    assert "value_59 = text.split()[59]\n" in prefix
    # `text` is a parameter (in the signature already); `value_59` is in the window.
    assert prefix.count("self.source = source") == 0
    typed = text[:cursor] + "self.source" + text[cursor:]
    fim, _ = build_quick_fim(
        typed, cursor + len("self.source"), Grounding(typed, "python"), 120, words
    )
    assert "        self.source = source\n" in fim.segments[0][1]  # from __init__


def test_a_refactor_prompt_closes_the_selection_the_way_the_model_closes_its_answer() -> None:
    """The model ends its code with "\n```"; a selection of whole lines must
    read the same in the prompt (not "\n\n```"), so a copy of it drafts the
    closing fence too."""
    selection = "def area(w, h):\n    return w * h\n\n"
    prompt, fence = build_refactor(selection, "rename w to width", "python")
    assert fence == REFACTOR_FENCE
    assert "```python\ndef area(w, h):\n    return w * h\n```<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n```python\n")
    partial = build_refactor("x = 1", "rename x to y", "python")[0]
    assert "```python\nx = 1\n```<|im_end|>" in partial


def test_only_a_fence_that_starts_a_line_closes_a_refactor() -> None:
    """Backticks inside the code are code: a string, a doc comment's example."""
    stop = fence_stop(REFACTOR_FENCE)
    code = 'acc.push_str("\\n```");\n/// ```rust\n/// let x = 1;\n/// ```\nfn f() {}\n'
    indented_docstring = 'def f():\n    """Use it so:\n\n    ```\n    f()\n    ```\n    """\n'
    assert stop(code) is None and stop(indented_docstring) is None
    assert stop(code + "```") == len(code)
    assert stop("```") == 0  # an empty answer


def test_a_selection_with_its_own_fences_is_written_in_a_longer_one() -> None:
    selection = 'GUIDE = """\n```python\nx = 1\n```\n"""\n'
    prompt, fence = build_refactor(selection, "rename GUIDE to HELP", "python")
    assert fence == "````"
    assert f"````python\n{selection}````<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n````python\n")
    stop = fence_stop(fence)
    assert stop(selection) is None
    assert stop(selection + "````") == len(selection)
