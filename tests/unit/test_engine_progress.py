"""The engine's progress reports (streaming) and slot naming, without a model."""

from __future__ import annotations

from speculator.generators.local import reporting, slot_name
from speculator.postprocess import CompletionStop, finish_completion
from speculator.types import CompletionRequest, Progress


def test_progress_reports_the_text_as_it_would_be_finished_now() -> None:
    text = "def f(x):\n    return \n"
    stop = CompletionStop(text, text.index("\n    ") + 12, multiline=False)
    reports: list[Progress] = []
    rule = reporting(stop, reports.append, lambda t: finish_completion(t, False), prompt_tokens=7)
    cuts = [rule(so_far) for so_far in ("x ", "x +", "x + 1", "x + 1\nfoo")]
    assert cuts == [None, None, None, 5]  # the stop rule's answers are unchanged
    assert [r.text for r in reports] == ["x", "x +", "x + 1", "x + 1"]  # as finished
    assert [r.generated_tokens for r in reports] == [1, 2, 3, 4]
    assert {r.prompt_tokens for r in reports} == {7}


def test_a_request_names_its_slot_or_uses_its_document() -> None:
    request = CompletionRequest(text="", cursor=0, path="/a.py")
    assert slot_name(request) == "/a.py"
    assert slot_name(CompletionRequest(text="", cursor=0, path="/a.py", slot="http c #1")) == (
        "http c #1"
    )
    assert slot_name(CompletionRequest(text="", cursor=0)) == ""
