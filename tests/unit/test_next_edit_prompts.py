"""Each next-edit prompt format, checked by construction: its sections in order,
the window and the recent edit where the format puts them, and its stop rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from speculator.next_edit.prompts import (
    CURSOR_MARKER,
    PROMPT_FORMATS,
    QWEN_SYSTEM,
    PromptInput,
    build_prompt,
    instructions,
)
from speculator.next_edit.window import Hunk, choose_window

TEXT = "import os\n\n\ndef f(path):\n    return os.path.exists(path)\n\n\ndef g():\n    pass\n"


def given() -> PromptInput:
    cursor = TEXT.index("exists")
    window = choose_window(TEXT, cursor, focus=(4, 5), above=1, below=2)
    hunk = Hunk(
        "src/m.py",
        4,
        ["    return os.path.isfile(path)"],
        ["    return os.path.exists(path)"],
        ["def f(path):"],
        [""],
    )
    return PromptInput(
        path="src/m.py",
        language_id="python",
        text=TEXT,
        window=window,
        hunks=[hunk],
        original_window=window.text.replace("exists", "isfile"),
    )


def test_qwen_is_a_chat_with_the_diff_the_marked_window_and_an_open_fence() -> None:
    prompt = build_prompt("qwen", given())
    text = prompt.text
    assert text.startswith("<|im_start|>system\n")
    assert text.endswith("<|im_start|>assistant\n```python\n")
    # This file's own edits: no file header, no lines' numbers (tokens the model
    # scored the same without).
    diff = text.index("```diff\n@@\n def f(path):\n-    return os.path.isfile(path)\n")
    code = text.index("```python\n")
    assert diff < code
    assert "--- a/" not in text and "@@ -" not in text
    assert f"return os.path.{CURSOR_MARKER}exists(path)" in text
    answer = "def f(path):\n    return 1\n```\nmore"
    assert prompt.stop(answer) == answer.index("```")
    assert prompt.stop("x = '```'\n") is None  # a fence inside a line is code


def test_qwen_names_the_files_when_another_files_edit_is_shown() -> None:
    here = given()
    other = Hunk("src/n.py", 0, ["a = 1"], ["a = 2"], [], [])
    text = build_prompt("qwen", replace(here, hunks=[other, *here.hunks])).text
    first = text.index("--- a/src/n.py\n+++ b/src/n.py\n@@\n-a = 1\n+a = 2\n")
    assert text.index("--- a/src/m.py\n+++ b/src/m.py\n@@\n def f(path):\n") > first


def test_zeta2_orders_history_file_prefix_current_suffix_updated() -> None:
    text = build_prompt("zeta2", given()).text
    order = [
        "<|file_sep|>edit history\n--- a/src/m.py\n+++ b/src/m.py\n@@ -4,3 +4,3 @@",
        "<|file_sep|>src/m.py\n<|fim_prefix|>\nimport os\n",
        f"<|fim_middle|>current\ndef f(path):\n    return os.path.{CURSOR_MARKER}exists(path)\n",
        "<|fim_suffix|>\n",
        "<|fim_middle|>updated\n",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.endswith("<|fim_middle|>updated\n")


def test_sweep_has_diff_blocks_then_original_current_updated() -> None:
    prompt = build_prompt("sweep", given())
    text = prompt.text
    assert text.startswith(
        "<|file_sep|>src/m.py.diff\noriginal:\n    return os.path.isfile(path)\n"
        "updated:\n    return os.path.exists(path)\n<|file_sep|>original/src/m.py\n"
    )
    current = text.index("<|file_sep|>current/src/m.py\n")
    assert "isfile" in text[:current] and "isfile" not in text[current:]
    assert text.endswith("<|file_sep|>updated/src/m.py\n")
    assert CURSOR_MARKER not in text
    assert prompt.stop("a\nb\n<|file_sep|>x") == 4


@pytest.mark.parametrize("fmt", ["qwen", "zeta2", "sweep"])
def test_the_answer_becomes_the_window_without_the_marker(fmt: str) -> None:
    g = given()
    prompt = build_prompt(fmt, g)
    answer = g.window.text[:-1].replace("exists", CURSOR_MARKER + "exists")
    assert prompt.rewritten(answer, g.window) == g.window.text


def test_an_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="one of qwen, zeta2, sweep"):
        build_prompt("gpt", given())


@pytest.mark.parametrize("fmt", PROMPT_FORMATS)
def test_every_prompt_starts_with_its_formats_instructions(fmt: str) -> None:
    """What the engine evaluates ahead of the first ask is how every ask starts,
    with recent edits or none, in this file or naming another."""
    head = instructions(fmt)
    here = given()
    other = Hunk("src/n.py", 0, ["a = 1"], ["a = 2"], [], [])
    for hunks in ([], here.hunks, [other, *here.hunks]):
        assert build_prompt(fmt, replace(here, hunks=hunks)).text.startswith(head)


def test_the_qwen_instructions_run_to_the_diffs_opening_fence() -> None:
    head = instructions("qwen")
    assert QWEN_SYSTEM in head and head.endswith("Recent edits:\n```diff\n")
