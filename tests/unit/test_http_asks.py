"""HTTP bodies read into engine requests (lsp_server/http_asks.py), on plain data:
no server, no engine."""

from __future__ import annotations

import math
from typing import TypeVar

import msgspec
import pytest

from lsp_server.http_asks import (
    chat_ask,
    completion_asks,
    infill_ask,
    max_tokens,
    nth_sample,
    openai_ask,
)
from lsp_server.http_wire import (
    BadRequest,
    ChatBody,
    CompletionBody,
    InfillBody,
    OpenAICompletionBody,
)
from lsp_server.options import ServerOptions
from speculator.types import CompletionRequest, Snippet

OPTIONS = ServerOptions()
FIM = "<|file_sep|>lib.py\ndef helper(): ...\n<|file_sep|>app.py\n<|fim_prefix|>x = <|fim_suffix|>\ny = 2<|fim_middle|>"


S = TypeVar("S")


def body(kind: type[S], **fields: object) -> S:
    return msgspec.convert(fields, kind)


def test_infill_puts_the_typed_prompt_before_the_cursor_and_input_extra_in_the_request() -> None:
    infill = body(
        InfillBody,
        input_prefix="def f():\n    ",
        prompt="ret",
        input_suffix="\n",
        input_extra=[{"filename": "util.py", "text": "def g(): ..."}, {"text": ""}],
        n_predict=12,
        temperature=0.5,
        top_k=-3,
        stop=["\n"],
        n_indent=4,
        t_max_predict_ms=-1.0,
    )
    ask = infill_ask(infill, OPTIONS)
    completion = ask.completion
    assert completion is not None
    assert completion.text == "def f():\n    ret\n"
    assert completion.cursor == len("def f():\n    ret")
    assert completion.language_id == "python"  # the extra files' language
    assert completion.extra_context == [Snippet(path="util.py", text="def g(): ...")]
    assert (completion.max_tokens, completion.temperature, completion.top_k) == (12, 0.5, 0)
    assert completion.max_predict_ms == 0.0  # a negative limit is none
    assert completion.slot is None  # the front door routes it
    assert (ask.echo, ask.stops, ask.n_indent, ask.max_tokens) == ("ret", ["\n"], 4, 12)
    assert ask.settings == {
        "n_predict": 12,
        "temperature": 0.5,
        "top_k": 0,  # as served: a negative top-k is none
        "top_p": 0.95,
        "min_p": 0.05,
        "stop": ["\n"],
        "speculation": OPTIONS.speculation,
    }


def test_sampling_filters_default_to_llama_servers_and_zero_turns_them_off() -> None:
    """A request that names no filter is sampled as llama-server samples it (top-k 40,
    top-p 0.95, min-p 0.05); each can be turned off as there (0, 1.0, 0)."""
    plain = body(CompletionBody, prompt="x", temperature=1.0)
    completion = completion_asks(plain, ["x"], OPTIONS)[0].completion
    assert completion is not None
    assert (completion.top_k, completion.top_p, completion.min_p) == (40, 0.95, 0.05)
    off = body(CompletionBody, prompt="x", temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)
    completion = completion_asks(off, ["x"], OPTIONS)[0].completion
    assert completion is not None
    assert (completion.top_k, completion.top_p, completion.min_p) == (0, 1.0, 0.0)
    openai = openai_ask(body(OpenAICompletionBody, prompt="x", min_p=0.2), ["x"], OPTIONS)
    assert openai.prompts[0].completion.min_p == 0.2


def test_n_predict_zero_asks_nothing_of_the_engine() -> None:
    ask = infill_ask(body(InfillBody, input_prefix="x", n_predict=0), OPTIONS)
    assert ask.completion is None and ask.max_tokens == 0


def test_n_probs_and_logit_bias_go_to_the_local_engine_and_are_refused_for_a_remote_one() -> None:
    with pytest.raises(BadRequest, match="binary"):
        infill_ask(body(InfillBody, input_prefix="a\x00", n_probs=3), OPTIONS)
    asked = body(InfillBody, input_prefix="a", n_probs=3, logit_bias={"7": False, "ab": -2})
    completion = infill_ask(asked, OPTIONS).completion
    assert completion is not None and completion.n_probs == 3
    assert completion.logit_bias == [(7, -math.inf), ("ab", -2.0)]
    remote = msgspec.structs.replace(
        OPTIONS, engine=msgspec.structs.replace(OPTIONS.engine, backend="llama-server")
    )
    with pytest.raises(BadRequest, match="n_probs and logit_bias need"):
        infill_ask(asked, remote)


def test_completion_prompts_are_raw_and_end_at_the_limit() -> None:
    # Plain text and a client's own FIM layout alike: the text is the prompt, as
    # llama-server reads it, generated on to n_predict, an end token or a stop.
    asked = body(CompletionBody, prompt=["x", FIM], n_predict=20, stop=["\n\n"])
    plain, fim = completion_asks(asked, ["def f(", FIM], OPTIONS)
    for ask, text in ((plain, "def f("), (fim, FIM)):
        completion = ask.completion
        assert completion is not None
        assert (completion.text, completion.cursor) == (text, len(text))
        assert (completion.prompt_format, completion.ends_at) == ("raw", "limit")
        assert completion.stop == ["\n\n"] and completion.max_tokens == 20
        assert completion.extra_context is None and ask.echo == text


def test_infill_ends_where_the_suggestion_ends() -> None:
    ask = infill_ask(body(InfillBody, input_prefix="x = ", input_suffix="\n"), OPTIONS)
    assert ask.completion is not None
    assert (ask.completion.prompt_format, ask.completion.ends_at) == ("document", "suggestion")


def test_several_prompts_are_not_streamed() -> None:
    streamed = body(CompletionBody, prompt=["a", "b"], stream=True)
    with pytest.raises(BadRequest, match="one prompt at a time"):
        completion_asks(streamed, ["a", "b"], OPTIONS)
    (one,) = completion_asks(body(CompletionBody, prompt="a", stream=True), ["a"], OPTIONS)
    assert one.completion is not None


def test_max_tokens_defaults_to_the_option_and_is_clamped() -> None:
    assert max_tokens(None, OPTIONS) == OPTIONS.max_tokens
    assert max_tokens(-1, OPTIONS) == OPTIONS.max_tokens
    assert max_tokens(0, OPTIONS) == 0
    assert max_tokens(10**6, OPTIONS) == 4096


def test_openai_prompts_are_raw_unless_a_suffix_asks_for_an_insertion() -> None:
    openai = body(OpenAICompletionBody, prompt=["def f(", FIM], stop="\n", max_tokens=0)
    ask = openai_ask(openai, ["def f(", FIM], OPTIONS)
    for one, text in zip(ask.prompts, ("def f(", FIM), strict=True):
        assert (one.completion.text, one.completion.cursor) == (text, len(text))
        assert (one.completion.prompt_format, one.completion.ends_at) == ("raw", "limit")
        assert one.completion.stop == ["\n"]
    assert ask.prompts[0].completion.max_tokens == 1  # never 0 asked of an engine; 0 is not run
    assert (ask.max_tokens, ask.stops) == (0, ["\n"])


def test_openai_with_a_suffix_is_an_insertion_as_infill() -> None:
    openai = body(OpenAICompletionBody, prompt="def f(", suffix=")\n", filename="main.go", seed=7)
    (one,) = openai_ask(openai, ["def f("], OPTIONS).prompts
    assert (one.completion.text, one.completion.cursor) == ("def f()\n", 6)
    assert (one.completion.prompt_format, one.completion.ends_at) == ("document", "suggestion")
    assert one.completion.language_id == "go" and one.completion.path == "main.go"


def test_openai_refuses_a_prompt_over_the_document_limit() -> None:
    options = msgspec.structs.replace(OPTIONS, max_document_chars=5)
    openai = body(OpenAICompletionBody, prompt="abc", suffix="defg")
    with pytest.raises(BadRequest, match="too large"):
        openai_ask(openai, ["abc"], options)


def test_each_sample_gets_its_own_seed_but_random_stays_random() -> None:
    request = CompletionRequest(text="", cursor=0, seed=7)
    assert [nth_sample(request, j).seed for j in range(3)] == [7, 8, 9]
    assert nth_sample(msgspec.structs.replace(request, seed=-1), 2).seed == -1


def test_a_chat_edit_is_a_refactor_of_the_fenced_selection() -> None:
    chat = body(
        ChatBody,
        messages=[{"role": "user", "content": "rename x to y\n```python\nx = 1\n```"}],
        filename="a.ts",
        top_p=0.9,
    )
    refactor = chat_ask(chat, OPTIONS)
    assert (refactor.text, refactor.start, refactor.end) == ("x = 1\n", 0, 6)
    assert refactor.instruction == "rename x to y"
    assert (refactor.language_id, refactor.path) == ("typescript", "a.ts")
    assert refactor.max_tokens == OPTIONS.refactor_max_tokens  # none asked
    assert (refactor.top_p, refactor.temperature) == (0.9, OPTIONS.temperature)
    capped = msgspec.structs.replace(chat, max_tokens=10**6)
    assert chat_ask(capped, OPTIONS).max_tokens == 4096
