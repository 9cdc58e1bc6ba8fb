"""The HTTP wire formats: llama-server's post-processing rules and edit parsing."""

from __future__ import annotations

import pytest

from lsp_server.http_wire import (
    BadRequest,
    ChatMessage,
    CompletionBody,
    ExtraChunk,
    InfillBody,
    decode,
    edit_ask,
    find_edit,
    finish,
    guess_language,
    nested_fields,
    rest_of_line,
    streamable,
)


def test_stop_strings_cut_at_the_earliest_and_are_dropped() -> None:
    done = finish("a = 1\nb = 2;", ["\n", ";"], 0, 64, 10)
    assert (done.content, done.stop_type, done.stopping_word) == ("a = 1", "word", "\n")


def test_n_indent_ends_at_a_line_less_indented_than_the_cursor() -> None:
    text = "return x\n    y = 1\n  z\nw"
    assert finish(text, [], 4, 64, 5).content == "return x\n    y = 1"
    assert finish(text, [], 4, 64, 5).stop_type == "limit"
    assert finish("a\n\n    b", [], 4, 64, 3).content == "a\n\n    b"  # blank lines pass


def test_a_stop_string_and_n_indent_cut_at_whichever_comes_first() -> None:
    text = "foo()\n    bar()\nbaz"
    done = finish(text, ["baz"], 6, 64, 9)  # the dedent at "    bar()" comes first
    assert (done.content, done.stop_type) == ("foo()", "limit")
    done = finish(text, ["bar"], 2, 64, 9)  # "bar" comes before the dedent at "baz"
    assert (done.content, done.stop_type, done.stopping_word) == ("foo()\n    ", "word", "bar")


def test_the_token_limit_and_end_of_generation() -> None:
    assert finish("abc", [], 0, 3, 3).stop_type == "limit"
    assert finish("abc", [], 0, 8, 3).stop_type == "eos"
    # t_max_predict_ms: llama-server reports a time limit as a limit, not truncated
    assert finish("a\n", [], 0, 8, 2, timed_out=True).stop_type == "limit"


def test_streamable_text_is_what_more_tokens_cannot_change() -> None:
    assert streamable("def f(x):\n    return x", 0) == "def f(x):"  # complete lines
    assert streamable("return foo(a, ", 0) == "return foo(a,"  # blanks wait for more
    # the last characters could still start a stop string or the rest of the line
    assert streamable("value + b", 2) == "value +"
    assert streamable("ab", 3) == ""
    assert rest_of_line("x = f()\ny", 6) == ")" and rest_of_line("abc", 3) == ""


def test_response_fields_pick_nested_values_under_their_path() -> None:
    body = {"content": "x", "timings": {"prompt_n": 3}, "truncated": False}
    picked = nested_fields(["content", "timings/prompt_n", "timings/nope", ""], body)
    assert picked == {"content": "x", "timings/prompt_n": 3}


def test_the_language_comes_from_the_request_or_the_extra_files() -> None:
    body = InfillBody()
    extra = [ExtraChunk("", "a.go"), ExtraChunk("", "b.go"), ExtraChunk("x", "c.rs")]
    assert guess_language(body, extra) == "go"
    assert guess_language(body, []) == "plaintext"
    assert guess_language(InfillBody(filename="m.ts"), extra) == "typescript"
    assert guess_language(CompletionBody(prompt="", language="rust")) == "rust"


def test_decode_ignores_unknown_fields_and_names_bad_ones() -> None:
    body = decode(b'{"prompt": "p", "mirostat": 2, "samplers": "edkypmxt"}', CompletionBody)
    assert body.prompt == "p" and body.samplers == "edkypmxt"
    with pytest.raises(BadRequest, match=r"\$\.id_slot"):
        decode(b'{"prompt": "p", "id_slot": "one"}', CompletionBody)


def _user(text: str) -> list[ChatMessage]:
    return [ChatMessage("system", "be brief"), ChatMessage("user", text)]


@pytest.mark.parametrize(
    "raw",
    [b'{"prompt": "\\ud83d"}', b'{"prompt": "a\\ud83d b"}', b'{"prompt": "\\ude00"}'],
)
def test_an_unpaired_surrogate_escape_is_named(raw: bytes) -> None:
    """msgspec calls a lone high surrogate escape "Input data was truncated"."""
    with pytest.raises(BadRequest, match="unpaired UTF-16 surrogate"):
        decode(raw, CompletionBody)
    with pytest.raises(BadRequest, match="truncated"):  # what it says where it is true
        decode(b'{"prompt": "ab', CompletionBody)
    assert decode(b'{"prompt": "\\ud83d\\ude00"}', CompletionBody).prompt == "\U0001f600"


def test_edit_from_llama_vscodes_prompt() -> None:
    message = (
        "Modify the following original code according to the instructions. Output only the "
        "modified code. No explanations.\n\ninstructions:\nUse f-strings\n\noriginal code:\n"
        "print('%s' % x)\n\nmodified code:"
    )
    ask = edit_ask(_user(message))
    assert (ask.instruction, ask.text[ask.start : ask.end]) == ("Use f-strings", "print('%s' % x)")


def test_edit_from_llama_vims_blocks_keeps_the_context_around() -> None:
    message = (
        "--- instruction ----\nFix it\n--- surrounding context (optional) ---\n"
        "before:\n9: def f():\nafter:\n12: f()\n--- selected block ---\n"
        "10:     x = 1\n11:     return x\n--- end ---"
    )
    ask = edit_ask(_user(message))
    assert ask.text == "def f():\n    x = 1\n    return x\nf()\n"
    assert ask.text[ask.start : ask.end] == "    x = 1\n    return x\n"
    assert ask.instruction == "Fix it"


def test_edit_from_a_fenced_block_and_refusals() -> None:
    ask = edit_ask(_user("Add types:\n```py\ndef f(x): pass\n```"))
    assert (ask.instruction, ask.text) == ("Add types:", "def f(x): pass\n")
    with pytest.raises(BadRequest, match="no instruction"):
        edit_ask(_user("```\ncode\n```"))
    # Anything else is a plain chat (lsp_server/http_chat.py).
    assert find_edit([ChatMessage("system", "hi")]) is None
    assert find_edit(_user("what is 2 + 2?")) is None
    with pytest.raises(BadRequest, match="no instruction edit"):
        edit_ask(_user("what is 2 + 2?"))
