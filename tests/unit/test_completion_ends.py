"""Where a completion ends: at the suggestion's end (editors) or, for a raw prompt,
where llama-server's answers end (the limit, an end token, a stop string)."""

from __future__ import annotations

from scripted_model import scripted_generator

from lsp_server.http_stream import before_stop
from speculator.pipeline import Pipeline, prepare_completion
from speculator.postprocess import CompletionStop, StopStrings
from speculator.types import CompletionRequest


def test_a_raw_request_stops_only_at_its_stop_strings_and_keeps_its_text() -> None:
    text = "def f():\n    return "
    raw = CompletionRequest(
        text=text, cursor=len(text), prompt_format="raw", ends_at="limit", stop=["\n\n", "#"]
    )
    job = prepare_completion(raw, 0.0, None)
    assert isinstance(job.stop, StopStrings)
    assert job.stop("1\n    x = 2  ") is None  # a new line or a dedent ends nothing
    assert job.stop("1\n\ndef g") == len("1\n\n")  # the stop string is kept, for the caller
    assert job.stop("1 # x\n\n") == len("1 #")  # the first one ends it
    assert job.shown("1  \n\n") == "1  \n\n"  # as generated: no clean-up


def test_an_editor_request_ends_where_the_suggestion_ends() -> None:
    text = "def f():\n    return "
    job = prepare_completion(CompletionRequest(text=text, cursor=len(text)), 0.0, None)
    assert isinstance(job.stop, CompletionStop)
    assert job.stop("1\n") == 1 and job.shown("1  ") == "1"


def test_empty_stop_strings_stop_nothing() -> None:
    assert StopStrings(["", ""])("anything") is None


def test_a_stream_holds_back_what_may_start_a_stop_string() -> None:
    assert before_stop("x = 1\n", ["\n\n"]) == "x = 1"
    assert before_stop("x = 1\n\t", ["\n\n"]) == "x = 1\n\t"
    assert before_stop("a <|e", ["<|end|>"]) == "a "
    assert before_stop("a  ", []) == "a  "  # nothing to hold: blanks go out as they come


def test_the_local_generator_continues_a_raw_prompt_to_the_limit() -> None:
    # The prompt is the text as sent (no FIM layout, no window); the answer runs past
    # line ends and through a repeating tail to max_tokens, as llama-server's runs.
    generator, session = scripted_generator("x\n" * 100)
    prompt = "<|fim_prefix|>a = <|fim_suffix|>\n<|fim_middle|>"
    request = CompletionRequest(
        text=prompt, cursor=len(prompt), prompt_format="raw", ends_at="limit", max_tokens=150
    )
    result = Pipeline(generator).complete(request)
    assert session.synced[-1] == [ord(c) for c in prompt]
    assert result.text == ("x\n" * 100)[:150] and result.stats.generated_tokens == 150


def test_the_local_generator_stops_a_raw_answer_at_a_stop_string() -> None:
    generator, _ = scripted_generator("one\n\ntwo\n")
    request = CompletionRequest(
        text="A", cursor=1, prompt_format="raw", ends_at="limit", stop=["\n\n"], max_tokens=50
    )
    result = Pipeline(generator).complete(request)
    assert result.text == "one\n\n" and result.stats.generated_tokens == len("one\n\n")
