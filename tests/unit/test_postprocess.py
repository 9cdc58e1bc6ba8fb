from speculator.grounding import Grounding
from speculator.postprocess import (
    CompletionStop,
    cut_at_deadline,
    dedented_selection,
    finish_refactor,
    is_multiline,
)


def _stop(text: str, cursor: int, multiline: bool) -> CompletionStop:
    return CompletionStop(text, cursor, multiline)


def _stop_in_body(text: str) -> CompletionStop:
    """A multi-line stop with the cursor on the first blank, 4-space indented line."""
    return _stop(text, text.index("    \n") + 4, multiline=True)


def test_single_line_stops_at_newline() -> None:
    text = "x = foo(\n"
    stop = _stop(text, len("x = foo("), multiline=False)
    assert stop("a, b)\ny = 2") == len("a, b)")


def test_does_not_repeat_the_closing_bracket_of_the_suffix() -> None:
    text = "total = compute(values)\n"
    cursor = text.index("values")
    stop = _stop(text[:cursor] + text[cursor + 6 :], cursor, multiline=False)
    assert stop("items)") == len("items")


def test_multiline_stops_when_dedenting_out_of_the_block() -> None:
    stop = _stop_in_body("def f(x):\n    \n")
    completion = "y = x + 1\n    return y\ndef g():\n"
    cut = stop(completion)
    assert cut is not None and completion[:cut] == "y = x + 1\n    return y"


def test_a_dedent_ends_the_completion_before_its_line_is_written() -> None:
    stop = _stop_in_body("def f(x):\n    \n")
    completion = "y = x + 1\n    return y\nd"  # `d` will be `def g():` at column 0
    cut = stop(completion)
    assert cut is not None and completion[:cut] == "y = x + 1\n    return y"


def test_a_line_still_growing_is_not_taken_for_the_next_line() -> None:
    stop = _stop_in_body("def f(x):\n    \n    return y\n")
    assert stop("y = x * 2\n    return") is None  # may still become `return y + 1`
    assert stop("y = x * 2\n    ") is None  # no text yet: its indentation may grow


def test_with_part_of_the_indentation_typed_the_block_is_where_the_first_line_lands() -> None:
    # The user has typed two of the eight spaces of an `if` body; the model
    # finishes the line, then starts the code after the `if` at column 4.
    text = "def f(self):\n    if self.ready is None:\n  \n    n = 1\n"
    cursor = text.index("  \n    n = 1") + 2
    stop = _stop(text, cursor, multiline=True)
    completion = "      raise ValueError('not ready')\n\n    n2i = s"
    cut = stop(completion)
    assert cut is not None and completion[:cut] == "      raise ValueError('not ready')\n"
    assert stop("      raise ValueError('not ready')\n        log(x)\n") is None


def test_multiline_stops_before_repeating_the_next_line() -> None:
    stop = _stop_in_body("def f(x):\n    \n    return y\n")
    completion = "y = x * 2\n    return y\n"
    cut = stop(completion)
    assert cut is not None and completion[:cut] == "y = x * 2"


def test_a_line_cut_by_the_deadline_loses_its_last_word_which_may_be_half_of_one() -> None:
    assert cut_at_deadline("if self._ready_no") == "if self."
    assert cut_at_deadline("foo(a,") == "foo(a,"  # ends between words: kept whole
    assert cut_at_deadline("_ready_no") == "_ready_no"  # the only word: better than nothing


def test_past_the_first_line_the_deadline_drops_the_unfinished_line() -> None:
    assert cut_at_deadline("x = 1\n    y = comp") == "x = 1"
    assert cut_at_deadline("\n    return sel") == "\n    return "  # the first line is blank


def test_multiline_decision_from_the_syntax() -> None:
    code = "def f(x):\n    return x\n\nname = 'a b'\n"
    g = Grounding(code, "python")
    assert is_multiline(code, len("def f(x):"), g)  # after a block opener
    assert not is_multiline(code, code.index("return") + 3, g)  # mid-statement
    assert not is_multiline(code, code.index("a b") + 1, g)  # inside a string


CLASS = "class Box:\n    def area(self):\n        return self.w * self.h\n"


def test_a_method_is_shown_to_the_model_as_a_function_and_indented_back() -> None:
    """Shown indented, the model wraps a method in a made-up class."""
    start = CLASS.index("    def area")
    code, lead = dedented_selection(CLASS, start, len(CLASS))
    assert (code, lead) == ("def area(self):\n    return self.w * self.h\n", "")
    written = "def area(self):\n    return self.h * self.w\n"
    assert finish_refactor(written, CLASS[start:], lead) == (
        "    def area(self):\n        return self.h * self.w\n"
    )


def test_a_selection_from_the_def_keyword_keeps_the_body_at_its_depth() -> None:
    """The editor's selection starts after the indentation: the first line is
    shown with it, and the edit does not repeat it."""
    start = CLASS.index("def area")
    end = CLASS.index("self.h") + len("self.h")
    code, lead = dedented_selection(CLASS, start, end)
    assert (code, lead) == ("def area(self):\n    return self.w * self.h", "    ")
    written = "def area(self):\n    return self.h * self.w\n"
    new_text = finish_refactor(written, CLASS[start:end], lead)
    assert new_text == "def area(self):\n        return self.h * self.w"
    middle = CLASS.index("self.w")  # mid-line: no lead, nothing to dedent
    assert dedented_selection(CLASS, middle, end) == ("self.w * self.h", "")


def test_refactor_keeps_the_selections_crlf_line_endings() -> None:
    """A model that ends some lines with "\n" alone must not mix them into a CRLF file."""
    selection = "def f(item):\r\n    return item\r\n"
    written = "def f(value):\r\n    return value\n"
    assert finish_refactor(written, selection) == "def f(value):\r\n    return value\r\n"
    assert finish_refactor("x = 1\ny = 2\n", "a = 1\nb = 2\n") == "x = 1\ny = 2\n"


def test_refactor_keeps_indentation_and_trailing_newline() -> None:
    selection = "    def f(self):\n        return 1\n"
    assert (
        finish_refactor("def f(self):\n    return 2\n", selection)
        == "    def f(self):\n        return 2\n"
    )
