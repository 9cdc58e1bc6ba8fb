"""A next edit's texts are parsed once each, per thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from speculator.next_edit import trees
from speculator.next_edit.trees import KEPT_TREES, syntax_root


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The languages a parser was made for, in order (a parse each)."""
    made: list[str] = []
    real = trees.new_parser

    def counting(language_id: str) -> Any:
        made.append(language_id)
        return real(language_id)

    monkeypatch.setattr(trees, "new_parser", counting)
    return made


def test_the_same_text_is_parsed_once_and_its_tree_read_again(parses: list[str]) -> None:
    text = "def unique_name_for_this_test(a):\n    return a\n"
    first = syntax_root("python", text)
    again = syntax_root("python", text)
    assert first is not None and again is not None
    assert parses == ["python"]
    assert again.type == "module" and again.text == first.text


def test_older_trees_are_dropped_and_parsed_again(parses: list[str]) -> None:
    texts = [f"x_{i} = {i}\n" for i in range(KEPT_TREES + 1)]
    for text in texts:
        syntax_root("python", text)
    syntax_root("python", texts[-1])
    assert len(parses) == KEPT_TREES + 1
    syntax_root("python", texts[0])  # the oldest was dropped
    assert len(parses) == KEPT_TREES + 2


def test_each_thread_parses_its_own(parses: list[str]) -> None:
    text = "y_in_threads = 1\n"
    syntax_root("python", text)
    other = threading.Thread(target=syntax_root, args=("python", text))
    other.start()
    other.join()
    assert parses == ["python", "python"]


def test_a_language_without_a_grammar_has_no_tree() -> None:
    assert syntax_root("plaintext", "just words\n") is None
